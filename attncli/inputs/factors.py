"""Two factors of Part 3 of the contract, read and checked: Llama 4's query temperature and Granite's residual scale.

    query_temperature: {floor_scale: 8192, attn_scale: 0.1}   # τ_i = 1 + attn_scale·ln(1 + ⌊(p_i + 1)/floor_scale⌋)
    residual: {scale: 0.22}                                   # R = X₀ + α·Y; residual: true is {scale: 1}
"""

from __future__ import annotations

from typing import Any

from attncli.core.errors import AttnError, describe
from attncli.inputs.values import mapping_of, number_of

TEMPERATURE_KEYS = ("floor_scale", "attn_scale")
TEMPERATURE_DEFAULTS = {"floor_scale": 8192.0, "attn_scale": 0.1}  # Llama4TextConfig's


def read_factors(data: dict[str, Any]) -> dict[str, Any]:
    """The Spec fields ``query_temperature`` and ``residual_scale``."""
    return {"query_temperature": _temperature(data.get("query_temperature")),
            "residual_scale": _residual_scale(data.get("residual"))}


def residual_given(value: Any) -> Any:
    """``residual:`` as the flag it implies: a mapping ({scale: α}) is ``true``; anything else as written."""
    return True if isinstance(value, dict) else value


def _temperature(value: Any) -> tuple[float, float] | None:
    if value is None or value is False:
        return None
    key = "query_temperature"
    value = {} if value is True else mapping_of(value, key, TEMPERATURE_KEYS,
                                                "true, or a mapping with floor_scale and attn_scale (Llama 4's)")
    given = {**TEMPERATURE_DEFAULTS, **value}
    floor_scale = number_of(given["floor_scale"], f"{key}.floor_scale", positive=False)
    if floor_scale <= 0:
        raise AttnError("factors.not_positive_number_llama_uses",
                        f"{key}.floor_scale", given=describe(given['floor_scale']))
    return floor_scale, number_of(given["attn_scale"], f"{key}.attn_scale", positive=False)


def _residual_scale(value: Any) -> float:
    if not isinstance(value, dict):
        return 1.0  # residual: true or false (checked with the other Part 2 keys)
    value = mapping_of(value, "residual", ("scale",), "true, false or a mapping with scale")
    if value.get("scale") is None:
        raise AttnError("factors.required_factor_r_x_y",
                        "residual.scale")
    scale = number_of(value["scale"], "residual.scale", positive=False)
    if scale <= 0:
        raise AttnError("factors.not_positive_number_granite_s", "residual.scale", value=describe(value['scale']))
    return scale


