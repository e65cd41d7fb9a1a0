"""Bounds on the scores, from Q, K and V before any score is computed: what the streamed path may skip.

    |q·k| ≤ ‖q‖·‖k‖ ≤ d_k·max|q|·max|k|         (Cauchy–Schwarz; the second from the largest entries)

Far below overflow, and with scale·Q finite (the unchecked tiles fold the scale into Q), no tile of scores
needs checking (:func:`norms_cannot_overflow`, or :func:`cannot_overflow` when a norm's square itself
overflows); when |scale·q·k| ≤ EXP_LIMIT for a whole head, exp needs no row maximum subtracted
(:func:`needs_shift`, which bounds a sink's |s_h| likewise), since softmax is the same for any shift;
values near the largest float are summed scaled by a power of two (:func:`value_exponent`).
"""

from __future__ import annotations

import math

import numpy as np

from attncli.core.scores import kv_head_of
from attncli.core.spec import Spec

SAFE = 1e300  # a bound on |score| below this cannot overflow float64
EXP_LIMIT = 60.0  # |scale·q·k| ≤ this for a whole head: exp needs no row max (e^60 ≈ 1e26 cannot overflow)
TINY = float(np.finfo(np.float64).smallest_subnormal)  # more than any square's rounding error where it underflows


def cannot_overflow(q: np.ndarray, k: np.ndarray, spec: Spec) -> bool:
    """|q·k| ≤ d_k·max|q|·max|k|: when that bound is far from overflow, and scale·Q too, no block needs checking.

    (Two passes over Q and K and no temporary array: cheaper than row norms.)
    """
    if spec.score != "dot":
        return False
    q_max = largest(q)
    bound = spec.d_k * q_max * largest(k) * max(1.0, abs(spec.scale))  # a Python float: inf on overflow
    return bound + bias_bound(spec) < SAFE and abs(spec.scale) * q_max < SAFE


def largest(a: np.ndarray) -> float:
    """max |a|, from two passes (max and min) and no temporary array."""
    return max(abs(float(a.max())), abs(float(a.min())))


def bias_bound(spec: Spec) -> float:
    """max |B|: 0 without a score bias."""
    if spec.score_bias is None:
        return 0.0
    return spec.score_bias.bound(spec.query_positions, spec.key_positions)


def largest_norms(q: np.ndarray, k: np.ndarray, v: np.ndarray, spec: Spec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """max‖q_i‖, max‖k_j‖, max‖v_j‖ of each query head ((h,) each; the K/V heads' repeated for the heads sharing
    them), in one pass over Q, K and V; inf where a square overflows.  Never below the true norms: squares that
    underflow (entries below 1e-154) are rounded by less than TINY each, so d·TINY is added to the sums."""
    with np.errstate(over="ignore"):
        norm = lambda a: np.sqrt(np.einsum("hnd,hnd->hn", a, a).max(axis=1) + a.shape[2] * TINY)  # noqa: E731  (h,)
        kv = kv_head_of(spec.heads, spec.kv_heads)
        return norm(q), norm(k)[kv], norm(v)[kv]


def norms_cannot_overflow(norms: tuple[np.ndarray, np.ndarray, np.ndarray], spec: Spec) -> bool:
    """|q·k| ≤ ‖q‖·‖k‖ (Cauchy–Schwarz): when that bound, scaled or not, is far from overflow, and scale·Q too
    (|q_c| ≤ ‖q‖), no tile needs checking (a tighter bound than :func:`cannot_overflow`'s, from the norms the path
    computes anyway)."""
    bound = float((norms[0] * norms[1]).max()) * max(1.0, abs(spec.scale))  # inf when a norm overflowed
    return bound + bias_bound(spec) < SAFE and abs(spec.scale) * float(norms[0].max()) < SAFE


def value_exponent(v: np.ndarray, spec: Spec, norms: tuple[np.ndarray, np.ndarray, np.ndarray]) -> int:
    """The k ≥ 0 for which the tiles sum e·V·2⁻ᵏ: Σ_j e_j·v_j (every e_j ≤ 1 once the row max is subtracted) stays
    below SAFE.  attend divides first, and its weighted mean of values near 1e307 is finite where the sum is not;
    a power of two scales exactly, so H = 2ᵏ·(Σ e·V·2⁻ᵏ) / Σ e is the same number.  0 unless m·max‖v‖ ≥ SAFE."""
    if float(norms[2].max()) * spec.m < SAFE:
        return 0
    v_max = largest(v)  # ‖v‖ may be inf where the entries are not
    return max(0, math.ceil(math.log2(spec.m) + math.log2(v_max) - math.log2(SAFE)) + 1)


def needs_shift(q: np.ndarray, k: np.ndarray, v: np.ndarray, spec: Spec,
                 norms: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Per head, whether exp needs the row max subtracted (h,).

    Cauchy–Schwarz bounds every scaled score of head h by |scale|·max‖q_i‖·max‖k_j‖.
    When that is at most EXP_LIMIT, exp(z) lies in [e^-60, e^60]: no overflow or
    underflow, and e·V stays far from overflow while |V| is not astronomically large.
    ``norms``: :func:`largest_norms`, when already computed.
    """
    q_norm, k_norm, v_norm = largest_norms(q, k, v, spec) if norms is None else norms
    bound = abs(spec.scale) * q_norm * k_norm  # (h,)
    if spec.softcap is not None:  # |c·tanh(z / c)| < c
        bound = np.minimum(bound, spec.softcap)
    bound = bound + bias_bound(spec)
    values = v_norm * spec.m * math.exp(EXP_LIMIT)  # (h,) a bound on |e·V| (|v_jc| ≤ ‖v_j‖)
    sinks = np.zeros_like(bound) if spec.sinks is None else np.abs(spec.sinks)  # exp(s_h) joins each row's total
    return ~((bound <= EXP_LIMIT) & (values < SAFE) & (sinks <= EXP_LIMIT))
