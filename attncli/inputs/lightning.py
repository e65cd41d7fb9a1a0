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
            raise AttnError("belongs to the delta rule (gated_delta, kda); lightning attention has no β, g or conv "
                            "(docs/format.md Part 4)", "linear." + key)
    given = [key for key in GIVEN if block.get(key) is not None]
    spec = _given(reader, common) if given else _projected(reader, common)
    spec.slopes = _slopes(block.get("slopes"), spec.heads)
    return spec


def _slopes(value: Any, heads: int) -> np.ndarray:
    """``slopes``: ``{layer, layers}`` (transformers' formula) or the h numbers themselves (number_of: each > 0)."""
    key = "linear.slopes"
    if value is None:
        raise AttnError("is required: layer and layers (MiniMax's s_h of layer l of L layers), or h numbers s_h", key)
    if isinstance(value, dict):
        told = mapping_of(value, key, ("layer", "layers"))
        for name in ("layer", "layers"):
            if told.get(name) is None:
                raise AttnError("is required (the slopes of layer l of L layers)", f"{key}.{name}")
        layers = head_count(told["layers"], key + ".layers")
        layer = told["layer"]
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < layers:
            raise AttnError(f"{describe(layer)} is not a layer from 0 to layers − 1 = {layers - 1}", key + ".layer")
        return slope_rates(heads, layer, layers)
    if not isinstance(value, list):
        raise AttnError(f"{describe(value)} is neither a mapping of layer and layers nor a list of h = {heads} numbers",
                        key)
    numbers = np.array([_slope(v, key, i) for i, v in enumerate(value)], dtype=np.float64)
    if len(numbers) == 1 and heads != 1:
        raise AttnError(f"has 1 number; expected one per head, h = {heads}", key)
    if numbers.shape != (heads,):
        raise AttnError(f"has {len(numbers)} numbers; expected one per head, h = {heads}", key)
    return numbers


def _slope(value: Any, key: str, i: int) -> float:
    """Head i's slope (0-based), a finite s_h > 0; an error names the head as every message does, from 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AttnError(f"{describe(value)} is not a number (the slope of head {i + 1})", key)
    try:
        number = float(value)
    except OverflowError:
        raise AttnError(f"{describe(value)} is too large for float64 (the slope of head {i + 1})", key) from None
    if not math.isfinite(number) or number <= 0:
        raise AttnError(f"{describe(value)} is not a positive finite number (the slope of head {i + 1})", key)
    return number


def _activation(block: dict) -> str:
    value = block.get("activation", "silu")
    if value not in ACTIVATIONS:
        raise AttnError(f"{describe(value)} is not silu, sigmoid or none", "linear.activation")
    return value


def _projected(reader: Any, common: dict) -> LinearSpec:
    block = reader.block
    x = reader.inputs(lightning=True)
    n, d_model = x.shape
    h = head_count(block.get("heads"), "linear.heads") or 1
    weights = mapping_of(block.get("weights") or {}, "linear.weights", WEIGHTS + ("beta", "decay"))
    for name in ("beta", "decay"):
        if weights.get(name) is not None:
            raise AttnError("belongs to the delta rule; lightning attention has no β or g", "linear.weights." + name)
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
        raise AttnError(f"is {shape_str(gamma.shape)}; expected γ, one number per output of a token: h·d_v = "
                        f"{width}", "linear.norm.gamma")
    return gamma, number_of(norm.get("eps", 1e-6), "linear.norm.eps"), "sigmoid"


def _given(reader: Any, common: dict) -> LinearSpec:
    block = reader.block
    for key in GIVEN:
        if block.get(key) is None:
            raise AttnError("is required with " + ", ".join(k for k in GIVEN if k != key) + " (what the kernel "
                            "receives is given together)", "linear." + key)
    for key in ("weights", "norm", "activation"):
        if block.get(key) is not None:
            raise AttnError("makes or changes q, k, v or o from inputs; it is not used with them given directly",
                            "linear." + key)
    if reader.data.get("inputs") is not None:
        raise AttnError("cannot be used with queries, keys and values given directly in linear:", "inputs")
    q, k, v = (reader.read("linear." + key, block[key]) for key in GIVEN)
    if q.ndim != 3 or q.shape[1] == 0:
        raise AttnError(f"is {shape_str(q.shape)}; expected h × n × d_k", "linear.queries")
    h, n, d_k = q.shape
    if k.shape != q.shape:
        raise AttnError(f"is {shape_str(k.shape)}; expected h × n × d_k = {shape_str(q.shape)}", "linear.keys")
    if v.ndim != 3 or v.shape[:2] != (h, n):
        raise AttnError(f"is {shape_str(v.shape)}; expected h × n × d_v with h = {h}, n = {n}", "linear.values")
    stated = head_count(block.get("heads"), "linear.heads")
    if stated is not None and stated != h:
        raise AttnError(f"is {stated} but the given arrays have {h}", "linear.heads")
    tokens = token_labels(reader.data.get("tokens"), n, "q", "tokens", "queries")
    return LinearSpec(tokens=tokens, heads=h, value_heads=h, d_k=d_k, d_v=v.shape[2], scale=1.0, scale_name="",
                      given={"queries": q, "keys": k, "values": v}, gradient=reader._gradient(v.shape), **common)
