"""Today's attention written out here with numpy alone, pair by pair, for the explain and check tests.

Nothing from attncli is used: grouped-query heads by ``i // (h / g)``, RoPE as a loop over
pairs, RMSNorm and LayerNorm by their definitions.
"""

from __future__ import annotations

import math

import numpy as np

RNG = np.random.default_rng(15)
X = [[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 2.0], [1.0, 1.0, 1.0, 1.0], [2.0, 0.0, -1.0, 1.0]]
W_Q = RNG.normal(size=(4, 16)).round(2)  # 4 query heads of d_k = 4
W_K = RNG.normal(size=(4, 8)).round(2)  # 2 key/value heads
W_V = RNG.normal(size=(4, 8)).round(2)
W_O = RNG.normal(size=(16, 4)).round(2)
GAMMA = [1.0, 0.5, 2.0, 1.0]


def document(**changes) -> dict:
    """Four query heads sharing two K/V heads, rope (θ = 100), RMSNorm before, a residual after, a cap of 5."""
    doc = {"tokens": ["the", "cat", "sat", "down"], "inputs": X, "heads": 4, "kv_heads": 2,
           "weights": {"query": W_Q.tolist(), "key": W_K.tolist(), "value": W_V.tolist(), "output": W_O.tolist()},
           "rope": {"base": 100}, "pre_norm": {"kind": "rms", "gamma": GAMMA}, "residual": True, "softcap": 5,
           "mask": "causal"}
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not None}


def rms_norm(x, gamma, eps=1e-6):
    x = np.asarray(x, float)
    return np.asarray(gamma) * x / np.sqrt((x ** 2).mean(axis=-1, keepdims=True) + eps)


def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, float)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return np.asarray(gamma) * (x - mean) / np.sqrt(var + eps) + np.asarray(beta)


def pair_dims(d: int, style: str) -> list[tuple[int, int]]:
    """The (a, b) dimensions of each pair, counting from 0."""
    return [(i, i + d // 2) if style == "half" else (2 * i, 2 * i + 1) for i in range(d // 2)]


def rope(x, positions, base=100.0, style="half", frequencies=None):
    """Each row of x (…, n, d) turned pair by pair: angle p·θ^(−2i/d)."""
    x = np.asarray(x, float)
    out = x.copy()
    d = x.shape[-1]
    for i, (a, b) in enumerate(pair_dims(d, style)):
        f = base ** (-2 * i / d) if frequencies is None else frequencies[i]
        for row, p in enumerate(positions):
            c, s = math.cos(p * f), math.sin(p * f)
            xa, xb = x[..., row, a], x[..., row, b]
            out[..., row, a] = xa * c - xb * s
            out[..., row, b] = xb * c + xa * s
    return out


def heads_of(w, h):
    """A d_in × (h·d) weight as h blocks of consecutive columns: (h, d_in, d)."""
    w = np.asarray(w, float)
    d = w.shape[1] // h
    return np.stack([w[:, j * d:(j + 1) * d] for j in range(h)])


def softmax_rows(z, allowed):
    z = np.where(allowed, z, -np.inf)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reference(style="half", rotate_values=False, positions=None, cap=5.0, pre_norm=True, rope_on=True):
    """Every intermediate of :func:`document` (h = 4, g = 2, causal), the way a learner would compute it."""
    x = np.asarray(X, float)
    n, h, g = 4, 4, 2
    pos = np.arange(n, dtype=float) if positions is None else np.asarray(positions, float)
    x_hat = rms_norm(x, GAMMA) if pre_norm else x
    q = np.stack([x_hat @ w for w in heads_of(W_Q, h)])  # (h, n, d_k)
    k = np.stack([x_hat @ w for w in heads_of(W_K, g)])  # (g, n, d_k)
    v = np.stack([x_hat @ w for w in heads_of(W_V, g)])
    qr, kr = (rope(q, pos, style=style), rope(k, pos, style=style)) if rope_on else (q, k)
    vr = rope(v, pos, style=style) if rotate_values else v
    group = h // g
    s = np.stack([qr[i] @ kr[i // group].T for i in range(h)])  # query head i uses K/V head i // (h/g)
    z = s / 2.0  # 1/√4
    if cap is not None:
        z = cap * np.tanh(z / cap)
    allowed = np.tril(np.ones((n, n), bool))
    a = softmax_rows(z, allowed)
    heads = np.stack([a[i] @ vr[i // group] for i in range(h)])
    y = np.concatenate(list(heads), axis=1) @ W_O
    return {"x_hat": x_hat, "q": q, "k": k, "v": v, "qr": qr, "kr": kr, "vr": vr, "s": s, "z": z, "a": a,
            "heads": heads, "y": y, "r": x + y}
