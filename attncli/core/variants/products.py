"""The products' wrong versions: S = Q·Kᵀ, H = A·V and Y = concat(H)·W_O with an operand transposed, swapped or
replaced, and the key/value head of each query head.

    scores   Q·K (no transpose), K·Qᵀ, Q·Vᵀ (the values as keys); key/value head i mod g, or one for every head
    mix      A·K, Aᵀ·V, one weighted value left out, the weights rounded first
    output   concat(H) without W_O (with b_O or not), the heads in reverse order, b_O left out, W_O as W·x
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attncli.core.attention import concat_heads
from attncli.core.gate import gated_or_not
from attncli.core.scores import shared
from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.variants import Variant, when


def _dot(spec: Spec) -> bool:
    return spec.score == "dot" and spec.latent is None


def _scores(fn):
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        q, k = a["kernel_queries"], shared(a["kernel_keys"], spec.heads)  # (h, n, d_k), (h, m, d_k)
        return {"scores": fn(q, k, a, spec, p)}
    return apply


def _kv_map(p: dict):
    """Query head i reading key/value head ``p["map"][i]``: the scores' step and the mix's."""
    def scores(q, k, a, spec, p):
        return q @ np.swapaxes(a["kernel_keys"][p["map"]], -1, -2)

    def mix(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        return {"head_outputs": a["weights"] @ a["values"][p["map"]]}
    return scores, mix


def _grouped(spec: Spec) -> bool:
    return _dot(spec) and 1 < spec.kv_heads < spec.heads


def _kv_cases(spec: Spec) -> tuple:
    if not _grouped(spec):
        return ()
    group = spec.heads // spec.kv_heads
    return ({"name": "kv_group", "map": np.arange(spec.heads) % spec.kv_heads, "g": spec.kv_heads, "group": group},
            {"name": "kv_one_head", "map": np.zeros(spec.heads, dtype=int), "g": spec.kv_heads, "group": group})


_KV_SCORES, _KV_MIX = _kv_map({})
SCORE_VARIANTS = (
    Variant("not_transposed", _scores(lambda q, k, a, spec, p: q @ k),
            when(lambda spec: _dot(spec) and spec.d_k == spec.m)),
    Variant("scores_transposed", _scores(lambda q, k, a, spec, p: k @ np.swapaxes(q, -1, -2)),
            when(lambda spec: _dot(spec) and spec.n == spec.m)),
    Variant("values_as_keys",
            _scores(lambda q, k, a, spec, p: q @ np.swapaxes(shared(a["values"], spec.heads), -1, -2)),
            when(lambda spec: _dot(spec) and spec.d_v == spec.d_k)),
    Variant("kv_group", _scores(_KV_SCORES), _kv_cases, later=(("mix", _KV_MIX),)),
)


# ---------------------------------------------------------------- H = A·V


def _mix(fn):
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        return {"head_outputs": fn(a["weights"], shared(a["values"], spec.heads), a, spec, p)}
    return apply


def _one_left_out(spec: Spec) -> tuple:
    if spec.m < 2:
        return ()
    digits = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    return tuple({"j": str(j + 1).translate(digits), "token": spec.context_tokens[j], "key": j}
                 for j in range(min(spec.m, 16)))


def _rounding(step: float):
    """H = round(A)·V; the learner may write the weights rounded too (``_weights_written``)."""
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        rounded = np.round(a["weights"] / step) * step
        return {"head_outputs": rounded @ shared(a["values"], spec.heads), "_weights_written": rounded}
    return apply


_WRITTEN = lambda spec: ({"written": "weights"},)  # noqa: E731  (the weights may be written rounded too)
MIX_VARIANTS = (
    Variant("times_keys", _mix(lambda a, v, arrays, spec, p: a @ shared(arrays["kernel_keys"], spec.heads)),
            when(_dot)),
    Variant("left_out_one", _mix(lambda a, v, arrays, spec, p: a @ v - a[..., p["key"]:p["key"] + 1]
                                 * v[:, p["key"]:p["key"] + 1, :]), _one_left_out),
    Variant("weights_column", _mix(lambda a, v, arrays, spec, p: np.swapaxes(a, -1, -2) @ v),
            when(lambda spec: spec.n == spec.m)),
    Variant("rounded_half", _rounding(0.5), _WRITTEN),
    Variant("rounded_1", _rounding(0.1), _WRITTEN),
    Variant("rounded_2", _rounding(0.01), _WRITTEN),
)


# ---------------------------------------------------------------- Y = concat(H)·W_O + b_O


def _output(fn):
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        return {"output": fn(gated_or_not(a), spec)}
    return apply


def _w_o(spec: Spec) -> bool:
    return spec.w_o is not None


OUTPUT_VARIANTS = (
    Variant("w_o_left_out_b_o_kept", _output(lambda heads, spec: concat_heads(heads) + spec.b_o),
            when(lambda spec: _w_o(spec) and spec.b_o is not None and spec.b_o.shape[0] == spec.heads * spec.d_v)),
    Variant("w_o_left_out", _output(lambda heads, spec: concat_heads(heads)), when(_w_o)),
    Variant("bias_left_out", lambda spec, a, p, run: run(replace(spec, b_o=None), a),
            when(lambda spec: spec.b_o is not None, names=lambda spec: "b_O")),
    Variant("weights_as_wx", lambda spec, a, p, run: run(replace(spec, w_o=spec.w_o.T), a),
            when(lambda spec: _w_o(spec) and spec.w_o.shape[0] == spec.w_o.shape[1], names=lambda spec: "W_O")),
    Variant("heads_order", _output(lambda heads, spec: concat_heads(heads[::-1], spec.w_o, spec.b_o)),
            when(lambda spec: spec.heads > 1)),
)
