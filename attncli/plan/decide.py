"""Which computation runs for the keys asked for and the kind of result, and the refusals when none fits.

A result is never written with keys silently missing: the n × m matrices are computed when they are
wanted and fit the budget (``ATTNCLI_MEMORY``, or half the memory available, within the process's
limits); left out, the rest is computed block by block; keys made before the scores need no attention.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from attncli.core import pipeline
from attncli.core.differential_stage import DIFFERENTIAL
from attncli.core.errors import AttnError
from attncli.core.memory import CHECKED_FROM, beyond, ensure_fits, memory_budget, thread_reserve
from attncli.core.record import record
from attncli.core.spec import Spec
from attncli.core.threads import cores
from attncli.core.trace import Trace
from attncli.plan.estimate import (
    BASE,
    MATRIX_KEYS,
    beyond_base,
    full_bytes,
    partial_bytes,
    seconds,
    streamed_bytes,
    written_bytes,
)

# progress(blocks, seconds): around the streamed computation, given its block count and about how long it takes;
# yields advance(k), called as blocks finish, or None
Progress = Callable[[int, float], AbstractContextManager[Callable[[int], None] | None]]


@record
class Plan:
    """How a computation runs: in full, or block by block of queries (``stream``)."""

    stream: bool  # compute block by block (no n × m matrices)


def compute_within(spec: Spec, keys: list[str] | None, kind: str, progress: Progress | None = None) -> Trace:
    """The Trace of ``keys`` (``--only``; None: everything) written as ``kind``, computed the way that fits.

    Only the stages before the scores when ``keys`` need no more; else the full computation when its
    n × m matrices are wanted and fit, block by block when they are not wanted (:func:`plan`).
    Raises AttnError naming what to ask for instead when nothing fits.
    """
    if pipeline.needs_no_attention(keys):  # --only inputs, queries …: the stages before the scores, nothing more
        ensure_fits(partial_bytes(spec, keys), f"{', '.join(keys)} of this document", "--only")
        return pipeline.attend_until(spec, keys)
    if not plan(spec, keys, kind).stream:
        return pipeline.attend(spec)
    from attncli.core import stream  # (block by block: imported only for a document too large for the full path)

    if progress is None:
        return stream.attend_streamed(spec, keep=keys)
    with progress(stream.block_count(spec), seconds(spec)) as advance:
        return stream.attend_streamed(spec, advance, keep=keys)


def compute_in_full(spec: Spec, kind: str, command: str) -> Trace:
    """The full computation, for a ``command`` that needs its n × m matrices: refused up front when they do not fit."""
    need = full_bytes(spec, None, kind)
    if need - BASE >= CHECKED_FROM:  # (the interpreter's allowance alone is no reason to refuse a small document)
        ensure_fits(need, f"{command} needs the scores and weights of {spec.heads} × {spec.n} × {spec.m}, which")
    return pipeline.attend(spec)


def plan(spec: Spec, keys: list[str] | None, kind: str, budget: int | None = None) -> Plan:
    """Full or streamed computation for ``--only keys`` written as ``kind`` (json, table, .npz, .npy, …).

    The n × m matrices are computed only when they are wanted and fit in ``budget``
    bytes; too large, they are an error that says what to do: asked for by name, which
    --only computes without them; wanted because nothing was left out, which --only or
    ``-o FILE.npz`` fits. A result is never written with keys silently missing.
    The result's text or file counts too (:func:`attncli.plan.estimate.written_bytes`).
    """
    budget = memory_budget() if budget is None else budget
    wanted = keys is None or any(key in MATRIX_KEYS for key in keys)
    wanted = wanted or spec.differential is not None and (spec.gradient is not None or any(  # (whole weights only)
        key in DIFFERENTIAL.keys and key != "head_outputs" for key in keys))
    if wanted:
        need = full_bytes(spec, keys, kind)
        if need <= budget:
            return Plan(stream=False)
        shape = f"{spec.heads} × {spec.n} × {spec.m}"
        if keys is not None:
            asked = ", ".join(key for key in keys if key in MATRIX_KEYS)
            raise AttnError("decide.need_about_use_only_output", "--only", asked=asked, shape=shape,
                            beyond=beyond(need, budget))
        raise AttnError("decide.whole_result_scores_scaled_scores_weights", shape=shape, beyond=beyond(need, budget),
                        what_fits=_what_fits(spec, kind, budget))
    _ensure_streamed_fits(spec, keys, kind, budget)
    return Plan(stream=True)


def _streamed_bytes(spec: Spec, keys: list[str] | None, kind: str) -> int:
    return streamed_bytes(spec) + cores() * thread_reserve() + beyond_base(written_bytes(spec, keys, kind))


def _ensure_streamed_fits(spec: Spec, keys: list[str] | None, kind: str, budget: int) -> None:
    need = _streamed_bytes(spec, keys, kind)
    if need > budget:
        raise AttnError("decide.even_block_block_this_document", beyond=beyond(need, budget))


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
