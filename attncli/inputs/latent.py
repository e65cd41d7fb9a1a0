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
        raise AttnError(f"has {kv_down.shape[1]} columns, r_kv + d_r with d_r = rope.dims = {d_r}: that leaves no "
                        "latent (r_kv ≥ 1)", "weights.kv_down")
    r_kv = kv_down.shape[1] - d_r
    w_q, query = _queries(builder, value, bias, heads, d_model)
    d_k = w_q.shape[2]
    if d_k <= d_r:
        raise AttnError(f"gives d_k = {d_k} numbers per head ({plural(heads, 'head')}), d_nope + d_r with d_r = "
                        f"rope.dims = {d_r}: that leaves no unrotated part (d_nope ≥ 1)", _query_key(query))
    d_nope = d_k - d_r
    kv_up = _matrix(builder, "kv_up", r_kv, f"the latent (r_kv = {r_kv}: weights.kv_down's {kv_down.shape[1]} "
                    f"columns less d_r = {d_r})")
    d_v = _value_width(kv_up.shape[1], heads, d_nope, d_k, d_r, _query_key(query))
    kv_norm = _norm(builder, "latent.kv_norm", value.get("kv_norm"), r_kv, "r_kv")
    if kv_norm is None:
        raise AttnError(f"is required: the norm of the latent c_KV (r_kv = {r_kv}), e.g. {{kind: rms}}",
                        "latent.kv_norm")
    latent = Latent(kv_down, kv_up, kv_norm, d_nope, d_r, _bias(builder, bias, "kv_down", r_kv + d_r), **query)
    return w_q, per_head(kv_up, heads, 0, d_nope), per_head(kv_up, heads, d_nope, d_nope + d_v), latent


def refuse_without_latent(weights: dict[str, Any], bias: dict[str, Any]) -> None:
    """The latent projections are an error in a document without ``latent`` (they would be silently unused)."""
    for section, names, given in (("weights", LATENT_WEIGHTS, weights), ("bias", LATENT_BIASES, bias)):
        for name in names:
            if given.get(name) is not None:
                raise AttnError("is used by multi-head latent attention: give latent: {kv_norm: {kind: rms}} (and "
                                "rope: {dims: d_r, part: last}) to use it", f"{section}.{name}")


def _refuse_others(builder: MatrixSource, bias: dict[str, Any], heads: int, kv_heads: int | None) -> None:
    given = {f"weights.{k}": v for k, v in builder.weights.items()} | {f"bias.{k}": v for k, v in bias.items()}
    for key, why in NOT_WITH_LATENT.items():
        if given.get(key) is not None:
            raise AttnError(f"is not used with latent ({why})", key)
    if kv_heads is not None and kv_heads != heads:
        raise AttnError(f"is {kv_heads}, but latent attention expands keys and values for every one of the {heads} "
                        "query heads (kv_heads is heads)", "kv_heads")


def _rope_dims(rope: Any) -> int:
    """d_r: ``rope.dims``, required with ``part: last``."""
    if not isinstance(rope, dict) or rope.get("dims") is None:
        raise AttnError("latent attention needs rope with dims (d_r, the rotated numbers at the end of each head) "
                        "and part: last, e.g. rope: {dims: 64, part: last}", "rope")
    dims = rope["dims"]
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 2 or dims % 2:
        raise AttnError(f"{describe(dims)} is not an even whole number ≥ 2 (d_r of latent attention)", "rope.dims")
    if rope.get("part") != "last":
        raise AttnError("must be last with latent (each head's rotated numbers follow its unrotated ones: "
                        "[q_nope | q_r])", "rope.part")
    return dims


def _matrix(builder: MatrixSource, name: str, rows: int, of: str) -> np.ndarray:
    key = f"weights.{name}"
    value = builder.weights.get(name)
    if value is None:
        raise AttnError("is required with latent", key)
    w = builder.read(key, value)
    if w.ndim != 2:
        raise AttnError(f"is {shape_str(w.shape)}; expected a matrix with {rows} rows (one per number of {of})", key)
    if w.shape[0] != rows:
        verb = "has" if of == "context" else "have"
        what = f"{of} {verb} {rows} columns" if of in ("inputs", "context") else f"{of} has {rows} numbers"
        raise AttnError(f"is {shape_str(w.shape)} but {what} (need {rows} rows)", key)
    return w


