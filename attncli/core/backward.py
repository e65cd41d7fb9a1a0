"""The backward pass's maths: each forward operation's gradient, as small pure numpy functions (float64).

Row vectors, as the forward: ``Y = X·W + b`` gives ``dX = dY·Wᵀ``, ``dW = Xᵀ·dY``, ``db = Σ_rows dY``.
The attention itself, per head (FlashAttention's notation):

    dA = dH·Vᵀ          dV = Aᵀ·dH                       (H = A·V)
    D_i = Σ_j a_ij·dA_ij = rowsum(dH ⊙ H)                (FlashAttention's D)
    dZ_ij = a_ij·(dA_ij − D_i)                           (softmax; 0 where masked, as a_ij is)
    ds_h = −Σ_i σ_hi·D_hi                                (a sink: its share σ of each row)
    dS = scale·dZ,  ·(1 − tanh²(scale·S / c)) with a soft cap c
    dQ = dS·K           dK = dSᵀ·Q                       (a key/value head sums its group's query heads)

:mod:`attncli.core.gradients` applies these to each stage of :data:`attncli.core.stages.STAGES`, and
:func:`attncli.core.pipeline.backward` runs the stages in reverse.

>>> a = np.array([[[0.25, 0.75]]]); d_a = np.array([[[1.0, 3.0]]])
>>> d_z, d = softmax_back(a, d_a)
>>> d.tolist(), d_z.tolist()
([[2.5]], [[[-0.375, 0.375]]])
"""

from __future__ import annotations

import numpy as np

from attncli.core.positions import Rope
from attncli.core.threads import matmul


def grouped(x: np.ndarray, kv_heads: int) -> np.ndarray:
    """Per query head (h, m, d) -> per key/value head (g, m, d): each group of h / g query heads summed."""
    h = x.shape[0]
    return x if h == kv_heads else x.reshape(kv_heads, h // kv_heads, *x.shape[1:]).sum(axis=1)


def project_back(x: np.ndarray, w: np.ndarray, dy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The gradients of ``Y = x·W + b`` per head: x (n, d_in), w (h, d_in, d), dy (h, n, d) ->
    (dx (n, d_in), dW (d_in, h·d) as the document writes W, db (h·d,))."""
    h, d_in, d = w.shape
    dy2 = dy.transpose(1, 0, 2).reshape(-1, h * d)  # (n, h·d): the heads side by side
    w2 = w.transpose(1, 0, 2).reshape(d_in, h * d)  # (d_in, h·d)
    return matmul(dy2, w2.T), matmul(x.T, dy2), dy2.sum(axis=0)  # in blocks of rows on attncli's threads


def norm_back(x: np.ndarray, dy: np.ndarray, gamma: np.ndarray, kind: str, eps: float,
              axes: tuple[int, ...] = (-1,)) -> tuple[np.ndarray, np.ndarray]:
    """The gradient of ``y = γ ⊙ x̂ (+ β)`` over ``axes``, x̂ = (x − mean)/√(var + ε) (layer) or x/√(mean(x²) + ε)
    (rms): (dx (x's shape), dy ⊙ x̂, the cells of dγ before they are summed to γ's shape).

    dx = (dx̂ − mean(dx̂) − x̂·mean(dx̂ ⊙ x̂)) / √(var + ε), without the mean(dx̂) for rms; dx̂ = dy ⊙ γ.
    """
    centred = x - x.mean(axis=axes, keepdims=True) if kind == "layer" else x
    inv = 1.0 / np.sqrt(np.mean(centred * centred, axis=axes, keepdims=True) + eps)
    x_hat = centred * inv
    dx_hat = dy * gamma
    dx = dx_hat - x_hat * np.mean(dx_hat * x_hat, axis=axes, keepdims=True)
    if kind == "layer":
        dx -= np.mean(dx_hat, axis=axes, keepdims=True)
    return dx * inv, dy * x_hat


def rotate_back(dy: np.ndarray, positions: np.ndarray, rope: Rope) -> np.ndarray:
    """The gradient of :func:`attncli.core.positions.rotate` (its transpose): each pair turned back by p·f, times a.

    The members are read where the rotation wrote them and written where it read them (``interleaved_halves``
    reads pairs and writes halves); the unrotated dimensions pass as they are.  dy (h, n, d) -> (h, n, d).
    """
    angle = positions.astype(np.float64)[:, None] * rope.frequencies[None, :]  # (n, dims/2)
    cos, sin = np.cos(angle) * rope.attention_factor, np.sin(angle) * rope.attention_factor
    lo = 0 if rope.part == "first" else dy.shape[-1] - rope.dims
    half, end = rope.dims // 2, lo + rope.dims
    halves = slice(lo, lo + half), slice(lo + half, end)
    pairs = slice(lo, end, 2), slice(lo + 1, end, 2)
    first, second = halves if rope.style == "half" else pairs  # where the forward read each pair's members
    into = pairs if rope.style == "interleaved" else halves  # and where it wrote them
    da, db = dy[..., into[0]], dy[..., into[1]]
    dx = dy.copy()
    dx[..., first] = da * cos + db * sin
    dx[..., second] = db * cos - da * sin
    return dx


def softmax_back(a: np.ndarray, d_a: np.ndarray, sink: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(dZ (h, n, m), D (h, n)) from the weights a (h, n, m) and dA: dZ = a ⊙ (dA − D), D = rowsum(a ⊙ dA).

    With a sink the same holds (its share σ takes no dA: a key with no value); ds is :func:`sink_back`.
    """
    d = np.einsum("hnm,hnm->hn", a, d_a)  # (h, n)
    return a * (d_a - d[..., None]), d


def sink_back(sink: np.ndarray, d: np.ndarray) -> np.ndarray:
    """ds_h = −Σ_i σ_hi·D_hi: sink (h, n) the sink's share, d (h, n) -> (h,)."""
    return -np.einsum("hn,hn->h", sink, d)


def scale_back(d_z: np.ndarray, s: np.ndarray, scale: float, softcap: float | None) -> np.ndarray:
    """dS (h, n, m) from dZ: scale·dZ, times 1 − tanh²(scale·S / c) through a soft cap c (the bias adds nothing)."""
    if softcap is None:
        return scale * d_z
    t = np.tanh(scale * s / softcap)
    return scale * d_z * (1.0 - t * t)


def scores_back(d_s: np.ndarray, q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """S = Q·Kᵀ: (dQ = dS·K (h, n, d_k), dK = dSᵀ·Q (g, m, d_k), summed over each key/value head's group);
    q (h, n, d_k), k (g, m, d_k)."""
    h, g = q.shape[0], k.shape[0]
    k_h = k if g == h else np.repeat(k, h // g, axis=0)  # (h, m, d_k)
    return d_s @ k_h, grouped(d_s.transpose(0, 2, 1) @ q, g)


def mix_back(d_h: np.ndarray, a: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """H = A·V: (dA = dH·Vᵀ (h, n, m), dV = Aᵀ·dH (g, m, d_v), summed over each group); v (g, m, d_v)."""
    h, g = a.shape[0], v.shape[0]
    v_h = v if g == h else np.repeat(v, h // g, axis=0)  # (h, m, d_v)
    return d_h @ v_h.transpose(0, 2, 1), grouped(a.transpose(0, 2, 1) @ d_h, g)
