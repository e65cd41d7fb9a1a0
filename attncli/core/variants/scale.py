"""The scale stage's and the score bias's wrong versions: Z = c·S with the wrong c, the bias's sign, its place, ALiBi.

    scale    c from {1/√d_k, 1/d_k, 1/√d_v, 1/√d_model, 1/√n, 1, 1/√d_k rounded, √d_k (× for ÷), c²}
    bias     Z − B (ALiBi's distance reversed), c·(S + B), B left out
    alibi    −slope·|p_j − p_i|, the slopes in reverse order, e^(−8k/h) for 2^(−8k/h)
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attncli.core.scores import softcap
from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.variants import Variant


def scaled_by(spec: Spec, a: Arrays, factor: float, bias_factor: float = 1.0) -> Arrays:
    """Z = factor·S (→ c·tanh(Z / c)) + bias_factor·B (h, n, m), unchecked: an overflow is the learner's number."""
    z = factor * a["scores"]
    z = z if spec.softcap is None else softcap(z, spec.softcap)
    bias = a.get("score_bias")
    if bias is not None:
        z = z + bias_factor * np.where(np.isneginf(bias), 0.0, bias)
    return {"scaled_scores": z}


def _factor(name: str, factor, needs=lambda spec: True, **words):
    """A variant dividing by the wrong number: ``factor(spec)`` the learner's c; a case when it differs here."""
    def cases(spec: Spec):
        if spec.score != "dot" or not needs(spec):
            return ()
        c = float(factor(spec))
        if np.isclose(c, spec.scale, rtol=1e-12, atol=0):
            return ()
        return ({"factor": c, **_words(spec), **{key: fn(spec) for key, fn in words.items()}},)
    return Variant(name, lambda spec, a, p, run: scaled_by(spec, a, p["factor"]), cases)


def _words(spec: Spec) -> dict:
    root = f"√{spec.d_k}"
    return {"root": root, "scale": {"sqrt": f"1/{root}", "none": "1"}.get(spec.scale_name, f"{spec.scale:g}"),
            "d_k": spec.d_k, "d_v": spec.d_v, "n": spec.n, "d_model": spec.inputs.shape[1]}


def _rounded(spec: Spec) -> float:
    """1/√d_k worked out from √d_k rounded to one decimal (√3 ≈ 1.7): the nearest a learner's root gets."""
    return 1 / round(float(np.sqrt(spec.d_k)), 1)


def _twice_dk(spec: Spec) -> tuple:
    """÷ d_k for ÷ √d_k (the scale applied twice); when d_model = d_k² it is also ÷ √d_model: one slip, both said."""
    if spec.score != "dot" or spec.scale_name != "sqrt" or spec.d_k == 1:
        return ()
    both = spec.inputs.shape[1] == spec.d_k ** 2
    return ({"factor": 1 / spec.d_k, **_words(spec), "name": "scale_twice_dk_model" if both else "scale_twice_dk"},)


SQRT = lambda spec: spec.scale_name == "sqrt"  # noqa: E731
SCALE_VARIANTS = (
    _factor("scale_left_out", lambda spec: 1.0),
    _factor("scale_added", lambda spec: 1 / np.sqrt(spec.d_k), lambda spec: spec.scale_name == "none"),
    Variant("scale_twice_dk", lambda spec, a, p, run: scaled_by(spec, a, p["factor"]), _twice_dk),
    _factor("scale_twice", lambda spec: spec.scale ** 2, lambda spec: spec.scale_name == "number"),
    _factor("scale_inverted", lambda spec: np.sqrt(spec.d_k), SQRT),
    _factor("scale_d_model", lambda spec: 1 / np.sqrt(spec.inputs.shape[1]),
            lambda spec: SQRT(spec) and spec.inputs.shape[1] != spec.d_k ** 2),
    _factor("scale_d_v", lambda spec: 1 / np.sqrt(spec.d_v), SQRT),
    _factor("scale_n", lambda spec: 1 / np.sqrt(spec.n), SQRT),
    _factor("scale_rounded", _rounded, SQRT, rounded=lambda spec: f"{round(float(np.sqrt(spec.d_k)), 1):g}"),
    Variant("bias_before_scale", lambda spec, a, p, run: scaled_by(spec, a, spec.scale, spec.scale),
            lambda spec: ({"c": f"{spec.scale:.4g}"},) if spec.score_bias is not None and spec.scale != 1.0
            and spec.softcap is None else ()),
)


# ---------------------------------------------------------------- the score bias


def _alibi_only(spec: Spec) -> bool:
    b = spec.score_bias
    return b is not None and b.slopes is not None and b.matrix is None and b.relative is None


def _negated(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    b = run(spec, a)["score_bias"]
    return {"score_bias": np.where(np.isneginf(b), b, -b)}  # (h, n, m); a −inf cell stays masked


def _left_out(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    b = run(spec, a)["score_bias"]
    return {"score_bias": np.where(np.isneginf(b), b, 0.0)}


def _slopes(change):
    """ALiBi done with other slopes or another distance: B[h, i, j] = slope′_h · d′(p_i, p_j)."""
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        slopes, absolute = change(spec)
        b = spec.score_bias
        wrong = replace(b, slopes=slopes).full(spec.heads, spec.query_positions, spec.key_positions)
        if absolute:
            distance = spec.key_positions[None, :] - spec.query_positions[:, None]  # (n, m)
            wrong = wrong - slopes[:, None, None] * distance + -slopes[:, None, None] * np.abs(distance)
        return {"score_bias": wrong}
    return apply


def _base_e(spec: Spec) -> np.ndarray:
    return np.exp(-8.0 * np.arange(1, spec.heads + 1) / spec.heads)  # e^(−8k/h) for 2^(−8k/h)


BIAS_VARIANTS = (
    Variant("bias_subtracted", _negated,
            lambda spec: ({"name": "alibi_reversed" if _alibi_only(spec) else "bias_subtracted"},)),
    Variant("score_bias_left_out", _left_out),
    Variant("alibi_distance_abs", _slopes(lambda spec: (spec.score_bias.slopes, True)),
            lambda spec: ({},) if _alibi_only(spec) else ()),
    Variant("alibi_slopes_reversed", _slopes(lambda spec: (spec.score_bias.slopes[::-1].copy(), False)),
            lambda spec: ({},) if _alibi_only(spec) and spec.heads > 1 else ()),
    Variant("alibi_base_e", _slopes(lambda spec: (_base_e(spec), False)),
            lambda spec: ({},) if _alibi_only(spec) else ()),
)
