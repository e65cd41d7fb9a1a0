"""Attention block by block over the queries, for results that need no n × m matrix.

The maths is :mod:`attncli.core.attention`'s (projections, scores, exp_rows/normalize,
output_projection); only the order changes.  Each block of queries goes through

    S = Q_b·Kᵀ   z = scale·S   e = exp(z − row max)   H_b = (e·V) / Σ e

and is dropped, so peak memory grows with n·block instead of h·n·m.  Dividing
after ``e·V`` instead of before is the same sum, in a different order.  The
Trace holds None for scores, scaled_scores and weights.

Dot-product scores with softmax, the common case, go tile by tile over the keys too, a
tile sized from the cache (:mod:`attncli.core.tiles`); other scores and normalisations
take all heads of a block at once (:func:`_run_generic`).  Two threads share the blocks
(numpy releases the GIL) while BLAS runs one thread each (:mod:`attncli.core.threads`):
on two cores that beats one thread of Python and two of BLAS, because exp, max and sum
are single-threaded in numpy.

Which of this and :func:`attncli.core.attention.attend` runs is the memory plan's choice
(:mod:`attncli.plan`), from the block sizes below (:func:`fast_rows`, :func:`generic_rows` …).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np

from attncli.core.attention import biased, overflow_error, scaled, scores
from attncli.core.bounds import cannot_overflow, largest_norms, needs_shift, norms_cannot_overflow, value_exponent
from attncli.core.errors import AttnError
from attncli.core.masks import empty_queries
from attncli.core.pipeline import backward, needed, run, trace_of
from attncli.core.sinks import has_lse
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, Stage
from attncli.core.stages import QK_ROWS, STAGES, kernel_keys, kernel_queries
from attncli.core.stream_backward import attention_backward
from attncli.core.threads import run_parallel
from attncli.core.tiles import Overflow, blocks, run_tiles, tile_cells, tile_keys, tile_shape
from attncli.core.trace import Trace
from attncli.core.vnorm import mixed

QK_STAGES = QK_ROWS  # the query and key stages (Q, K, Q̂, Q′, c_Q …), from the stage list
BLOCK_CELLS: int | None = None  # scores in one tile (attncli.core.tiles); None: from the cache (tile_cells())
GENERIC_BLOCK_BYTES = 64 << 20  # all heads' block when the scores are additive or not a softmax


# ---------------------------------------------------------------- the computation


@np.errstate(over="ignore", invalid="ignore")  # overflow is checked for, and named: no RuntimeWarning on stderr
def attend_streamed(spec: Spec, progress: Callable[[int], None] | None = None, threads: int | None = None,
                    keep: Collection[str] | None = None) -> Trace:
    """Everything :func:`attend` computes except the n × m matrices, block by block.

    The ``before`` and ``after`` stages of :data:`~attncli.core.stages.STAGES` run as in :func:`attend`; the
    ``attention`` ones tile by tile (:mod:`attncli.core.tiles`) or block by block (:func:`_run_generic`).
    ``progress(k)`` is called as blocks finish, with the number just done out of :func:`block_count`.
    Results equal attend's to rounding (1e-12). ``keep`` (``--only``'s keys; None: all): the query and key stages
    the tiles do not read and ``keep`` does not name are let go before them (None in the Trace).
    The ``before`` stages neither ``keep`` nor the attention needs are left out (``absorb``'s queries).
    """
    a = run(spec, stages=_before(keep if spec.gradient is None else None))
    q, k, v = kernel_queries(a, spec), kernel_keys(a, spec), mixed(a, spec)  # what the scores see, what A mixes
    h, n, d_v = spec.heads, spec.n, spec.d_v
    heads = np.empty((n, h * d_v)).reshape(n, h, d_v).transpose(1, 0, 2)  # (h, n, d_v), stored as concat(H₁ … H_h);
    # every row is written by the blocks (np.empty: no page of zeros to fault in first)
    empty: set[int] = set()  # queries with no key to attend to (in some head)
    rows_of = {"lse": np.empty((h, n)) if has_lse(spec) else None,  # (h, n) each: one number per row, from the
               "sink_weights": None if spec.sinks is None else np.empty((h, n)),  # blocks (small beside H)
               "index_dropped_weight": None if spec.indexer is None else np.empty((h, n))}
    try:
        if fast(spec):
            if keep is not None and (spec.gradient is None or spec.qk_norm is None):  # (qk_norm's backward reads them)
                _let_go(a, keep, q, k)
            norms = largest_norms(q, k, v, spec)
            checked = not norms_cannot_overflow(norms, spec) and not cannot_overflow(q, k, spec)
            shift = needs_shift(q, k, v, spec, norms) if not checked else np.ones(spec.heads, dtype=bool)
            rows = fast_rows(spec)
            power = value_exponent(v, spec, norms)  # values near 1e307: summed as V·2⁻ᵏ, H scaled back
            v_summed = np.ldexp(v, -power) if power else v
            run_tiles(q, k, v_summed, spec, heads, checked, shift, rows, tile_keys(spec, rows, cells()), progress,
                      threads, empty, rows_of["lse"], rows_of["sink_weights"])
            if power:
                np.ldexp(heads, power, out=heads)
        else:
            checked = not cannot_overflow(q, k, spec)  # huge numbers: check each block as attend checks S
            _run_generic(a, spec, heads, rows_of, checked, progress, threads, empty)
    except Overflow:
        _locate_overflow(q, k, spec)
        raise AttnError("stream.scores_overflow_float64_numbers_document") from None
    a.update(head_outputs=heads, _empty_queries=tuple(sorted(empty)), **rows_of)
    a = run(spec, a, stages=_part("after"))
    if spec.gradient is not None:  # the backward pass tile by tile too (FlashAttention-2's)
        a.update(backward(spec, a, attention=lambda s, arrays, d: attention_backward(s, arrays, d, threads),
                          keep=keep))
    return trace_of(spec, a)


def _let_go(a: Arrays, keep: Collection[str], q: np.ndarray, k: np.ndarray) -> None:
    """Q, K and the stages between them and the kernel's (Q̂, Q′ …: n × h·d_k each) dropped unless ``keep`` names
    them: the tiles read only the kernel's q and k, and the peak memory is the arrays alive while they run."""
    for key in QK_STAGES:
        if key not in keep and a.get(key) is not q and a.get(key) is not k:
            a[key] = None


def _part(part: str) -> tuple[Stage, ...]:
    return tuple(stage for stage in STAGES if stage.part == part)


def _before(keep: Collection[str] | None) -> tuple[Stage, ...]:
    """The ``before`` stages: all of them, or those ``keep`` and the attention (its output H) need."""
    return _part("before") if keep is None else tuple(s for s in needed([*keep, "head_outputs"]) if s.part == "before")


def block_count(spec: Spec) -> int:
    """How many blocks :func:`attend_streamed` computes (for a progress bar)."""
    if fast(spec):
        return spec.heads * len(blocks(spec.n, fast_rows(spec)))
    return len(blocks(spec.n, generic_rows(spec)))


# ---------------------------------------------------------------- the blocks' sizes (the memory plan reads them too)


def fast(spec: Spec) -> bool:
    """Whether the fused kernel of :mod:`attncli.core.tiles` does every attention stage this document has (tiles over
    the keys too, :func:`attncli.core.tiles.run_tiles`)."""
    return all(stage.tiled(spec) for stage in _part("attention") if stage.present(spec))


def cells() -> int:
    """Scores in one tile of the fast path: :data:`BLOCK_CELLS`, else from the cache."""
    return BLOCK_CELLS or tile_cells()


def fast_rows(spec: Spec) -> int:
    """Queries per block of the dot-product softmax path (:func:`attncli.core.tiles.tile_shape`)."""
    return tile_shape(spec, cells())[0]


def generic_rows(spec: Spec) -> int:
    """Queries per block of the other path: all heads' block within :data:`GENERIC_BLOCK_BYTES`, at least one row."""
    return int(min(max(GENERIC_BLOCK_BYTES // generic_row_bytes(spec), 1), spec.n))


def generic_row_bytes(spec: Spec) -> int:
    """Bytes one query row of the other path takes in all heads at once: arrays of h × m (× d_a when additive)."""
    width = 2 * spec.w_1.shape[2] + 4 if spec.score == "additive" else 4  # arrays of h × b × m alive at once
    return 8 * spec.heads * spec.m * width


def _run_generic(a: Arrays, spec: Spec, heads, rows_of: Arrays, checked: bool, progress, threads: int | None,
                 empty: set[int]) -> None:
    """Any score and normalisation: the attention stages on all heads of one block of queries per task; the arrays
    of one number per row (``rows_of``: lse, sink_weights) filled block by block."""
    stages = [stage for stage in _part("attention") if stage.present(spec)]

    @np.errstate(over="ignore", invalid="ignore")
    def task(job: tuple[int, int]) -> None:
        lo, hi = job
        b = dict(a)
        for stage in stages:
            try:
                made = stage.block(spec, b, lo, hi)
            except AttnError as e:  # `normalize: sum` names the row inside the block
                if "row" not in e.fields:
                    raise
                raise AttnError(e.id, e.where, **{**e.fields, "row": e.fields["row"] + lo}) from None
            if checked and not all(np.isfinite(made[key]).all() for key in made if key in ("scores", "scaled_scores")):
                raise Overflow
            b.update(made)
        heads[:, lo:hi] = b["head_outputs"]  # (h, b, d_v)
        for key, array in rows_of.items():
            if array is not None:
                array[:, lo:hi] = b[key]  # (h, b)
        if spec.mask is not None and spec.sinks is None:  # a sink takes the whole of a row with no key: no warning
            empty.update(lo + i for i in empty_queries(spec.mask.block(lo, hi)))

    run_parallel(task, blocks(spec.n, generic_rows(spec)), progress, threads)


def _locate_overflow(q: np.ndarray, k: np.ndarray, spec: Spec) -> None:
    """attend's overflow error, exactly: the first (head, row) of S, then of scale·S (capped), then of Z + B, over
    all blocks."""
    parts = blocks(spec.n, generic_rows(spec))
    stages = (("scores", lambda s, lo, hi: s), ("scaled scores", lambda s, lo, hi: scaled(s, spec)),
              ("scaled scores", lambda s, lo, hi: biased(scaled(s, spec), spec, lo, hi)))
    for name, stage in stages:
        first = None
        for lo, hi in parts:
            z = stage(scores(q[:, lo:hi], k, spec), lo, hi)
            bad = np.argwhere(~np.isfinite(z))
            if len(bad):
                here = (int(bad[0][0]), int(bad[0][1]) + lo)
                first = here if first is None else min(first, here)
        if first is not None:
            raise overflow_error(name, first[0], first[1], spec.tokens)
