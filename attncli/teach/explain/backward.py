"""Explain's step ``backward``: one cell of dZ written out, why D spares the n × m storage, why the scale matters.

    D_i = Σ_j a_ij·dA_ij = rowsum(dH_i ⊙ H_i)       dZ_ij = a_ij·(dA_ij − D_i)

for the chosen query of the chosen head and the key it weighs most; then the row's saturation with the document's
scale and without it (Σ_j a_ij·(1 − a_ij), the size of the softmax's derivative), on the document's own scores
(when the two are within 5 % of each other or print alike, the paragraph says the scale changes little here, and
that the scores are small only when they are: the largest in size at most 1); two keys whose weights print alike
are called a tie;
with ``latent``, that key's latent gradient dc_KV and the shared rotary key's, summed over the heads.
"""

from __future__ import annotations

import math

import numpy as np

from attncli.core.trace import Trace
from attncli.outputs.numbers import number
from attncli.teach.explain.facts import unscaled_weights
from attncli.teach.explain.step import Focus, Numbers, Step, allowed_row, paragraphs
from attncli.teach.lines import vector


def _saturation(a: np.ndarray) -> tuple[float, float]:
    """(the largest weight, Σ_j a_j·(1 − a_j)) of a row of weights."""
    return float(a.max()), float(np.sum(a * (1.0 - a)))


def _alike(with_scale: float, without: float, precision: int) -> bool:
    """The two Σ a(1 − a) within 5 % of each other, or printed alike: the scale changes the row little."""
    return (abs(with_scale - without) < 0.05 * min(with_scale, without)
            or number(with_scale, precision) == number(without, precision))


def _scale_key(scaled: float, plain: float, top: float, precision: int) -> str:
    """``scale`` when the scale changes the row's Σ a(1 − a), else ``scale_little`` when the scores are small (the
    largest in size at most 1: no weight more than e² times another, far from saturated) or ``scale_alike``."""
    if not _alike(scaled, plain, precision):
        return "scale"
    return "scale_little" if top <= 1.0 else "scale_alike"


def followed_query(trace: Trace, focus: Focus) -> int:
    """The query this step follows (0-based): ``focus.query``, unless --query was left out and it sees fewer than two
    keys (a causal document's first query: a = 1 and dZ = 0, nothing to show); then the first that sees two or more."""
    seen = [int(allowed_row(trace, i, focus.head).sum()) for i in range(trace.spec.n)]  # (n,): keys each query sees
    if focus.asked or seen[focus.query] >= 2:
        return focus.query
    return next((i for i, count in enumerate(seen) if count >= 2), focus.query)


def backward_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, h, i, p = trace.spec, focus.head, followed_query(trace, focus), focus.precision
    g = trace.gradients
    allowed = allowed_row(trace, i, h)
    a, d_a, d_z = trace.weights[h, i], g["grad_weights"][h, i], g["grad_scaled_scores"][h, i]
    j = int(np.argmax(np.where(allowed, a, -1.0)))
    q, k, delta = spec.tokens[i], spec.context_tokens[j], float(g["delta"][h, i])
    d_text = number(delta, p) if delta >= 0 else f"({number(delta, p)})"
    lines = [f"{q}: D = dh·h = {vector(g['grad_head_outputs'][h, i], p)}·{vector(trace.head_outputs[h, i], p)} = "
             f"{number(delta, p)}",
             f"{q}, {k}: dZ = a·(dA − D) = {number(a[j], p)}·({number(d_a[j], p)} − {d_text}) = "
             f"{number(d_z[j], p)}"]
    first_seen = int(allowed_row(trace, 0, h).sum())
    moved = not focus.asked and i != 0 and first_seen < 2  # why not query 1, in one line
    tied = [x for x in np.flatnonzero(allowed) if number(a[x], p) == number(a[j], p)]  # its weight, as printed
    keys = ["default_query"] * moved + ["body" if len(tied) < 2 else "body_tie", "no_storage"]
    words = dict(ctx, key=f"“{k}”", q=f"“{q}”", i=i + 1, query_one=f"“{spec.tokens[0]}”",
                 seen=t["backward"]["seen_one" if first_seen else "seen_none"], count=len(tied), w=number(a[j], p))
    if allowed.any() and spec.scale != 1.0 and trace.scores is not None:
        scaled = _saturation(a[allowed] / max(float(a[allowed].sum()), 1e-300))
        unscaled = unscaled_weights(trace, h, i)[allowed]  # scale 1, the rest of the row as it is
        plain = _saturation(unscaled / max(float(unscaled.sum()), 1e-300))
        lines.append(f"scale {spec.scale:.{p}g}: max a = {number(scaled[0], p)}, Σ a(1 − a) = {number(scaled[1], p)};"
                     f"   scale 1: max a = {number(plain[0], p)}, Σ a(1 − a) = {number(plain[1], p)}")
        top = float(np.abs(trace.scores[h, i][allowed]).max())
        keys.append(_scale_key(scaled[1], plain[1], top, p))
        sqrt = 1.0 / math.sqrt(spec.d_k)
        why = t["backward"]["why_sqrt" if math.isclose(spec.scale, sqrt, rel_tol=1e-9) else "why_other"]
        words.update(with_max=number(scaled[0], p), with_sum=number(scaled[1], p), without_max=number(plain[0], p),
                     without_sum=number(plain[1], p), why=why.format(sqrt=number(sqrt, p)),
                     top=number(top, p))
    if spec.latent is not None and "grad_latent_kv" in g:  # the heads' key and value gradients meet in c_KV and k_r
        d_k_r = g["grad_keys"][:, j, spec.latent.d_nope:].sum(axis=0)  # (d_r,)
        lines.append(f"{k}: dc_KV = Σ_h (dk_nope,h | dv_h)·W_UKV,hᵀ = {vector(g['grad_latent_kv'][j], p)},   "
                     f"dk_r = Σ_h dk_r,h = {vector(d_k_r, p)}")
        keys.append("latent")
    formula, text = "dZ = A ⊙ (dA − D),  D = rowsum(dH ⊙ H)", paragraphs(t, "backward", keys, words)
    if spec.differential is not None:  # dA comes through the pair, and D is no longer dH·H
        lines[0] = f"{q}: D = Σ_j a_j·dA_j = {number(delta, p)}"
        half = spec.heads // 2
        words.update(first=h % half + 1, second=h % half + half + 1, sign="" if h < half else "−λ·")
        formula = "dZ = A ⊙ (dA − D),  D = rowsum(A ⊙ dA)"
        text = [t["differential"]["backward"].format(**words) if key == "body" else text[n]
                for n, key in enumerate(keys) if key != "no_storage"]
    table = t["backward"]["table"] if spec.heads == 1 else t["backward"]["table_head"].format(head=h + 1)
    numbers = [Numbers("grad_scaled_scores", table, g["grad_scaled_scores"][h], spec.tokens,
                       spec.context_tokens, None if spec.allowed is None else ~spec.allowed[h])]
    return Step("backward", t["backward"]["title"], formula, text, lines, numbers)
