"""The maths: scaled dot-product attention as small pure numpy functions.

    Q = X·W_Q + b_Q      K = C·W_K + b_K      V = C·W_V + b_V     (C = context, or X)
    S = Q·Kᵀ             A = softmax(scale·S, masked)             H = A·V
    Y = concat(H₁ … H_h)·W_O + b_O

Everything is float64.  :func:`attend` computes once and keeps every
intermediate in a :class:`Trace`, which tables, explanations and JSON all read.

>>> from attncli.core.attention import softmax
>>> softmax(np.array([[[0.0, 0.0]]])).tolist()
[[[0.5, 0.5]]]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attncli.core.errors import AttnError
from attncli.core.spec import Spec


def project(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Per-head projection: x (n, d_in) · w (h, d_in, d) + b (h, d) -> (h, n, d)."""
    h, d_in, d = w.shape
    y = x @ w.transpose(1, 0, 2).reshape(d_in, h * d)  # (n, h·d): one product for all heads
    y = y.reshape(-1, h, d).transpose(1, 0, 2)  # (h, n, d), a view
    if b is not None:
        y += b[:, None, :]
    return y


def softmax(z: np.ndarray, allowed: np.ndarray | None = None) -> np.ndarray:
    """Row softmax over the last axis, stable, masked entries exactly 0.

    ``allowed`` (n, m) marks the keys each query may attend to; a row with no
    allowed key gets all-zero weights (as PyTorch's SDPA since 2.5).
    """
    e = exp_rows(z, allowed)
    total = e.sum(axis=-1, keepdims=True)  # (…, n, 1)
    return np.divide(e, total, out=e, where=total > 0)  # total = 0 only for a fully masked row, already 0


def exp_rows(z: np.ndarray, allowed: np.ndarray | None = None, inplace: bool = False, shift: bool = True) -> np.ndarray:
    """The softmax before its division: e = exp(z − row max), masked entries 0 (same shape as z).

    ``softmax = e / Σ e`` per row; :mod:`attncli.core.stream` divides after ``e·V`` instead.
    ``inplace`` reuses ``z``'s memory for ``e``.  ``shift=False`` skips the row max, for
    a caller that knows |z| is small enough that exp(z) can neither overflow nor lose
    precision: softmax is the same for any shift, and two passes over z are saved.
    """
    if allowed is not None:
        if inplace:
            np.copyto(z, -np.inf, where=~allowed)
        else:
            z = np.where(allowed, z, -np.inf)
    if not shift:
        e = z if inplace or allowed is not None else np.empty_like(z)
        return np.exp(z, out=e)
    z_max = z.max(axis=-1, keepdims=True)  # (…, n, 1)
    z_max[~np.isfinite(z_max)] = 0.0  # a fully masked row: exp(-inf - 0) = 0 everywhere
    e = np.subtract(z, z_max, out=z if inplace or allowed is not None else None)
    return np.exp(e, out=e)  # largest entry of each row is exp(0) = 1: no overflow


@dataclass(frozen=True)
class Trace:
    """Every intermediate of one attention computation (per-head arrays head-first)."""

    spec: Spec
    queries: np.ndarray  # Q (h, n, d_k)
    keys: np.ndarray  # K (h, m, d_k)
    values: np.ndarray  # V (h, m, d_v)
    scores: np.ndarray | None  # S = Q·Kᵀ (h, n, m); None when streamed
    scaled_scores: np.ndarray | None  # scale·S (h, n, m); masked cells are not used
    weights: np.ndarray | None  # A = softmax(scale·S) (h, n, m), masked cells 0
    head_outputs: np.ndarray  # H = A·V (h, n, d_v)
    output: np.ndarray  # Y (n, d_out)
    empty_queries: tuple[int, ...] = field(default=())  # queries whose every key is masked
    residual: np.ndarray | None = None  # X (+ P) + Y (n, d_model), with add_norm
    normalized: np.ndarray | None = None  # LayerNorm(residual) (n, d_model), with add_norm

    @property
    def concat(self) -> np.ndarray:
        """The heads side by side: (n, h·d_v)."""
        h, n, d_v = self.head_outputs.shape
        return self.head_outputs.transpose(1, 0, 2).reshape(n, h * d_v)


