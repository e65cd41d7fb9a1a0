"""The slips of today's attention, for ``attncli check``'s hints.

Each slip is the computation done again with one change, as :mod:`attncli.teach.check.slips`
models the classic ones:

- rope: the pairs taken interleaved instead of as halves (or the reverse); the positions
  counted from 1 instead of 0; the rotation forgotten; turned the wrong way; only the
  queries turned; the values rotated too; the rotated queries and keys given as Q and K; the
  attention factor a put on cos and sin once (the queries' or the keys'), not on both;
- qk_norm: the norm forgotten, moved to the other side of the rotation, or the keys' γ used for the queries
  (:mod:`attncli.teach.check.qknorm`);
- pre_norm: the projections made from X instead of the normalised X̂;
- score_bias: the bias left out;
- mask: its convention inverted (1 read as "masked" where it means "may attend", or the reverse);
- kv_heads: query head i given key/value head i mod g instead of i // (h / g);
- residual: the output not added back to the inputs;
- Part 3: latent's slips (:mod:`attncli.teach.check.latent`), the indexer's (:mod:`attncli.teach.check.indexer`),
  the largest logit's (:mod:`attncli.teach.check.max_logits`).

The settings left out (the soft cap, clip_qkv, the sink, the query temperature, the output gate or the gate on
the output, v_norm) are their stages' declared variants (:mod:`attncli.core.variants.left_out`), as are RoPE's
pairs, sign, positions and frequencies (:mod:`attncli.core.variants.rope`).
"""

from __future__ import annotations

from dataclasses import replace

from attncli.core.positions import rotate
from attncli.core.trace import Trace
from attncli.teach.check.indexer import indexer_slips
from attncli.teach.check.latent import latent_slips
from attncli.teach.check.max_logits import max_logit_slips
from attncli.teach.check.qknorm import qk_norm_slips
from attncli.teach.check.slips import Slip, arrays_of, by_stage


def modern_slips(trace: Trace) -> list[Slip]:
    """The slips of the Part 2 keys this document uses, in the order they are preferred."""
    spec = trace.spec
    found: list[Slip] = []
    add = lambda name, make, **words: found.append(Slip(name, make, words))  # noqa: E731
    if spec.rope is not None:
        _rope_slips(trace, add)  # (its pairs, sign, positions and frequencies: the rope stage's variants)
    qk_norm_slips(trace, add)
    _part3_slips(trace, add)
    return found


def _part3_slips(trace: Trace, add) -> None:
    latent_slips(trace, add)
    indexer_slips(trace, add)
    max_logit_slips(trace, add)


def _rope_slips(trace: Trace, add) -> None:
    spec = trace.spec
    rope = spec.rope
    add("rope_as_projected",
        lambda rounding: dict(arrays_of(trace), queries=trace.queries_rotated, keys=trace.keys_rotated))
    if rope.attention_factor != 1:  # a on the queries only: the scores' rotated part times a, not a²
        plain = replace(rope, attention_factor=1.0)
        once = by_stage(trace, lambda: {"keys_rotated": rotate(trace.keys, spec.key_positions, plain)})
        add("rope_factor_once", once, a=f"{rope.attention_factor:.4g}", a2=f"{rope.attention_factor ** 2:.4g}")
