"""The stages of the lightning indexer (:mod:`attncli.core.indexer`) on a Spec: ``indexer`` and ``index_dropped``.

``indexer`` runs with the query and key stages (it reads X̂, and c_Q with latent): the indexer's queries and key,
its head weights, the table I, the keys each query keeps and the ties at the cut.  ``index_dropped`` runs after
the weights, block by block on the streamed path too: how much of each query's weight full attention (the
document's own mask) would have given the keys the indexer dropped.  Neither has a backward step: the selection is
a fixed mask (the model runs the indexer under no_grad, and top-k has no derivative).
"""

from __future__ import annotations

import numpy as np

from attncli.core.indexer import dropped_weight, head_weights, index_keys, index_queries, index_scores, select
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, Lazy, Quantity, Stage, rows_in

READS = ("inputs", "positional", "normalized_inputs", "context", "latent_queries")


def document_allowed(spec: Spec, lo: int = 0, hi: int | None = None) -> np.ndarray | None:
    """What the document's own mask allows for the queries lo … hi − 1 ((b, m); None: every key): before the
    selection is folded into ``spec.mask`` that mask itself, after it the one the indexer kept aside."""
    mask = spec.mask if spec.indexer.kept is None else spec.indexer.base
    return None if mask is None else mask.block(lo, spec.n if hi is None else hi)


def _index(spec: Spec, a: Arrays) -> Arrays:
    ix = spec.indexer
    x = rows_in(spec, a)  # X̂ (n, d_model)
    x_q = a["latent_queries"] if ix.from_latent else x  # c_Q (n, r_q), or X̂
    q = index_queries(x_q, ix.w_q, ix.heads, ix.rope, spec.query_positions)  # (H, n, d)
    k = index_keys(x if spec.context is None else spec.context, ix.w_k, ix.key_norm, ix.rope,
                   spec.key_positions)  # (m, d)
    w = head_weights(x, ix.w_w, ix.heads)  # (n, H)
    table = index_scores(q, k, w, document_allowed(spec))  # (n, m)
    selected, kept, ties = select(table, ix.top_k)
    return {"index_queries": q, "index_keys": k, "index_head_weights": w, "index_scores": table,
            "index_selected": selected, "index_mask": kept.astype(np.int64), "index_ties": ties}


def _dropped(spec: Spec, a: Arrays) -> Arrays:
    return _dropped_block(spec, a, 0, spec.n)


def _dropped_block(spec: Spec, a: Arrays, lo: int, hi: int) -> Arrays:
    kept = spec.indexer.kept[lo:hi]  # (b, m): the selection the mask holds
    z = a["scaled_scores"]  # (h, b, m), every cell computed
    return {"index_dropped_weight": dropped_weight(z, document_allowed(spec, lo, hi), kept, spec.sinks)}


def _fixed(text: str, latex: str):
    return {"text": lambda spec: text, "latex": lambda spec, up: latex}


NEEDS = "indexer:"
QUANTITIES = (
    Quantity("index_queries", "q_I", "Indexer queries", "H n d_I", NEEDS,
             **_fixed("q_I = rope(x_q·W_IQ)", r"q_I = \operatorname{rope}(x_q W_{IQ})")),
    Quantity("index_keys", "k_I", "Indexer keys", "m d_I", NEEDS,
             **_fixed("k_I = rope(key_norm(C·W_IK))", r"k_I = \operatorname{rope}(\operatorname{norm}(C W_{IK}))")),
    Quantity("index_head_weights", "w_I", "Indexer head weights", "n H", NEEDS,
             **_fixed("w_I = X̂·W_IW", r"w_I = \hat X W_{IW}")),
    Quantity("index_scores", "I", "Index scores", "n m", NEEDS, masked=True, checkable=True, steps=("indexer",),
             null_at_minus_inf=True,  # −inf where the document's mask allows no key
             **_fixed("I = Σ_h w_I,h·H^(−1/2)·ReLU(d_I^(−1/2)·q_I,h·k_Iᵀ)",
                      r"I = \sum_h w_{I,h} H^{-1/2} \operatorname{ReLU}(d_I^{-1/2} q_{I,h} k_I^\top)")),
    Quantity("index_selected", "kept", "Kept keys", "n k", NEEDS, steps=("indexer",),
             **_fixed("kept = top_k(I): larger first, ties by the lower index",
                      r"\text{kept} = \operatorname{top}_k(I)")),
    Quantity("index_mask", "M_I", "Indexer mask", "n m", NEEDS, checkable=True, steps=("indexer",),
             **_fixed("M_I = 1 where the key is kept", r"M_I = [\,t \in \text{kept}(s)\,]")),
    Quantity("index_ties", "ties", "Ties at the cut", "n", NEEDS, steps=("indexer",),
             **_fixed("ties = keys left out with the last kept key's I", r"\text{ties}")),
)
DROPPED = Quantity("index_dropped_weight", "A_dropped", "Weight of the dropped keys", "h n", NEEDS, steps=("indexer",),
                   **_fixed("Σ over dropped keys of softmax(Z) under full attention",
                            r"\sum_{t \notin \text{kept}} \operatorname{softmax}(Z)_t"))

INDEXER = Stage("indexer", "I = Σ_h w·H^(−1/2)·ReLU(d^(−1/2)·q·k);  kept = top_k(I)", READS, QUANTITIES, _index,
                lambda spec: spec.indexer is not None,
                variants=Lazy("attncli.core.variants.indexer:INDEXER_VARIANTS"), explained=("indexer",))
INDEX_DROPPED = Stage("index_dropped", "the full attention's weight on the dropped keys", ("scaled_scores",),
                      (DROPPED,), _dropped, lambda spec: spec.indexer is not None, part="attention",
                      block=_dropped_block, explained=("indexer",))  # (explain's indexer step shows it too)
