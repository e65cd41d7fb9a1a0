"""The lightning indexer's wrong versions (DeepSeek-V3.2, :mod:`attncli.core.indexer_stage`): the table I right, the
selection made the wrong way round — the top_k keys with the SMALLEST I kept (an ascending sort, or the sign of the
head weights lost only in the selection).  The slips of I itself (head weights or scales left out) are check's
hints in :mod:`attncli.teach.check.indexer`.
"""

from __future__ import annotations

import numpy as np

from attncli.core.indexer import select
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, Variant


def _smallest_kept(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    out = dict(run(spec, a))
    table = out["index_scores"]  # (n, m), −inf where the document allows no key
    selected, kept, ties = select(np.where(np.isfinite(table), -table, -np.inf), spec.indexer.top_k)
    out.update(index_selected=selected, index_mask=kept.astype(np.int64), index_ties=ties)
    return out


INDEXER_VARIANTS = (
    Variant("indexer_smallest_kept", _smallest_kept, lambda spec: ({"top_k": spec.indexer.top_k},)),
)
