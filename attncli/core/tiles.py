"""Dot-product softmax attention tile by tile: one head, a block of queries, the keys a tile at a time.

For head h, the queries lo … hi − 1 (a block of b rows) and each tile of t keys among those the
block may see at all (:meth:`attncli.core.masks.Mask.key_span`):

    Z = (scale·Q_b)·K_tᵀ  (→ c·tanh(Z / c))  (+ B)     masked cells → −inf
    e = exp(Z − c_b)                                   c_b (b,): 0, or each row's largest score so far
    acc ← α·acc + e·V_t      total ← α·total + e·1     α = exp(c_b before − c_b now)

and H_b = acc / total.  With a sink s_h (gpt-oss), c_b starts at s_h (the running maximum includes it) and
exp(s_h − c_b) joins each row's total after the last tile; lse = c_b + ln(total) either way.  That is
softmax(Z)·V of the full computation, the same sums in another order.  (The row sums e·1 are a matrix-vector
product: a column of ones beside V would cost more, d_v + 1 columns being an awkward width for BLAS.)  c_b
stays 0 for a head whose scores cannot reach EXP_LIMIT (:func:`attncli.core.bounds.needs_shift`): exp can
then neither overflow nor lose precision, and Z is read once.  Otherwise c_b is the running row maximum
(FlashAttention's online softmax), and α rescales what was summed before a tile raised it.

The work is Q·Kᵀ and e·V (BLAS) and exp; what is not arithmetic is kept out of their way:

- a tile of rows × t scores fills about four L2 caches (:func:`tile_shape`), so Z stays near the
  core from Q·Kᵀ through exp to e·V, and each thread reuses its own tile and sums (no fresh page faults);
- two threads take (head, block) jobs with one BLAS thread each: numpy releases the GIL in matmul
  and in exp, so one thread's exp runs beside the other's products and both cores stay busy;
- keys outside a block's span are never computed (a causal mask halves the work, a sliding window
  leaves n·W), nor tiles that the mask covers entirely, nor the queries of a block that see no key
  of a tile (near a causal diagonal, :meth:`Mask.query_span`); tiles are narrow where a causal or
  window band cuts the block (:func:`edge_keys`), wide where it allows every query, and the masks of
  the cut ones are built once per distance from the diagonal; the scale is folded into Q_b once per block.

A document with huge numbers (``checked``) is computed in the full computation's order instead,
scale after the product, over every key of every block (masked or not: attend checks every cell
of S), and every tile is checked for overflow (:class:`Overflow`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

import numpy as np

from attncli.core.exponential import exp_for
from attncli.core.scores import kv_head_of
from attncli.core.spec import Spec
from attncli.core.threads import cache_bytes, cores, run_parallel

ROWS = 1024  # queries per block at most: Q_b·K_tᵀ packs K_t once for all of them (fewer rows: slower BLAS)
KEYS = 512  # keys per tile, as the tile's size allows: rows = cells / KEYS
LEAST = 16  # the fewest rows, and keys, of a tile
EDGE_KEYS = 128  # keys of a tile along the edge of a causal or window band (edge_keys)
L2_TILES = 4  # a tile of scores fills this many L2 caches: the fastest shape tried (see benchmarks/README.md, tiles)
UNKNOWN_CELLS = 1 << 19  # 4 MiB tiles where the cache sizes are not known


class Overflow(Exception):
    """A score overflowed float64 (:func:`attncli.core.stream.attend_streamed` names where)."""


@functools.cache
def tile_cells() -> int:
    """Cells of one tile of scores: L2_TILES × the L2 cache, at most a quarter of a core's share of the L3 cache."""
    l2, l3 = cache_bytes(2), cache_bytes(3)
    if l2 is None:
        return UNKNOWN_CELLS
    size = L2_TILES * l2[0]
    if l3 is not None:
        size = min(size, l3[0] // min(l3[1], cores()) // 4)
    return max(size // 8, LEAST * LEAST)


def tile_shape(spec: Spec, cells: int) -> tuple[int, int]:
    """(rows, keys) of one tile of ``cells`` scores: up to ROWS queries (cells / KEYS), and keys to fill the tile.

    Blocks are halved while there are fewer (head, block) jobs than two per core.
    """
    rows = min(max(cells // KEYS, LEAST), ROWS, spec.n)
    while rows > LEAST and spec.heads * -(-spec.n // rows) < 2 * cores():
        rows //= 2
    rows = max(rows, 1)
    return rows, tile_keys(spec, rows, cells)


def tile_keys(spec: Spec, rows: int, cells: int) -> int:
    """Keys in one tile of ``cells`` scores with blocks of ``rows`` queries."""
    return max(min(max(cells // rows, LEAST), spec.m), 1)


def edge_keys(spec: Spec, keys: int) -> int:
    """Keys in a tile along the edge of a causal or sliding-window band (at most ``keys``).

    There a tile computes only the queries that may see one of its keys (:meth:`Mask.query_span`), so what
    is computed beyond the allowed cells is about half a tile per query on each edge: narrow tiles waste
    less, but each tile costs some Python, and narrower than 64 keys that shows (see benchmarks/README.md, tiles).
    """
    window = None if spec.mask is None else spec.mask.window
    return min(keys, EDGE_KEYS if window is None or window >= 4 * EDGE_KEYS else max(EDGE_KEYS // 2, 1))


def blocks(n: int, rows: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + rows, n)) for lo in range(0, n, rows)]


def run_tiles(q: np.ndarray, k: np.ndarray, v: np.ndarray, spec: Spec, heads: np.ndarray, checked: bool,
              shift: np.ndarray, rows: int, keys: int, progress: Callable[[int], None] | None, threads: int | None,
              empty: set[int], lse: np.ndarray | None = None, sink: np.ndarray | None = None) -> None:
    """Each head's output rows into ``heads`` (h, n, d_v), in blocks of ``rows`` queries and tiles of ``keys``
    keys; queries without any key go into ``empty``; each row's log-sum-exp into ``lse`` (h, n) and, with sinks,
    the sink's share into ``sink`` (h, n).

    ``shift`` (h,): whether a head needs the row maximum subtracted; ``checked``: compute every key, masked or
    not, and check every tile for overflow (:class:`Overflow`).  ``progress(1)`` as each (head, block) job is done.
    """
    mask = None if checked else spec.mask  # checked: every key, as attend checks every cell of S, masked or not
    spans = [(lo, hi, *((0, spec.m) if mask is None else mask.key_span(lo, hi))) for lo, hi in blocks(spec.n, rows)]
    spans.sort(key=lambda span: span[2] - span[3])  # the longest first, so that the threads finish together
    jobs = [(h, *span) for h in range(spec.heads) for span in spans]  # a head's K and V stay in cache
    blocks_of = _Blocks(q, k, v, spec, heads, checked, shift, rows, keys, empty)
    blocks_of.lse, blocks_of.sink = lse, sink
    blocks_of.exp = exp_for(sum((hi - lo) * (stop - start) for _, lo, hi, start, stop in jobs))
    run_parallel(blocks_of, jobs, progress, threads)


def _negated(allowed: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray | None, bool]:
    """(allowed, blocked, whether any cell is allowed) of a tile's mask."""
    return (None, None, True) if allowed is None else (allowed, ~allowed, bool(allowed.any()))


def _steps(start: int, stop: int, width: int) -> list[tuple[int, int]]:
    return [(s, min(s + width, stop)) for s in range(start, stop, width)]


class _Workspace:
    """One thread's tile of scores and its sums, reused by every job the thread takes."""

    def __init__(self, rows: int, keys: int, d_k: int, d_v: int) -> None:
        self.z = np.empty(rows * keys)  # Z, then e, of one tile
        self.e: np.ndarray | None = None  # e apart from Z, for an exp that cannot write over its input (exponential)
        self.q = np.empty((rows, d_k))  # scale·Q_b
        self.acc = np.empty((rows, d_v))  # Σ e·V so far
        self.part = np.empty((rows, d_v))  # one tile's e·V
        self.total = np.empty(rows)  # Σ e so far
        self.part_total = np.empty(rows)  # one tile's Σ e
        self.ones = np.ones(keys)
        self.top = np.empty(rows)  # each row's largest score so far (−inf: no key yet)
        self.shift = np.empty(rows)  # c_b: the top, or 0 while it is −inf


class _Blocks:
    """The job (head, lo, hi, start, stop): one head, queries lo … hi − 1, their keys start … stop − 1."""

    def __init__(self, q, k, v, spec: Spec, heads, checked: bool, shift, rows: int, keys: int, empty: set[int]) -> None:
        self.edge = edge_keys(spec, keys)
        self.q, self.k, self.v, self.heads, self.spec = q, k, v, heads, spec
        self.checked, self.shift, self.rows, self.keys, self.empty = checked, shift, rows, keys, empty
        self.kv = kv_head_of(spec.heads, spec.kv_heads)  # the key/value head of each query head
        self.sinks = spec.sinks  # (h,) or None: one more term of each row's total
        self.lse: np.ndarray | None = None  # (h, n), filled when given
        self.sink: np.ndarray | None = None  # (h, n), with sinks
        self.p_q, self.p_k = spec.query_positions, spec.key_positions
        self.local = threading.local()
        self.band: dict[tuple[int, int, int, int], tuple[np.ndarray | None, np.ndarray | None, bool]] = {}
        self.exp: Callable = np.exp  # or a vectorised one (attncli.core.exponential)

    def workspace(self) -> _Workspace:
        w = getattr(self.local, "w", None)
        if w is None:
            w = self.local.w = _Workspace(self.rows, self.keys, self.spec.d_k, self.spec.d_v)
        return w

    @np.errstate(over="ignore", invalid="ignore", divide="ignore")  # each thread has its own error state
    def __call__(self, job: tuple[int, int, int, int, int]) -> None:
        h, lo, hi, start, stop = job
        mask, b = self.spec.mask, hi - lo
        w = self.workspace()
        q = self.q[h, lo:hi] if self.checked else np.multiply(self.q[h, lo:hi], self.spec.scale, out=w.q[:b])
        acc, total, v = w.acc[:b], w.total[:b], self.v[self.kv[h]]
        acc[...] = 0.0
        total[...] = 0.0
        shifted = bool(self.shift[h])
        if shifted:  # c_b starts at s_h with a sink: the running maximum includes it
            w.top[:b] = -np.inf if self.sinks is None else self.sinks[h]
            w.shift[:b] = 0.0 if self.sinks is None else self.sinks[h]
        for s0, s1 in self.tiles(lo, hi, start, stop):
            r0, r1 = (lo, hi) if mask is None or self.checked else mask.query_span(lo, hi, s0, s1)
            if r0 == r1:
                continue  # no query of the block may see a key of the tile
            allowed, blocked, some = self.allowed(r0, r1, s0, s1, h)
            if not (some or self.checked):
                continue  # the mask covers the tile: nothing to add
            # the queries that may see a key of the tile (causal: fewer near the diagonal)
            rows = slice(r0 - lo, r1 - lo)
            z = w.z[: (r1 - r0) * (s1 - s0)].reshape(r1 - r0, s1 - s0)
            self.scores(q[rows], h, r0, r1, s0, s1, z)
            if shifted:
                if allowed is not None:
                    np.copyto(z, -np.inf, where=blocked)  # out of the row maximum, and exp(−inf) = 0
                self.subtract_top(z, w, rows)
            z = self.exp(z, out=z if self.exp is np.exp else self.apart(w, z))
            if allowed is not None and not shifted:
                np.copyto(z, 0.0, where=blocked)  # after exp: exp(−inf) takes numpy's slow path for special values
            acc[rows] += np.matmul(z, v[s0:s1], out=w.part[: r1 - r0])  # (rows, d_v)
            total[rows] += np.matmul(z, w.ones[: s1 - s0], out=w.part_total[: r1 - r0])  # (rows,)
        self.finish(h, lo, hi, w, shifted)

    @staticmethod
    def apart(w: _Workspace, z: np.ndarray) -> np.ndarray:
        """A tile of the thread's own for e beside Z (mkl_umath's exp in place took some values' exp twice)."""
        if w.e is None:
            w.e = np.empty(w.z.size)
        return w.e[: z.size].reshape(z.shape)

    def finish(self, h: int, lo: int, hi: int, w: _Workspace, shifted: bool) -> None:
        """H_b = acc / total, after the sink's exp(s_h − c_b) joins the total; lse = c_b + ln(total), the sink's share
        exp(s_h − c_b) / total."""
        b = hi - lo
        acc, total = w.acc[:b], w.total[:b]
        c = w.shift[:b] if shifted else 0.0  # c_b: what every exp had subtracted
        if self.sinks is not None:
            sink = np.exp(self.sinks[h] - c)  # at most 1 (c_b ≥ s_h), or |s_h| ≤ EXP_LIMIT unshifted
            total += sink
            self.sink[h, lo:hi] = sink / total
        out = self.heads[h, lo:hi]  # (b, d_v), not yet written: every row is written here
        np.divide(acc, total[:, None], out=out)
        if self.lse is not None:
            np.add(np.log(total), c, out=self.lse[h, lo:hi])  # ln 0 = −inf: a query with no key (and no sink)
        none = total == 0  # a query with no key at all: 0, not 0 / 0
        if none.any():
            out[none] = 0.0
            self.empty.update(lo + int(i) for i in np.flatnonzero(none))

    def tiles(self, lo: int, hi: int, start: int, stop: int) -> list[tuple[int, int]]:
        """The tiles [s0, s1) of keys start … stop − 1 for queries lo … hi − 1: ``keys`` wide where causal and
        window allow every query of the block (no mask from them), ``edge`` wide where their band cuts it."""
        a, b = start, stop
        if self.spec.mask is not None:
            a, b = self.spec.mask.seen_by_all(lo, hi)
            a = min(max(a, start), stop)
            b = min(max(b, a), stop)
            a = min(start + -(-(a - start) // self.edge) * self.edge, b)  # whole tiles: edge ones up to the middle,
            b = a + (b - a) // self.keys * self.keys  # then wide ones, then edge ones again
        return [*_steps(start, a, self.edge), *_steps(a, b, self.keys), *_steps(b, stop, self.edge)]

    def allowed(self, r0: int, r1: int, s0: int, s1: int, h: int) -> tuple[np.ndarray | None, np.ndarray | None, bool]:
        """The mask of a tile, its negation (None, None: every cell allowed) and whether it allows any cell.  Causal
        and window alone depend only on where the tile lies from the diagonal (and chunk on where it lies in its
        chunk too): those are built once and shared (read-only)."""
        mask = self.spec.mask
        if mask is None:
            return None, None, True
        if mask.keys is not None or mask.matrix is not None:
            return _negated(mask.block(r0, r1, s0, s1, head=h))
        key = (r0 - s0, r1 - r0, s1 - s0, 0 if mask.chunk is None else s0 % mask.chunk)  # a chunk's edges repeat
        found = self.band.get(key)
        if found is None:
            found = self.band[key] = _negated(mask.block(r0, r1, s0, s1))
        return found

    def scores(self, q: np.ndarray, h: int, lo: int, hi: int, s0: int, s1: int, z: np.ndarray) -> None:
        """Z of one tile into ``z``: the scaled scores, soft-capped, plus the score bias."""
        spec = self.spec
        np.matmul(q, self.k[self.kv[h], s0:s1].T, out=z)  # (b, t)
        if self.checked:
            if not np.isfinite(z).all():
                raise Overflow
            if spec.scale != 1.0:
                z *= spec.scale
                if spec.softcap is None and not np.isfinite(z).all():
                    raise Overflow
        if spec.softcap is not None:  # z → c·tanh(z / c); an infinite scale·S becomes ±c, as in attend
            z /= spec.softcap
            np.tanh(z, out=z)
            z *= spec.softcap
            if self.checked and not np.isfinite(z).all():
                raise Overflow
        if spec.score_bias is not None:
            z += spec.score_bias.block(spec.heads, self.p_q, self.p_k, lo, hi, s0, s1, head=h)
            if self.checked and not np.isfinite(z).all():
                raise Overflow

    @staticmethod
    def subtract_top(z: np.ndarray, w: _Workspace, rows: slice) -> None:
        """Z − c in place for the block's ``rows``, c each row's largest score so far (0 while a row has no key);
        the sums made with an old c are rescaled by exp(old − new)."""
        top, shift = w.top[rows], w.shift[rows]
        np.maximum(top, z.max(axis=1), out=top)
        new = np.where(top == -np.inf, 0.0, top)
        if (new != shift).any():
            alpha = np.exp(np.minimum(shift - new, 0.0))  # a row still without a key has sums of 0
            w.acc[rows] *= alpha[:, None]
            w.total[rows] *= alpha
        shift[:] = new
        z -= shift[:, None]
