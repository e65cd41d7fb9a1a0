"""The page's KV-cache timeline: the causal attention decoded one token at a time, as a generating model runs it.

At step t the new token's key and value join the cache, its query is scored against the keys the cache holds (a
sliding window lets the oldest go), and the softmax over those alone gives row t of the full causal computation:
the cache stores K and V so that no earlier row is computed again, and changes no number.  Each step's weights and
output are computed here from the cache alone (z over the cached keys, e^(z − max) / Σ, · V of the cache), then
compared with the full table's row.
"""

from __future__ import annotations

import numpy as np

from attncli.core.trace import Trace

MAX_STEPS = 32  # the steps the page holds (a long document's first ones)


def decodes(trace: Trace) -> bool:
    """Whether the document is decoded token by token: self-attention with a causal mask, a softmax, n = m."""
    spec = trace.spec
    return (spec.context is None and spec.mask is not None and spec.mask.causal is not None and spec.n == spec.m
            and spec.mask.matrix is None and spec.normalize == "softmax" and trace.scaled_scores is not None
            and trace.weights is not None and trace.head_outputs is not None and trace.values is not None)


def decode_data(trace: Trace, precision: int) -> dict | None:
    """Per head, per step t: the cached keys (indices), their scaled scores and weights, the output row; and
    whether the step equals row t of the full computation (to 1e-12 of its size)."""
    if not decodes(trace):
        return None
    spec = trace.spec
    allowed = spec.allowed
    group = spec.heads // spec.kv_heads
    text = lambda values: [f"{x:.{precision}f}" for x in values]  # noqa: E731
    heads = []
    for h in range(spec.heads):
        steps = []
        for t in range(min(spec.n, MAX_STEPS)):
            cache = np.flatnonzero(allowed[h, t, : t + 1])  # the keys the cache holds at step t
            z = trace.scaled_scores[h, t, cache]
            top = z.max() if cache.size else 0.0
            if spec.sinks is not None:
                top = max(top, spec.sinks[h])
            e = np.exp(z - top)
            total = e.sum() + (0.0 if spec.sinks is None else np.exp(spec.sinks[h] - top))
            a = e / total if total > 0 else e
            out = a @ trace.mixed_values[h // group, cache]
            full_a, full_out = trace.weights[h, t, cache], trace.head_outputs[h, t]
            same = bool(np.abs(a - full_a).max(initial=0) <= 1e-12 and
                        np.abs(out - full_out).max(initial=0) <= 1e-12 * max(1.0, np.abs(full_out).max(initial=0)))
            steps.append({"cache": [int(j) for j in cache], "z": text(z), "a": text(a), "out": text(out),
                          "same": same})
        heads.append(steps)
    return {"heads": heads, "n": spec.n, "shown": min(spec.n, MAX_STEPS),
            "window": None if spec.mask.window is None else int(spec.mask.window)}
