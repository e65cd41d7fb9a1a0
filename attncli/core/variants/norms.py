"""Every norm's wrong versions (pre_norm, post_norm, add_norm's LayerNorm; qk_norm and latent's norms reuse
:func:`norm_variants`), and the residual's operands.

    norm_axis    over the tokens, not the features     norm_ddof          the mean over d − 1
    norm_eps_*   ε left out, or outside the root        norm_no_root       divided by mean + ε itself
    norm_other   RMSNorm for LayerNorm, or the reverse  norm_gamma_*/beta  γ or β left out, γ and β swapped
    residual     R = Y (left out), R = X̂ + Y (the normalised inputs), N = X + LN(Y), α left out
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attncli.core.norms import layer_norm
from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.variants import Variant

NAMES = {"rms": "RMSNorm", "layer": "LayerNorm"}
NORM_SLIPS = ("norm_other", "norm_axis", "norm_ddof", "norm_eps_left_out", "norm_eps_outside", "norm_no_root",
              "norm_gamma_left_out", "norm_beta_left_out", "norm_gamma_beta_swapped")


def norm_variants(x: np.ndarray, kind: str, gamma: np.ndarray, beta: np.ndarray | None,
                  eps: float, features: tuple[int, ...] = (-1,), tokens: int = 0, only: str | None = None
                  ) -> dict[str, np.ndarray]:
    """A normalisation of x over its ``features`` axes (a row of (n, d); qk_norm's (h, n, d_k): each head's row,
    or a token's every head) done wrong in one way each, by the slip's name; ``tokens``: the axis of the rows;
    ``only``: that slip alone (the others not computed), when the document can show it."""
    beta = np.zeros_like(gamma) if beta is None else beta
    d = int(np.prod([x.shape[axis] for axis in features]))

    def norm(x, kind=kind, axis=features, ddof=0, eps=eps, outside=False, root=True, gamma=gamma, beta=beta):
        count = int(np.prod([x.shape[a] for a in axis]))
        if kind == "rms":
            spread, centred = np.mean(x * x, axis=axis, keepdims=True), x
            spread = spread * count / (count - ddof)
        else:
            centred = x - x.mean(axis=axis, keepdims=True)
            spread = x.var(axis=axis, keepdims=True, ddof=ddof)
        scale = np.sqrt(spread) + eps if outside else np.sqrt(spread + eps) if root else spread + eps
        return gamma * centred / scale + (beta if kind == "layer" else 0.0)

    out = {"norm_other": lambda: norm(x, kind="layer" if kind == "rms" else "rms")}
    if x.shape[tokens] > 1:
        out["norm_axis"] = lambda: norm(x, axis=(tokens,))
    if d > 1:
        out["norm_ddof"] = lambda: norm(x, ddof=1)
    if eps > 0:
        out["norm_eps_left_out"], out["norm_eps_outside"] = lambda: norm(x, eps=0.0), lambda: norm(x, outside=True)
    out["norm_no_root"] = lambda: norm(x, root=False)
    if not np.all(gamma == 1):
        out["norm_gamma_left_out"] = lambda: norm(x, gamma=np.ones_like(gamma))
    if kind == "layer" and np.any(beta != 0):
        out["norm_beta_left_out"] = lambda: norm(x, beta=np.zeros_like(beta))
        if gamma.shape == beta.shape and not np.array_equal(gamma, beta):  # γ ⊙ x̂ + β written β ⊙ x̂ + γ
            out["norm_gamma_beta_swapped"] = lambda: norm(x, gamma=beta, beta=gamma)
    return {name: make() for name, make in out.items() if only is None or name == only}


def words(kind: str, where: str, d: int, eps: float) -> dict:
    return {"where": where, "norm": NAMES[kind], "other": NAMES["layer" if kind == "rms" else "rms"], "d": d,
            "eps": f"{eps:g}"}


def _stage_norm(what, key: str, where: str):
    """The variants of one stage's norm: ``what(spec, a) -> (x, Norm)`` what it normalises and how."""
    def variant(name: str) -> Variant:
        def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
            x, norm = what(spec, a)
            return {key: norm_variants(x, norm.kind, norm.gamma, norm.beta, norm.eps, only=name)[name]}

        def cases(spec: Spec) -> tuple:
            norm = getattr(spec, where)
            if norm is None or spec.latent is not None:
                return ()
            x = np.zeros((2 if spec.n > 1 else 1, norm.gamma.shape[0]))  # which slips this norm can show
            if name not in norm_variants(x + 1.0, norm.kind, norm.gamma, norm.beta, norm.eps):
                return ()
            return (words(norm.kind, where, norm.gamma.shape[0], norm.eps),)
        return Variant(name, apply, cases)
    return tuple(variant(name) for name in NORM_SLIPS)


PRE_NORM_VARIANTS = _stage_norm(lambda spec, a: (spec.embedded, spec.pre_norm), "normalized_inputs", "pre_norm")
POST_NORM_VARIANTS = _stage_norm(lambda spec, a: (a["output"], spec.post_norm), "normalized_output", "post_norm")


# ---------------------------------------------------------------- the residual and add_norm


def _added(spec: Spec, a: Arrays) -> np.ndarray:
    """α·Y (or α·post_norm(Y)): what the residual adds to X₀."""
    y = a["output"] if a.get("normalized_output") is None else a["normalized_output"]
    return spec.residual_scale * y


def _then_norm(spec: Spec, r: np.ndarray) -> Arrays:
    return {"residual": r, "normalized": None if spec.add_norm is None else layer_norm(r, *spec.add_norm)}


def _left_out(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    return _then_norm(spec, _added(spec, a))


def _on_normalized(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    return _then_norm(spec, a["normalized_inputs"] + _added(spec, a))


def _norm_before_add(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    gamma, beta, eps = spec.add_norm
    return {"residual": spec.embedded + _added(spec, a), "normalized": spec.embedded + layer_norm(_added(spec, a),
                                                                                                 gamma, beta, eps)}


def _add_norm_variant(name: str) -> Variant:
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        r = spec.embedded + _added(spec, a)
        gamma, beta, eps = spec.add_norm
        return {"residual": r, "normalized": norm_variants(r, "layer", gamma, beta, eps, only=name)[name]}

    def cases(spec: Spec) -> tuple:
        if spec.add_norm is None:
            return ()
        gamma, beta, eps = spec.add_norm
        if name not in norm_variants(np.ones((2 if spec.n > 1 else 1, gamma.shape[0])), "layer", gamma, beta, eps):
            return ()
        return (words("layer", "add_norm", gamma.shape[0], eps),)
    return Variant(name, apply, cases)


def _has(test):
    return lambda spec: ({},) if (spec.add_norm is not None or spec.residual) and test(spec) else ()


RESIDUAL_VARIANTS = (
    Variant("residual_left_out", _left_out, _has(lambda spec: True)),
    Variant("residual_from_normalized", _on_normalized, _has(lambda spec: spec.pre_norm is not None)),
    Variant("norm_before_add", _norm_before_add, _has(lambda spec: spec.add_norm is not None)),
    Variant("residual_scale_left_out", lambda spec, a, p, run: run(replace(spec, residual_scale=1.0), a),
            lambda spec: ({"alpha": f"{spec.residual_scale:g}"},) if spec.residual_scale != 1.0 else ()),
    *(_add_norm_variant(name) for name in NORM_SLIPS),
)
