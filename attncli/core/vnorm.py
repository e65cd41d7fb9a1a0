"""Stage: the values normalised, ``v_norm`` (Gemma 4's ``v_norm``: an RMS norm without γ).

    V̂ = V / √(mean(V²) + ε)        over each key/value head's d_v numbers of each key; H = A·V̂

Gemma 4 (``Gemma4TextAttention``) normalises its values so, after the projection (and, on its global layers with
``k_eq_v``, V is the key projection itself, taken before ``k_norm``).  The JSON gains ``normalized_values``; the
attention mixes them (:func:`mixed`), and the backward pass runs the norm's gradient (γ = 1) back to V.

>>> v = np.array([[[3.0, 4.0]]])                       # (g, m, d_v)
>>> rms(v, 0.0).round(6).tolist()
[[[0.848528, 1.131371]]]
"""

from __future__ import annotations

import numpy as np

from attncli.core import backward as b
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, Lazy, Quantity, Stage


def rms(v: np.ndarray, eps: float) -> np.ndarray:
    """V / √(mean(V²) + ε) over the last axis: v (g, m, d_v) -> (g, m, d_v)."""
    return v / np.sqrt(np.einsum("gmd,gmd->gm", v, v)[..., None] / v.shape[-1] + eps)


def mixed(a: Arrays, spec: Spec) -> np.ndarray:
    """The values the weights mix (g, m, d_v): V̂ with ``v_norm``, else V."""
    return a["values"] if spec.v_norm is None else a["normalized_values"]


def mixed_key(spec: Spec) -> str:
    """The JSON key of :func:`mixed`'s values: where the attention's backward step sends dV."""
    return "values" if spec.v_norm is None else "normalized_values"


def _run(spec: Spec, a: Arrays) -> Arrays:
    return {"normalized_values": rms(a["values"], spec.v_norm)}


def _backward(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """V̂ = V / √(mean(V²) + ε): dV = (dV̂ − V̂·mean(dV̂ ⊙ V̂)) / √(mean(V²) + ε) (norm_back with γ = 1)."""
    dv, _ = b.norm_back(a["values"], d["normalized_values"], 1.0, "rms", spec.v_norm)
    return {"values": dv}


NORMALIZED_VALUES = Quantity(
    "normalized_values", "V̂", "Normalised values", "g m d_v", "v_norm:",
    text=lambda spec: "V̂ = V / √(mean(V²) + ε)" if spec.v_norm is None else f"V̂ = V / √(mean(V²) + {spec.v_norm:g})",
    latex=lambda spec, up: up(r"\hat{V}") + r" = \frac{V}{\sqrt{\operatorname{mean}(V^2) + \varepsilon}}",
    checkable=True, steps=(3,))
V_NORM = Stage("v_norm", "V̂ = V / √(mean(V²) + ε)", ("values",), (NORMALIZED_VALUES,), _run,
               lambda spec: spec.v_norm is not None, backward=_backward,
               variants=Lazy("attncli.core.variants.left_out:V_NORM_LEFT_OUT"))
