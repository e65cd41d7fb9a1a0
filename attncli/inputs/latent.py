"""The document key ``latent`` (Part 3: DeepSeek V2/V3's and Kimi K2's multi-head latent attention), read and checked.

    heads: 16
    rope: {dims: 64, part: last}                      # d_r, rotated at the end of each head (required)
    latent:
      kv_norm: {kind: rms, gamma: [...], eps: 1e-6}   # required (kv_a_layernorm), over r_kv
      query_norm: {kind: rms, …}                      # with weights.query_down (q_a_layernorm), over r_q
    weights:
      query: ...        # d_model × h·(d_nope + d_r)  (q_proj), or query_down (d_model × r_q) + query_up
      kv_down: ...      # d_ctx × (r_kv + d_r)        (kv_a_proj_with_mqa)
      kv_up: ...        # r_kv × h·(d_nope + d_v)     (kv_b_proj)
    bias: {query_down, kv_down}

The sizes follow from the shapes: d_k = d_nope + d_r from the queries' columns per head, r_kv from kv_down's
columns less d_r, d_v from kv_up's columns per head less d_nope.  Each error names the size it read as what.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe, plural, shape_str
from attncli.core.latent import Latent, per_head
from attncli.inputs.modern import _norm
from attncli.inputs.source import MatrixSource
from attncli.inputs.values import mapping_of

LATENT_KEYS = ("kv_norm", "query_norm")
LATENT_WEIGHTS = ("query_down", "query_up", "kv_down", "kv_up")
LATENT_BIASES = ("query_down", "kv_down")
NOT_WITH_LATENT = {"weights.key": "keys come from weights.kv_down and weights.kv_up",
                   "weights.value": "values come from weights.kv_down and weights.kv_up",
                   "bias.key": "the key projections of latent attention have no bias",
                   "bias.value": "the value projections of latent attention have no bias"}

Projections = tuple[np.ndarray, np.ndarray, np.ndarray, Latent]


def read_latent(builder: MatrixSource, bias: dict[str, Any], heads: int, kv_heads: int | None, d_model: int,
                d_ctx: int) -> Projections:
    """W_Q (or W_UQ), W_UK, W_UV per head ((h, ·, d) views) and the :class:`Latent` of a document with ``latent``."""
    value = mapping_of(builder.data["latent"], "latent", LATENT_KEYS,
                       "a mapping with kv_norm (required) and query_norm (with weights.query_down)")
    _refuse_others(builder, bias, heads, kv_heads)
    d_r = _rope_dims(builder.data.get("rope"))
    kv_down = _matrix(builder, "kv_down", d_ctx, "inputs" if builder.data.get("context") is None else "context")
    if kv_down.shape[1] <= d_r:
        raise AttnError("latent.has_columns_r_kv_d_r_d_r", "weights.kv_down", shape=kv_down.shape[1], d_r=d_r)
    r_kv = kv_down.shape[1] - d_r
    w_q, query = _queries(builder, value, bias, heads, d_model)
    d_k = w_q.shape[2]
    if d_k <= d_r:
        raise AttnError("latent.gives_d_k_numbers_per_head", _query_key(query), d_k=d_k, heads=plural(heads, 'head'),
                        d_r=d_r)
    d_nope = d_k - d_r
    kv_up = _matrix(builder, "kv_up", r_kv, f"the latent (r_kv = {r_kv}: weights.kv_down's {kv_down.shape[1]} "
                    f"columns less d_r = {d_r})")
    d_v = _value_width(kv_up.shape[1], heads, d_nope, d_k, d_r, _query_key(query))
    kv_norm = _norm(builder, "latent.kv_norm", value.get("kv_norm"), r_kv, "r_kv")
    if kv_norm is None:
        raise AttnError("latent.required_norm_latent_c_kv_r_kv",
                        "latent.kv_norm", r_kv=r_kv)
    latent = Latent(kv_down, kv_up, kv_norm, d_nope, d_r, _bias(builder, bias, "kv_down", r_kv + d_r), **query)
    return w_q, per_head(kv_up, heads, 0, d_nope), per_head(kv_up, heads, d_nope, d_nope + d_v), latent


def refuse_without_latent(weights: dict[str, Any], bias: dict[str, Any]) -> None:
    """The latent projections are an error in a document without ``latent`` (they would be silently unused)."""
    for section, names, given in (("weights", LATENT_WEIGHTS, weights), ("bias", LATENT_BIASES, bias)):
        for name in names:
            if given.get(name) is not None:
                raise AttnError("latent.used_multi_head_latent_attention", f"{section}.{name}")


def _refuse_others(builder: MatrixSource, bias: dict[str, Any], heads: int, kv_heads: int | None) -> None:
    given = {f"weights.{k}": v for k, v in builder.weights.items()} | {f"bias.{k}": v for k, v in bias.items()}
    for key, why in NOT_WITH_LATENT.items():
        if given.get(key) is not None:
            raise AttnError("latent.not_used_latent", key, why=why)
    if kv_heads is not None and kv_heads != heads:
        raise AttnError("latent.but_latent_attention_expands_keys", "kv_heads", kv_heads=kv_heads, heads=heads)


def _rope_dims(rope: Any) -> int:
    """d_r: ``rope.dims``, required with ``part: last``."""
    if not isinstance(rope, dict) or rope.get("dims") is None:
        raise AttnError("latent.latent_attention_needs_rope_dims", "rope")
    dims = rope["dims"]
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 2 or dims % 2:
        raise AttnError("latent.not_even_whole_number_d_r", "rope.dims", dims=describe(dims))
    if rope.get("part") != "last":
        raise AttnError("latent.must_last_latent_each_head", "rope.part")
    return dims


def _matrix(builder: MatrixSource, name: str, rows: int, of: str) -> np.ndarray:
    key = f"weights.{name}"
    value = builder.weights.get(name)
    if value is None:
        raise AttnError("latent.required_latent", key)
    w = builder.read(key, value)
    if w.ndim != 2:
        raise AttnError("indexer.expected_matrix_rows_one_per", key, w_shape=shape_str(w.shape), rows=rows, of=of)
    if w.shape[0] != rows:
        if of in ("inputs", "context"):
            raise AttnError("latent.but_columns_need_rows", key, w_shape=shape_str(w.shape), of=of,
                            verb="has" if of == "context" else "have", rows=rows)
        raise AttnError("latent.but_numbers_need_rows", key, w_shape=shape_str(w.shape), of=of, rows=rows)
    return w


def _queries(builder: MatrixSource, value: dict, bias: dict[str, Any], heads: int,
             d_model: int) -> tuple[np.ndarray, dict[str, Any]]:
    """W_Q or W_UQ per head (h, d_in, d_k), and the Latent's query fields."""
    direct, down, up = (builder.weights.get(k) is not None for k in ("query", "query_down", "query_up"))
    if direct and (down or up):
        raise AttnError("latent.give_weights_query_weights_query_down",
                        "weights.query_down" if down else "weights.query_up")
    if not direct and not (down and up):
        missing = "weights.query_up" if down else "weights.query_down" if up else "weights.query"
        raise AttnError("latent.required_latent_weights_query_d_model", missing)
    if direct:
        if value.get("query_norm") is not None:
            raise AttnError("latent.normalises_c_q_made_weights_query_down", "latent.query_norm")
        if bias.get("query_down") is not None:
            raise AttnError("latent.given_without_weights_query_down", "bias.query_down")
        w = _matrix(builder, "query", d_model, "inputs")
        return _split(w, heads, "weights.query"), {}
    if bias.get("query") is not None:
        raise AttnError("latent.not_used_weights_query_up_give", "bias.query")
    w_down = _matrix(builder, "query_down", d_model, "inputs")
    r_q = w_down.shape[1]
    w_up = _matrix(builder, "query_up", r_q, f"c_Q (r_q = {r_q}: weights.query_down's columns)")
    norm = _norm(builder, "latent.query_norm", value.get("query_norm"), r_q, "r_q")
    if norm is None:
        raise AttnError("latent.required_weights_query_down_norm_c_q",
                        "latent.query_norm", r_q=r_q)
    fields = {"query_down": w_down, "query_up": w_up, "query_down_bias": _bias(builder, bias, "query_down", r_q),
              "query_norm": norm}
    return _split(w_up, heads, "weights.query_up"), fields


