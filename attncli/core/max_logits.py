"""Stage: each head's largest logit, and Kimi K2's QK-Clip of the query and key weights (docs/format.md).

    S_max^h = max over the allowed cells (i, j) of Z_hij     Z: what enters the softmax (scale·S, capped, + B)
    γ_h     = τ / S_max^h  when S_max^h > τ, else 1           (min(1, τ/S_max^h) for a positive maximum)
    S_new,h = γ_h·S_h                                        what the rescaled W_Q, W_K give (:func:`factors`)
    S_max,new^h = max over the allowed cells of Z(γ_h·S_h)   τ when γ_h < 1, without a cap or a bias

MuonClip (Kimi K2) watches S_max^h while it trains and, past τ, multiplies W_Q and W_K of that head by √γ_h
each, so the next step's logits are γ_h times as large.  Grouped heads share a key head: it gets √γ of its
group's smallest γ, and each query head the rest of its own γ (every head's scores become γ_h·S_h); with
``latent`` the rotary query columns take γ_h whole, as the shared rotary key k_r is left untouched.

The full computation reads the maxima off its scaled scores; the streamed one (no n × m matrix) finds them in a
pass of its own over blocks of queries (:func:`largest_by_blocks`).  Nothing here carries a gradient: the
maximum is not on the path of L.

>>> z = np.array([[[1.0, 5.0], [5.0, 2.0]]])                         # (h, n, m): a tie, the first cell wins
>>> top, cells = largest(z, None)
>>> top.tolist(), cells.tolist()
([5.0], [[0.0, 1.0]])
>>> gammas(np.array([200.0, 50.0, -3.0]), 100.0).tolist()
[0.5, 1.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attncli.core import attention as maths
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, Quantity, Stage

BLOCK_BYTES = 32 << 20  # one block of scores (h × b × m float64) in the streamed pass


def largest(z: np.ndarray, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Each head's largest allowed cell of z (h, n, m) -> (the maxima (h,), their cells (h, 2) as (i, j)); the first
    cell in row order on ties; −inf (and cell −inf) for a head with no allowed cell."""
    h, n, m = z.shape
    seen = z if allowed is None else np.where(allowed, z, -np.inf)  # (h, n, m)
    flat = seen.reshape(h, n * m)
    at = flat.argmax(axis=1) if n * m else np.zeros(h, dtype=int)  # argmax keeps the first of equal maxima
    top = flat[np.arange(h), at] if n * m else np.full(h, -np.inf)
    cells = np.stack(np.unravel_index(at, (n, m)), axis=1).astype(np.float64)  # (h, 2)
    cells[np.isneginf(top)] = -np.inf
    return top, cells


def gammas(top: np.ndarray, tau: float) -> np.ndarray:
    """γ (h,): τ / S_max where S_max > τ, else 1 (a head whose maximum is at most τ, or that has none)."""
    return np.where(top > tau, tau / np.where(top > tau, top, 1.0), 1.0)


