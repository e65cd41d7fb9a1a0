"""The keys of the largest logits, read and checked: ``max_logits`` and Kimi K2's ``qk_clip`` (docs/format.md).

    max_logits: true          # JSON gains each head's largest scaled score and its cell
    qk_clip: {tau: 100}       # γ_h = min(1, τ/S_max^h), W_Q and W_K rescaled (implies max_logits)
"""

from __future__ import annotations

from typing import Any

from attncli.core.errors import AttnError, describe
from attncli.inputs.values import mapping_of, number_of


def read_logits(data: dict[str, Any], qk_norm: Any, clip_qkv: float | None) -> dict[str, Any]:
    """The Spec fields ``max_logits`` and ``qk_clip`` (τ), checked against what would undo a rescaled weight."""
    flag = data.get("max_logits")
    if flag is not None and not isinstance(flag, bool):
        raise AttnError("gemma.not_true_false", "max_logits", flag=describe(flag))
    tau = _tau(data.get("qk_clip"))
    if tau is not None:
        if qk_norm is not None:
            raise AttnError("logits.rescales_w_q_w_k_which_qk_norm", "qk_clip")
        if clip_qkv is not None:
            raise AttnError("logits.rescales_w_q_w_k_clip_qkv_s",
                            "qk_clip")
        if any(data.get(key) is not None for key in ("queries", "keys", "values")):
            raise AttnError("logits.rescales_w_q_w_k_queries_keys", "qk_clip")
        if data.get("score") == "additive":
            raise AttnError("logits.rescales_dot_product_logits_q", "qk_clip")
    return {"max_logits": bool(flag), "qk_clip": tau}


def _tau(value: Any) -> float | None:
    if value is None or value is False:
        return None
    value = mapping_of(value, "qk_clip", ("tau",), "a mapping with tau, the threshold τ (Kimi K2 used 100)")
    if value.get("tau") is None:
        raise AttnError("logits.required_threshold_largest_logit_kimi", "qk_clip.tau")
    tau = number_of(value["tau"], "qk_clip.tau", positive=False)
    if tau <= 0:
        raise AttnError("logits.not_positive_number_kimi_k2", "qk_clip.tau", value=describe(value['tau']))
    return tau
