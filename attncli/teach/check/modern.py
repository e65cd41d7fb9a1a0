"""The slips of today's attention, for ``attncli check``'s hints.

Each slip is the computation done again with one change, as :mod:`attncli.teach.check.slips`
models the classic ones:

- rope: the pairs taken interleaved instead of as halves (or the reverse); the positions
  counted from 1 instead of 0; the rotation forgotten; turned the wrong way; only the
  queries turned; the values rotated too; the rotated queries and keys given as Q and K; the
  attention factor a put on cos and sin once (the queries' or the keys'), not on both;
- softcap: the cap left out;
- clip_qkv: the clamp of Q, K and V left out;
- sinks: the sink left out of the softmax's denominator;
- qk_norm: the norm forgotten, moved to the other side of the rotation, or the keys' γ used for the queries
  (:mod:`attncli.teach.check.qknorm`);
- pre_norm: the projections made from X instead of the normalised X̂;
- score_bias: the bias left out;
- mask: its convention inverted (1 read as "masked" where it means "may attend", or the reverse);
- kv_heads: query head i given key/value head i mod g instead of i // (h / g);
- residual: the output not added back to the inputs;
- Part 3: the query temperature left out; the output gate left out, or applied after the output projection;
  the residual's scale α left out; latent's slips (:mod:`attncli.teach.check.latent`); the largest logit's
  (:mod:`attncli.teach.check.max_logits`); Gemma 4's v_norm left out.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attncli.core.attention import concat_heads, output_projection
from attncli.core.norms import layer_norm
from attncli.core.positions import rotate
from attncli.core.trace import Trace
from attncli.teach.check.indexer import indexer_slips
from attncli.teach.check.latent import latent_slips
from attncli.teach.check.max_logits import max_logit_slips
from attncli.teach.check.qknorm import qk_norm_slips, regrouped
from attncli.teach.check.slips import Slip, arrays_of, by_spec, by_stage, rerun


def modern_slips(trace: Trace) -> list[Slip]:
    """The slips of the Part 2 keys this document uses, in the order they are preferred."""
    spec = trace.spec
    found: list[Slip] = []
    add = lambda name, make, **words: found.append(Slip(name, make, words))  # noqa: E731
    if spec.rope is not None:
        _rope_slips(trace, add)
    if spec.softcap is not None:
        add("softcap_left_out", by_spec(trace, softcap=None), c=f"{spec.softcap:g}")
    if spec.clip_qkv is not None:
        add("clip_left_out", by_spec(trace, clip_qkv=None), c=f"{spec.clip_qkv:g}")
    if spec.sinks is not None:
        add("sink_left_out", by_spec(trace, sinks=None))
    qk_norm_slips(trace, add)
    if spec.pre_norm is not None:
        add("pre_norm_left_out", by_spec(trace, pre_norm=None))
    if spec.score_bias is not None:
        add("score_bias_left_out", by_spec(trace, score_bias=None))
    inverted = None if spec.mask is None else spec.mask.inverted()
    if inverted is not None:
        add("mask_inverted", by_spec(trace, mask=inverted))
    if 1 < spec.kv_heads < spec.heads:
        add("kv_group", _kv_group(trace), g=spec.kv_heads, group=spec.heads // spec.kv_heads)
    if trace.residual is not None:
        add("residual_left_out", lambda rounding: _without_residual(trace))
    _part3_slips(trace, add)
    return found


def _part3_slips(trace: Trace, add) -> None:
    spec = trace.spec
    latent_slips(trace, add)
    indexer_slips(trace, add)
    if spec.query_temperature is not None:
        add("temperature_left_out", by_spec(trace, query_temperature=None))
    if spec.w_g is not None:
        add("gate_left_out", by_spec(trace, w_g=None, b_g=None))
        if trace.output is not None and trace.output.shape[1] == spec.heads * spec.d_v:
            add("gate_after_output", lambda rounding: _gate_after_output(trace))
    if spec.residual_scale != 1.0 and trace.residual is not None:
        add("residual_scale_left_out", by_spec(trace, residual_scale=1.0), alpha=f"{spec.residual_scale:g}")
    max_logit_slips(trace, add)
    if spec.v_norm is not None:
        add("v_norm_left_out", by_spec(trace, v_norm=None))


def _gate_after_output(trace: Trace) -> dict:
    """Y = (concat(H)·W_O + b_O) ⊙ concat(G): the gate multiplied into the output instead of the heads."""
    spec = trace.spec
    y = output_projection(trace.head_outputs, spec) * concat_heads(trace.gate)  # (n, d_out), d_out = h·d_v
    return rerun(trace, {"gated_head_outputs": trace.head_outputs, "output": y})


def _rope_slips(trace: Trace, add) -> None:
    spec = trace.spec
    rope = spec.rope
    if rope.dims > 2:  # with one pair both styles pair the same two dimensions
        other = "interleaved" if rope.style == "half" else "half"
        add("rope_interleaved" if rope.style == "half" else "rope_halves",
            by_spec(trace, rope=replace(rope, style=other)))
    if all(np.array_equal(p, np.arange(len(p))) for p in (spec.query_positions, spec.key_positions)):  # 0 … n − 1
        add("rope_from_1", by_spec(trace, positions=spec.query_positions + 1, context_positions=spec.key_positions + 1))
    forgotten = by_spec(trace, rope=None)
    add("rope_forgotten",
        lambda rounding: dict(forgotten(rounding), queries_rotated=trace.queries, keys_rotated=trace.keys))
    add("rope_reversed", by_spec(trace, rope=replace(rope, frequencies=-rope.frequencies)))
    add("rope_queries_only", by_stage(trace, lambda: {"keys_rotated": trace.keys}))
    if spec.d_v >= rope.dims:  # values wide enough to be (wrongly) turned
        add("rope_values", by_stage(trace, lambda: {"values": rotate(trace.values, spec.key_positions, rope)}))
    add("rope_as_projected",
        lambda rounding: dict(arrays_of(trace), queries=trace.queries_rotated, keys=trace.keys_rotated))
    if rope.attention_factor != 1:  # a on the queries only: the scores' rotated part times a, not a²
        plain = replace(rope, attention_factor=1.0)
        once = by_stage(trace, lambda: {"keys_rotated": rotate(trace.keys, spec.key_positions, plain)})
        add("rope_factor_once", once, a=f"{rope.attention_factor:.4g}", a2=f"{rope.attention_factor ** 2:.4g}")


def _kv_group(trace: Trace):
    """Query head i reading key/value head i mod g (the heads of a group taken in turn, not side by side)."""
    spec = trace.spec
    turn = np.arange(spec.heads) % spec.kv_heads
    changes = {name: None if getattr(spec, name) is None else getattr(spec, name)[turn]
               for name in ("w_k", "w_v", "b_k", "b_v")}
    changes["qk_norm"] = regrouped(spec.qk_norm, turn, spec.kv_heads, spec.d_k)
    wrong = by_spec(trace, **changes)

    def make(rounding):
        arrays = dict(wrong(rounding))  # its keys and values are one per query head: the answer's are the document's
        return dict(arrays, keys=trace.keys, values=trace.values, keys_rotated=trace.keys_rotated,
                    normalized_keys=trace.normalized_keys) if arrays else {}
    return make


def _without_residual(trace: Trace) -> dict:
    """R = Y (or post_norm(Y)): the output not added back to the inputs; LayerNorm of that with add_norm."""
    spec = trace.spec
    added = trace.output if trace.normalized_output is None else trace.normalized_output
    normalized = None if spec.add_norm is None else layer_norm(added, *spec.add_norm)
    return dict(arrays_of(trace), residual=added, normalized=normalized)