def factors(gamma: np.ndarray, kv_heads: int) -> tuple[np.ndarray, np.ndarray]:
    """The factors on each query head's W_Q, b_Q (h,) and each key/value head's W_K, b_K (g,): √γ_min of its group on
    a key head, γ_h / √γ_min on query head h, so that every head's scores become γ_h·S_h (√γ each when g = h).

    >>> q, k = factors(np.array([0.25, 1.0]), 1)
    >>> q.tolist(), k.tolist()
    ([0.5, 2.0], [0.5])
    """
    h = gamma.shape[0]
    smallest = gamma.reshape(kv_heads, h // kv_heads).min(axis=1)  # (g,) the most clipped head of each group
    on_key = np.sqrt(smallest)
    return gamma / np.repeat(on_key, h // kv_heads), on_key


def rescaled(spec: Spec, gamma: np.ndarray) -> Arrays:
    """The rescaled W_Q, b_Q (per query head) and W_K, b_K (per key/value head); with ``latent``, head h's rotary
    query columns take γ_h and the rest √γ_h, its W_UK √γ_h (k_r, shared, is untouched)."""
    if spec.latent is not None:
        d_r = spec.latent.d_rope
        on_q = np.repeat(np.sqrt(gamma)[:, None], spec.d_k, axis=1)  # (h, d_k)
        on_q[:, spec.d_k - d_r:] = gamma[:, None]  # the rotated part is last in each head (rope.part: last)
        on_k = np.sqrt(gamma)
        w_q, b_q = spec.w_q * on_q[:, None, :], None if spec.b_q is None else spec.b_q * on_q
    else:
        on_query, on_k = factors(gamma, spec.kv_heads)
        w_q = spec.w_q * on_query[:, None, None]  # (h, d_model, d_k)
        b_q = None if spec.b_q is None else spec.b_q * on_query[:, None]
    return {"qk_clip_weight_query": w_q, "qk_clip_bias_query": b_q,
            "qk_clip_weight_key": spec.w_k * on_k[:, None, None],  # (g, d_ctx, d_k); latent: W_UK (h, r_kv, d_nope)
            "qk_clip_bias_key": None if spec.b_k is None or spec.latent is not None else spec.b_k * on_k[:, None]}


def largest_by_blocks(spec: Spec, q: np.ndarray, k: np.ndarray, gamma: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`largest` of Z (of Z(γ·S) with ``gamma``) from the kernel's q (h, n, d_k) and k (g, m, d_k), a block of
    queries at a time: no n × m matrix is kept."""
    h, n, m = spec.heads, spec.n, spec.m
    rows = int(max(1, min(n, BLOCK_BYTES // max(1, 8 * h * m))))
    best, cells = np.full(h, -np.inf), np.full((h, 2), -np.inf)
    for lo in range(0, n, rows):
        hi = min(n, lo + rows)
        s = maths.scores(q[:, lo:hi], k, spec)  # (h, b, m)
        if gamma is not None:
            s *= gamma[:, None, None]
        z = maths.biased(maths.scaled(s, spec), spec, lo, hi)
        top, at = largest(z, None if spec.mask is None else spec.mask.block(lo, hi))
        better = top > best  # strictly: an earlier block keeps a tie
        best[better], cells[better] = top[better], at[better] + [lo, 0]
    return best, cells


def _maxima(spec: Spec, a: Arrays, qk: Callable[[Arrays, Spec], tuple[np.ndarray, np.ndarray]]) -> Arrays:
    """The full computation reads its scaled scores; the streamed one (they are None) a pass of its own over the
    kernel's queries and keys, ``qk(a, spec)``."""
    z = a.get("scaled_scores")
    top, cells = largest(z, spec.allowed) if z is not None else largest_by_blocks(spec, *qk(a, spec))
    made = {"max_logits": top, "max_logit_cells": cells}
    if spec.qk_clip is None:
        return made
    gamma = gammas(top, spec.qk_clip)
    if a.get("scores") is not None:
        z_new = maths.scaled(a["scores"] * gamma[:, None, None], spec)  # (h, n, m): Z of γ_h·S_h
        if a.get("score_bias") is not None:
            z_new += np.where(np.isneginf(a["score_bias"]), 0.0, a["score_bias"])  # (−inf cells are masked)
        new, _ = largest(z_new, spec.allowed)
    else:
        new, _ = largest_by_blocks(spec, *qk(a, spec), gamma)
    return {**made, "qk_clip_gamma": gamma, "qk_clip_max_logits": new, **rescaled(spec, gamma)}


# ---------------------------------------------------------------- the quantities and the stage


def _tau(spec: Spec) -> str:
    return f"{spec.qk_clip:g}" if spec.qk_clip is not None else "τ"


def _on_query(spec: Spec) -> tuple[str, str]:
    """The factor on W_Q as text and LaTeX: √γ, γ/√γ_min with grouped heads, √γ | γ on the rotary part with latent."""
    if spec.latent is not None:
        return "[√γ | γ on the rotated part]", r"[\sqrt{\gamma} \mid \gamma]"
    if spec.kv_heads < spec.heads:
        return "γ/√γ_min", r"\frac{\gamma}{\sqrt{\gamma_{\min}}}"
    return "√γ", r"\sqrt{\gamma}"


def _on_key(spec: Spec) -> tuple[str, str]:
    return ("√γ_min", r"\sqrt{\gamma_{\min}}") if spec.kv_heads < spec.heads else ("√γ", r"\sqrt{\gamma}")


def _q(key: str, symbol: str, title: str, shape: str, text, latex, needs: str, parameter: bool = False,
       checkable: bool = False, null_at_minus_inf: bool = False, steps: tuple = ()) -> Quantity:
    return Quantity(key, symbol, title, shape, needs, "", parameter, text, latex, checkable=checkable,
                    null_at_minus_inf=null_at_minus_inf, steps=steps)


def _scaled_weight(key: str, symbol: str, title: str, shape: str, of: str, factor, needs: str) -> Quantity:
    """A rescaled weight or bias: ``W_Q^clip = √γ·W_Q``."""
    return _q(key, symbol, title, shape, lambda spec: f"{of}^clip = {factor(spec)[0]}·{of}",
              lambda spec, up: up(of + r"^{\text{clip}}") + f" = {factor(spec)[1]} " + up(of), needs, parameter=True)


MAX_LOGITS = _q("max_logits", "S_max", "Max logits", "h", lambda spec: "S_max = max over the allowed (i, j) of Z",
                lambda spec, up: r"S_{\max} = \max_{(i, j)} Z_{ij}", "max_logits: or qk_clip:", checkable=True,
                null_at_minus_inf=True, steps=(5,))  # −inf: a head with no allowed cell
CELLS = _q("max_logit_cells", "", "Max logit cells", "h 2", lambda spec: "(i, j) = argmax Z",
           lambda spec, up: r"(i, j) = \operatorname{argmax} Z", "max_logits: or qk_clip:", null_at_minus_inf=True)
GAMMA = _q("qk_clip_gamma", "γ", "QK-Clip factors", "h", lambda spec: f"γ = min(1, {_tau(spec)} / S_max)",
           lambda spec, up: rf"\gamma = \min\left(1, \frac{{{_tau(spec)}}}{{S_{{\max}}}}\right)", "qk_clip:",
           checkable=True, steps=(5,))
NEW_MAX = _q("qk_clip_max_logits", "S_max_new", "Max logits after QK-Clip", "h",
             lambda spec: "S_max_new = max over the allowed (i, j) of Z(γ·S)",
             lambda spec, up: r"S_{\max}^{\text{new}} = \max_{(i, j)} Z(\gamma S)_{ij}", "qk_clip:", checkable=True,
             null_at_minus_inf=True, steps=(5,))
CLIPPED = (
    _scaled_weight("qk_clip_weight_query", "W_Q_clip", "Query projection after QK-Clip", "h d_model d_k", "W_Q",
                   _on_query, "qk_clip:"),
    _scaled_weight("qk_clip_bias_query", "b_Q_clip", "Query bias after QK-Clip", "h d_k", "b_Q", _on_query,
                   "qk_clip: and bias.query:"),
    _scaled_weight("qk_clip_weight_key", "W_K_clip", "Key projection after QK-Clip", "g d_ctx d_k", "W_K", _on_key,
                   "qk_clip:"),
    _scaled_weight("qk_clip_bias_key", "b_K_clip", "Key bias after QK-Clip", "g d_k", "b_K", _on_key,
                   "qk_clip: and bias.key:"),
)

def max_logits_stage(qk: Callable[[Arrays, Spec], tuple[np.ndarray, np.ndarray]]) -> Stage:
    """The stage; ``qk(a, spec)`` gives the queries and keys the scores see (the streamed path's pass reads them)."""
    return Stage("max_logits", "S_max = max Z over the allowed cells;  γ = min(1, τ/S_max), W_Q and W_K rescaled",
                 ("scores", "score_bias", "scaled_scores"), (MAX_LOGITS, CELLS, GAMMA, NEW_MAX, *CLIPPED),
                 lambda spec, a: _maxima(spec, a, qk), lambda spec: spec.max_logits or spec.qk_clip is not None,
                 part="after")
