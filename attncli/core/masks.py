"""Stage: which keys each query may attend to (True = may attend), from parts that must all allow a key.

    causal   upper_left: j ≤ i          lower_right: j ≤ i + (m − n)      (i′ = i or i + (m − n))
    window   with causal: i′ − W < j ≤ i′;  without: |i − j| < W
    chunk    ⌊j / C⌋ = ⌊i′ / C⌋: the keys of the query's own chunk of C (Llama 4's chunked layers)
    keys     one flag per key (key padding)
    matrix   (n, m), or (h, n, m) one per query head

A :class:`Mask` is never stored as an n × m matrix unless the document gave one:
:meth:`Mask.block` builds any rectangle of it, and :meth:`Mask.key_span` says which
keys a block of queries can see at all, so that :mod:`attncli.core.stream` skips the rest.

>>> Mask(3, 3, causal="upper_left").full().astype(int).tolist()
[[1, 0, 0], [1, 1, 0], [1, 1, 1]]
>>> Mask(2, 4, causal="lower_right", window=2).full().astype(int).tolist()
[[0, 1, 1, 0], [0, 0, 1, 1]]
>>> Mask(3, 3, causal="upper_left").key_span(1, 2)
(0, 2)
>>> Mask(4, 4, causal="upper_left", chunk=2).full().astype(int).tolist()
[[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]]
>>> empty_queries(np.array([[True, False], [False, False]]))
(1,)
"""

from __future__ import annotations

import numpy as np

from attncli.core.record import record

CAUSAL_KINDS = ("upper_left", "lower_right")


