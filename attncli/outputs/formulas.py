"""The formulas of each quantity, as the document computes it: as text for tables and as LaTeX.

One place for them, so tables, heat maps, explanations and paste formats say the same thing.
"""

from __future__ import annotations

from attncli.core.spec import Spec


def scale_text(spec: Spec) -> str:
    """The scaled score as a formula: ``S / √3``, ``0.5·S``, or ``S`` with ``scale: none``."""
    if spec.scale_name == "sqrt":
        return f"S / √{spec.d_k}"
    if spec.scale_name == "none":
        return "S"
    return f"{spec.scale:g}·S"


def score_formula(spec: Spec) -> str:
    return "S = vᵀ·tanh(Q·W₁ + K·W₂)" if spec.score == "additive" else "S = Q·Kᵀ"


def weights_formula(spec: Spec) -> str:
    scaled = scale_text(spec)
    if spec.normalize == "sum":
        return f"A = ({scaled}) / row sum"
    if spec.normalize == "none":
        return f"A = {scaled} (not normalised)"
    return f"A = softmax({scaled})"


def output_formula(spec: Spec) -> str:
    heads = "concat(H₁ … H_h)" if spec.heads > 1 else "H"
    formula = f"Y = {heads}"
    if spec.w_o is not None:
        formula += "·W_O"
    if spec.b_o is not None:
        formula += " + b_O"
    return formula


def scaled_latex(spec: Spec, s: str) -> str:
    if spec.scale_name == "sqrt":
        return rf"\frac{{{s}}}{{\sqrt{{{spec.d_k}}}}}"
    if spec.scale_name == "none":
        return s
    return rf"{spec.scale:g}\,{s}"


def weights_latex(spec: Spec, scaled: str) -> str:
    if spec.normalize == "sum":
        return rf"{scaled} \ \text{{divided by its row sums}}"
    if spec.normalize == "none":
        return rf"{scaled} \ \text{{(not normalised)}}"
    return rf"\operatorname{{softmax}}\left({scaled}\right)"


def output_latex(spec: Spec) -> str:
    heads = [f"H^{{({h})}}" for h in range(1, spec.heads + 1)]
    if len(heads) > 3:
        heads = [heads[0], r"\dots", heads[-1]]
    formula = rf"Y = \operatorname{{concat}}({', '.join(heads)})" if spec.heads > 1 else "Y = H"
    if spec.w_o is not None:
        formula += " W_O"
    if spec.b_o is not None:
        formula += " + b_O"
    return formula
