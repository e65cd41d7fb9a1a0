"""RoPE scaling (Part 3): the frequencies and the attention factor of ``rope.scaling``, as Hugging Face derives them.

With f_i = θ^(−2i/dims), L = original_max_position_embeddings and P = the largest position + 1
(transformers' modeling_rope_utils.py, here in float64):

    linear     f_i / factor
    dynamic    f_i with θ·(factor·max(P, L)/L − (factor − 1))^(dims/(dims − 2)) as the base
    llama3     λ_i = 2π/f_i: long waves (λ_i > L/low) f_i/factor, short ones (λ_i < L/high) f_i, between a blend
    yarn       f_i·(ramp_i/factor + 1 − ramp_i), ramp from the dimensions d(β_fast) … d(β_slow);  a = mscale
    longrope   f_i / e_i, e = long_factor when P > L else short_factor;  a = √(1 + ln factor / ln L)

>>> s = Scaling("linear", 4.0)
>>> frequencies, a = scaled(10000.0, 4, s, 8)
>>> frequencies.tolist(), a
([0.25, 0.0025], 1.0)
"""

from __future__ import annotations

import math

import numpy as np

from attncli.core.positions import rope_frequencies
from attncli.core.record import record

SCALING_TYPES = ("linear", "dynamic", "llama3", "yarn", "longrope")


@record(eq=False)  # holds arrays: == and hash() by identity
class Scaling:
    """``rope.scaling``: its type and parameters, with Hugging Face's defaults."""

    type: str
    factor: float
    original: float | None = None  # L, original_max_position_embeddings (all but linear)
    low_freq_factor: float = 1.0  # llama3
    high_freq_factor: float = 4.0
    beta_fast: float = 32.0  # yarn
    beta_slow: float = 1.0
    mscale: float | None = None
    mscale_all_dim: float | None = None
    truncate: bool = True
    short_factor: np.ndarray | None = None  # longrope, (dims/2,) each
    long_factor: np.ndarray | None = None
    given_factor: float | None = None  # rope.attention_factor, when the document gives one: it wins


def scaled(base: float, dims: int, s: Scaling, p: float) -> tuple[np.ndarray, float]:
    """The frequencies (dims/2,) and the attention factor a of ``s``, for positions below ``p`` (P)."""
    f = rope_frequencies(base, dims)  # (dims/2,)
    if s.type == "linear":
        return f / s.factor, 1.0
    if s.type == "dynamic":
        length = max(p, s.original)
        grown = base * (s.factor * length / s.original - (s.factor - 1)) ** (dims / (dims - 2))
        return rope_frequencies(grown, dims), 1.0
    if s.type == "llama3":
        return llama3(f, s), 1.0
    if s.type == "yarn":
        ramp = yarn_ramp(base, dims, s)[0]
        return f / s.factor * ramp + f * (1 - ramp), yarn_factor(s)
    e = s.long_factor if p > s.original else s.short_factor
    a = 1.0 if s.factor <= 1 else math.sqrt(1 + math.log(s.factor) / math.log(s.original))
    return 1.0 / (e * base ** (np.arange(0, dims, 2, dtype=np.float64) / dims)), a


def llama3(f: np.ndarray, s: Scaling) -> np.ndarray:
    """Llama 3.1: wavelengths λ = 2π/f longer than L/low divided by factor, shorter than L/high kept, blend between."""
    wavelength = 2 * math.pi / f
    long = wavelength > s.original / s.low_freq_factor
    short = wavelength < s.original / s.high_freq_factor
    divided = np.where(long, f / s.factor, f)
    smooth = (s.original / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor)
    blended = (1 - smooth) * divided / s.factor + smooth * divided
    return np.where(~short & ~long, blended, divided)


def yarn_dimension(rotations: float, dims: int, base: float, length: float) -> float:
    """d(r) = dims·ln(L / (2π·r)) / (2·ln θ): the pair index whose wave turns r times over L positions."""
    return dims * math.log(length / (rotations * 2 * math.pi)) / (2 * math.log(base))


def yarn_ramp(base: float, dims: int, s: Scaling) -> tuple[np.ndarray, float, float]:
    """YaRN's ramp (dims/2,): 0 for the pairs kept (fast waves), 1 for those divided by factor, between for the
    blend; and its ends (low, high)."""
    low = yarn_dimension(s.beta_fast, dims, base, s.original)
    high = yarn_dimension(s.beta_slow, dims, base, s.original)
    if s.truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dims - 1)
    top = high + 0.001 if low == high else high  # as Hugging Face: no division by zero
    ramp = np.clip((np.arange(dims // 2, dtype=np.float64) - low) / (top - low), 0.0, 1.0)
    return ramp, low, high


def mscale(factor: float, mu: float = 1.0) -> float:
    """m(s, μ) = 0.1·μ·ln s + 1 (1 when s ≤ 1)."""
    return 1.0 if factor <= 1 else 0.1 * mu * math.log(factor) + 1.0


def yarn_factor(s: Scaling) -> float:
    """a = m(factor, mscale) / m(factor, mscale_all_dim) when both are given (and not 0), else m(factor, 1)."""
    if s.mscale and s.mscale_all_dim:
        return mscale(s.factor, s.mscale) / mscale(s.factor, s.mscale_all_dim)
    return mscale(s.factor)
