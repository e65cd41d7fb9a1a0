"""The slip of today's attention that is about the answer's writing, not a stage, for ``attncli check``'s hints:

- rope_as_projected: the rotated queries and keys given as Q and K (the projections right, written under the
  wrong key).

Every other slip of Part 2 and Part 3 is its stage's declared variant (:mod:`attncli.core.variants`): the settings
left out (:mod:`~attncli.core.variants.left_out`), RoPE's pairs, sign, positions, frequencies and attention factor
(:mod:`~attncli.core.variants.rope`), qk_norm's (:mod:`~attncli.core.variants.qknorm`), latent's
(:mod:`~attncli.core.variants.latent`), the indexer's (:mod:`~attncli.core.variants.indexer`) and the largest
logit's (:mod:`~attncli.core.variants.max_logits`).
"""

from __future__ import annotations

from attncli.core.trace import Trace
from attncli.teach.check.slips import Slip, arrays_of


def modern_slips(trace: Trace) -> list[Slip]:
    """The slips of the answer's writing this document can show: the rotated Q′ and K′ given as Q and K."""
    if trace.spec.rope is None:
        return []
    return [Slip("rope_as_projected",
                 lambda rounding: dict(arrays_of(trace), queries=trace.queries_rotated, keys=trace.keys_rotated))]
