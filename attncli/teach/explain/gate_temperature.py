"""What Part 3's query temperature, chunked mask, output gate and residual scale add to the walkthrough's steps.

    step 4     τ for the chosen query at its position; the scores are those of τ·q′; the chunk it sees
    step 8     the gate's σ values for the chosen query, and H ⊙ G before the output projection
    residual   r = x + α·y
"""

from __future__ import annotations

import numpy as np

from attncli.core.temperature import tempered
from attncli.core.trace import Trace
from attncli.teach.explain.step import Focus, Numbers, scored
from attncli.teach.lines import vector


def scored_queries(trace: Trace) -> np.ndarray:
    """The queries step 4 multiplies with the keys (h, n, d_k): as projected, rotated or normalised (the last of
    them), times τ with a temperature."""
    q = scored(trace)[0]
    return q if trace.query_temperature is None else tempered(q, trace.query_temperature)


def temperature_lines(trace: Trace, focus: Focus) -> tuple[list[str], list[str], dict]:
    """The line working out τ for the chosen query, the paragraph's key and its words (none without τ)."""
    spec, i = trace.spec, focus.query
    if spec.query_temperature is None:
        return [], [], {}
    floor_scale, attn_scale = spec.query_temperature
    p, tau = spec.query_positions[i], trace.query_temperature[i]
    floor = int(np.floor((p + 1) / floor_scale))
    line = (f"{spec.tokens[i]}: τ = 1 + {attn_scale:g}·ln(1 + ⌊({p:g} + 1) / {floor_scale:g}⌋) = "
            f"1 + {attn_scale:g}·ln({1 + floor}) = {tau:.{focus.precision}f}")
    return [line], ["temperature"], {"tau": f"{tau:.{focus.precision}f}", "position": f"{p:g}",
                                     "floor_scale": f"{floor_scale:g}", "attn_scale": f"{attn_scale:g}"}


def chunk_words(trace: Trace, focus: Focus) -> tuple[list[str], dict]:
    """The chunk paragraph's key and words: which keys the chosen query's chunk holds."""
    mask = trace.spec.mask
    if mask is None or mask.chunk is None:
        return [], {}
    i = focus.query + mask.offset  # i′
    first = i // mask.chunk * mask.chunk
    last = min(first + mask.chunk, trace.spec.m)
    tokens = trace.spec.context_tokens
    seen = f"{tokens[first]} … {tokens[last - 1]}" if 0 <= first < last else "—"
    return ["mask_chunk"], {"chunk": mask.chunk, "chunk_keys": seen}


def gate_lines(trace: Trace, focus: Focus, t: dict) -> tuple[list[str], list[Numbers], list[str]]:
    """The chosen query's gate and gated head output in its head, their tables, and the paragraph's key."""
    if trace.gate is None:
        return [], [], []
    spec, h, i, p = trace.spec, focus.head, focus.query, focus.precision
    g, y = trace.gate[h, i], trace.gated_head_outputs[h, i]
    x, bias = "x̂" if spec.pre_norm is not None else "x", " + b_G" if spec.b_g is not None else ""
    lines = [f"{spec.tokens[i]}: g = σ({x}·W_G{bias}) = {vector(g, p)}",
             f"{spec.tokens[i]}: y ⊙ g = {vector(trace.head_outputs[h, i], p)} ⊙ {vector(g, p)} = {vector(y, p)}"]
    columns = [str(c + 1) for c in range(spec.d_v)]
    numbers = [Numbers("gate", t["label"]["gate"], trace.gate[h], spec.tokens, columns),
               Numbers("gated_head_outputs", t["label"]["gated_head_outputs"], trace.gated_head_outputs[h],
                       spec.tokens, columns)]
    return lines, numbers, ["gate"]
