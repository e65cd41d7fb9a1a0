"""The slips of ``indexer`` (DeepSeek-V3.2's lightning indexer), for ``attncli check``'s hints (each the computation
again with one change, the selection made anew from it):

- the head weights left out (every head weighed 1, as if W_IW were not there);
- the two scales left out (d^(−1/2) inside the ReLU, H^(−1/2) outside: I comes out √(H·d) times too large, the same
  keys kept);
- the smallest I kept instead of the largest (the head weights' sign turned: each I negated).

The attention after the indexer keeps the document's selection (it is the Spec's mask): these slips show in
``index_scores`` and ``index_mask``.
"""

from __future__ import annotations

import math
from dataclasses import replace

from attncli.core.trace import Trace
from attncli.inputs.indexer import with_selection
from attncli.teach.check.slips import by_spec


def indexer_slips(trace: Trace, add) -> None:
    """Add the slips of the document's ``indexer`` (none without it)."""
    spec = trace.spec
    ix = spec.indexer
    if ix is None or ix.kept is None:
        return

    def selected(indexer) -> dict:
        """The Spec fields of a changed indexer, its selection made again over the document's own mask."""
        changed = with_selection(replace(spec, mask=ix.base, indexer=replace(indexer, kept=None, base=None)))
        return {"mask": changed.mask, "indexer": changed.indexer}

    if ix.w_w is not None:
        add("indexer_head_weights_left_out", by_spec(trace, **selected(replace(ix, w_w=None))))
        factor = math.sqrt(ix.heads * ix.d)
        add("indexer_scales_left_out", by_spec(trace, **selected(replace(ix, w_w=ix.w_w * factor))),
            H=ix.heads, d=ix.d, factor=f"{factor:.6g}")
        add("indexer_smallest_kept", by_spec(trace, **selected(replace(ix, w_w=-ix.w_w))), top_k=ix.top_k)
