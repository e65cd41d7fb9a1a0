"""What ``max_logits`` and ``qk_clip`` add to step 5 (softmax): the head's largest logit, and QK-Clip's γ.

    S_max = {top} at query {at_query}, key {at_key}          (over every query of the head, not the chosen one only)
    γ = τ / S_max = …,  W_Q, W_K × √γ  ->  new S_max         (qk_clip)
"""

from __future__ import annotations

import numpy as np

from attncli.core.trace import Trace
from attncli.outputs.numbers import number
from attncli.teach.explain.step import Focus


def max_logit_sentences(trace: Trace, focus: Focus, t: dict, keys: list[str], lines: list[str], ctx: dict
                        ) -> tuple[list[str], list[str], dict]:
    """The head's largest logit and its cell (and QK-Clip's γ and new maximum), as paragraphs and worked lines."""
    if trace.max_logits is None:
        return keys, lines, ctx
    spec, h, p = trace.spec, focus.head, focus.precision
    top = float(trace.max_logits[h])
    if np.isneginf(top):
        return [*keys, "max_logit_none"], lines, ctx
    i, j = (int(c) for c in trace.max_logit_cells[h])
    words = {"top": number(top, p), "at_query": spec.tokens[i], "at_key": spec.context_tokens[j]}
    lines = [*lines, f"S_max = Z[{spec.tokens[i]}, {spec.context_tokens[j]}] = {number(top, p)}"]
    keys = [*keys, "max_logit"]
    if spec.qk_clip is not None:
        gamma, new = float(trace.qk_clip_gamma[h]), float(trace.qk_clip_max_logits[h])
        kind = "latent" if spec.latent is not None else "grouped" if spec.kv_heads < spec.heads else "heads"
        words.update(tau=f"{spec.qk_clip:g}", gamma=number(gamma, p), new=number(new, p),
                     rule=t["softmax"][f"rule_{kind}"])
        keys.append("qk_clip" if gamma < 1 else "qk_clip_unchanged")
        if gamma < 1:
            lines.append(f"γ = {spec.qk_clip:g} / {number(top, p)} = {number(gamma, p)}   new S_max = {number(new, p)}")
    return keys, lines, dict(ctx, **words)
