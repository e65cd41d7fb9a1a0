"""The ``differential`` step of the walkthrough: the followed head's pair, its λ, the combined weights of the
followed query, their mix of both heads' values and its RMSNorm (differential attention, DiffLlama).

    λ = e^(λ_q1·λ_k1) − e^(λ_q2·λ_k2) + λ_init          (λ_init from ``layer`` when the document gives it)
    w = a₁ − λ·a₂                                       the query's two rows of weights, combined
    o = Σ_j w_j·[v₁ | v₂]_j,  ô = (1 − λ_init)·o / √(mean(o²) + ε)
"""

from __future__ import annotations

import numpy as np

from attncli.core.differential import pair_values
from attncli.core.trace import Trace
from attncli.outputs.numbers import dims, number
from attncli.teach.explain.step import MAX_LINES, Focus, Numbers, Step, allowed_row, paragraphs
from attncli.teach.lines import factor, vector


def differential_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, i, prec = trace.spec, focus.query, focus.precision
    d, half = spec.differential, spec.heads // 2
    pair = focus.head % half  # heads pair and pair + h/2
    lam, w = float(trace.differential_lambda[pair]), trace.differential_weights[pair, i]
    a1, a2 = trace.weights[pair, i], trace.weights[pair + half, i]
    o, o_hat = trace.differential_head_outputs[pair, i], trace.normalized_head_outputs[pair, i]
    num = lambda x: number(x, prec)  # noqa: E731
    e1, e2 = (float(e[pair]) for e in d.exponentials(half))
    init = f"0.8 − 0.6·e^(−0.3·{d.layer}) = {num(d.lambda_init)}" if d.layer is not None else num(d.lambda_init)
    rms = float(np.sqrt(np.mean(o * o) + d.eps))
    tokens = spec.context_tokens
    seen = allowed_row(trace, i, pair)
    shown = [j for j in range(min(spec.m, MAX_LINES)) if seen[j]]
    lines = [f"λ_init = {init}",
             f"λ = λ_init = {num(lam)}" if d.lambda_q1 is None else  # (no λ vectors given)
             f"λ = e^(λ_q1·λ_k1) − e^(λ_q2·λ_k2) + λ_init = {num(e1)} − {num(e2)} + {num(d.lambda_init)} = {num(lam)}",
             *(f"{tokens[j]}: w = {num(a1[j])} − {factor(lam, prec)}·{factor(a2[j], prec)} = {num(w[j])}"
               for j in shown),
             f"{spec.tokens[i]}: o = Σ_j w_j·[v₁ | v₂]_j = {vector(o, prec)}",
             f"√(mean(o²) + ε) = {num(rms)}   ε = {d.eps:g}",
             f"{spec.tokens[i]}: ô = {num(1 - d.lambda_init)}·o / {num(rms)} = {vector(o_hat, prec)}"]
    rows = spec.tokens
    numbers = [Numbers("differential_weights", t["label"]["differential_weights"], trace.differential_weights[pair],
                       rows, tokens, heat=True),  # masked cells: 0, as compute's tables show W and A
               Numbers("pair_values", t["label"]["pair_values"], pair_values(trace.values, spec.heads)[pair], tokens,
                       dims(2 * spec.d_v)),
               Numbers("normalized_head_outputs", t["label"]["normalized_head_outputs"],
                       trace.normalized_head_outputs[pair], rows, dims(2 * spec.d_v))]
    ctx = dict(ctx, first=pair + 1, second=pair + half + 1, lam=num(lam), init=num(d.lambda_init),
               scale=num(1 - d.lambda_init), left=2 * pair + 1, right=2 * pair + 2, width=2 * spec.d_v)
    return Step("differential", t["differential"]["title"], "W = A₁ − λ·A₂   Ô = (1 − λ_init)·RMSNorm(W·[V₁ | V₂])",
                paragraphs(t, "differential", ["body", "norm"], ctx), lines, numbers)
