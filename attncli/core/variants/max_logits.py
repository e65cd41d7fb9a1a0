"""The largest logit's wrong versions (:mod:`attncli.core.max_logits`): what ``attncli check`` names when the
learner's S_max or γ are those of a slip.

    max_logit_unscaled       S_max taken of the scores S, before the scale (before the soft cap, it is
                             softcap_left_out)
    qk_clip_gamma_uncapped   γ = τ / S_max for every head, not capped at 1 (a head below τ is never scaled up)
"""

from __future__ import annotations

from attncli.core.max_logits import gammas, largest
from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.variants import Variant


def _unscaled(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    top, cells = largest(a["scores"], spec.allowed)  # (h,), (h, 2): of S, not of Z = scale·S
    made = {"max_logits": top, "max_logit_cells": cells}
    if spec.qk_clip is not None:
        made["qk_clip_gamma"] = gammas(top, spec.qk_clip)
    return {**run(spec, a), **made}


def _uncapped(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    out = run(spec, a)
    return {**out, "qk_clip_gamma": spec.qk_clip / out["max_logits"]}  # (h,)


def _below_tau(spec: Spec) -> tuple:
    return ({"tau": f"{spec.qk_clip:g}"},) if spec.qk_clip is not None else ()


MAX_LOGIT_VARIANTS = (
    Variant("max_logit_unscaled", _unscaled,
            lambda spec: ({},) if spec.scale != 1 and spec.score_bias is None else ()),
    Variant("qk_clip_gamma_uncapped", _uncapped, _below_tau),
)
