"""Stage: Llama 4's query temperature, each query row multiplied by a factor that grows with its position.

    τ_i = 1 + attn_scale · ln(1 + ⌊(p_i + 1) / floor_scale⌋)        p the queries' positions
    Q′ ← τ ⊙ Q′   (row i times τ_i, after the rotation and an after_rope qk_norm)

Hugging Face's ``Llama4TextAttention`` does this on its NoPE layers (``attn_temperature_tuning``): at long
positions the softmax over many keys flattens, and a larger τ sharpens it again.  The JSON gains τ
(``query_temperature``, n); the multiplied queries are what the scores see (``kernel_queries``).

>>> temperature(np.array([0.0, 3.0, 7.0, 8.0]), 4.0, 0.5).round(4).tolist()
[1.0, 1.3466, 1.5493, 1.5493]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attncli.core.spec import Spec
from attncli.core.stage import Arrays, Lazy, Quantity, Stage

TEMPERED = "_tempered_queries"  # the multiplied queries (h, n, d_k): internal, what kernel_queries returns


def temperature(positions: np.ndarray, floor_scale: float, attn_scale: float) -> np.ndarray:
    """τ (n,) for the queries at ``positions`` (n,): 1 + attn_scale·ln(1 + ⌊(p + 1)/floor_scale⌋)."""
    return 1.0 + attn_scale * np.log1p(np.floor((positions + 1.0) / floor_scale))


def tempered(q: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """τ ⊙ Q: q (h, n, d_k), each query row i times τ_i -> (h, n, d_k)."""
    return q * tau[None, :, None]


def text(spec: Spec) -> str:
    floor_scale, attn_scale = spec.query_temperature
    return f"τ = 1 + {attn_scale:g}·ln(1 + ⌊(p + 1) / {floor_scale:g}⌋)"


def latex(spec: Spec, up: Callable[[str], str]) -> str:
    floor_scale, attn_scale = spec.query_temperature
    floor = rf"\left\lfloor \frac{{p + 1}}{{{floor_scale:g}}} \right\rfloor"
    return rf"\tau = 1 + {attn_scale:g} \ln\left(1 + {floor}\right)"


TAU = Quantity("query_temperature", "τ", "Query temperature", "n", "query_temperature:", text=text, latex=latex)


def temperature_stage(last_queries: Callable[[Arrays, Spec], np.ndarray]) -> Stage:
    """The stage, multiplying ``last_queries(a, spec)`` (the last query stage before it: rotated, normalised …)."""
    def run(spec: Spec, a: Arrays) -> Arrays:
        tau = temperature(spec.query_positions, *spec.query_temperature)  # (n,)
        return {"query_temperature": tau, TEMPERED: tempered(last_queries(a, spec), tau)}
    return Stage("query_temperature", "Q′ = τ ⊙ Q′  (row i times τ_i)",
                 ("queries", "queries_rotated", "normalized_queries"), (TAU,), run,
                 lambda spec: spec.query_temperature is not None,
                 variants=Lazy("attncli.core.variants.left_out:temperature_left_out", args=(last_queries, TEMPERED)))
