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
        raise AttnError(f"turns pairs of dimensions, but each head has an odd width (d_k = {d_k}); rotate fewer "
                        f"with rope.dims (e.g. {d_k - 1}) or give heads of even width", "rope")
    dims = value.get("dims", d_k)
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 2 or dims % 2:
        raise AttnError(f"{describe(dims)} is not an even whole number ≥ 2 (dimensions are rotated in pairs)",
                        "rope.dims")
    if dims > d_k:
        raise AttnError(f"{dims} is wider than each head (d_k = {d_k}); rope rotates at most d_k dimensions",
                        "rope.dims")
    style = value.get("style", "half")
    if style not in ROPE_STYLES:
        raise AttnError(f"{describe(style)} is not one of {', '.join(ROPE_STYLES)}", "rope.style")
    part = value.get("part", "first")
    if part not in ROPE_PARTS:
        raise AttnError(f"{describe(part)} is not one of {', '.join(ROPE_PARTS)}", "rope.part")
    given = value.get("attention_factor")
    extra = {"part": part, "attention_factor": 1.0 if given is None else number(given, "rope.attention_factor")}
    base = number(value.get("base", 10000.0), "rope.base")
    if value.get("scaling") is not None:
        if value.get("frequencies") is not None:
            raise AttnError("give scaling or frequencies, not both (scaling derives the frequencies from base)",
                            "rope")
        s = _scaling(builder, value["scaling"], dims, base, number, given)
        return Rope(rope_frequencies(base, dims), style, base, scaling=s, **extra)
    if value.get("frequencies") is None:
        return Rope(rope_frequencies(base, dims), style, base, **extra)
    if "base" in value:
        raise AttnError("give base or frequencies, not both (frequencies replace θ^(−2i/dims))", "rope")
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
        raise AttnError("is required: " + ", ".join(SCALING_TYPES), "rope.scaling.type")
    if kind not in SCALING_TYPES:
        raise AttnError(f"{describe(kind)} is not one of {', '.join(SCALING_TYPES)}", "rope.scaling.type")
    for key in value:
        if key not in COMMON + OWN_KEYS[kind] or (kind == "linear" and key == COMMON[2]):
            owner = next((t for t, keys in OWN_KEYS.items() if key in keys), "")
            raise AttnError(f"is not used by type {kind}" + (f" (it is {owner}'s)" if owner else ""),
                            f"rope.scaling.{key}")
    if value.get("factor") is None:
        raise AttnError("is required (a checkpoint without one: max_position_embeddings / "
                        "original_max_position_embeddings)", "rope.scaling.factor")
    fields: dict[str, Any] = {"factor": number(value["factor"], "rope.scaling.factor")}
    if kind != "linear":
        if value.get(COMMON[2]) is None:
            raise AttnError(f"is required by type {kind} (L, the length the model was trained at)",
                            f"rope.scaling.{COMMON[2]}")
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
                    raise AttnError(f"{describe(value[name])} is negative (0 means not given, as in Hugging Face)",
                                    key(name))
        truncate = value.get("truncate", True)
        if not isinstance(truncate, bool):
            raise AttnError(f"{describe(truncate)} is not true or false", key("truncate"))
        return {**fields, "truncate": truncate}
    if kind == "longrope":
        for name in ("short_factor", "long_factor"):
            if value.get(name) is None:
                raise AttnError(f"is required by type longrope: dims/2 = {dims // 2} numbers", key(name))
        return {name: _factors(builder, key(name), value[name], dims, "numbers")
                for name in ("short_factor", "long_factor")}
    return {}


def _factors(builder: MatrixSource, key: str, value: Any, dims: int, what: str) -> np.ndarray:
    """dims/2 positive numbers (frequencies, or LongRoPE's factors)."""
    f = builder.read(key, value, (dims // 2,))
    f = f.reshape(-1) if f.ndim == 2 and 1 in f.shape else f
    if f.shape != (dims // 2,):
        raise AttnError(f"is {shape_str(f.shape)} but rope.dims = {dims} needs dims/2 = {dims // 2} {what}", key)
    if what != "frequencies" and not (np.isfinite(f).all() and (f > 0).all()):
        raise AttnError("holds a number that is not positive and finite (each divides a frequency)", key)
    return np.ascontiguousarray(f, dtype=np.float64)


def _check_sizes(kind: str, fields: dict[str, Any], dims: int, base: float) -> None:
    """What would divide by zero in the formulas: named before any computation."""
    if kind == "dynamic" and dims < 4:
        raise AttnError(f"dynamic scaling raises the base to dims/(dims − 2), so it needs rope.dims ≥ 4 "
                        f"(dims = {dims})", "rope.scaling.type")
    if kind == "llama3" and fields["high_freq_factor"] <= fields["low_freq_factor"]:
        raise AttnError(f"{fields['high_freq_factor']:g} is not above low_freq_factor ({fields['low_freq_factor']:g})",
                        "rope.scaling.high_freq_factor")
    if kind == "yarn" and base == 1:
        raise AttnError("is 1, but yarn divides by ln θ: give a base above 1", "rope.base")
    if kind == "longrope" and fields["original"] <= 1 and fields["factor"] > 1:
        raise AttnError(f"{fields['original']:g} is too small: longrope's attention factor divides by its logarithm",
                        "rope.scaling.original_max_position_embeddings")
