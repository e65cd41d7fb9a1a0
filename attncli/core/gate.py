"""Stages: Qwen3-Next's output gate, each head's output multiplied by sigmoids of the block's input.

    G = σ(X̂·W_G + b_G)          per head (h, n, d_v): W_G is d_model × h·d_v, split into heads like W_Q
    Y = concat(H ⊙ G)·W_O + b_O  (the output stage reads the gated heads when there are any)

Two stages: ``gate`` makes G from X̂ alone (so ``--only gate`` needs no attention), ``gating`` multiplies
the heads' outputs H by it.  The JSON gains ``gate`` (the σ values) and ``gated_head_outputs`` (H ⊙ G);
``head_outputs`` stays H.

>>> sigmoid(np.array([0.0, 2.0, -800.0])).round(4).tolist()
[0.5, 0.8808, 0.0]
"""

from __future__ import annotations

import numpy as np

from attncli.core import backward as b
from attncli.core.attention import check_finite, project
from attncli.core.formulas import symbol
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, Lazy, Quantity, Stage, rows_in, rows_key


def sigmoid(x: np.ndarray) -> np.ndarray:
    """σ(x) = 1 / (1 + e^(−x)), without overflow for large |x| (e^(−x) taken only where x ≥ 0, e^x elsewhere)."""
    e = np.exp(-np.abs(x))  # in (0, 1]
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def gate_of(x_hat: np.ndarray, w_g: np.ndarray, b_g: np.ndarray | None) -> np.ndarray:
    """G = σ(X̂·W_G + b_G): x_hat (n, d_model), w_g (h, d_model, d_v), b_g (h, d_v) -> (h, n, d_v)."""
    return sigmoid(project(x_hat, w_g, b_g))


def _gate(spec: Spec, a: Arrays) -> Arrays:
    x = rows_in(spec, a)  # what the queries see
    logits = project(x, spec.w_g, spec.b_g)  # (h, n, d_v)
    check_finite(logits, "gate", spec.tokens)
    return {"gate": sigmoid(logits)}


def _gating(spec: Spec, a: Arrays) -> Arrays:
    return {"gated_head_outputs": a["head_outputs"] * a["gate"]}  # (h, n, d_v)


# ---------------------------------------------------------------- the stage backwards (core.pipeline.backward runs it)


def _gate_back(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """G = σ(X̂·W_G + b_G): dlogits = dG ⊙ G(1 − G), then as a projection."""
    g = a["gate"]
    dx, dw, db = b.project_back(rows_in(spec, a), spec.w_g, d["gate"] * g * (1.0 - g))
    out = {rows_key(spec): dx, "weight_gate": dw}
    if spec.b_g is not None:
        out["bias_gate"] = db
    return out


def _gating_back(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    d_hg = d["gated_head_outputs"]
    return {"head_outputs": d_hg * a["gate"], "gate": d_hg * a["head_outputs"]}


def gated_or_not(a: Arrays) -> np.ndarray:
    """What the output projection concatenates: H ⊙ G with a gate, else H (h, n, d_v)."""
    return a["head_outputs"] if a.get("gated_head_outputs") is None else a["gated_head_outputs"]


def _gate_text(spec: Spec) -> str:
    x = "X̂" if spec.pre_norm is not None else "(X + P)" if spec.positional is not None else "X"
    return f"G = σ({x}·W_G" + (" + b_G)" if spec.b_g is not None else ")")


def _gate_latex(spec: Spec, up) -> str:
    x = r"\hat X" if spec.pre_norm is not None else "(X + P)" if spec.positional is not None else "X"
    return rf"{up('G')} = \sigma({x} {up('W_G')}" + (f" + {up('b_G')})" if spec.b_g is not None else ")")


_present = lambda spec: spec.w_g is not None  # noqa: E731
GATE = Stage("gate", "G = σ(X̂·W_G + b_G)", ("inputs", "positional", "normalized_inputs"),
             (Quantity("weight_gate", "W_G", "Gate projection", "h d_model d_v", "weights.gate:", "w_g", True,
                       *symbol("W_G")),
              Quantity("bias_gate", "b_G", "Gate bias", "h d_v", "bias.gate:", "b_g", True, *symbol("b_G")),
              Quantity("gate", "G", "Gate", "h n d_v", "weights.gate:", text=_gate_text, latex=_gate_latex)),
             _gate, _present, part="after", backward=_gate_back)
GATING = Stage("gating", "H ⊙ G", ("head_outputs", "gate"),
               (Quantity("gated_head_outputs", "H ⊙ G", "Gated head output", "h n d_v", "weights.gate:",
                         text=lambda spec: "H ⊙ G", latex=lambda spec, up: rf"{up('H')} \odot {up('G')}"),),
               _gating, _present, part="after", backward=_gating_back,
               variants=Lazy("attncli.core.variants.left_out:GATE_LEFT_OUT"))
