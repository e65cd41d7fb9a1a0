"""The formulas of each quantity, as the document computes it: as text for tables and as LaTeX.

One place for them, so tables, heat maps, explanations and paste formats say the same thing; the
stage list (:mod:`attncli.core.stages`) gives each quantity its formula from here.
"""

from __future__ import annotations

from collections.abc import Callable

from attncli.core.spec import Spec


def scale_text(spec: Spec) -> str:
    """The scaled score as a formula: ``S / √3``, ``0.5·S``, ``S`` with ``scale: none``; soft-capped
    ``50·tanh(S / √3 / 50)``."""
    if spec.scale_name == "sqrt":
        text = f"S / √{spec.d_k}"
    elif spec.scale_name == "none":
        text = "S"
    else:
        text = f"{spec.scale:g}·S"
    text = text if spec.softcap is None else f"{spec.softcap:g}·tanh({text} / {spec.softcap:g})"
    return text if spec.score_bias is None else f"{text} + B"


def bias_text(spec: Spec) -> str:
    """What the score bias B sums: ``B = matrix + ALiBi slope·(p_j − p_i) + T5 table[bucket(p_j − p_i)]``."""
    bias = spec.score_bias
    parts = [name for name, present in (("matrix", bias.matrix is not None),
                                        ("slope·(p_j − p_i)", bias.slopes is not None),
                                        ("table[bucket(p_j − p_i)]", bias.relative is not None)) if present]
    return "B = " + " + ".join(parts)


def score_formula(spec: Spec) -> str:
    """``S = Q·Kᵀ``; ``S = Q′·K′ᵀ`` with rope; the additive score."""
    if spec.score == "additive":
        return "S = vᵀ·tanh(Q′·W₁ + K′·W₂)" if spec.rope is not None else "S = vᵀ·tanh(Q·W₁ + K·W₂)"
    q = "Q′" if spec.rope is not None else "Q"
    q = f"(τ ⊙ {q})" if spec.query_temperature is not None else q
    return f"S = {q}·K′ᵀ" if spec.rope is not None else f"S = {q}·Kᵀ"


def norm_text(kind: str) -> str:
    return "RMSNorm" if kind == "rms" else "LayerNorm"


def residual_formula(spec: Spec) -> str:
    """``R = X + Y``, ``R = X + P + post_norm(Y)`` …"""
    x = "X + P" if spec.positional is not None else "X"
    y = f"{norm_text(spec.post_norm.kind)}(Y)" if spec.post_norm is not None else "Y"
    return f"R = {x} + {y}" if spec.residual_scale == 1.0 else f"R = {x} + {spec.residual_scale:g}·{y}"


def rope_text(spec: Spec) -> str:
    """How Q and K are turned: ``rope(Q), pairs (i, i + 2), θ = 10000, positions 0 … 4``."""
    rope = spec.rope
    pairs = f"(i, i + {rope.dims // 2})" if rope.style == "half" else "(2i, 2i + 1)"
    pairs += f" written as (i, i + {rope.dims // 2})" if rope.style == "interleaved_halves" else ""
    source = f"θ = {rope.base:g}" if rope.base is not None else "given frequencies"
    source += f", {rope.scaling.type} scaling ×{rope.scaling.factor:g}" if rope.scaling is not None else ""
    place = "last" if rope.part == "last" else "first"
    part = f", {place} {rope.dims} of {spec.d_k} dims" if rope.dims < spec.d_k else ""
    factor = f", cos and sin × {rope.attention_factor:.6g}" if rope.attention_factor != 1 else ""
    return f"pairs {pairs}, {source}{part}{factor}"


def frequencies_text(spec: Spec) -> str:
    """``f_i = θ^(−2i/dims)``, or what scaling made of it."""
    rope = spec.rope
    if rope.base is None:
        return "f: given"
    plain = f"{rope.base:g}^(−2i/{rope.dims})"
    if rope.scaling is None:
        return f"f_i = {plain}"
    return f"f_i = {rope.scaling.type}({plain}, factor {rope.scaling.factor:g})"


