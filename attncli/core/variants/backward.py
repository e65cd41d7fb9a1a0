"""The backward steps' wrong versions: softmax's dZ, the row term D, the transposes of dK and dV, the scale.

    dz_sigmoid       dZ = dA ⊙ A ⊙ (1 − A)   (each weight's own derivative, the other keys' terms forgotten)
    delta_left_out   dZ = A ⊙ dA             (D = rowsum(dH ⊙ H) not subtracted)
    dk_not_transposed  dK = dS·Q, not dSᵀ·Q     dv_not_transposed  dV = A·dH, not Aᵀ·dH
    scale_forgotten_backward  dS = dZ: the scale left out of dQ and dK
"""

from __future__ import annotations

from attncli.core.backward import grouped
from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.variants import Variant


def _softmax_back(fn):
    def apply(spec: Spec, a: Arrays, d: Arrays, p: dict, run) -> Arrays:
        right = run(spec, a, d)
        return {**right, "scaled_scores": fn(a["weights"], d["weights"])}
    return apply


def _plain(spec: Spec) -> bool:
    return spec.gradient is not None and spec.normalize == "softmax" and spec.sinks is None


def _when(test):
    return lambda spec: ({},) if spec.gradient is not None and test(spec) else ()


def _dk(spec: Spec, a: Arrays, d: Arrays, p: dict, run) -> Arrays:
    right = run(spec, a, d)
    return {**right, "kernel_keys": grouped(d["scores"] @ a["kernel_queries"], spec.kv_heads)}


def _dv(spec: Spec, a: Arrays, d: Arrays, p: dict, run) -> Arrays:
    right = run(spec, a, d)
    return {**right, "values": grouped(a["weights"] @ d["head_outputs"], spec.kv_heads)}


def _unscaled(spec: Spec, a: Arrays, d: Arrays, p: dict, run) -> Arrays:
    return {key: value / spec.scale for key, value in run(spec, a, d).items()}


WEIGHTS_BACKWARD = (
    Variant("dz_sigmoid", _softmax_back(lambda w, d_a: d_a * w * (1.0 - w)), _when(_plain), backward=True),
    Variant("delta_left_out", _softmax_back(lambda w, d_a: w * d_a), _when(_plain), backward=True),
)
SCORES_BACKWARD = (
    Variant("dk_not_transposed", _dk, _when(lambda spec: spec.n == spec.m and spec.score == "dot"), backward=True),
)
SCALE_BACKWARD = (
    Variant("scale_forgotten_backward", _unscaled, _when(lambda spec: spec.scale != 1.0), backward=True),
)
MIX_BACKWARD = (
    Variant("dv_not_transposed", _dv, _when(lambda spec: spec.n == spec.m), backward=True),
)
