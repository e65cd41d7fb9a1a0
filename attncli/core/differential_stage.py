"""Stage: differential attention (``differential``, DiffLlama): its quantities, its run and its backward step.

It takes the place of ``mix`` (H = A·V) when the document has it: from the weights of every head (A, h × n × m)
and the values it makes each pair's combined weights, outputs and normalised outputs, and writes them as
``head_outputs`` (h × n × d_v, pair p as heads 2p and 2p + 1) for the gate and the output projection.  The maths
is :mod:`attncli.core.differential`'s.

Backward, from dH (h, n, d_v), with W = A₁ − λ·A₂, V′ the pair's values, O = W·V′, Ô = (1 − λ_init)·rms(O):

    dÔ = dH as pairs;  dO = RMSNorm's backward (γ = 1 − λ_init);  dW = dO·V′ᵀ;  dV′ = Wᵀ·dO
    dA₁ = dW;  dA₂ = −λ·dW;  dλ = −Σ dW ⊙ A₂ (over n, m)
    dλ_q1 = dλ·e^(λ_q1·λ_k1)·λ_k1   dλ_k1 = dλ·e^(λ_q1·λ_k1)·λ_q1   (λ_q2, λ_k2: −dλ·e^(λ_q2·λ_k2)·…)
"""

from __future__ import annotations

import numpy as np

from attncli.core import backward as b
from attncli.core import differential as diff
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, Lazy, Quantity, Stage

NEEDS = "differential:"


def _run(spec: Spec, a: Arrays) -> Arrays:
    return diff.forward(a["weights"], a["values"], spec.differential)


def _block(spec: Spec, a: Arrays, lo: int, hi: int) -> Arrays:
    return _run(spec, a)  # the block's weights (h, b, m): every step is row by row


def _vector_back(d_lam_e: np.ndarray, other: np.ndarray) -> np.ndarray:
    """The gradient of a λ vector in its own shape: (d,) shared (summed over the pairs) or (p, d)."""
    return d_lam_e.sum() * other if other.ndim == 1 else d_lam_e[:, None] * other


def _back(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    dd = spec.differential
    weights, v = a["weights"], a["values"]  # (h, n, m), (g, m, d_v)
    h, p, d_v = spec.heads, spec.heads // 2, spec.d_v
    lam, w, o = a["differential_lambda"], a["differential_weights"], a["differential_head_outputs"]
    d_o_hat = diff.as_pairs(d["head_outputs"])  # (p, n, 2·d_v)
    d_o = b.norm_back(o, d_o_hat, 1.0 - dd.lambda_init, "rms", dd.eps)[0]
    d_w = d_o @ diff.pair_values(v, h).transpose(0, 2, 1)  # (p, n, m)
    d_vp = w.transpose(0, 2, 1) @ d_o  # (p, m, 2·d_v)
    d_v_h = np.concatenate((d_vp[..., :d_v], d_vp[..., d_v:]), axis=0)  # (h, m, d_v): head p, then head p + h/2
    d_lam = -np.einsum("pnm,pnm->p", d_w, weights[p:])
    e1, e2 = dd.exponentials(p)
    out = {"weights": np.concatenate((d_w, -lam[:, None, None] * d_w), axis=0),
           "values": b.grouped(d_v_h, spec.kv_heads),
           "normalized_head_outputs": d_o_hat, "differential_head_outputs": d_o, "differential_weights": d_w,
           "differential_lambda": d_lam}
    if dd.lambda_q1 is None:  # λ = λ_init: no vectors, no gradients of them
        return out
    return {**out,
            "differential_lambda_q1": _vector_back(d_lam * e1, dd.lambda_k1),
            "differential_lambda_k1": _vector_back(d_lam * e1, dd.lambda_q1),
            "differential_lambda_q2": _vector_back(-d_lam * e2, dd.lambda_k2),
            "differential_lambda_k2": _vector_back(-d_lam * e2, dd.lambda_q2)}


# ---------------------------------------------------------------- the quantities, as tables and LaTeX show them


def _lambda_text(spec: Spec) -> str:
    """λ's formula as the document uses it: with the four λ vectors, or λ_init alone when it gives none."""
    d = spec.differential
    init = d.lambda_init if d is not None else 0.0
    if d is not None and d.lambda_q1 is None:
        return f"λ = λ_init = {init:.6g}"
    return f"λ = e^(λ_q1·λ_k1) − e^(λ_q2·λ_k2) + {init:.6g}"


def _lambda_latex(spec: Spec, up) -> str:
    if spec.differential is not None and spec.differential.lambda_q1 is None:
        return r"\lambda = \lambda_{\text{init}}"
    return (r"\lambda = e^{\lambda_{q1} \cdot \lambda_{k1}} - e^{\lambda_{q2} \cdot \lambda_{k2}} "
            r"+ \lambda_{\text{init}}")


def _q(key: str, symbol: str, title: str, shape: str, text: str, latex: str, masked: bool = False,
       steps: tuple = ()) -> Quantity:
    return Quantity(key, symbol, title, shape, NEEDS, text=lambda spec: text, latex=lambda spec, up: latex,
                    masked=masked, checkable=True, steps=steps)  # (check: head: picks the pair the head is in)


def _parameter(name: str) -> Quantity:
    sym = name.replace("lambda_", "λ_")
    return Quantity(f"differential_{name}", sym, f"Differential {sym}", "d_λ", NEEDS, f"differential.{name}", True,
                    lambda spec: sym, lambda spec, up: sym.replace("λ", r"\lambda"))


def _head_outputs_text(spec: Spec) -> str:
    return "H = Ô, pair p as heads 2p−1, 2p" if spec.differential is not None else "H = A·V"


def _head_outputs_latex(spec: Spec, up) -> str:
    return rf"{up('H')} = \hat O" if spec.differential is not None else f"{up('H')} = {up('A')} {up('V')}"


HEAD_OUTPUTS = Quantity("head_outputs", "H", "Head output", "h n d_v", text=_head_outputs_text,
                        latex=_head_outputs_latex, checkable=True, steps=(6, 7))
DIFFERENTIAL = Stage(
    "differential", "W = A₁ − λ·A₂;  O = W·[V₁ | V₂];  Ô = (1 − λ_init)·RMSNorm(O)", ("weights", "values"),
    (*(_parameter(name) for name in ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")),
     Quantity("differential_lambda", "λ", "Differential λ", "p", NEEDS, text=_lambda_text, latex=_lambda_latex,
              checkable=True, steps=("differential",)),
     _q("differential_weights", "W", "Differential weights", "p n m", "W = A₁ − λ·A₂", r"W = A_1 - \lambda A_2",
        steps=("differential",)),
     _q("differential_head_outputs", "O", "Differential head output", "p n 2·d_v", "O = W·[V₁ | V₂]",
        r"O = W [V_1 \mid V_2]", steps=("differential",)),
     _q("normalized_head_outputs", "Ô", "Normalised head output", "p n 2·d_v", "Ô = (1 − λ_init)·RMSNorm(O)",
        r"\hat O = (1 - \lambda_{\text{init}}) \operatorname{RMSNorm}(O)", steps=("differential",)),
     HEAD_OUTPUTS),
    _run, lambda spec: spec.differential is not None, part="attention", block=_block, backward=_back,
    variants=Lazy("attncli.core.variants.differential:DIFFERENTIAL_VARIANTS"), explained=("differential",))
