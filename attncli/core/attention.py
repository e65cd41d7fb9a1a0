"""The maths: scaled dot-product attention as small pure numpy functions, and one pass that keeps everything.

    Q = X·W_Q + b_Q      K = C·W_K + b_K      V = C·W_V + b_V     (C = context, or X)
    S = Q·Kᵀ             A = softmax(scale·S, masked)             H = A·V
    Y = concat(H₁ … H_h)·W_O + b_O

Everything is float64.  :func:`attention` is the formula on arrays alone;
:func:`attend` runs the stages on a :class:`~attncli.core.spec.Spec` (positions,
projections, scores, normalisation, output, norms; each stage in its own module)
and keeps every intermediate in a :class:`~attncli.core.trace.Trace`, which
tables, explanations and JSON all read.

>>> q = k = np.array([[[1.0, 0.0], [0.0, 1.0]]])   # (h, n, d_k)
>>> v = np.array([[[1.0], [3.0]]])                  # (h, m, d_v)
>>> out, weights = attention(q, k, v, scale=0.0)
>>> out.tolist(), weights.tolist()
([[[2.0], [2.0]]], [[[0.5, 0.5], [0.5, 0.5]]])
"""

from __future__ import annotations

import numpy as np

from attncli.core.errors import AttnError
from attncli.core.masks import empty_queries
from attncli.core.norms import add_norm as norm_after
from attncli.core.scores import additive_scores, dot_scores
from attncli.core.softmax import normalize as weights_of
from attncli.core.softmax import softmax
from attncli.core.spec import Spec
from attncli.core.trace import Trace

__all__ = ["Trace", "attend", "attention", "project", "softmax"]


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, scale: float | None = None,
              allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """softmax(scale·Q·Kᵀ)·V on arrays: the output (…, n, d_v) and the weights (…, n, m).

    q (…, n, d_k), k (…, m, d_k), v (…, m, d_v), with any leading (head) axes;
    ``scale`` defaults to 1/√d_k; ``allowed`` (n, m), True = may attend, masks the rest.
    """
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    weights = softmax(scale * (q @ np.swapaxes(k, -1, -2)), allowed)  # (…, n, m)
    return weights @ v, weights


def project(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Per-head projection: x (n, d_in) · w (h, d_in, d) + b (h, d) -> (h, n, d)."""
    h, d_in, d = w.shape
    y = x @ w.transpose(1, 0, 2).reshape(d_in, h * d)  # (n, h·d): one product for all heads
    y = y.reshape(-1, h, d).transpose(1, 0, 2)  # (h, n, d), a view
    if b is not None:
        y += b[:, None, :]
    return y


def concat_heads(heads: np.ndarray, w_o: np.ndarray | None = None, b_o: np.ndarray | None = None) -> np.ndarray:
    """concat(H₁ … H_h) (n, h·d_v) · W_O + b_O -> (n, d_out); heads (h, n, d_v)."""
    h, n, d_v = heads.shape
    y = heads.transpose(1, 0, 2).reshape(n, h * d_v)  # a view when heads is one (see attncli.core.stream)
    if w_o is not None:
        y = y @ w_o
        if b_o is not None:
            y += b_o  # y is ours: no second n × d_out array
    elif b_o is not None:
        y = y + b_o
    return y


# ---------------------------------------------------------------- the stages on a Spec


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
        return additive_scores(q, k, spec.w_1, spec.w_2, spec.v_a)
    return dot_scores(q, k)


def normalize(z: np.ndarray, spec: Spec, rows: slice = slice(None)) -> np.ndarray:
    """The weights from the scaled scores of the queries ``rows`` (all, or one block of attncli.core.stream)."""
    return weights_of(z, spec.normalize, None if spec.mask is None else spec.mask[rows], spec.tokens[rows])


def output_projection(heads: np.ndarray, spec: Spec) -> np.ndarray:
    """Y = concat(H₁ … H_h)·W_O + b_O (n, d_out), with the document's W_O and b_O when it has them."""
    return concat_heads(heads, spec.w_o, spec.b_o)


def add_norm(y: np.ndarray, spec: Spec) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Add & Norm: r = X (+ P) + Y, then LayerNorm(r); (None, None) without ``add_norm``."""
    if spec.add_norm is None:
        return None, None
    gamma, beta, eps = spec.add_norm
    with np.errstate(over="ignore", invalid="ignore"):
        residual, normalized = norm_after(spec.embedded, y, gamma, beta, eps)
        check_finite(residual, "residual", spec.tokens)
        variance = residual.var(axis=-1)  # beyond ~1e154 it overflows, and LayerNorm would quietly give 0
    if not np.isfinite(variance).all():
        row = int(np.argwhere(~np.isfinite(variance))[0][0])
        raise AttnError(f"add_norm: the variance of the residual overflows float64 at row {row + 1} "
                        f"('{spec.tokens[row]}'); the numbers in the document are too large to normalise")
    check_finite(normalized, "add_norm", spec.tokens)
    return residual, normalized


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
