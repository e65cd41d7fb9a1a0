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

from attncli.core.attention import concat_heads, output_projection
from attncli.core.positions import rotate
from attncli.core.trace import Trace
from attncli.teach.check.indexer import indexer_slips
from attncli.teach.check.latent import latent_slips
from attncli.teach.check.max_logits import max_logit_slips
from attncli.teach.check.qknorm import qk_norm_slips
from attncli.teach.check.slips import Slip, arrays_of, by_spec, by_stage, rerun


def modern_slips(trace: Trace) -> list[Slip]:
    """The slips of the Part 2 keys this document uses, in the order they are preferred."""
    spec = trace.spec
    found: list[Slip] = []
    add = lambda name, make, **words: found.append(Slip(name, make, words))  # noqa: E731
    if spec.rope is not None:
        _rope_slips(trace, add)  # (its pairs, sign, positions and frequencies: the rope stage's variants)
    if spec.softcap is not None:
        add("softcap_left_out", by_spec(trace, softcap=None), c=f"{spec.softcap:g}")
    if spec.clip_qkv is not None:
        add("clip_left_out", by_spec(trace, clip_qkv=None), c=f"{spec.clip_qkv:g}")
    if spec.sinks is not None:
        add("sink_left_out", by_spec(trace, sinks=None))
    qk_norm_slips(trace, add)
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
    add("rope_as_projected",
        lambda rounding: dict(arrays_of(trace), queries=trace.queries_rotated, keys=trace.keys_rotated))
    if rope.attention_factor != 1:  # a on the queries only: the scores' rotated part times a, not a²
        plain = replace(rope, attention_factor=1.0)
        once = by_stage(trace, lambda: {"keys_rotated": rotate(trace.keys, spec.key_positions, plain)})
        add("rope_factor_once", once, a=f"{rope.attention_factor:.4g}", a2=f"{rope.attention_factor ** 2:.4g}")
