"""Gemma 4's keys for the values, read and checked: ``v_norm`` and ``k_eq_v`` (docs/format.md, "Gemma 4's attention").

    v_norm: true              # or {eps: 1e-6}: V̂ = V / √(mean(V²) + ε) per key/value head, no γ
    k_eq_v: true              # V = C·W_K + b_K, the keys' projection before qk_norm and rope (global layers)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe
from attncli.core.record import record
from attncli.inputs.values import mapping_of, number_of

V_NORM_EPS = 1e-6  # Gemma4TextConfig's rms_norm_eps
NOT_WITH_SHARED = ("context", "latent", "k_eq_v", "v_norm", "clip_qkv", "queries", "keys", "values")


@record
class SharedKV:
    """``kv_from: j`` as a stack hands it to the layer: layer j's keys as its scores saw them and its values as its
    weights mixed them (Gemma 4's kv sharing: a "reuse" layer takes the last "store" layer's K and V)."""

    index: int
    keys: np.ndarray  # (g, m, d_k)
    values: np.ndarray  # (g, m, d_v)


def shared_of(data: dict[str, Any]) -> SharedKV | None:
    """The shared keys and values of a stack's layer (``kv_from``), checked against what would make K or V again."""
    shared = data.get("kv_from")
    if shared is None:
        return None
    if not isinstance(shared, SharedKV):
        raise AttnError("gemma.takes_earlier_layer_s_keys",
                        "kv_from")
    for key in NOT_WITH_SHARED:
        if data.get(key) not in (None, False):
            raise AttnError("gemma.attends_layer_s_keys_values",
                            "kv_from", index=shared.index, key=key)
    for section in ("weights", "bias"):
        for name in ("key", "value"):
            if (data.get(section) or {}).get(name) is not None:
                raise AttnError("gemma.attends_layer_s_keys_values_2", "kv_from", index=shared.index, section=section,
                                name=name)
    return shared


def k_eq_v_given(data: dict[str, Any]) -> bool:
    """Whether the document asks for V = K's projection (checked by :func:`read_gemma`)."""
    return data.get("k_eq_v") is True


def read_gemma(data: dict[str, Any]) -> dict[str, Any]:
    """The Spec fields ``v_norm`` (ε, or None) and ``k_eq_v``."""
    flag = data.get("k_eq_v")
    if flag is not None and not isinstance(flag, bool):
        raise AttnError("gemma.not_true_false", "k_eq_v", flag=describe(flag))
    if flag:
        for key in ("weights", "bias"):
            if (data.get(key) or {}).get("value") is not None:
                raise AttnError("gemma.makes_values_from_key_projection_2", "k_eq_v", key=key)
        if data.get("latent") is not None:
            raise AttnError("gemma.makes_values_from_weights_key", "k_eq_v")
        if any(data.get(key) is not None for key in ("queries", "keys", "values")):
            raise AttnError("gemma.makes_values_from_key_projection", "k_eq_v")
    shared_of(data)  # (kv_from outside a stack is an error, also with Q, K and V given directly)
    return {"v_norm": _v_norm(data.get("v_norm")), "k_eq_v": bool(flag)}


def _v_norm(value: Any) -> float | None:
    if value is None or value is False:
        return None
    if value is True:
        return V_NORM_EPS
    value = mapping_of(value, "v_norm", ("eps",), "true, or a mapping with eps (an RMS norm without γ)")
    eps = number_of(value.get("eps", V_NORM_EPS), "v_norm.eps", positive=False)
    if eps <= 0:
        raise AttnError("gemma.not_positive_number_gemma_uses", "v_norm.eps", value=describe(value['eps']))
    return eps
