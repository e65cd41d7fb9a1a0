"""Stage: where each token is, added to what the projections see, or rotated into queries and keys.

    P[pos, 2i] = sin(pos / 10000^(2i/d))     P[pos, 2i+1] = cos(pos / 10000^(2i/d))
    RoPE: each pair (a, b) of q or k at position p turns by p·f_i, f_i = θ^(−2i/dims)

>>> sinusoidal(2, 4).round(4).tolist()
[[0.0, 1.0, 0.0, 1.0], [0.8415, 0.5403, 0.01, 1.0]]
"""

from __future__ import annotations

import numpy as np

from attncli.core.record import record
from attncli.core.threads import in_row_blocks


def sinusoidal(n: int, d: int) -> np.ndarray:
    """The fixed positional encoding of "Attention Is All You Need": (n, d)."""
    position = np.arange(n, dtype=np.float64)[:, None]  # (n, 1)
    pair = np.arange(0, d, 2, dtype=np.float64)  # 2i for i = 0 … ⌈d/2⌉ − 1
    angle = position / np.power(10000.0, pair / d)  # (n, ⌈d/2⌉)
    p = np.empty((n, d))
    p[:, 0::2] = np.sin(angle)
    p[:, 1::2] = np.cos(angle[:, : d // 2])
    return p


ROPE_STYLES = ("half", "interleaved", "interleaved_halves")
ROPE_PARTS = ("first", "last")


@record(eq=False)  # holds arrays: == and hash() by identity
class Rope:
    """Rotary position embedding: which dimensions are paired, and how fast each pair turns."""

    frequencies: np.ndarray  # (dims/2,) f_i, radians per position
    style: str = "half"  # 'half': i with i + dims/2 (rotate_half); 'interleaved': 2i with 2i + 1;
    #   'interleaved_halves': 2i with 2i + 1, written as [first members | second members] (DeepSeek V3)
    base: float | None = 10000.0  # θ when the frequencies are θ^(−2i/dims); None when given
    part: str = "first"  # which dims numbers of each head turn: the first, or the last (DeepSeek's MLA)
    attention_factor: float = 1.0  # a: cos and sin multiplied by it (YaRN, LongRoPE)
    scaling: object | None = None  # the rope_scaling.Scaling the frequencies were derived with, if any

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
    """Each pair (a, b) of each row turned by its angle p·f: (a·cos − b·sin, b·cos + a·sin), times a.

    x (h, n, d) with d ≥ rope.dims, positions (n,): the first (``part: last``: the last) ``dims``
    dimensions of each head are rotated, the rest pass unchanged.  Returns a new array (h, n, d).

    >>> rotate(np.array([[[1.0, 0.0]]]), np.array([1.0]), Rope(np.array([np.pi / 2]))).round(12).tolist()
    [[[0.0, 1.0]]]
    """
    angle = positions.astype(np.float64)[:, None] * rope.frequencies[None, :]  # (n, dims/2)
    cos, sin = np.cos(angle), np.sin(angle)
    if rope.attention_factor != 1.0:
        cos, sin = cos * rope.attention_factor, sin * rope.attention_factor  # as HF scales its tables
    lo = 0 if rope.part == "first" else x.shape[-1] - rope.dims  # where the turned numbers start
    half, end = rope.dims // 2, lo + rope.dims
    halves = slice(lo, lo + half), slice(lo + half, end)
    pairs = slice(lo, end, 2), slice(lo + 1, end, 2)
    first, second = halves if rope.style == "half" else pairs  # where each pair's members are read
    into = pairs if rope.style == "interleaved" else halves  # and where they are written
    out = np.empty_like(x)

    def turn(rows: slice) -> None:  # the rows of one block (every head): the same bits as all at once
        x_, out_, cos_, sin_ = x[..., rows, :], out[..., rows, :], cos[rows], sin[rows]
        a, b = x_[..., first], x_[..., second]
        out_[..., :lo] = x_[..., :lo]  # the unrotated rest (partial rotary)
        out_[..., end:] = x_[..., end:]
        product = np.empty(a.shape)  # one temporary for the second product of each half: no other copy
        np.multiply(a, cos_, out=out_[..., into[0]])
        np.multiply(b, sin_, out=product)
        out_[..., into[0]] -= product  # a·cos − b·sin
        np.multiply(b, cos_, out=out_[..., into[1]])
        np.multiply(a, sin_, out=product)
        out_[..., into[1]] += product  # b·cos + a·sin

    in_row_blocks(turn, x.shape[-2], x.size)  # (on two threads where Q or K is large)
    return out
