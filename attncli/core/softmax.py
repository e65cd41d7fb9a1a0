"""Stage: from scaled scores to weights, each query's row over the keys it may attend to.

    softmax   a_ij = exp(z_ij) / Σ_j exp(z_ij)      (stable: the row max subtracted first)
    sum       a_ij = z_ij / Σ_j z_ij                (seed 002's first attempt)
    none      a_ij = z_ij

Masked entries are exactly 0; a row with no allowed key gets all-zero weights (as
PyTorch's scaled_dot_product_attention since 2.5).

With sinks (gpt-oss), one logit s_h per head joins each row's denominator as a key with no value:

    a_ij = exp(z_ij) / (Σ_j exp(z_ij) + exp(s_h))     σ_i = exp(s_h) / (…)     (the sink's share)

and lse_i = ln(Σ_j exp(z_ij) (+ exp(s_h))), the log-sum-exp a kernel keeps for the backward pass
(:func:`softmax_parts`).

>>> softmax(np.array([[[0.0, 0.0]]])).tolist()
[[[0.5, 0.5]]]
>>> softmax(np.array([[[1.0, 2.0]]]), np.array([[False, False]])).tolist()
[[[0.0, 0.0]]]
"""

from __future__ import annotations

import numpy as np

from attncli.core.errors import AttnError

NORMALIZERS = ("softmax", "sum", "none")


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


def softmax_parts(z: np.ndarray, allowed: np.ndarray | None = None, sinks: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(weights (h, n, m), lse (h, n), sink_weights (h, n) or None) of z (h, n, m), ``sinks`` (h,) one logit a head.

    Stable: c = the row max over the allowed keys and s_h, so every exp is at most 1; lse = c + ln(total).  A row
    with no allowed key has weights 0 and lse −inf (ln 0: null in JSON), or s_h with a sink (its whole share).
    Without sinks the weights are :func:`softmax`'s, bit for bit.

    >>> a, lse, sink = softmax_parts(np.array([[[0.0, 0.0]]]), sinks=np.array([0.0]))
    >>> a.tolist(), round(float(lse[0, 0]), 6), sink.tolist()
    ([[[0.3333333333333333, 0.3333333333333333]]], 1.098612, [[0.3333333333333333]])
    """
    if allowed is not None:
        z = np.where(allowed, z, -np.inf)
    top = z.max(axis=-1, keepdims=True)  # (h, n, 1)
    s = None if sinks is None else np.asarray(sinks, dtype=np.float64).reshape(-1, 1, 1)  # (h, 1, 1)
    if s is not None:
        top = np.maximum(top, s)
    top[~np.isfinite(top)] = 0.0  # a fully masked row: exp(-inf - 0) = 0 everywhere
    e = np.subtract(z, top, out=z if allowed is not None else None)
    np.exp(e, out=e)  # (h, n, m), at most 1
    total = e.sum(axis=-1, keepdims=True)  # (h, n, 1)
    sink = None
    if s is not None:
        sink = np.exp(s - top)  # (h, n, 1)
        total += sink
        sink = (sink / total)[..., 0]  # total ≥ exp(s − c) > 0 unless exp underflows beside larger scores
    weights = np.divide(e, total, out=e, where=total > 0)
    with np.errstate(divide="ignore"):
        lse = (top + np.log(total))[..., 0]  # (h, n); ln 0 = −inf for a row with no key and no sink
    return weights, lse, sink


def sum_normalize(z: np.ndarray, allowed: np.ndarray | None, labels: list[str]) -> np.ndarray:
    """Each row divided by its own sum (masked entries 0 and left out); a zero sum is an error."""
    if allowed is not None:
        z = np.where(allowed, z, 0.0)
    total = z.sum(axis=-1, keepdims=True)  # (h, n, 1)
    empty = np.zeros(z.shape[-2], dtype=bool) if allowed is None else ~allowed.any(axis=-1)
    zero = (total[..., 0] == 0) & ~empty  # (h, n); fully masked rows stay 0
    if zero.any():
        head, row = (int(i) for i in np.argwhere(zero)[0])
        raise AttnError(
            "softmax.normalize_sum_scores_query_head", row=row + 1, labels=labels[row], head=head + 1
        )
    return np.divide(z, total, out=np.zeros_like(z), where=total != 0)


def normalize(z: np.ndarray, how: str, allowed: np.ndarray | None, labels: list[str]) -> np.ndarray:
    """The weights (h, n, m) from the scaled scores z (h, n, m) by ``how`` (one of NORMALIZERS).

    ``labels`` name the rows of z in an error (``sum`` cannot divide by a zero row sum).
    """
    if how == "softmax":
        return softmax(z, allowed)
    if how == "sum":
        return sum_normalize(z, allowed, labels)
    return z if allowed is None else np.where(allowed, z, 0.0)
