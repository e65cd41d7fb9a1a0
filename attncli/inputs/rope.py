"""The document's ``rope`` key (Part 2, and Part 3's scaling, attention factor and part), read and checked.

    rope: true                        # or a mapping:
    rope:
      base: 10000                     # θ; or frequencies: [...] (dims/2), not both
      dims: 64                        # how many numbers of each head turn (default d_k)
      style: half                     # half | interleaved | interleaved_halves (DeepSeek V3)
      part: first                     # first | last (DeepSeek's MLA: the rotated part after the rest)
      attention_factor: 1.2           # cos and sin times a; default 1, or what scaling derives
      scaling: {type: yarn, factor: 4, original_max_position_embeddings: 4096, …}

The scaled frequencies depend on P, the largest position + 1: :func:`read_rope` checks the key and
:func:`at_length` derives them once the positions are read.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe, shape_str
from attncli.core.positions import ROPE_PARTS, ROPE_STYLES, Rope, rope_frequencies
from attncli.core.rope_scaling import SCALING_TYPES, Scaling, scaled
from attncli.core.spec import positions_of
from attncli.inputs.source import MatrixSource
from attncli.inputs.values import mapping_of

ROPE_KEYS = ("base", "dims", "style", "frequencies", "part", "attention_factor", "scaling")
COMMON = ("type", "factor", "original_max_position_embeddings")
OWN_KEYS = {"linear": (), "dynamic": (), "llama3": ("low_freq_factor", "high_freq_factor"),
            "yarn": ("beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"),
            "longrope": ("short_factor", "long_factor")}
SCALING_KEYS = COMMON + tuple(key for keys in OWN_KEYS.values() for key in keys)


def read_rope(builder: MatrixSource, value: Any, d_k: int, number) -> Rope | None:
    """``rope:`` -> a Rope whose frequencies are not yet scaled (see :func:`at_length`); None without it.

    ``number(value, key, positive=True)`` reads one number, as the other Part 2 keys do.
    """
    if value is None or value is False:
        return None
    value = {} if value is True else mapping_of(value, "rope", ROPE_KEYS,
                                                "true, or a mapping with any of " + ", ".join(ROPE_KEYS))
    if "dims" not in value and d_k % 2:
        raise AttnError("rope.turns_pairs_dimensions_but_each", "rope", d_k=d_k, d_k_2=d_k - 1)
    dims = value.get("dims", d_k)
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 2 or dims % 2:
        raise AttnError("rope.not_even_whole_number_dimensions",
                        "rope.dims", dims=describe(dims))
    if dims > d_k:
        raise AttnError("rope.wider_than_each_head_d_k",
                        "rope.dims", dims=dims, d_k=d_k)
    style = value.get("style", "half")
    if style not in ROPE_STYLES:
        raise AttnError("layers.not_one", "rope.style", shown=describe(style), choices=', '.join(ROPE_STYLES))
    part = value.get("part", "first")
    if part not in ROPE_PARTS:
        raise AttnError("layers.not_one", "rope.part", shown=describe(part), choices=', '.join(ROPE_PARTS))
    given = value.get("attention_factor")
    extra = {"part": part, "attention_factor": 1.0 if given is None else number(given, "rope.attention_factor")}
    base = number(value.get("base", 10000.0), "rope.base")
    if value.get("scaling") is not None:
        if value.get("frequencies") is not None:
            raise AttnError("rope.give_scaling_frequencies_not_both",
                            "rope")
        s = _scaling(builder, value["scaling"], dims, base, number, given)
        return Rope(rope_frequencies(base, dims), style, base, scaling=s, **extra)
    if value.get("frequencies") is None:
        return Rope(rope_frequencies(base, dims), style, base, **extra)
    if "base" in value:
        raise AttnError("rope.give_base_frequencies_not_both", "rope")
    f = _factors(builder, "rope.frequencies", value["frequencies"], dims, "frequencies")
    return Rope(f, style, None, **extra)


def at_length(rope: Rope | None, n: int, m: int, positions, context_positions, has_context: bool) -> Rope | None:
    """The rope with its scaled frequencies and attention factor, for P = the largest query or key position + 1."""
    if rope is None or rope.scaling is None:
        return rope
    p_q, p_k = positions_of(n, m, positions, context_positions, has_context)
    top = max([float(p.max()) for p in (p_q, p_k) if p.size], default=0.0) + 1.0
    frequencies, a = scaled(rope.base, rope.dims, rope.scaling, top)
    given = rope.scaling.given_factor
    return replace(rope, frequencies=frequencies, attention_factor=a if given is None else rope.attention_factor)


def _scaling(builder: MatrixSource, value: Any, dims: int, base: float, number, given: Any) -> Scaling:
    value = mapping_of(value, "rope.scaling", SCALING_KEYS, "a mapping with type (" + " | ".join(SCALING_TYPES)
                       + "), factor and the type's parameters")
    kind = value.get("type")
    if kind is None:
        raise AttnError("rope.required", "rope.scaling.type", scaling_types=", ".join(SCALING_TYPES))
    if kind not in SCALING_TYPES:
        raise AttnError("layers.not_one", "rope.scaling.type", shown=describe(kind), choices=', '.join(SCALING_TYPES))
    for key in value:
        if key not in COMMON + OWN_KEYS[kind] or (kind == "linear" and key == COMMON[2]):
            owner = next((t for t, keys in OWN_KEYS.items() if key in keys), "")
            raise AttnError("rope.not_used_by_type_owner" if owner else "rope.not_used_by_type",
                            f"rope.scaling.{key}", kind=kind, owner=owner)
    if value.get("factor") is None:
        raise AttnError("rope.required_checkpoint_without_one_max_position_embeddings", "rope.scaling.factor")
    fields: dict[str, Any] = {"factor": number(value["factor"], "rope.scaling.factor")}
    if kind != "linear":
        if value.get(COMMON[2]) is None:
            raise AttnError("rope.required_type_l_length_model",
                            f"rope.scaling.{COMMON[2]}", kind=kind)
        fields["original"] = number(value[COMMON[2]], f"rope.scaling.{COMMON[2]}")
    fields.update(_own(builder, kind, value, dims, number))
    _check_sizes(kind, fields, dims, base)
    return Scaling(kind, given_factor=None if given is None else float(given), **fields)


def _own(builder: MatrixSource, kind: str, value: dict, dims: int, number) -> dict[str, Any]:
    """The type's own parameters, with Hugging Face's defaults."""
    key = lambda name: f"rope.scaling.{name}"  # noqa: E731
    if kind == "llama3":
        return {name: number(value.get(name, default), key(name))
                for name, default in (("low_freq_factor", 1.0), ("high_freq_factor", 4.0))}
    if kind == "yarn":
        fields = {name: number(value.get(name, default), key(name))
                  for name, default in (("beta_fast", 32.0), ("beta_slow", 1.0))}
        for name in ("mscale", "mscale_all_dim"):
            if value.get(name) is not None:
                fields[name] = number(value[name], key(name), positive=False)
                if fields[name] < 0:
                    raise AttnError("rope.negative_means_not_given_hugging",
                                    key(name), value=describe(value[name]))
        truncate = value.get("truncate", True)
        if not isinstance(truncate, bool):
            raise AttnError("gemma.not_true_false", key("truncate"), flag=describe(truncate))
        return {**fields, "truncate": truncate}
    if kind == "longrope":
        for name in ("short_factor", "long_factor"):
            if value.get(name) is None:
                raise AttnError("rope.required_type_longrope_dims_numbers", key(name), dims=dims // 2)
        return {name: _factors(builder, key(name), value[name], dims, "numbers")
                for name in ("short_factor", "long_factor")}
    return {}


def _factors(builder: MatrixSource, key: str, value: Any, dims: int, what: str) -> np.ndarray:
    """dims/2 positive numbers (frequencies, or LongRoPE's factors)."""
    f = builder.read(key, value, (dims // 2,))
    f = f.reshape(-1) if f.ndim == 2 and 1 in f.shape else f
    if f.shape != (dims // 2,):
        raise AttnError("rope.but_rope_dims_needs_dims", key, f_shape=shape_str(f.shape), dims=dims, dims_2=dims // 2,
                        what=what)
    if what != "frequencies" and not (np.isfinite(f).all() and (f > 0).all()):
        raise AttnError("rope.holds_number_that_not_positive", key)
    return np.ascontiguousarray(f, dtype=np.float64)


def _check_sizes(kind: str, fields: dict[str, Any], dims: int, base: float) -> None:
    """What would divide by zero in the formulas: named before any computation."""
    if kind == "dynamic" and dims < 4:
        raise AttnError("rope.dynamic_scaling_raises_base_dims", "rope.scaling.type", dims=dims)
    if kind == "llama3" and fields["high_freq_factor"] <= fields["low_freq_factor"]:
        raise AttnError("rope.not_above_low_freq_factor",
                        "rope.scaling.high_freq_factor", high=fields['high_freq_factor'],
                        low=fields['low_freq_factor'])
    if kind == "yarn" and base == 1:
        raise AttnError("rope.but_yarn_divides_ln_give", "rope.base")
    if kind == "longrope" and fields["original"] <= 1 and fields["factor"] > 1:
        raise AttnError("rope.too_small_longrope_s_attention",
                        "rope.scaling.original_max_position_embeddings", fields=fields['original'])
