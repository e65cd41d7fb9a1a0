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

:func:`plan` decides between this and :func:`attncli.core.attention.attend` from an
estimate of the memory each needs, the result's text or file included, and a budget
(``ATTNCLI_MEMORY``, or half the memory available, within the process's limits).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attncli.core.attention import biased, overflow_error, scaled, scores
from attncli.core.bounds import cannot_overflow, largest_norms, needs_shift, norms_cannot_overflow, value_exponent
from attncli.core.errors import AttnError
from attncli.core.masks import empty_queries
from attncli.core.memory import beyond, memory_budget, thread_reserve
from attncli.core.pipeline import run, trace_of
from attncli.core.spec import Spec
from attncli.core.stages import MATRIX_KEYS, STAGES, Arrays, Stage, kernel_keys, kernel_queries
from attncli.core.threads import cores, run_parallel
from attncli.core.tiles import Overflow, blocks, run_tiles, tile_cells, tile_keys, tile_shape
from attncli.core.trace import Trace

BLOCK_CELLS: int | None = None  # scores in one tile (attncli.core.tiles); None: from the cache (tile_cells())
GENERIC_BLOCK_BYTES = 64 << 20  # all heads' block when the scores are additive or not a softmax


# ---------------------------------------------------------------- the computation


@np.errstate(over="ignore", invalid="ignore")  # overflow is checked for, and named: no RuntimeWarning on stderr
def attend_streamed(spec: Spec, progress: Callable[[int], None] | None = None, threads: int | None = None) -> Trace:
    """Everything :func:`attend` computes except the n × m matrices, block by block.

    The ``before`` and ``after`` stages of :data:`~attncli.core.stages.STAGES` run as in :func:`attend`; the
    ``attention`` ones tile by tile (:mod:`attncli.core.tiles`) or block by block (:func:`_run_generic`).
    ``progress(k)`` is called as blocks finish, with the number just done out of :func:`block_count`.
    Results equal attend's to rounding (1e-12).
    """
    a = run(spec, stages=_part("before"))
    q, k, v = kernel_queries(a), kernel_keys(a), a["values"]  # what the scores see
    h, n, d_v = spec.heads, spec.n, spec.d_v
    heads = np.empty((n, h * d_v)).reshape(n, h, d_v).transpose(1, 0, 2)  # (h, n, d_v), stored as concat(H₁ … H_h);
    # every row is written by the blocks (np.empty: no page of zeros to fault in first)
    empty: set[int] = set()  # queries with no key to attend to (in some head)
    try:
        if _fast(spec):
            norms = largest_norms(q, k, v, spec)
            checked = not norms_cannot_overflow(norms, spec) and not cannot_overflow(q, k, spec)
            shift = needs_shift(q, k, v, spec, norms) if not checked else np.ones(spec.heads, dtype=bool)
            rows = _fast_rows(spec)
            power = value_exponent(v, spec, norms)  # values near 1e307: summed as V·2⁻ᵏ, H scaled back
            v_summed = np.ldexp(v, -power) if power else v
            run_tiles(q, k, v_summed, spec, heads, checked, shift, rows, tile_keys(spec, rows, _cells()), progress,
                      threads, empty)
            if power:
                np.ldexp(heads, power, out=heads)
        else:
            checked = not cannot_overflow(q, k, spec)  # huge numbers: check each block as attend checks S
            _run_generic(a, spec, heads, checked, progress, threads, empty)
    except Overflow:
        _locate_overflow(q, k, spec)
        raise AttnError("scores overflow float64; the numbers in the document are too large to compute with") from None
    a.update(head_outputs=heads, _empty_queries=tuple(sorted(empty)))
    return trace_of(spec, run(spec, a, stages=_part("after")))


def _part(part: str) -> tuple[Stage, ...]:
    return tuple(stage for stage in STAGES if stage.part == part)


def block_count(spec: Spec) -> int:
    """How many blocks :func:`attend_streamed` computes (for a progress bar)."""
    if _fast(spec):
        return spec.heads * len(blocks(spec.n, _fast_rows(spec)))
    return len(blocks(spec.n, _generic_rows(spec)))


def _fast(spec: Spec) -> bool:
    """Whether the fused kernel of :mod:`attncli.core.tiles` does every attention stage this document has."""
    return all(stage.tiled(spec) for stage in _part("attention") if stage.present(spec))


def _cells() -> int:
    return BLOCK_CELLS or tile_cells()


def _fast_rows(spec: Spec) -> int:
    """Queries per block of the dot-product softmax path (:func:`attncli.core.tiles.tile_shape`)."""
    return tile_shape(spec, _cells())[0]


def _generic_rows(spec: Spec) -> int:
    return int(min(max(GENERIC_BLOCK_BYTES // _generic_row_bytes(spec), 1), spec.n))


def _generic_row_bytes(spec: Spec) -> int:
    width = 2 * spec.w_1.shape[2] + 4 if spec.score == "additive" else 4  # arrays of h × b × m alive at once
    return 8 * spec.heads * spec.m * width


def _run_generic(a: Arrays, spec: Spec, heads, checked: bool, progress, threads: int | None, empty: set[int]) -> None:
    """Any score and normalisation: the attention stages on all heads of one block of queries per task."""
    stages = [stage for stage in _part("attention") if stage.present(spec)]

    @np.errstate(over="ignore", invalid="ignore")
    def task(job: tuple[int, int]) -> None:
        lo, hi = job
        b = dict(a)
        for stage in stages:
            try:
                made = stage.block(spec, b, lo, hi)
            except AttnError as e:  # `normalize: sum` names the row inside the block
                message = re.sub(r"query (\d+) ", lambda r: f"query {int(r.group(1)) + lo} ", e.message, count=1)
                raise AttnError(message, e.where) from None
            if checked and not all(np.isfinite(made[key]).all() for key in made if key in ("scores", "scaled_scores")):
                raise Overflow
            b.update(made)
        heads[:, lo:hi] = b["head_outputs"]  # (h, b, d_v)
        if spec.mask is not None:
            empty.update(lo + i for i in empty_queries(spec.mask.block(lo, hi)))

    run_parallel(task, blocks(spec.n, _generic_rows(spec)), progress, threads)


def _locate_overflow(q: np.ndarray, k: np.ndarray, spec: Spec) -> None:
    """attend's overflow error, exactly: the first (head, row) of S, then of scale·S (capped), then of Z + B, over
    all blocks."""
    parts = blocks(spec.n, _generic_rows(spec))
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


# ---------------------------------------------------------------- memory: estimate, budget, decide


@dataclass(frozen=True)
class Plan:
    stream: bool  # compute block by block (no n × m matrices)


def plan(spec: Spec, keys: list[str] | None, kind: str, budget: int | None = None) -> Plan:
    """Full or streamed computation for ``--only keys`` written as ``kind`` (json, table, .npz, .npy, …).

    The n × m matrices are computed only when they are wanted and fit in ``budget``
    bytes; too large, they are an error that says what to do: asked for by name, which
    --only computes without them; wanted because nothing was left out, which --only or
    ``-o FILE.npz`` fits. A result is never written with keys silently missing.
    The result's text or file counts too (:func:`written_bytes`).
    """
    budget = memory_budget() if budget is None else budget
    wanted = keys is None or any(key in MATRIX_KEYS for key in keys)
    if wanted:
        need = full_bytes(spec, keys, kind)
        if need <= budget:
            return Plan(stream=False)
        shape = f"{spec.heads} × {spec.n} × {spec.m}"
        if keys is not None:
            asked = ", ".join(key for key in keys if key in MATRIX_KEYS)
            raise AttnError(f"{asked} of {shape} need about {beyond(need, budget)}; "
                            "use --only output or --only head_outputs to compute block by block without them", "--only")
        raise AttnError(f"the whole result, with the scores, scaled_scores and weights of {shape}, would need about "
                        f"{beyond(need, budget)}; {_what_fits(spec, kind, budget)}")
    _ensure_streamed_fits(spec, keys, kind, budget)
    return Plan(stream=True)


def _streamed_bytes(spec: Spec, keys: list[str] | None, kind: str) -> int:
    return streamed_bytes(spec) + cores() * thread_reserve() + _beyond_base(written_bytes(spec, keys, kind))


def _ensure_streamed_fits(spec: Spec, keys: list[str] | None, kind: str, budget: int) -> None:
    need = _streamed_bytes(spec, keys, kind)
    if need > budget:
        raise AttnError(f"even block by block, this document needs about {beyond(need, budget)}")


def _what_fits(spec: Spec, kind: str, budget: int) -> str:
    """What to ask for instead of the whole result that does not fit: ``-o FILE.npz`` if that fits, and the --only
    keys computed block by block without the n × m matrices."""
    others = ["inputs", "queries", "keys", "values", "head_outputs", "output"]
    if _streamed_bytes(spec, others, kind) > budget:
        others = ["output"]
    _ensure_streamed_fits(spec, others, kind, budget)
    leave_out = "leave them out with " + " ".join(f"--only {key}" for key in others)
    if kind != ".npz" and full_bytes(spec, None, ".npz") <= budget:
        return f"write every array with -o FILE.npz, or {leave_out}"
    return leave_out


BASE = 64 << 20  # the interpreter and its modules; a small result's text fits in this allowance too
# Bytes per number written, for every number of the result, as each kind builds it before writing (measured:
# JSON text is about 20 bytes a number, orjson's buffer up to twice that, plus a C-ordered copy of each array).
WRITTEN = {"json": 64, ".npz": 16, ".npy": 16, "csv": 56, "markdown --full": 128, "latex --full": 128,
           "table --full": 1000, "heatmap --full": 128}
# Bytes per cell of one head's n × m matrix (or of the largest other array) that a view reads, one matrix at a time
# (whole-number tests, copies, np.allclose; explain's and --why's JSON write some n × m tables with Python's json).
READ = {"table": 16, "table --full": 16, "markdown": 24, "markdown --full": 24, "latex": 24, "latex --full": 24,
        "heatmap": 8, "heatmap --full": 24, "explain": 20, "explain json": 200, "why": 64, "why json": 900, "check": 16}


def full_bytes(spec: Spec, keys: list[str] | None, kind: str) -> int:
    """Peak memory of :func:`attend` plus writing ``keys`` as ``kind``, roughly (bytes)."""
    cells = spec.heads * spec.n * spec.m
    width = 3 + (2 * spec.w_1.shape[2] if spec.score == "additive" else 0)  # S, scale·S, A (+ tanh's h·n·m·d_a)
    width += 2 if spec.score_bias is not None else 0  # B, and its finite part
    kept = len([key for key in (keys or MATRIX_KEYS) if key in MATRIX_KEYS])
    per_cell = WRITTEN.get(kind, 0)  # Python floats and text; or the file's bytes
    read = READ.get(kind, 0) * spec.n * spec.m  # one head's matrix at a time
    return resident_bytes(spec) + 8 * width * cells + per_cell * kept * cells + read + _beyond_base(written_bytes(spec, keys, kind))


def written_bytes(spec: Spec, keys: list[str] | None, kind: str) -> int:
    """Memory for showing or writing the arrays other than the n × m matrices as ``kind`` (bytes)."""
    h, n, m, d_model = spec.heads, spec.n, spec.m, spec.inputs.shape[1]
    d_ctx = d_model if spec.context is None else spec.context.shape[1]
    d_out = h * spec.d_v if spec.w_o is None else spec.w_o.shape[1]
    sizes = {"inputs": n * d_model, "positional": 0 if spec.positional is None else n * d_model,
             "context": 0 if spec.context is None else m * d_ctx, "queries": h * n * spec.d_k, "keys": h * m * spec.d_k,
             "values": h * m * spec.d_v, "head_outputs": h * n * spec.d_v, "output": n * d_out,
             "residual": 0 if spec.add_norm is None else n * d_out, "normalized": 0 if spec.add_norm is None else n * d_out}
    numbers = sum(size for key, size in sizes.items() if keys is None or key in keys)
    labels = 0
    if kind in ("json", "csv"):  # every label, written out (a control character in 6 bytes), in a buffer of twice that
        labels = 12 * (sum(map(len, spec.tokens)) + sum(map(len, spec.context_tokens)) + 4 * (n + m))
    return WRITTEN.get(kind, 0) * numbers + READ.get(kind, 0) * max(sizes.values()) + labels


def _beyond_base(written: int) -> int:
    """What a result's text takes beyond :data:`BASE`, the allowance it shares with the interpreter."""
    return max(written - BASE, 0)


def streamed_bytes(spec: Spec) -> int:
    """Peak memory of :func:`attend_streamed`, roughly (bytes): the n × d arrays and the blocks."""
    if _fast(spec):
        rows = _fast_rows(spec)
        keys = tile_keys(spec, rows, _cells())
        block = rows * keys * (26 if spec.score_bias is not None else 10)  # scores, mask (, bias and its parts)
    else:
        block = _generic_rows(spec) * _generic_row_bytes(spec)
    return resident_bytes(spec) + cores() * block


def resident_bytes(spec: Spec) -> int:
    """What either computation keeps (bytes): the n × d arrays, the mask, the interpreter (:data:`BASE`)."""
    n, m, h = spec.n, spec.m, spec.heads
    d_model = spec.inputs.shape[1]
    d_ctx = d_model if spec.context is None else spec.context.shape[1]
    arrays = n * d_model * 3 + m * d_ctx + h * (n + m) * spec.d_k + h * (m + 2 * n) * spec.d_v
    if spec.rope is not None:  # Q′ and K′ beside Q and K
        arrays += h * n * spec.d_k + spec.kv_heads * m * spec.d_k
    if spec.pre_norm is not None:  # X̂
        arrays += n * d_model
    given = 0  # the mask and score bias matrices the document gave (causal, window and ALiBi take no memory)
    if spec.mask is not None and spec.mask.matrix is not None:
        given += spec.mask.matrix.size
    if spec.score_bias is not None and spec.score_bias.matrix is not None:
        given += 8 * spec.score_bias.matrix.size
    return 8 * arrays + given + BASE
