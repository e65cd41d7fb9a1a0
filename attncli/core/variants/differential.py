"""Differential attention's wrong versions (DiffLlama, :mod:`attncli.core.differential_stage`):

    W = A₁ + λ·A₂                      λ added instead of subtracted
    λ_init = 0.8 − 0.6·e^(−0.3·(l+1))  the layer counted from 1 (transformers counts from 0)
    Ô = (1 − λ_init)·O                 the RMSNorm left out
    Ô = RMSNorm(O)                     the factor (1 − λ_init) left out
"""

from __future__ import annotations

from dataclasses import replace

from attncli.core import differential as diff
from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.variants import Variant, when


def _forward(a: Arrays, d: diff.Differential, sign: float = -1.0, norm: bool = True, factor: bool = True) -> Arrays:
    """The stage's arrays (:func:`attncli.core.differential.forward`) with one part done another way."""
    weights = a["weights"]  # (h, n, m)
    lam = d.lambdas(weights.shape[0] // 2)  # (p,)
    w = diff.combined(weights, -sign * lam)  # (p, n, m): A₁ − λ·A₂, or A₁ + λ·A₂
    o = w @ diff.pair_values(a["values"], weights.shape[0])  # (p, n, 2·d_v)
    if norm:  # (without the factor: RMSNorm alone, as λ_init = 0 makes it)
        o_hat = diff.normalized(o, d.lambda_init if factor else 0.0, d.eps)
    else:
        o_hat = (1.0 - d.lambda_init) * o
    return {"differential_lambda": lam, "differential_weights": w, "differential_head_outputs": o,
            "normalized_head_outputs": o_hat, "head_outputs": diff.as_heads(o_hat)}


def _lambda_added(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    return _forward(a, spec.differential, sign=1.0)


def _layer_from_one(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    d = spec.differential
    return _forward(a, replace(d, lambda_init=diff.lambda_init_of(d.layer + 1)))


def _norm_left_out(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    return _forward(a, spec.differential, norm=False)


def _factor_left_out(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    return _forward(a, spec.differential, factor=False)


def _words(spec: Spec) -> dict:
    d = spec.differential
    return {"layer": d.layer, "wrong": f"{diff.lambda_init_of(d.layer + 1):.4g}", "right": f"{d.lambda_init:.4g}"}


DIFFERENTIAL_VARIANTS = (
    Variant("differential_lambda_added", _lambda_added),
    Variant("differential_layer_from_one", _layer_from_one,
            when(lambda spec: spec.differential.layer is not None, **{k: (lambda spec, k=k: _words(spec)[k])
                                                                         for k in ("layer", "wrong", "right")})),
    Variant("differential_norm_left_out", _norm_left_out),
    Variant("differential_factor_left_out", _factor_left_out,
            lambda spec: ({"factor": f"{1.0 - spec.differential.lambda_init:.4g}"},)),
)
