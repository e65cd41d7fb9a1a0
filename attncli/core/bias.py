"""Stage: an additive bias on the scaled scores, Z = c·tanh(scale·S / c) + B, summed from its parts.

    matrix    B (n, m) or (h, n, m), PyTorch's float attn_mask; a −inf cell masks its key
    alibi     B[h, i, j] = slope_h · (p_j − p_i)                       (ALiBi, BLOOM)
    relative  B[h, i, j] = table[bucket(p_j − p_i), h]                 (T5)

p are the positions of the queries and the keys.  Like :class:`attncli.core.masks.Mask`,
a :class:`ScoreBias` builds any rectangle of B on demand (:meth:`ScoreBias.block`), so
the streamed computation never holds h × n × m of it.

>>> alibi_slopes(4).tolist()
[0.25, 0.0625, 0.015625, 0.00390625]
>>> relative_bucket(np.array([-3, 0, 3, 200]), bidirectional=True, buckets=32, max_distance=128).tolist()
[3, 0, 19, 31]
"""

from __future__ import annotations

import math

import numpy as np

from attncli.core.record import record


def alibi_slopes(heads: int) -> np.ndarray:
    """The ALiBi paper's slopes, in float64 (h,): 2^(−8k/h) for k = 1 … h when h is a power of two; else those of
    the nearest lower power of two p, then the odd powers 1, 3, 5 … of 2^(−4/p) (BLOOM's build_alibi_tensor)."""
    p = 2 ** int(math.floor(math.log2(heads)))
    slopes = 2.0 ** (-8.0 * np.arange(1, p + 1) / p)
    if p < heads:
        extra = 2.0 ** (-4.0 * np.arange(1, 2 * (heads - p), 2) / p)
        slopes = np.concatenate([slopes, extra])
    return slopes


def relative_bucket(distance: np.ndarray, bidirectional: bool, buckets: int, max_distance: int) -> np.ndarray:
    """T5's _relative_position_bucket of ``distance`` = p_j − p_i (integers, any shape), its logarithm in float32.

    Every distance of max_distance or more (either sign) has the last bucket of its side: distances are clipped to
    ±max_distance first, so that positions beyond int64 (whole numbers up to 1e308) give the same buckets.
    """
    distance = np.clip(distance, -max_distance, max_distance).astype(np.int64)
    bucket = np.zeros_like(distance)
    if bidirectional:
        buckets //= 2
        bucket += (distance > 0) * buckets
        distance = np.abs(distance)
    else:
        distance = -np.minimum(distance, 0)
    exact = buckets // 2
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0) where the distance is small: not used
        log = np.log(distance.astype(np.float32) / np.float32(exact))
        spread = log / np.float32(math.log(max_distance / exact)) * np.float32(buckets - exact)
        large = exact + spread.astype(np.int64)
    large = np.minimum(large, buckets - 1)
    return bucket + np.where(distance < exact, distance, large)


@record(eq=False)  # holds arrays: == and hash() by identity
class Relative:
    """T5's relative position bias: a learned table of one value per bucket of key − query distance and head."""

    table: np.ndarray  # (buckets, h)
    buckets: int
    max_distance: int
    bidirectional: bool


@record(eq=False)  # holds arrays: == and hash() by identity
class ScoreBias:
    """``score_bias``: B added to the scaled scores, as a matrix, ALiBi's slopes or a relative table (or several)."""

    matrix: np.ndarray | None = None  # (n, m) or (h, n, m); −inf where masked
    slopes: np.ndarray | None = None  # (h,) ALiBi
    relative: Relative | None = None

    def block(self, heads: int, p_q: np.ndarray, p_k: np.ndarray, lo: int, hi: int, start: int, stop: int,
              head: int | None = None) -> np.ndarray:
        """B for queries lo … hi − 1 and keys start … stop − 1: (h, b, k), or (b, k) for one ``head``.

        ``p_q`` (n,) and ``p_k`` (m,) are the positions.  −inf cells of the matrix are 0 here: they are masked
        (:meth:`attncli.core.masks.Mask.block` includes them), and a masked cell's score is never used.
        """
        chosen = slice(None) if head is None else head
        shape = (hi - lo, stop - start) if head is not None else (heads, hi - lo, stop - start)
        b = np.zeros(shape)
        if self.matrix is not None:
            part = self.matrix[..., lo:hi, start:stop]
            part = part[chosen] if part.ndim == 3 else part
            b += np.where(np.isneginf(part), 0.0, part)
        if self.slopes is not None or self.relative is not None:
            distance = p_k[None, start:stop] - p_q[lo:hi, None]  # (b, k)
            if self.slopes is not None:
                slopes = self.slopes[chosen]
                b += distance * slopes if head is not None else slopes[:, None, None] * distance
            if self.relative is not None:
                r = self.relative
                bucket = relative_bucket(distance, r.bidirectional, r.buckets, r.max_distance)  # (b, k)
                b += r.table[bucket, head] if head is not None else r.table[bucket].transpose(2, 0, 1)
        return b

    def full(self, heads: int, p_q: np.ndarray, p_k: np.ndarray) -> np.ndarray:
        """B (h, n, m), with −inf where the matrix has it (the JSON's ``score_bias``)."""
        b = self.block(heads, p_q, p_k, 0, len(p_q), 0, len(p_k))
        if self.matrix is not None:
            b[np.broadcast_to(np.isneginf(self.matrix), b.shape)] = -np.inf
        return b

    def bound(self, p_q: np.ndarray, p_k: np.ndarray) -> float:
        """max |B| over the finite cells: with it, the scores' bound of attncli.core.stream holds for Z + B."""
        bound = 0.0
        if self.matrix is not None:
            finite = self.matrix[np.isfinite(self.matrix)]
            bound += float(np.abs(finite).max()) if finite.size else 0.0
        if self.slopes is not None:
            reach = max(abs(float(p_k.max() - p_q.min())), abs(float(p_k.min() - p_q.max())))
            bound += float(np.abs(self.slopes).max()) * reach
        if self.relative is not None:
            bound += float(np.abs(self.relative.table).max())
        return bound
