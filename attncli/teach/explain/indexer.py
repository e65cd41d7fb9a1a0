"""The extra step of ``indexer`` (DeepSeek-V3.2's lightning indexer), as data: the chosen query's row of the index
table I, the keys it kept (top_k, ties by the lower index), the ties at the cut, and the weight full attention
would have given the dropped keys.

    I_s,t = Σ_h w_s,h·H^(−1/2)·ReLU(d^(−1/2)·q_s,h·k_t)      kept(s) = top_k(I_s)      A: softmax over the kept keys
"""

from __future__ import annotations

import numpy as np

from attncli.core.trace import Trace
from attncli.outputs.numbers import dims, number
from attncli.teach.explain.step import MAX_LINES, Focus, Numbers, Step
from attncli.teach.texts import texts


def indexer_lines(trace: Trace, focus: Focus, t: dict) -> list[str]:
    """One line per key (at most MAX_LINES): its I and whether the query kept it, dropped it, or may not see it."""
    spec, i, p = trace.spec, focus.query, focus.precision
    row, kept = trace.index_scores[i], trace.index_mask[i].astype(bool)
    rank = {int(t_): r + 1 for r, t_ in enumerate(trace.index_selected[i]) if t_ >= 0}
    ix = spec.indexer
    lines = []
    for j in range(min(spec.m, MAX_LINES)):
        token = spec.context_tokens[j]
        if np.isneginf(row[j]):
            lines.append(t["line_masked"].format(token=token))
            continue
        terms = " + ".join(f"{number(float(trace.index_head_weights[i, h]), p)}·ReLU("
                           f"{number(float(trace.index_queries[h, i] @ trace.index_keys[j]) * ix.d ** -0.5, p)})"
                           for h in range(min(ix.heads, 4)))
        more = " + …" if ix.heads > 4 else ""
        value = number(float(row[j]), p)
        what = t["kept_line"].format(rank=rank[j]) if kept[j] else t["dropped_line"]
        formula = f"I = {ix.heads}^(−1/2)·({terms}{more}) = {value}"
        lines.append(t["line"].format(token=token, formula=formula, what=what))
    if spec.m > MAX_LINES:
        lines.append("…")
    return lines


def indexer_step(trace: Trace, focus: Focus, t_all: dict, ctx: dict) -> Step:
    spec, i, h, p = trace.spec, focus.query, focus.head, focus.precision
    t, ix = texts(focus.lang)["indexer"], spec.indexer
    kept = [spec.context_tokens[int(j)] for j in trace.index_selected[i] if j >= 0]
    seen = int(np.isfinite(trace.index_scores[i]).sum())
    ctx = dict(ctx, H=ix.heads, d=ix.d, top_k=ix.top_k, seen=seen, count=len(kept),
               kept=t["sep"].join(f"“{k}”" for k in kept), ties=int(trace.index_ties[i]))
    keys = ["body", "all" if seen <= ix.top_k else "some"]
    if trace.index_ties[i]:
        keys.append("ties")
    lines = indexer_lines(trace, focus, t)
    if trace.index_dropped_weight is not None and seen > ix.top_k:
        share = float(trace.index_dropped_weight[h, i])
        keys.append("dropped")
        ctx["share"] = number(share, p)
        ctx["percent"] = f"{100 * share:.{max(p - 2, 1)}f}%"
    keys.append("backward")
    numbers = [Numbers("index_scores", t["table"], trace.index_scores, spec.tokens, spec.context_tokens,
                       np.isneginf(trace.index_scores)),
               Numbers("index_queries", t["queries"].format(i=i + 1), trace.index_queries[:, i],
                       [f"h{k + 1}" for k in range(ix.heads)], dims(ix.d))]
    formula = "I = Σ_h w_h·H^(−1/2)·ReLU(d^(−1/2)·q_h·k),   kept = top_k(I)"
    return Step("indexer", t["title"].format(**ctx), formula, [t[key].format(**ctx) for key in keys], lines, numbers)
