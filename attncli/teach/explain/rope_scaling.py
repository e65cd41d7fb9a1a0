"""What explain's rope step says about Part 3's rope: the scaling (which pairs were stretched, which kept, which
blended, on the document's numbers), the attention factor a on cos and sin, and where the turned numbers sit.

    scaling_paragraphs(spec, p) -> (the paragraph keys of the ``rope`` texts, what fills them in)
"""

from __future__ import annotations

import numpy as np

from attncli.core.positions import rope_frequencies
from attncli.core.rope_scaling import yarn_ramp
from attncli.core.spec import Spec


def pair_list(chosen: np.ndarray) -> str:
    """The indices i where ``chosen`` holds, as ranges: ``0–3, 7``; ``—`` for none."""
    found = [int(i) for i in np.flatnonzero(chosen)]
    runs: list[list[int]] = []
    for i in found:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs) or "—"


def top_position(spec: Spec) -> float:
    """P: the largest query or key position + 1."""
    return max(float(spec.query_positions.max(initial=0)), float(spec.key_positions.max(initial=0))) + 1


def scaling_paragraphs(spec: Spec, p: int) -> tuple[list[str], dict]:
    """The paragraphs on the scaling and the attention factor, and their numbers (``p`` significant digits)."""
    rope, s = spec.rope, spec.rope.scaling
    g = lambda x: f"{x:.{p}g}"  # noqa: E731
    keys: list[str] = []
    ctx: dict = {"a": g(rope.attention_factor), "a2": g(rope.attention_factor ** 2)}
    if s is not None:
        plain = rope_frequencies(rope.base, rope.dims)
        ctx.update(factor=f"{s.factor:g}", L=f"{s.original:g}" if s.original else "", P=f"{top_position(spec):g}",
                   plain="[" + ", ".join(g(x) for x in plain[:6]) + (", …" if plain.size > 6 else "") + "]")
        longer = top_position(spec) > s.original if s.original else False
        suffix = {"dynamic": "" if longer else "_short", "longrope": "_long" if longer else "_short"}.get(s.type, "")
        keys += ["base_scaled", f"scaling_{s.type}{suffix}"]
        ctx.update(_regions(spec, plain, g))
    if rope.attention_factor != 1:
        keys.append("factor_given" if s is None or s.given_factor is not None else f"factor_{s.type}")
    return keys, ctx


def _regions(spec: Spec, plain: np.ndarray, g) -> dict:
    """Which pairs each scaling type stretched, kept or blended, with its own numbers."""
    rope, s = spec.rope, spec.rope.scaling
    f = rope.frequencies
    if s.type == "yarn":
        ramp, low, high = yarn_ramp(rope.base, rope.dims, s)
        return {"stretched": pair_list(ramp == 1), "kept": pair_list(ramp == 0),
                "blended": pair_list((ramp > 0) & (ramp < 1)), "low": f"{low:g}",
                "high": f"{high + 0.001 if low == high else high:g}",  # (as the ramp divides: never by 0)
                "beta_fast": f"{s.beta_fast:g}", "beta_slow": f"{s.beta_slow:g}",
                "turns": "[" + ", ".join(g(x) for x in (s.original * plain / (2 * np.pi))[:6]) + "]"}
    if s.type == "llama3":
        wavelength = 2 * np.pi / plain
        long, short = wavelength > s.original / s.low_freq_factor, wavelength < s.original / s.high_freq_factor
        return {"stretched": pair_list(long), "kept": pair_list(short), "blended": pair_list(~long & ~short),
                "long_wave": g(s.original / s.low_freq_factor), "short_wave": g(s.original / s.high_freq_factor)}
    if s.type == "dynamic":
        return {"grown": g(float(f[1]) ** (-rope.dims / 2))}  # f_1 = θ′^(−2/dims)
    if s.type == "longrope":
        e = s.long_factor if top_position(spec) > s.original else s.short_factor
        return {"e": "[" + ", ".join(g(x) for x in e[:6]) + (", …" if e.size > 6 else "") + "]"}
    return {}