def _queries(builder: MatrixSource, value: dict, bias: dict[str, Any], heads: int,
             d_model: int) -> tuple[np.ndarray, dict[str, Any]]:
    """W_Q or W_UQ per head (h, d_in, d_k), and the Latent's query fields."""
    direct, down, up = (builder.weights.get(k) is not None for k in ("query", "query_down", "query_up"))
    if direct and (down or up):
        raise AttnError("give weights.query or weights.query_down with weights.query_up, not both",
                        "weights.query_down" if down else "weights.query_up")
    if not direct and not (down and up):
        missing = "weights.query_up" if down else "weights.query_down" if up else "weights.query"
        raise AttnError("is required with latent: weights.query (d_model × h·d_k), or weights.query_down "
                        "(d_model × r_q) with weights.query_up (r_q × h·d_k)", missing)
    if direct:
        if value.get("query_norm") is not None:
            raise AttnError("normalises c_Q, made by weights.query_down; weights.query has none", "latent.query_norm")
        if bias.get("query_down") is not None:
            raise AttnError("is given without weights.query_down", "bias.query_down")
        w = _matrix(builder, "query", d_model, "inputs")
        return _split(w, heads, "weights.query"), {}
    if bias.get("query") is not None:
        raise AttnError("is not used with weights.query_up (give bias.query_down)", "bias.query")
    w_down = _matrix(builder, "query_down", d_model, "inputs")
    r_q = w_down.shape[1]
    w_up = _matrix(builder, "query_up", r_q, f"c_Q (r_q = {r_q}: weights.query_down's columns)")
    norm = _norm(builder, "latent.query_norm", value.get("query_norm"), r_q, "r_q")
    if norm is None:
        raise AttnError(f"is required with weights.query_down: the norm of c_Q (r_q = {r_q}), e.g. {{kind: rms}}",
                        "latent.query_norm")
    fields = {"query_down": w_down, "query_up": w_up, "query_down_bias": _bias(builder, bias, "query_down", r_q),
              "query_norm": norm}
    return _split(w_up, heads, "weights.query_up"), fields


def _query_key(fields: dict[str, Any]) -> str:
    return "weights.query_up" if fields else "weights.query"


def _split(w: np.ndarray, heads: int, key: str) -> np.ndarray:
    if w.shape[1] % heads:
        raise AttnError(f"has {w.shape[1]} columns, which {heads} heads cannot split into equal blocks "
                        "(h·(d_nope + d_r))", key)
    return per_head(w, heads, 0, w.shape[1] // heads)


def _value_width(columns: int, heads: int, d_nope: int, d_k: int, d_r: int, query_key: str) -> int:
    """d_v from kv_up's columns per head, [d_nope key columns | d_v value columns]; an error says what it read."""
    read = f"d_nope = {d_nope} from {query_key}'s d_k = {d_k} less d_r = {d_r}"
    if columns % heads:
        raise AttnError(f"has {columns} columns, which {heads} heads cannot split into equal blocks of "
                        f"d_nope + d_v ({read})", "weights.kv_up")
    d_v = columns // heads - d_nope
    if d_v < 1:
        raise AttnError(f"has {columns // heads} columns per head ({columns} for {plural(heads, 'head')}), read as "
                        f"d_nope = {d_nope} key columns then d_v value columns: that leaves d_v = {d_v} ({read}; "
                        f"need {heads}·({d_nope} + d_v) columns)", "weights.kv_up")
    return d_v


def _bias(builder: MatrixSource, bias: dict[str, Any], name: str, width: int) -> np.ndarray | None:
    value = bias.get(name)
    if value is None:
        return None
    key = f"bias.{name}"
    b = builder.read(key, value, (width,))
    b = b.reshape(-1) if b.ndim == 2 and 1 in b.shape else b
    if b.shape != (width,):
        raise AttnError(f"is {shape_str(b.shape)} but weights.{name} gives {width} columns (need a vector of "
                        f"{width})", key)
    return b

