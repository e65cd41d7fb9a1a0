"""One sequence's attention and its backward pass in float64, block by block over the queries (``attncli.reference``).

For query i and key j of a sequence of s_q queries and s_k keys, off = s_k − s_q (0 with ``causal="upper_left"``),
the stages in FlashAttention's and FlexAttention's order, each the core's function:

    S = Q·Kᵀ   Z = scale·S → c·tanh(Z / c) → − slope_h·|i + s_k − s_q − j| → + B (additive mask)
               → score_mod(Z, b, h, i, j)
    allowed: bool mask ∧ mask_mod ∧ (causal: j ≤ i + off) ∧ (window: i + off − left ≤ j ≤ i + off + right)
    A, lse, σ = softmax_parts(Z, allowed, sinks)          (:mod:`attncli.core.softmax`)
    H = (A ⊙ keep)·V / (1 − p)                            (dropout, FlashAttention's; without it H = A·V)

and backward (:mod:`attncli.core.backward`): dA = dH·Vᵀ ⊙ keep / (1 − p), dV = (A ⊙ keep / (1 − p))ᵀ·dH,
dZ = A ⊙ (dA − D), ds = −Σ σ·D, through score_mod by its derivative, dS = scale·dZ (· (1 − tanh²)), dQ = dS·K,
dK = dSᵀ·Q.  A job is one key/value head of one sequence with its group of query heads: it alone writes their
rows of H, dQ, lse and its own dK, dV, so jobs run on :func:`attncli.core.threads.run_parallel`'s threads.
Keys outside a block's causal/window band are never computed (a causal mask halves the work); each block of
queries holds about :data:`CELLS` scores per array, whatever n and m.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from attncli.core.backward import mix_back, scale_back, scores_back, sink_back, softmax_back
from attncli.core.scores import dot_scores
from attncli.core.scores import softcap as capped
from attncli.core.softmax import softmax_parts
from attncli.core.threads import run_parallel, stopped

CELLS = 1 << 19  # scores of one block of queries (4 MiB of float64 per array, a handful alive per thread)


@dataclass
class Rules:
    """What shapes the scores of every sequence (one reading, all sequences)."""

    scale: float
    softcap: float | None = None
    alibi: np.ndarray | None = None  # (batch or 1, h) slopes
    causal: str | None = None  # 'bottom_right' or 'upper_left'
    window: tuple[int, int] = (-1, -1)  # (left, right), −1 unbounded
    sinks: np.ndarray | None = None  # (h,) one logit per head
    score_mod: Callable | None = None  # (z, b, h, q_idx, kv_idx) -> z′, on arrays of the kind given (Mods)
    mask_mod: Callable | None = None  # (b, h, q_idx, kv_idx) -> bool
    p: float = 0.0  # dropout probability
    weights: bool = False  # keep A (h, s_q, s_k)


@dataclass
class Sequence:
    """One sequence's arrays, each a view into the caller's (no copy): rows first, heads second.

    q (s_q, h, d_k), k (s_k, g, d_k), v (s_k, g, d_v), d_o (s_q, h, d_v); bias, allowed and keep broadcast to
    (h, s_q, s_k); the outputs are written in place: out (s_q, h, d_v), lse (h, s_q), dq, dk, dv as q, k, v,
    weights (h, s_q, s_k) zero-filled.
    """

    index: int  # b, as score_mod and mask_mod see it
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    out: np.ndarray
    lse: np.ndarray
    d_o: np.ndarray | None = None
    bias: np.ndarray | None = None
    allowed: np.ndarray | None = None
    keep: np.ndarray | None = None
    weights: np.ndarray | None = None
    dq: np.ndarray | None = None
    dk: np.ndarray | None = None
    dv: np.ndarray | None = None
    d_sinks: np.ndarray | None = field(default=None)  # (h,) this sequence's share of ds


def key_span(rules: Rules, lo: int, hi: int, n: int, m: int) -> tuple[int, int]:
    """The keys [start, stop) that queries lo … hi − 1 may see at all through causal and window."""
    off = 0 if rules.causal == "upper_left" else m - n
    left, right = rules.window
    right = 0 if rules.causal is not None else right
    start = 0 if left < 0 else lo + off - left
    stop = m if right < 0 else hi - 1 + off + right + 1
    start, stop = min(max(start, 0), m), min(max(stop, 0), m)
    return start, max(start, stop)


def band(rules: Rules, lo: int, hi: int, s0: int, s1: int, n: int, m: int) -> np.ndarray | None:
    """causal ∧ window for queries lo … hi − 1 and keys s0 … s1 − 1 (b, t); None where they allow every key."""
    left, right = rules.window
    right = 0 if rules.causal is not None else right
    if left < 0 and right < 0:
        return None
    off = 0 if rules.causal == "upper_left" else m - n
    diagonal = np.arange(lo, hi)[:, None] + off  # i + off (b, 1)
    j = np.arange(s0, s1)[None, :]
    allowed = np.ones((hi - lo, s1 - s0), dtype=bool)
    if left >= 0:
        allowed &= j >= diagonal - left
    if right >= 0:
        allowed &= j <= diagonal + right
    return allowed


def attend_all(rules: Rules, sequences: list[Sequence], kv_heads: int, mods, threads: int | None = None) -> None:
    """Every sequence's outputs into its arrays; jobs (sequence, key/value head) on the core's threads."""
    jobs = [(s, j) for s in sequences for j in range(kv_heads)]
    for s in sequences:
        if s.d_o is not None and rules.sinks is not None:
            s.d_sinks = np.zeros((kv_heads, s.q.shape[1] // kv_heads))
    run_parallel(lambda job: _job(rules, job[0], job[1], kv_heads, mods), jobs, None, threads)
    for s in sequences:
        if s.d_sinks is not None:
            s.d_sinks = s.d_sinks.reshape(-1)  # (h,)


@np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore")
def _job(rules: Rules, s: Sequence, j: int, kv_heads: int, mods) -> None:
    """Key/value head j of one sequence: its query heads' rows block by block, and its dK, dV."""
    n, h = s.q.shape[:2]
    m = s.k.shape[0]
    group = h // kv_heads
    heads = slice(j * group, (j + 1) * group)
    k_j, v_j = np.ascontiguousarray(s.k[:, j]), np.ascontiguousarray(s.v[:, j])  # (m, d_k), (m, d_v)
    rows = int(max(16, CELLS // max(group * max(m, 1), 1)))
    for lo in range(0, n, rows):
        if stopped():  # Ctrl-C or an error in another job: the rest is not wanted
            return
        hi = min(lo + rows, n)
        s0, s1 = key_span(rules, lo, hi, n, m)
        if s0 == s1:
            _empty(rules, s, heads, lo, hi)
            continue
        _block(rules, s, j, heads, lo, hi, s0, s1, k_j[s0:s1], v_j[s0:s1], mods)


def _empty(rules: Rules, s: Sequence, heads: slice, lo: int, hi: int) -> None:
    """Queries that may see no key: H = 0, lse = −inf (or s_h, the sink taking the whole row), no gradient."""
    s.out[lo:hi, heads] = 0.0
    s.lse[heads, lo:hi] = -np.inf if rules.sinks is None else rules.sinks[heads, None]
    if s.dq is not None:
        s.dq[lo:hi, heads] = 0.0


def _block(rules: Rules, s: Sequence, j: int, heads: slice, lo: int, hi: int, s0: int, s1: int,
           k: np.ndarray, v: np.ndarray, mods) -> None:
    """Queries lo … hi − 1 of the group ``heads`` against keys s0 … s1 − 1: forward, then backward, in place."""
    b, t = hi - lo, s1 - s0
    q = np.ascontiguousarray(s.q[lo:hi, heads].transpose(1, 0, 2))  # (G, b, d_k)
    group = q.shape[0]
    scores = dot_scores(q, k[None])  # S = Q·Kᵀ (G, b, t), the group's heads against their one key head
    z = rules.scale * scores
    if rules.softcap is not None:
        z = capped(z, rules.softcap)
    bias = additive(rules, s, heads, lo, hi, s0, s1)
    if bias is not None:
        z += bias
    z_mod = z
    if rules.score_mod is not None:
        z_mod = mods.scores(z, s.index, heads, lo, hi, s0, s1)
    allowed = allowed_block(rules, s, heads, lo, hi, s0, s1, mods)
    sinks = None if rules.sinks is None else rules.sinks[heads]
    a, lse, sigma = softmax_parts(z_mod, allowed, sinks)  # (G, b, t), (G, b), (G, b) or None
    s.lse[heads, lo:hi] = lse
    if s.weights is not None:
        s.weights[heads, lo:hi, s0:s1] = a
    dropped = a
    if s.keep is not None:  # FlashAttention's dropout: kept weights × 1/(1 − p)
        dropped = a * _part(s.keep, heads, lo, hi, s0, s1) / (1.0 - rules.p)
    out = (dropped.reshape(-1, t) @ v).reshape(group, b, -1)  # H = A·V (G, b, d_v)
    s.out[lo:hi, heads] = out.transpose(1, 0, 2)
    if s.d_o is None:
        return
    d_h = np.ascontiguousarray(s.d_o[lo:hi, heads].transpose(1, 0, 2))  # (G, b, d_v)
    d_a, d_v = mix_back(d_h, dropped, v[None])  # dA (G, b, t), dV (1, t, d_v)
    if s.keep is not None:
        d_a *= _part(s.keep, heads, lo, hi, s0, s1) / (1.0 - rules.p)
    d_z, delta = softmax_back(a, d_a)  # dZ = A ⊙ (dA − D), D (G, b)
    if s.d_sinks is not None:
        s.d_sinks[j] += sink_back(sigma, delta)
    if rules.score_mod is not None:
        d_z = mods.scores_back(z, d_z, s.index, heads, lo, hi, s0, s1)
    d_s = scale_back(d_z, scores, rules.scale, rules.softcap)  # dS (G, b, t)
    d_q, d_k = scores_back(d_s, q, k[None])  # (G, b, d_k), (1, t, d_k)
    s.dq[lo:hi, heads] = d_q.transpose(1, 0, 2)
    if s.dk is not None:
        s.dk[s0:s1, j] += d_k[0]
        s.dv[s0:s1, j] += d_v[0]


def _part(x: np.ndarray, heads: slice, lo: int, hi: int, s0: int, s1: int) -> np.ndarray:
    """The block of an array broadcast to (h, s_q, s_k)."""
    return x[heads, lo:hi, s0:s1]


def additive(rules: Rules, s: Sequence, heads: slice, lo: int, hi: int, s0: int, s1: int) -> np.ndarray | None:
    """ALiBi's −slope_h·|i + s_k − s_q − j| plus the additive mask (its −inf cells 0: they are masked cells) for
    the block (G, b, t), or None without either."""
    n, m = s.q.shape[0], s.k.shape[0]
    bias = None
    if rules.alibi is not None:
        slopes = rules.alibi[min(s.index, len(rules.alibi) - 1), heads]  # (G,)
        distance = np.abs(np.arange(lo, hi)[:, None] + (m - n) - np.arange(s0, s1)[None, :])  # (b, t)
        bias = -slopes[:, None, None] * distance
    if s.bias is not None:
        part = _part(s.bias, heads, lo, hi, s0, s1)
        part = np.where(np.isneginf(part), 0.0, part)
        bias = part if bias is None else bias + part
    return bias


def allowed_block(rules: Rules, s: Sequence, heads: slice, lo: int, hi: int, s0: int, s1: int,
                  mods) -> np.ndarray | None:
    """Every mask of the block together (broadcast to (G, b, t)), or None where none masks a cell."""
    n, m = s.q.shape[0], s.k.shape[0]
    allowed = band(rules, lo, hi, s0, s1, n, m)
    parts = [] if allowed is None else [allowed[None]]
    if s.allowed is not None:
        parts.append(_part(s.allowed, heads, lo, hi, s0, s1))
    if s.bias is not None:  # an additive mask's −inf cells are masked cells (not −inf scores in the sums)
        parts.append(~np.isneginf(_part(s.bias, heads, lo, hi, s0, s1)))
    if rules.mask_mod is not None:
        parts.append(mods.mask(s.index, heads, lo, hi, s0, s1))
    if not parts:
        return None
    found = parts[0]
    for part in parts[1:]:
        found = found & part
    return found
