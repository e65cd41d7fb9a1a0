"""The lightning indexer's wrong versions (DeepSeek-V3.2, :mod:`attncli.core.indexer_stage`):

    indexer_head_weights_left_out   every head weighed 1 (as if W_IW were not there)
    indexer_scales_left_out         d^(−1/2) and H^(−1/2) left out: I √(H·d) times too large, the same keys kept
    indexer_smallest_kept           the top_k keys with the SMALLEST I kept: the table I right and an ascending
                                    sort, or the head weights' sign turned (each I negated)

A slip of I or of the selection keeps other keys: the attention after it (the weights, the dropped keys' weight,
the largest logits) is computed again with the slip's selection in place of the document's.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from attncli.core.indexer import select, selection_mask
from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.variants import Variant

AFTER = ("weights", "index_dropped", "max_logits")  # the stages that read the selection (spec.mask, indexer.kept)


def _selected(spec: Spec, kept: np.ndarray) -> Spec:
    """The Spec with ``kept`` (n, m) as the indexer's selection, ANDed into the document's own mask."""
    ix = spec.indexer
    return replace(spec, indexer=replace(ix, kept=kept), mask=selection_mask(ix.base, kept, spec.n, spec.m))


def _keeping(spec: Spec, a: Arrays, run) -> Spec:
    return _selected(spec, a["index_mask"].astype(bool))


def _with_weights(change):
    """The indexer with its head weights W_IW changed (``change(spec) -> W_IW``), its selection made again."""
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        return run(replace(spec, indexer=replace(spec.indexer, w_w=change(spec))), a)
    return apply


def _smallest_kept(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    if p.get("negated"):
        return _with_weights(lambda spec: -spec.indexer.w_w)(spec, a, p, run)
    out = dict(run(spec, a))
    table = out["index_scores"]  # (n, m), −inf where the document allows no key
    selected, kept, ties = select(np.where(np.isfinite(table), -table, -np.inf), spec.indexer.top_k)
    out.update(index_selected=selected, index_mask=kept.astype(np.int64), index_ties=ties)
    return out


def _again(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    """A stage after the selection, with the slip's selection."""
    return run(_keeping(spec, a, run), a)


LATER = tuple((name, _again) for name in AFTER)


def _weighed(spec: Spec) -> bool:
    return spec.indexer.w_w is not None and spec.indexer.kept is not None


INDEXER_VARIANTS = (
    Variant("indexer_head_weights_left_out", _with_weights(lambda spec: None),
            lambda spec: ({},) if _weighed(spec) else (), later=LATER),
    Variant("indexer_scales_left_out", _with_weights(lambda spec: spec.indexer.w_w * math.sqrt(spec.indexer.heads
                                                                                               * spec.indexer.d)),
            lambda spec: ({"H": spec.indexer.heads, "d": spec.indexer.d,
                           "factor": f"{math.sqrt(spec.indexer.heads * spec.indexer.d):.6g}"},) if _weighed(spec)
            else (), later=LATER),
    Variant("indexer_smallest_kept", _smallest_kept,
            lambda spec: ({"top_k": spec.indexer.top_k},) + (({"top_k": spec.indexer.top_k, "negated": 1},)
                                                             if _weighed(spec) else ()), later=LATER),
)
