"""The weights stage: softmax over the allowed keys, with gpt-oss's sinks, and the log-sum-exp a kernel keeps.

    a_ij = exp(z_ij) / (Σ_j′ exp(z_ij′) + exp(s_h))      over the allowed keys j′ (without sinks: no exp(s_h))
    σ_i  = exp(s_h) / (Σ_j′ exp(z_ij′) + exp(s_h))       the sink's share: row i's weights sum to 1 − σ_i
    lse_i = ln(Σ_j′ exp(z_ij′) (+ exp(s_h)))              −inf (null in JSON) for a row with no key; s_h with a sink

A sink is a key with no value: attention it receives goes nowhere.  lse is defined for a softmax of dot-product
scores only (not ``score: additive``, nor ``normalize: sum | none``).  The maths is
:func:`attncli.core.softmax.softmax_parts`; the streamed path computes the same in :mod:`attncli.core.tiles`.

>>> import numpy as np
>>> spec = type("Spec", (), {"sinks": np.array([0.0]), "normalize": "softmax", "score": "dot", "allowed": None})
>>> made = weights(spec, {"scaled_scores": np.zeros((1, 1, 2))})
>>> made["weights"].shape, made["sink_weights"].round(4).tolist(), made["lse"].shape
((1, 1, 2), [[0.3333]], (1, 1))
"""

from __future__ import annotations

import numpy as np

from attncli.core import attention as maths
from attncli.core.masks import empty_queries
from attncli.core.softmax import softmax_parts
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, Quantity


def has_lse(spec: Spec) -> bool:
    """Whether the document's weights have a log-sum-exp: a softmax of dot-product scores."""
    return spec.normalize == "softmax" and spec.score == "dot"


def _parts(spec: Spec, z: np.ndarray, allowed: np.ndarray | None) -> Arrays:
    if spec.normalize != "softmax":
        return {"weights": maths.weights_of(z, spec.normalize, allowed, spec.tokens)}
    a, lse, sink = softmax_parts(z, allowed, spec.sinks)  # (h, n, m), (h, n), (h, n) or None
    return {"weights": a, "lse": lse if has_lse(spec) else None, "sink_weights": sink}


def weights(spec: Spec, a: Arrays) -> Arrays:
    """The stage on every query: weights, lse and the sink's share; the queries with no key (no warning with a sink,
    which takes their whole row)."""
    allowed = spec.allowed  # (h, n, m), built once and kept for the views
    made = _parts(spec, a["scaled_scores"], allowed)
    made["_empty_queries"] = () if spec.sinks is not None else empty_queries(allowed)
    return made


def weights_block(spec: Spec, a: Arrays, lo: int, hi: int) -> Arrays:
    """The stage on the queries lo … hi − 1 (one block of :mod:`attncli.core.stream`)."""
    if spec.normalize != "softmax":
        return {"weights": maths.normalize(a["scaled_scores"], spec, lo, hi)}
    allowed = None if spec.mask is None else spec.mask.block(lo, hi)
    return _parts(spec, a["scaled_scores"], allowed)


# ---------------------------------------------------------------- the formulas tables and LaTeX show


def _share_text(spec: Spec) -> str:
    return "σ = e^s / (Σ e^z + e^s)"


def _lse_text(spec: Spec) -> str:
    return "LSE = ln(Σ e^z + e^s)" if spec.sinks is not None else "LSE = ln(Σ e^z)"


def _share_latex(spec: Spec, up) -> str:
    sigma = up("\\sigma")
    return sigma + r" = \frac{e^{s}}{\sum_j e^{z_j} + e^{s}}"


def _lse_latex(spec: Spec, up) -> str:
    sink = " + e^{s}" if spec.sinks is not None else ""
    return up("\\mathrm{LSE}") + r" = \ln\left(\sum_j e^{z_j}" + sink + r"\right)"


SINK_WEIGHTS = Quantity("sink_weights", "σ", "Sink share", "h n", "sinks:", text=_share_text, latex=_share_latex)
LSE = Quantity("lse", "LSE", "Log-sum-exp", "h n", "score: dot and normalize: softmax", text=_lse_text,
               latex=_lse_latex, null_at_minus_inf=True)  # ln 0: a row with no key
