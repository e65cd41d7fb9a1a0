"""The maths: scaled dot-product attention as small pure numpy functions, and one pass that keeps everything.

    X₀ = X (+ P)          X̂ = pre_norm(X₀)                           (without pre_norm X̂ = X₀)
    Q = X̂·W_Q + b_Q      K = C·W_K + b_K      V = C·W_V + b_V     (C = context, or X̂)
    Q′, K′ = rope(Q), rope(K)                                       (without rope Q′ = Q, K′ = K)
    S = Q′·K′ᵀ           Z = scale·S (→ c·tanh(Z / c)) (+ B)      A = softmax(Z, masked)
    H = A·V              Y = concat(H₁ … H_h)·W_O + b_O
    R = X₀ + Y (or + post_norm(Y)); with add_norm also LayerNorm(R)

Query head i uses key/value head i // (h / g) when there are g < h of them.

Everything is float64.  :func:`attention` is the formula on arrays alone; the
functions below are the stages on a :class:`~attncli.core.spec.Spec`, which
:mod:`attncli.core.stages` lists in their order and :func:`attncli.core.pipeline.attend`
runs into a :class:`~attncli.core.trace.Trace` that tables, explanations and JSON all read.

>>> q = k = np.array([[[1.0, 0.0], [0.0, 1.0]]])   # (h, n, d_k)
>>> v = np.array([[[1.0], [3.0]]])                  # (h, m, d_v)
>>> out, weights = attention(q, k, v, scale=0.0)
>>> out.tolist(), weights.tolist()
([[[2.0], [2.0]]], [[[0.5, 0.5], [0.5, 0.5]]])
"""

from __future__ import annotations

from contextvars import ContextVar

import numpy as np

from attncli.core.errors import AttnError, quoted
from attncli.core.norms import Norm, normalize_rows
from attncli.core.norms import add_norm as norm_after
from attncli.core.positions import rotate
from attncli.core.scores import additive_scores, dot_scores, shared, softcap
from attncli.core.softmax import normalize as weights_of
from attncli.core.softmax import softmax
from attncli.core.spec import Spec
from attncli.core.threads import matmul

__all__ = ["attention", "project", "softmax"]


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, scale: float | None = None,
              allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """softmax(scale·Q·Kᵀ)·V on arrays: the output (…, n, d_v) and the weights (…, n, m).

    q (…, n, d_k), k (…, m, d_k), v (…, m, d_v), with any leading (head) axes;
    ``scale`` defaults to 1/√d_k; ``allowed`` (n, m), True = may attend, masks the rest.
    K and V with fewer heads than Q (h, n, d_k against g, m, d_k, g dividing h) are grouped-query attention:
    query head i reads key/value head i // (h / g), as PyTorch's ``enable_gqa=True``.
    """
    if q.ndim >= 3 and k.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        group = q.shape[-3] // k.shape[-3]  # query heads per key/value head
        k, v = np.repeat(k, group, axis=-3), np.repeat(v, group, axis=-3)  # (…, h, m, d)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    weights = softmax(scale * (q @ np.swapaxes(k, -1, -2)), allowed)  # (…, n, m)
    return weights @ v, weights


