"""Stage: where each token is, added to what the projections see, or rotated into queries and keys.

    P[pos, 2i] = sin(pos / 10000^(2i/d))     P[pos, 2i+1] = cos(pos / 10000^(2i/d))
    RoPE: each pair (a, b) of q or k at position p turns by p·f_i, f_i = θ^(−2i/dims)

>>> sinusoidal(2, 4).round(4).tolist()
[[0.0, 1.0, 0.0, 1.0], [0.8415, 0.5403, 0.01, 1.0]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def sinusoidal(n: int, d: int) -> np.ndarray:
    """The fixed positional encoding of "Attention Is All You Need": (n, d)."""
    position = np.arange(n, dtype=np.float64)[:, None]  # (n, 1)
    pair = np.arange(0, d, 2, dtype=np.float64)  # 2i for i = 0 … ⌈d/2⌉ − 1
    angle = position / np.power(10000.0, pair / d)  # (n, ⌈d/2⌉)
    p = np.empty((n, d))
    p[:, 0::2] = np.sin(angle)
    p[:, 1::2] = np.cos(angle[:, : d // 2])
    return p


ROPE_STYLES = ("half", "interleaved")


@dataclass(frozen=True)
class Rope:
    """Rotary position embedding: which dimensions are paired, and how fast each pair turns."""

    frequencies: np.ndarray  # (dims/2,) f_i, radians per position
    style: str = "half"  # 'half': i with i + dims/2 (rotate_half); 'interleaved': 2i with 2i + 1
    base: float | None = 10000.0  # θ when the frequencies are θ^(−2i/dims); None when given

    @property
    def dims(self) -> int:
        return 2 * self.frequencies.shape[0]


def rope_frequencies(base: float, dims: int) -> np.ndarray:
    """f_i = θ^(−2i/dims) for i = 0 … dims/2 − 1, in float64: (dims/2,).

    >>> rope_frequencies(10000.0, 4).tolist()
    [1.0, 0.01]
    """
    return 1.0 / base ** (np.arange(0, dims, 2, dtype=np.float64) / dims)


def rotate(x: np.ndarray, positions: np.ndarray, rope: Rope) -> np.ndarray:
    """Each pair (a, b) of each row turned by its angle p·f: (a·cos − b·sin, b·cos + a·sin).

    x (h, n, d) with d ≥ rope.dims, positions (n,): the first ``dims`` dimensions of each
    head are rotated, the rest pass unchanged.  Returns a new array (h, n, d).

    >>> rotate(np.array([[[1.0, 0.0]]]), np.array([1.0]), Rope(np.array([np.pi / 2]))).round(12).tolist()
    [[[0.0, 1.0]]]
    """
    angle = positions.astype(np.float64)[:, None] * rope.frequencies[None, :]  # (n, dims/2)
    cos, sin = np.cos(angle), np.sin(angle)
    half = rope.dims // 2
    if rope.style == "half":
        first, second = slice(0, half), slice(half, rope.dims)
    else:
        first, second = slice(0, rope.dims, 2), slice(1, rope.dims, 2)
    a, b = x[..., first], x[..., second]
    out = np.empty_like(x)
    if rope.dims < x.shape[-1]:
        out[..., rope.dims :] = x[..., rope.dims :]  # the unrotated rest (partial rotary)
    product = np.empty(a.shape)  # one temporary for the second product of each half: no other copy
    np.multiply(a, cos, out=out[..., first])
    np.multiply(b, sin, out=product)
    out[..., first] -= product  # a·cos − b·sin
    np.multiply(b, cos, out=out[..., second])
    np.multiply(a, sin, out=product)
    out[..., second] += product  # b·cos + a·sin
    return out