@record(eq=False)  # holds arrays: == and hash() by identity
class Mask:
    """The keys each of n queries may attend to among m, from the parts given (each must allow a key)."""

    n: int  # queries
    m: int  # keys
    causal: str | None = None  # 'upper_left' or 'lower_right'
    window: int | None = None  # W ≥ 1
    keys: np.ndarray | None = None  # (m,) bool, True = a real key
    matrix: np.ndarray | None = None  # (n, m) or (h, n, m) bool, True = may attend
    chunk: int | None = None  # C ≥ 1: only the keys of the query's chunk, ⌊j / C⌋ = ⌊i′ / C⌋

    @property
    def offset(self) -> int:
        """i′ − i: m − n for a lower-right causal mask, else 0."""
        return self.m - self.n if self.causal == "lower_right" else 0

    @property
    def banded(self) -> bool:
        """Whether causal, window or chunk rule out keys by where they lie (no matrix needed)."""
        return self.causal is not None or self.window is not None or self.chunk is not None

    @property
    def per_head(self) -> bool:
        return self.matrix is not None and self.matrix.ndim == 3

    def key_span(self, lo: int, hi: int) -> tuple[int, int]:
        """The keys [start, stop) that queries lo … hi − 1 may see at all (causal, window and chunk decide it)."""
        start, stop = 0, self.m
        if self.causal is not None:
            stop = hi + self.offset
            if self.window is not None:
                start = lo + self.offset - self.window + 1
        elif self.window is not None:
            start, stop = lo - self.window + 1, hi + self.window - 1
        if self.chunk is not None and hi > lo:  # from the first query's chunk to the end of the last one's
            start = max(start, (lo + self.offset) // self.chunk * self.chunk)
            stop = min(stop, ((hi - 1 + self.offset) // self.chunk + 1) * self.chunk)
        stop = min(max(stop, 0), self.m)
        return min(max(start, 0), stop), stop

    def seen_by_all(self, lo: int, hi: int) -> tuple[int, int]:
        """The keys [first, last) that every query of lo … hi − 1 may see as far as causal and window go (the
        middle of a band, where a tile needs no mask from them); first ≥ last when there are none."""
        first, last = 0, self.m
        top, bottom = lo + self.offset, hi - 1 + self.offset  # i′ of the first and last query
        if self.causal is not None:
            last = top + 1
            if self.window is not None:
                first = bottom - self.window + 1
        elif self.window is not None:
            first, last = hi - self.window, lo + self.window
        if self.chunk is not None:  # the keys of a chunk holding both the first and the last query, if one does
            first = max(first, bottom // self.chunk * self.chunk)
            last = min(last, (top // self.chunk + 1) * self.chunk)
        return max(first, 0), min(last, self.m)

    def query_span(self, lo: int, hi: int, start: int, stop: int) -> tuple[int, int]:
        """The queries [first, last) of lo … hi − 1 that may see any of the keys start … stop − 1 (causal and
        window decide it): near a causal diagonal, the later queries only."""
        first, last = lo, hi
        if self.causal is not None:
            first = start - self.offset  # sees j ≤ i′: i′ ≥ start
            if self.window is not None:
                last = stop - 1 - self.offset + self.window  # and j > i′ − W: i′ < stop − 1 + W
        elif self.window is not None:
            first, last = start - self.window + 1, stop + self.window - 1
        if self.chunk is not None and stop > start:  # i′ in one of the chunks of the keys start … stop − 1
            first = max(first, start // self.chunk * self.chunk - self.offset)
            last = min(last, ((stop - 1) // self.chunk + 1) * self.chunk - self.offset)
        first, last = max(first, lo), min(last, hi)
        return (first, last) if first < last else (lo, lo)

    def block(self, lo: int, hi: int, start: int = 0, stop: int | None = None,
              head: int | None = None) -> np.ndarray | None:
        """Allowed cells of queries lo … hi − 1 and keys start … stop − 1: (b, k), or (h, b, k) for a
        per-head matrix when ``head`` is None; None when every cell of the block is allowed."""
        stop = self.m if stop is None else stop
        allowed: np.ndarray | None = None
        if self.banded and not self._band_covers(lo, hi, start, stop):
            allowed = self._band(lo, hi, start, stop)
            if allowed.all():
                allowed = None
        if self.keys is not None and not self.keys[start:stop].all():
            allowed = self._and(allowed, np.broadcast_to(self.keys[start:stop], (hi - lo, stop - start)))
        if self.matrix is not None:
            part = self.matrix[..., lo:hi, start:stop]
            if self.per_head and head is not None:
                part = part[head]
            allowed = self._and(allowed, part)
        return allowed

    def _band(self, lo: int, hi: int, start: int, stop: int) -> np.ndarray:
        """(b, k) what causal, window and chunk allow of queries lo … hi − 1 and keys start … stop − 1."""
        i = np.arange(lo, hi)[:, None] + self.offset  # i′ (b, 1)
        j = np.arange(start, stop)[None, :]  # (1, k)
        allowed = np.ones((hi - lo, stop - start), dtype=bool)
        if self.causal is not None:
            allowed &= j <= i
            if self.window is not None:
                allowed &= j > i - self.window
        elif self.window is not None:
            allowed &= np.abs(i - j) < self.window
        if self.chunk is not None:
            allowed &= j // self.chunk == i // self.chunk  # floor division: i′ < 0 is in no key's chunk
        return allowed

    def _band_covers(self, lo: int, hi: int, start: int, stop: int) -> bool:
        """Whether causal, window and chunk allow every cell of the rectangle (then no cell needs building)."""
        first, last = self.seen_by_all(lo, hi)
        return hi <= lo or stop <= start or (first <= start and stop <= last)

    def inverted(self) -> Mask | None:
        """The mask with its given flags (keys, matrix) read with the other convention; None when it has none."""
        if self.keys is None and self.matrix is None:
            return None
        return Mask(self.n, self.m, self.causal, self.window, None if self.keys is None else ~self.keys,
                    None if self.matrix is None else ~self.matrix, self.chunk)

    def full(self) -> np.ndarray:
        """Every cell: (n, m), or (h, n, m) with a per-head matrix."""
        allowed = self.block(0, self.n)
        return np.ones((self.n, self.m), dtype=bool) if allowed is None else allowed

    @staticmethod
    def _and(a: np.ndarray | None, b: np.ndarray) -> np.ndarray:
        return np.array(b, dtype=bool) if a is None else a & b


def empty_queries(allowed: np.ndarray | None) -> tuple[int, ...]:
    """Indices of the queries that may attend to no key at all (in some head, for a per-head mask)."""
    if allowed is None:
        return ()
    none = ~allowed.any(axis=-1)  # (n,) or (h, n)
    if none.ndim == 2:
        none = none.any(axis=0)
    return tuple(int(i) for i in np.flatnonzero(none))