def project(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Per-head projection: x (n, d_in) · w (h, d_in, d) + b (h, d) -> (h, n, d).

    w side by side is a view, not a copy, when w is laid out as the builder keeps it (a (d_in, h·d) matrix seen
    head by head); any other layout is copied first.  On several cores the product is taken in blocks of rows on
    attncli's own threads (:func:`attncli.core.threads.matmul`).

    When w's blocks side by side are the identity (an omitted weight), head i is x's i-th block of d columns,
    taken as x + 0.0, not multiplied: an n × d_in × d_in product saved, and the numbers x·I gives (−0.0 as +0.0).
    """
    h, d_in, d = w.shape
    w = w.transpose(1, 0, 2).reshape(d_in, h * d)  # (d_in, h·d): every head's columns side by side
    y = x + 0.0 if _is_identity(w) else matmul(x, w)  # (n, h·d): one product for all heads
    y = y.reshape(-1, h, d).transpose(1, 0, 2)  # (h, n, d), a view
    if b is not None:
        y += b[:, None, :]
    return y


def _is_identity(w: np.ndarray) -> bool:
    """w is a square identity matrix (read once, nothing allocated: far less than the product it saves).

    The diagonal first: a weight that is not the identity is told by its d_in diagonal entries, without reading
    all d_in² of them.
    """
    return w.shape[0] == w.shape[1] and bool(np.all(w.diagonal() == 1)) and np.count_nonzero(w) == w.shape[0]


def concat_heads(heads: np.ndarray, w_o: np.ndarray | None = None, b_o: np.ndarray | None = None) -> np.ndarray:
    """concat(H₁ … H_h) (n, h·d_v) · W_O + b_O -> (n, d_out); heads (h, n, d_v)."""
    h, n, d_v = heads.shape
    y = heads.transpose(1, 0, 2).reshape(n, h * d_v)  # a view when heads is one (see attncli.core.stream)
    if w_o is not None:
        y = matmul(y, w_o)
        if b_o is not None:
            y += b_o  # y is ours: no second n × d_out array
    elif b_o is not None:
        y = y + b_o
    return y


# ---------------------------------------------------------------- the stages on a Spec


def pre_norm(spec: Spec) -> np.ndarray | None:
    """X̂ = pre_norm(X₀) (n, d_model), or None without ``pre_norm``."""
    if spec.pre_norm is None:
        return None
    return normalized_rows(spec.embedded, spec.pre_norm, "normalized inputs", spec.tokens)


def projections(spec: Spec, x_hat: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q (h, n, d_k), K (g, m, d_k), V (g, m, d_v), each checked for overflow.

    ``x_hat``: the normalised inputs (pre_norm); keys and values come from them too, unless there is a context.
    A document giving Q, K and V directly has them as they are.
    """
    if spec.given_qkv is not None:
        return spec.given_qkv
    x = spec.embedded if x_hat is None else x_hat
    source = x if spec.context is None else spec.context
    q = project(x, spec.w_q, spec.b_q)  # (h, n, d_k)
    k = project(source, spec.w_k, spec.b_k)  # (g, m, d_k)
    v = project(source, spec.w_v, spec.b_v)  # (g, m, d_v)
    for name, array, labels in (("queries", q, spec.tokens), ("keys", k, spec.context_tokens),
                                ("values", v, spec.context_tokens)):
        check_finite(array, name, labels)
    return q, k, v


def rotations(q: np.ndarray, k: np.ndarray, spec: Spec) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Q′ = rope(Q) at the queries' positions, K′ = rope(K) at the keys'; (None, None) without ``rope``."""
    if spec.rope is None:
        return None, None
    return rotate(q, spec.query_positions, spec.rope), None if k is None else rotate(k, spec.key_positions, spec.rope)


def scores(q: np.ndarray, k: np.ndarray, spec: Spec) -> np.ndarray:
    """S = Q·Kᵀ (h, n, m), or the additive score vᵀ·tanh(Q·W₁ + K·W₂); each query head with its key head."""
    k = shared(k, spec.heads)  # (h, m, d_k)
    if spec.score == "additive":
        return additive_scores(q, k, spec.w_1, spec.w_2, spec.v_a)
    return dot_scores(q, k)


def scaled(s: np.ndarray, spec: Spec) -> np.ndarray:
    """Z = scale·S, then c·tanh(Z / c) with ``softcap: c`` (same shape); the score bias is added after it."""
    z = spec.scale * s
    return z if spec.softcap is None else softcap(z, spec.softcap)


def biased(z: np.ndarray, spec: Spec, lo: int, hi: int) -> np.ndarray:
    """Z + B for the queries lo … hi − 1 and every key (h, b, m), in place; z itself without a score bias."""
    if spec.score_bias is not None:
        z += spec.score_bias.block(spec.heads, spec.query_positions, spec.key_positions, lo, hi, 0, spec.m)
    return z


def normalize(z: np.ndarray, spec: Spec, lo: int, hi: int) -> np.ndarray:
    """The weights from the scaled scores of the queries lo … hi − 1 (one block of attncli.core.stream)."""
    allowed = None if spec.mask is None else spec.mask.block(lo, hi)
    return weights_of(z, spec.normalize, allowed, spec.tokens[lo:hi])


def output_projection(heads: np.ndarray, spec: Spec) -> np.ndarray:
    """Y = concat(H₁ … H_h)·W_O + b_O (n, d_out), with the document's W_O and b_O when it has them."""
    return concat_heads(heads, spec.w_o, spec.b_o)


@np.errstate(over="ignore", invalid="ignore")  # overflow is checked for, and named below
def residual_of(added: np.ndarray, spec: Spec) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(R, LayerNorm(R)): R = X₀ + α·``added`` (Y, or post_norm(Y)); None where the document has no such step."""
    if spec.add_norm is None and not spec.residual:
        return None, None
    if spec.residual_scale != 1.0:  # R = X₀ + α·Y (Granite's residual_multiplier)
        added = spec.residual_scale * added
    if spec.add_norm is None:
        residual = spec.embedded + added
        check_finite(residual, "residual", spec.tokens)
        return residual, None
    gamma, beta, eps = spec.add_norm
    residual, normalized = norm_after(spec.embedded, added, gamma, beta, eps)
    check_finite(residual, "residual", spec.tokens)
    # an overflowing variance is inf and makes LayerNorm's rows β, quietly: check it too
    bad = ~np.isfinite(residual.var(axis=-1)) | ~np.isfinite(normalized).all(axis=-1)
    if bad.any():
        row = int(np.argmax(bad))
        raise AttnError("attention.add_norm_overflows_float64_row", row=row + 1, tokens=quoted(spec.tokens[row]))
    return residual, normalized


@np.errstate(over="ignore", invalid="ignore")
def normalized_rows(x: np.ndarray, norm: Norm, name: str, labels: list[str]) -> np.ndarray:
    """``norm`` of each row of x, or an error naming the row whose mean square (or variance) overflows float64.

    Beyond about 1e154 the square overflows: RMSNorm would then give 0 for the row, quietly.
    """
    spread = np.mean(x * x, axis=-1) if norm.kind == "rms" else x.var(axis=-1)  # (n,)
    if not np.isfinite(spread).all():
        row = int(np.argmax(~np.isfinite(spread)))
        what = "mean square" if norm.kind == "rms" else "variance"
        raise AttnError("attention.overflow_float64_row_row_too", name=name, row=row + 1, labels=quoted(labels[row]),
                        what=what)
    out = normalize_rows(x, norm)
    check_finite(out, name, labels)
    return out


# Set by check's search (attncli.teach.check.search), which reruns the stages as a learner did them: there an
# overflow is the learner's own number (e^800 = inf), not an error.
OVERFLOW_ALLOWED: ContextVar[bool] = ContextVar("overflow_allowed", default=False)


def check_finite(array: np.ndarray, name: str, labels: list[str]) -> None:
    """Overflow is an error naming the first row that overflowed, never NaN in the output."""
    if OVERFLOW_ALLOWED.get() or np.isfinite(array).all():
        return
    index = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
    raise overflow_error(name, index[0] if array.ndim == 3 else None, index[-2], labels)


def overflow_error(name: str, head: int | None, row: int, labels: list[str]) -> AttnError:
    """``scores overflow float64 at head 2, row 5 ('x5')`` (0-based ``head`` and ``row``)."""
    where = f"head {head + 1}, " if head is not None else ""
    return AttnError(
        "attention.overflow_float64_row_numbers_document", name=name, place=where, row=row + 1,
        labels=quoted(labels[row])
    )
