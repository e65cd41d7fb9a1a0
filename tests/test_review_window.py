"""A second look at the streamed path with masks (issues 16 and 20): attend_streamed against attend, table by table.

Blocks, tiles and the narrow tiles along a causal or window band's edges are forced to many sizes (odd ones, edges
wider than the tile, one query per block), so that every branch of attncli.core.tiles meets every kind of mask and
score bias; a few sliding windows are compared with PyTorch's scaled_dot_product_attention too.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_stream_speed import document, spec_of

from attncli.core import stream, tiles
from attncli.core.attention import attend
from attncli.core.errors import AttnError
from attncli.core.stream import attend_streamed


def shapes(monkeypatch, rows: int, cells: int, edge: int) -> None:
    """Blocks of ``rows`` queries, tiles of ``cells`` scores, ``edge`` keys along a band's edge (at most the tile)."""
    monkeypatch.setattr(stream, "_fast_rows", lambda spec: rows)
    monkeypatch.setattr(stream, "BLOCK_CELLS", cells)
    monkeypatch.setattr(tiles, "EDGE_KEYS", edge)


# ---------------------------------------------------------------- overflow where the mask hides it


@pytest.mark.parametrize("mask, hidden", [({"causal": "upper_left"}, 11), ({"causal": "lower_right", "window": 2}, 0),
                                          ({"window": 2}, 11)], ids=["causal", "causal-window", "window"])
@pytest.mark.parametrize("threads", [1, 2])
def test_scores_that_overflow_in_masked_keys_are_the_same_error(mask, hidden, threads, monkeypatch):
    """attend computes S for every cell, masked or not, and names an overflow anywhere in it: the streamed path
    must not skip the keys outside a block's band when it checks (or it gives numbers where attend gives an error)."""
    shapes(monkeypatch, rows=2, cells=24, edge=3)
    data = document(1, n=4, m=12, heads=1)
    context = np.array(data["context"])
    context[hidden] *= 1e160  # a key outside every query's band; q·k overflows with queries of 1e160
    data.update(inputs=(np.array(data["inputs"]) * 1e160).tolist(), context=context.tolist())
    spec = spec_of(dict(data, mask=mask))
    with pytest.raises(AttnError) as full:
        attend(spec)
    with pytest.raises(AttnError) as streamed:
        attend_streamed(spec, threads=threads)
    assert str(streamed.value) == str(full.value)
    assert "scores overflow float64 at head 1, row 1" in str(full.value)
