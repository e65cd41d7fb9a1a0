"""What Gemma 4's ``k_eq_v`` and ``v_norm`` add to step 3 (the projections): V taken from the key projection, and
each value row divided by its root mean square, V̂ = V / √(mean(V²) + ε), before the weights mix them.
"""

from __future__ import annotations

import math

from attncli.core.trace import Trace
from attncli.outputs.numbers import dims
from attncli.teach.explain.step import MAX_LINES, Focus, Numbers
from attncli.teach.lines import subscript, vector


def lines(trace: Trace, focus: Focus, t: dict, kv: int, written: list[str], numbers: list[Numbers], keys: list[str]
          ) -> tuple[list[str], list[Numbers], list[str]]:
    """Step 3's worked lines, tables and paragraph keys, with the normalised values and V = K's sentences."""
    spec, p = trace.spec, focus.precision
    if spec.k_eq_v:  # no W_V: the body says the key projection is the value, and k_eq_v why
        keys = [*("body_k_eq_v" if key == "body" else key for key in keys), "k_eq_v"]
    if spec.v_norm is None:
        return written, numbers, keys
    extra = []
    for j in range(min(spec.m, MAX_LINES)):
        v = trace.values[kv, j]
        rms = math.sqrt(float(v @ v) / spec.d_v + spec.v_norm)
        extra.append(f"{spec.context_tokens[j]}: v̂{subscript(j + 1)} = v{subscript(j + 1)} / {rms:.{p}f} = "
                     f"{vector(trace.normalized_values[kv, j], p)}")
    table = Numbers("normalized_values", t["label"]["normalized_values"], trace.normalized_values[kv],
                    spec.context_tokens, dims(spec.d_v))
    return [*written, *extra], [*numbers, table], [*keys, "v_norm"]
