"""The ``kind: lightning`` part of a ``linear:`` document (docs/format.md Part 4): MiniMax's lightning attention.

Read by :mod:`attncli.inputs.linear`'s reader (its ``read``, ``array`` and ``_weight``), into the same
:class:`~attncli.core.linear.LinearSpec`: ``heads = value_heads``, the slopes instead of β and g.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe, shape_str
from attncli.core.lightning import slopes as slope_rates
from attncli.core.linear import LinearSpec
from attncli.inputs.values import head_count, mapping_of, number_of, token_labels

DELTA_ONLY = ("value_heads", "conv", "A_log", "dt_bias", "l2norm", "beta", "g")  # the delta rule's keys
WEIGHTS = ("query", "key", "value", "gate", "output")
GIVEN = ("queries", "keys", "values")
ACTIVATIONS = ("silu", "sigmoid", "none")


def read_lightning(reader: Any, common: dict) -> LinearSpec:
    """A lightning block -> its LinearSpec (``common``: kind and chunk, read already)."""
    block = reader.block
    for key in DELTA_ONLY:
        if block.get(key) is not None:
            raise AttnError("lightning.belongs_delta_rule_gated_delta_kda", "linear." + key)
    given = [key for key in GIVEN if block.get(key) is not None]
    spec = _given(reader, common) if given else _projected(reader, common)
    spec.slopes = _slopes(block.get("slopes"), spec.heads)
    return spec


def _slopes(value: Any, heads: int) -> np.ndarray:
    """``slopes``: ``{layer, layers}`` (transformers' formula) or the h numbers themselves (number_of: each > 0)."""
    key = "linear.slopes"
    if value is None:
        raise AttnError("lightning.required_layer_layers_minimax_s", key)
    if isinstance(value, dict):
        told = mapping_of(value, key, ("layer", "layers"))
        for name in ("layer", "layers"):
            if told.get(name) is None:
                raise AttnError("lightning.required_slopes_layer_l_l", f"{key}.{name}")
        layers = head_count(told["layers"], key + ".layers")
        layer = told["layer"]
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < layers:
            raise AttnError("lightning.not_layer_from_layers", key + ".layer", layer=describe(layer), layers=layers - 1)
        return slope_rates(heads, layer, layers)
    if not isinstance(value, list):
        raise AttnError("lightning.neither_mapping_layer_layers_nor",
                        key, value=describe(value), heads=heads)
    numbers = np.array([_slope(v, key, i) for i, v in enumerate(value)], dtype=np.float64)
    if len(numbers) == 1 and heads != 1:
        raise AttnError("lightning.has_number_expected_one_per", key, heads=heads)
    if numbers.shape != (heads,):
        raise AttnError("lightning.has_numbers_expected_one_per", key, count=len(numbers), heads=heads)
    return numbers


def _slope(value: Any, key: str, i: int) -> float:
    """Head i's slope (0-based), a finite s_h > 0; an error names the head as every message does, from 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AttnError("lightning.not_number_slope_head", key, value=describe(value), i=i + 1)
    try:
        number = float(value)
    except OverflowError:
        raise AttnError("lightning.too_large_float64_slope_head", key, value=describe(value), i=i + 1) from None
    if not math.isfinite(number) or number <= 0:
        raise AttnError("lightning.not_positive_finite_number_slope", key, value=describe(value), i=i + 1)
    return number


def _activation(block: dict) -> str:
    value = block.get("activation", "silu")
    if value not in ACTIVATIONS:
        raise AttnError("lightning.not_silu_sigmoid_none", "linear.activation", value=describe(value))
    return value


def _projected(reader: Any, common: dict) -> LinearSpec:
    block = reader.block
    x = reader.inputs(lightning=True)
    n, d_model = x.shape
    h = head_count(block.get("heads"), "linear.heads") or 1
    weights = mapping_of(block.get("weights") or {}, "linear.weights", WEIGHTS + ("beta", "decay"))
    for name in ("beta", "decay"):
        if weights.get(name) is not None:
            raise AttnError("lightning.belongs_delta_rule_lightning_attention", "linear.weights." + name)
    w = {"query": reader._weight(weights, "query", d_model, "d_model × h·d_k", heads=h)}
    d_k = w["query"].shape[1] // h
    w["key"] = reader._weight(weights, "key", d_model, "d_model × h·d_k", columns=h * d_k)
    w["value"] = reader._weight(weights, "value", d_model, "d_model × h·d_v", heads=h)
    d_v = w["value"].shape[1] // h
    if weights.get("gate") is not None:
        w["gate"] = reader._weight(weights, "gate", d_model, "d_model × h·d_v", columns=h * d_v)
    if weights.get("output") is not None:
        w["output"] = reader._weight(weights, "output", h * d_v, "h·d_v × d_out")
    tokens = token_labels(reader.data.get("tokens"), n, "x", "tokens", "inputs")
    return LinearSpec(tokens=tokens, heads=h, value_heads=h, d_k=d_k, d_v=d_v, scale=1.0, scale_name="", inputs=x,
                      weights=w, norm=_norm(reader, h * d_v), activation=_activation(block), **common)


def _norm(reader: Any, width: int) -> tuple[np.ndarray, float, str] | None:
    """``norm``: the RMSNorm over the h·d_v outputs of a token (γ, ε; its gate is always the sigmoid)."""
    value = reader.block.get("norm")
    if value is None or value is False:
        return None
    norm = {} if value is True else mapping_of(value, "linear.norm", ("gamma", "eps"))
    gamma = np.ones(width) if norm.get("gamma") is None else reader.read("linear.norm.gamma", norm["gamma"],
                                                                         (width,))
    if gamma.shape != (width,):
        raise AttnError("lightning.expected_one_number_per_output", "linear.norm.gamma",
                        gamma_shape=shape_str(gamma.shape), width=width)
    return gamma, number_of(norm.get("eps", 1e-6), "linear.norm.eps"), "sigmoid"


def _given(reader: Any, common: dict) -> LinearSpec:
    block = reader.block
    for key in GIVEN:
        if block.get(key) is None:
            raise AttnError("lightning.required_what_kernel_receives_given", "linear." + key,
                            value=", ".join(k for k in GIVEN if k != key))
    for key in ("weights", "norm", "activation"):
        if block.get(key) is not None:
            raise AttnError("lightning.makes_changes_q_k_v",
                            "linear." + key)
    if reader.data.get("inputs") is not None:
        raise AttnError("lightning.cannot_used_queries_keys_values", "inputs")
    q, k, v = (reader.read("linear." + key, block[key]) for key in GIVEN)
    if q.ndim != 3 or q.shape[1] == 0:
        raise AttnError("lightning.expected_h_n_d_k", "linear.queries", q_shape=shape_str(q.shape))
    h, n, d_k = q.shape
    if k.shape != q.shape:
        raise AttnError("lightning.expected_h_n_d_k_2", "linear.keys", k_shape=shape_str(k.shape),
                        q_shape=shape_str(q.shape))
    if v.ndim != 3 or v.shape[:2] != (h, n):
        raise AttnError("lightning.expected_h_n_d_v_h", "linear.values", v_shape=shape_str(v.shape), h=h, n=n)
    stated = head_count(block.get("heads"), "linear.heads")
    if stated is not None and stated != h:
        raise AttnError("lightning.but_given_arrays_have", "linear.heads", stated=stated, h=h)
    tokens = token_labels(reader.data.get("tokens"), n, "q", "tokens", "queries")
    return LinearSpec(tokens=tokens, heads=h, value_heads=h, d_k=d_k, d_v=v.shape[2], scale=1.0, scale_name="",
                      given={"queries": q, "keys": k, "values": v}, gradient=reader._gradient(v.shape), **common)
