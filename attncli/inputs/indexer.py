"""The document key ``indexer`` (DeepSeek-V3.2's lightning indexer, docs/format.md "Sparse selection"), read and
checked, and the selection it makes folded into the Spec's mask.

    indexer:
      top_k: 2048                 # required
      heads: 64                   # H (default: weights.query's columns / d)
      d: 128                      # d_I (default: weights.key's columns)
      weights: {query, key, head_weights}    # W_IQ (r_q or d_model × H·d), W_IK (d_ctx × d), W_IW (d_model × H)
      key_norm: {kind: layer, gamma, beta, eps: 1e-6}   # default LayerNorm(γ = 1, β = 0, ε = 1e-6); false: none
      rope: true                  # default: the document's rope, style half, part first; false; or a mapping

The selection is made once the rest of the document is read (:func:`with_selection`): the stages the table
needs run on the Spec (X̂, and c_Q with latent), and the kept keys become one more part of its mask.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from attncli.core.errors import AttnError, plural, shape_str
from attncli.core.indexer import Indexer, selection_mask
from attncli.core.norms import Norm
from attncli.core.spec import Spec
from attncli.inputs.modern import _norm
from attncli.inputs.rope import at_length, read_rope
from attncli.inputs.source import MatrixSource
from attncli.inputs.values import head_count, mapping_of, number_of

INDEXER_KEYS = ("top_k", "heads", "d", "weights", "key_norm", "rope")
INDEXER_WEIGHTS = ("query", "key", "head_weights")
KEY_NORM_EPS = 1e-6  # DeepseekV32Indexer's k_norm: nn.LayerNorm(head_dim, eps=1e-6)


def read_indexer(builder: MatrixSource, value: Any, spec: Spec) -> Indexer:
    """``indexer:`` -> an :class:`Indexer` without its selection (:func:`with_selection` makes it)."""
    value = mapping_of(value, "indexer", INDEXER_KEYS,
                       "a mapping with top_k (required) and any of " + ", ".join(INDEXER_KEYS[1:]))
    _refuse(spec)
    top_k = head_count(value.get("top_k"), "indexer.top_k", "keys are more than any sequence has")
    if top_k is None:
        raise AttnError("indexer.required_how_many_keys_each", "indexer.top_k")
    weights = mapping_of(value.get("weights") or {}, "indexer.weights", INDEXER_WEIGHTS)
    from_latent = spec.latent is not None and spec.latent.query_down is not None
    d_q = spec.latent.r_q if from_latent else spec.inputs.shape[1]
    d_model, d_ctx = spec.inputs.shape[1], (spec.inputs if spec.context is None else spec.context).shape[1]
    w_k = _matrix(builder, weights, "key", d_ctx, "the context" if spec.context is not None else "the inputs")
    d = head_count(value.get("d"), "indexer.d") or w_k.shape[1]
    if w_k.shape[1] != d:
        raise AttnError("indexer.but_indexer_d_need", "indexer.weights.key", w_k_shape=shape_str(w_k.shape), d=d,
                        d_ctx=d_ctx, d_2=d)
    of = f"c_Q (r_q = {d_q}, latent's weights.query_down)" if from_latent else "the inputs"
    w_q = _matrix(builder, weights, "query", d_q, of)
    heads = head_count(value.get("heads"), "indexer.heads") or max(w_q.shape[1] // d, 1)
    if w_q.shape[1] != heads * d:
        raise AttnError("indexer.has_columns_but_indexer_has", "indexer.weights.query", shape=w_q.shape[1],
                        heads=plural(heads, 'head'), d=d, d_q=d_q, heads_2=heads, d_2=d)
    w_w = None
    if weights.get("head_weights") is not None:
        w_w = _matrix(builder, weights, "head_weights", d_model, "the inputs")
        if w_w.shape[1] != heads:
            raise AttnError("indexer.but_indexer_has_need_one", "indexer.weights.head_weights",
                            w_w_shape=shape_str(w_w.shape), heads=plural(heads, 'head'), d_model=d_model, heads_2=heads)
    return Indexer(top_k, heads, w_q, w_k, w_w, _key_norm(builder, value.get("key_norm", True), d),
                   _rope(builder, value.get("rope"), spec, d), from_latent)


def with_selection(spec: Spec) -> Spec:
    """The Spec with the indexer's kept keys: ``indexer.kept`` and ``indexer.base`` (the document's own mask) set,
    and the selection ANDed into ``mask``."""
    from attncli.core.pipeline import needed, run

    kept = run(spec, stages=needed(["index_mask"]))["index_mask"].astype(bool)  # (n, m)
    indexer = replace(spec.indexer, base=spec.mask, kept=kept)
    return replace(spec, indexer=indexer, mask=selection_mask(spec.mask, kept, spec.n, spec.m))


def _refuse(spec: Spec) -> None:
    if spec.normalize != "softmax":
        raise AttnError("indexer.selects_keys_softmax_normalize_has", "indexer", normalize=spec.normalize)
    if spec.mask is not None and spec.mask.per_head:
        raise AttnError("indexer.selects_one_set_keys_every", "indexer")


def _matrix(builder: MatrixSource, weights: dict[str, Any], name: str, rows: int, of: str) -> np.ndarray:
    """An indexer weight, d_in × d_out; the identity when left out (query and key)."""
    key = f"indexer.weights.{name}"
    value = weights.get(name)
    if value is None:
        return np.eye(rows)
    w = builder.read(key, value)
    if w.ndim != 2:
        raise AttnError("indexer.expected_matrix_rows_one_per", key, w_shape=shape_str(w.shape), rows=rows, of=of)
    if w.shape[0] != rows:
        raise AttnError("indexer.but_give_numbers_per_token", key, w_shape=shape_str(w.shape), of=of, rows=rows,
                        rows_2=rows)
    return w


def _key_norm(builder: MatrixSource, value: Any, d: int) -> Norm | None:
    """``key_norm``: LayerNorm(γ = 1, β = 0, ε = 1e-6) by default (true too); false: none; else a norm mapping."""
    if value is True:
        return Norm("layer", np.ones(d), np.zeros(d), KEY_NORM_EPS)
    if isinstance(value, dict) and "eps" not in value:
        value = {**value, "eps": KEY_NORM_EPS}
    return _norm(builder, "indexer.key_norm", value, d, "indexer.d")


def _rope(builder: MatrixSource, value: Any, spec: Spec, d: int):
    """The indexer's rotation: the document's (half, first) by default, none, or one of its own."""
    if value is False or (value is None and spec.rope is None):
        return None
    if value is None or (value is True and spec.rope is not None):
        if spec.rope.dims > d:
            raise AttnError("indexer.turns_document_s_rope_dims", "indexer.rope", dims=spec.rope.dims, d=d)
        return replace(spec.rope, style="half", part="first")
    try:
        rope = read_rope(builder, value, d, number_of)
    except AttnError as e:
        raise e.placed(f"indexer.{e.where}") from None
    has_context = spec.context is not None
    return at_length(rope, spec.n, spec.m, spec.positions, spec.context_positions, has_context)