def frequencies_latex(spec: Spec, up: Callable[[str], str]) -> str:
    rope = spec.rope
    if rope.base is None:
        return "f"
    plain = f"{rope.base:g}^{{-2i/{rope.dims}}}"
    return f"f_i = {plain}" if rope.scaling is None else rf"f_i = \operatorname{{{rope.scaling.type}}}({plain})"


def attention_factor_text(spec: Spec) -> str:
    """``a = 1.13863`` and where it came from."""
    rope = spec.rope
    given = rope.scaling is None or rope.scaling.given_factor is not None
    origin = "" if rope.attention_factor == 1 and rope.scaling is None else " (given)" if given else \
        f" ({rope.scaling.type})"
    return f"a = {rope.attention_factor:.6g}{origin}: cos and sin × a"


def attention_factor_latex(spec: Spec, up: Callable[[str], str]) -> str:
    return f"a = {spec.rope.attention_factor:.6g}"


def weights_formula(spec: Spec) -> str:
    scaled = scale_text(spec)
    if spec.normalize == "sum":
        return f"A = ({scaled}) / row sum"
    if spec.normalize == "none":
        return f"A = {scaled} (not normalised)"
    if spec.sinks is not None:  # gpt-oss: one more term in each row's denominator
        return f"A = e^Z / (Σ e^Z + e^s),  Z = {scaled}"
    return f"A = softmax({scaled})"


def output_formula(spec: Spec) -> str:
    heads = "concat(H₁ … H_h)" if spec.heads > 1 else "H"
    if spec.w_g is not None:
        heads = "concat(H ⊙ G)"
    formula = f"Y = {heads}"
    if spec.w_o is not None:
        formula += "·W_O"
    if spec.b_o is not None:
        formula += " + b_O"
    return formula


def scaled_latex(spec: Spec, s: str) -> str:
    if spec.scale_name == "sqrt":
        text = rf"\frac{{{s}}}{{\sqrt{{{spec.d_k}}}}}"
    elif spec.scale_name == "none":
        text = s
    else:
        text = rf"{spec.scale:g}\,{s}"
    if spec.softcap is not None:
        text = rf"{spec.softcap:g} \tanh\left({text} / {spec.softcap:g}\right)"
    return text if spec.score_bias is None else f"{text} + B"


def weights_latex(spec: Spec, scaled: str) -> str:
    if spec.normalize == "sum":
        return rf"{scaled} \ \text{{divided by its row sums}}"
    if spec.normalize == "none":
        return rf"{scaled} \ \text{{(not normalised)}}"
    if spec.sinks is not None:
        return rf"\frac{{e^{{Z}}}}{{\sum_j e^{{Z_j}} + e^{{s}}}},\ Z = {scaled}"
    return rf"\operatorname{{softmax}}\left({scaled}\right)"


def output_latex(spec: Spec) -> str:
    heads = [f"H^{{({h})}}" for h in range(1, spec.heads + 1)]
    if len(heads) > 3:
        heads = [heads[0], r"\dots", heads[-1]]
    formula = rf"Y = \operatorname{{concat}}({', '.join(heads)})" if spec.heads > 1 else "Y = H"
    if spec.w_g is not None:
        formula = r"Y = \operatorname{concat}(H \odot G)"
    if spec.w_o is not None:
        formula += " W_O"
    if spec.b_o is not None:
        formula += " + b_O"
    return formula


# ---------------------------------------------------------------- each quantity's formula, as text and as LaTeX
# text(spec) -> "Q = X̂·W_Q + b_Q"; latex(spec, up) -> "Q^{(2)} = \hat X W_Q^{(2)} + b_Q^{(2)}", ``up`` putting a
# symbol in the quantity's head (the identity with one head).  attncli.core.stages gives each quantity its pair.