def _query_key(fields: dict[str, Any]) -> str:
    return "weights.query_up" if fields else "weights.query"


def _split(w: np.ndarray, heads: int, key: str) -> np.ndarray:
    if w.shape[1] % heads:
        raise AttnError("latent.has_columns_which_heads_cannot", key, shape=w.shape[1], heads=heads)
    return per_head(w, heads, 0, w.shape[1] // heads)


def _value_width(columns: int, heads: int, d_nope: int, d_k: int, d_r: int, query_key: str) -> int:
    """d_v from kv_up's columns per head, [d_nope key columns | d_v value columns]; an error says what it read."""
    read = f"d_nope = {d_nope} from {query_key}'s d_k = {d_k} less d_r = {d_r}"
    if columns % heads:
        raise AttnError("latent.has_columns_which_heads_cannot_2", "weights.kv_up", columns=columns, heads=heads,
                        read=read)
    d_v = columns // heads - d_nope
    if d_v < 1:
        raise AttnError("latent.has_columns_per_head_read", "weights.kv_up", columns=columns // heads,
                        columns_2=columns, heads=plural(heads, 'head'), d_nope=d_nope, d_v=d_v, read=read,
                        heads_2=heads, d_nope_2=d_nope)
    return d_v


def _bias(builder: MatrixSource, bias: dict[str, Any], name: str, width: int) -> np.ndarray | None:
    value = bias.get(name)
    if value is None:
        return None
    key = f"bias.{name}"
    b = builder.read(key, value, (width,))
    b = b.reshape(-1) if b.ndim == 2 and 1 in b.shape else b
    if b.shape != (width,):
        raise AttnError("latent.but_weights_gives_columns_need", key, b_shape=shape_str(b.shape), name=name,
                        width=width, width_2=width)
    return b

