"""A setting of the document left out, as a wrong version of the stage that applies it: what ``attncli check``
names when the learner's numbers are those of the same document without it.

    softcap_left_out       the scale stage without c·tanh(Z / c)        (Gemma 2's soft cap)
    clip_left_out          Q, K, V not clamped to [−c, c]                (MPT's and DBRX's clip_qkv)
    sink_left_out          softmax without the sink in its denominator   (gpt-oss's attention sinks)
    temperature_left_out   the queries not multiplied by τ               (Llama 4's query temperature)
    v_norm_left_out        V used as it is, not V̂                        (Gemma 4's v_norm)
    gate_left_out          H used as it is, not H ⊙ G                    (Qwen3-Next's output gate)
    gate_after_output      Y = (concat(H)·W_O + b_O) ⊙ concat(G): the gate on the output instead of the heads
"""

from __future__ import annotations

from dataclasses import replace

from attncli.core.attention import concat_heads, output_projection, projections
from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.variants import Variant, when


def _without(**settings):
    """The stage's own step on the document with ``settings`` (None: the setting left out)."""
    return lambda spec, a, p, run: run(replace(spec, **settings), a)


def _passed(written: str, read: str):
    """The stage leaves what it reads as it is: ``written`` is the ``read`` array."""
    return lambda spec, a, p, run: {written: a[read]}


def _unclamped(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    """Q, K and V as the projections made them (the clamp rewrites those keys, so they are made again here)."""
    q, k, v = projections(spec, a.get("normalized_inputs"))
    if spec.shared_kv is not None:  # (kv_from: an earlier layer's keys and values)
        k, v = spec.shared_kv
    return {"queries": q, "keys": k, "values": v}


def temperature_left_out(last_queries, tempered: str) -> Variant:
    """The query temperature's stage (its ``last_queries(a, spec)`` and the key ``tempered`` it writes them under)
    leaving the queries as they are."""
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        return {**run(spec, a), tempered: last_queries(a, spec)}
    return Variant("temperature_left_out", apply, when(lambda spec: spec.query_temperature is not None))


def _gate_after_output(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    y = output_projection(a["head_outputs"], spec) * concat_heads(a["gate"])  # (n, d_out), d_out = h·d_v
    return {"output": y}


SOFTCAP_LEFT_OUT = Variant("softcap_left_out", _without(softcap=None),
                           when(lambda spec: spec.softcap is not None, c=lambda spec: f"{spec.softcap:g}"))
CLIP_LEFT_OUT = Variant("clip_left_out", _unclamped,
                        when(lambda spec: spec.clip_qkv is not None and spec.latent is None,
                             c=lambda spec: f"{spec.clip_qkv:g}"))
SINK_LEFT_OUT = Variant("sink_left_out", _without(sinks=None), when(lambda spec: spec.sinks is not None))
V_NORM_LEFT_OUT = Variant("v_norm_left_out", _passed("normalized_values", "values"),
                          when(lambda spec: spec.v_norm is not None))
GATE_LEFT_OUT = Variant("gate_left_out", _passed("gated_head_outputs", "head_outputs"),
                        when(lambda spec: spec.w_g is not None))
GATE_AFTER_OUTPUT = Variant("gate_after_output", _gate_after_output,
                            when(lambda spec: spec.w_g is not None and _output_width(spec) == spec.heads * spec.d_v))


def _output_width(spec: Spec) -> int:
    return spec.heads * spec.d_v if spec.w_o is None else spec.w_o.shape[-1]