def _x(spec: Spec) -> tuple[str, str]:
    """What the projections see, as text and LaTeX: X, (X + P) or X̂."""
    if spec.pre_norm is not None:
        return "X̂", r"\hat X"
    return ("(X + P)", "(X + P)") if spec.positional is not None else ("X", "X")


def _x_sum(spec: Spec) -> str:
    return "X + P" if spec.positional is not None else "X"


def _source(spec: Spec) -> tuple[str, str]:
    """Where keys and values come from: C, or what the queries come from."""
    return ("C", "C") if spec.context is not None else _x(spec)


def projection_text(sym: str, weight: str, bias: str, source: str) -> Callable[[Spec], str]:
    """``Q = X·W_Q + b_Q`` (without ``+ b_Q`` when the document has no such bias)."""
    def text(spec: Spec) -> str:
        if spec.given_qkv is not None:
            return f"{sym} = given"  # Q, K and V given directly: no projection
        x = _source(spec)[0] if source == "source" else _x(spec)[0]
        return f"{sym} = {x}·{weight}" + (f" + {bias}" if getattr(spec, bias.lower()) is not None else "")
    return text


def projection_latex(sym: str, weight: str, bias: str, source: str) -> Callable[[Spec, Callable[[str], str]], str]:
    def latex(spec: Spec, up: Callable[[str], str]) -> str:
        if spec.given_qkv is not None:
            return rf"{up(sym)} = \text{{given}}"
        x = _source(spec)[1] if source == "source" else _x(spec)[1]
        return f"{up(sym)} = {x} {up(weight)}" + (f" + {up(bias)}" if getattr(spec, bias.lower()) is not None else "")
    return latex


def normalized_inputs_text(spec: Spec) -> str:
    return f"X̂ = {norm_text(spec.pre_norm.kind)}({_x_sum(spec)})"


def normalized_inputs_latex(spec: Spec, up: Callable[[str], str]) -> str:
    return rf"\hat X = \operatorname{{{norm_text(spec.pre_norm.kind)}}}({_x_sum(spec)})"


def rotated_text(sym: str) -> Callable[[Spec], str]:
    return lambda spec: f"{sym}′ = rope({sym}): {rope_text(spec)}"


def rotated_latex(sym: str) -> Callable[[Spec, Callable[[str], str]], str]:
    return lambda spec, up: rf"{{{up(sym)}}}' = \operatorname{{rope}}({up(sym)})"


def scores_latex(spec: Spec, up: Callable[[str], str]) -> str:
    q, k = up("Q"), up("K")
    qs, ks = (f"{{{q}}}'", f"{{{k}}}'") if spec.rope is not None else (q, f"{{{k}}}")
    if spec.score == "additive":
        return rf"{up('S')} = {up('v')}^\top \tanh({qs} W_1 + {ks} W_2)"
    qs = rf"(\tau \odot {qs})" if spec.query_temperature is not None else qs
    return rf"{up('S')} = {qs} {ks}^\top"


def scaled_note(spec: Spec) -> str:
    """What the scaled scores' title adds: `` (scale: none)`` when the document turned the scale off."""
    return " (scale: none)" if spec.scale_name == "none" else ""


def normalized_output_text(spec: Spec) -> str:
    return f"{norm_text(spec.post_norm.kind)}(Y)"


def normalized_output_latex(spec: Spec, up: Callable[[str], str]) -> str:
    return rf"\operatorname{{{norm_text(spec.post_norm.kind)}}}(Y)"


def symbol(sym: str) -> tuple[Callable[[Spec], str], Callable[[Spec, Callable[[str], str]], str]]:
    """A quantity shown by its symbol alone (X, C, W_Q, B), in its head (W_Q^{(2)}) as LaTeX."""
    return (lambda spec: sym), (lambda spec, up: up(sym))


def fixed(text: str, latex: str) -> tuple[Callable[[Spec], str], Callable[[Spec, Callable[[str], str]], str]]:
    return (lambda spec: text), (lambda spec, up: latex)