@np.errstate(over="ignore", invalid="ignore")  # overflow is checked for, and named: no RuntimeWarning on stderr
def attend(spec: Spec) -> Trace:
    """Compute every intermediate of ``spec`` at once."""
    q, k, v = projections(spec)
    s = scores(q, k, spec)  # (h, n, m)
    check_finite(s, "scores", spec.tokens)
    z = spec.scale * s
    check_finite(z, "scaled scores", spec.tokens)
    a = normalize(z, spec)  # (h, n, m)
    heads = a @ v  # (h, n, d_v)
    y = output_projection(heads, spec)
    check_finite(y, "output", spec.tokens)
    residual, normalized = add_norm(y, spec)
    return Trace(spec, q, k, v, s, z, a, heads, y, empty_queries(spec.mask), residual, normalized)


def projections(spec: Spec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q (h, n, d_k), K (h, m, d_k), V (h, m, d_v), each checked for overflow."""
    q = project(spec.embedded, spec.w_q, spec.b_q)  # (h, n, d_k)
    k = project(spec.source, spec.w_k, spec.b_k)  # (h, m, d_k)
    v = project(spec.source, spec.w_v, spec.b_v)  # (h, m, d_v)
    for name, array, labels in (("queries", q, spec.tokens), ("keys", k, spec.context_tokens), ("values", v, spec.context_tokens)):
        check_finite(array, name, labels)
    return q, k, v


def scores(q: np.ndarray, k: np.ndarray, spec: Spec) -> np.ndarray:
    """S = Q·Kᵀ (h, n, m), or the additive score vᵀ·tanh(Q·W₁ + K·W₂) with ``score: additive``."""
    if spec.score == "additive":
        from attncli.core.layers import additive_scores

        return additive_scores(q, k, spec.w_1, spec.w_2, spec.v_a)
    return q @ k.transpose(0, 2, 1)


def normalize(z: np.ndarray, spec: Spec, rows: slice = slice(None)) -> np.ndarray:
    """The weights from the scaled scores: softmax (default), divided by the row sum, or as they are.

    ``rows`` says which queries ``z`` holds (all of them, or one block of :mod:`attncli.core.stream`).
    """
    mask = None if spec.mask is None else spec.mask[rows]
    if spec.normalize == "softmax":
        return softmax(z, mask)
    if spec.normalize == "sum":
        from attncli.core.layers import sum_normalize

        return sum_normalize(z, mask, spec.tokens[rows])
    return z if mask is None else np.where(mask, z, 0.0)


def add_norm(y: np.ndarray, spec: Spec) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Add & Norm: r = X (+ P) + Y, then LayerNorm(r); (None, None) without ``add_norm``."""
    if spec.add_norm is None:
        return None, None
    from attncli.core.layers import layer_norm

    gamma, beta, eps = spec.add_norm
    residual = spec.embedded + y  # (n, d_model)
    return residual, layer_norm(residual, gamma, beta, eps)


def output_projection(heads: np.ndarray, spec: Spec) -> np.ndarray:
    """concat(H₁ … H_h) (n, h·d_v) · W_O + b_O -> (n, d_out)."""
    h, n, d_v = heads.shape
    y = heads.transpose(1, 0, 2).reshape(n, h * d_v)  # a view when heads is one (see attncli.core.stream)
    if spec.w_o is not None:
        y = y @ spec.w_o
        if spec.b_o is not None:
            y += spec.b_o  # y is ours: no second n × d_out array
    elif spec.b_o is not None:
        y = y + spec.b_o
    return y


def empty_queries(mask: np.ndarray | None) -> tuple[int, ...]:
    """Indices of the queries that may attend to no key at all."""
    if mask is None:
        return ()
    return tuple(int(i) for i in np.flatnonzero(~mask.any(axis=1)))


def check_finite(array: np.ndarray, name: str, labels: list[str]) -> None:
    """Overflow is an error naming the first row that overflowed, never NaN in the output."""
    if np.isfinite(array).all():
        return
    index = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
    raise overflow_error(name, index[0] if array.ndim == 3 else None, index[-2], labels)


def overflow_error(name: str, head: int | None, row: int, labels: list[str]) -> AttnError:
    """``scores overflow float64 at head 2, row 5 ('x5')`` (0-based ``head`` and ``row``)."""
    where = f"head {head + 1}, " if head is not None else ""
    return AttnError(
        f"{name} overflow float64 at {where}row {row + 1} ('{labels[row]}'); "
        "the numbers in the document are too large to compute with"
    )
