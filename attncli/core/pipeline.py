"""Running the stage list of :mod:`attncli.core.stages`: everything, up to what is asked, or again with a change.

    attend(spec)                 every stage the document has, at once -> Trace
    attend_until(spec, keys)     only the stages the keys need (``--only queries`` stops at the projections)
    rerun(spec, arrays, …)       the stages after a changed one again (the slips of ``attncli check``)
    backward(spec, arrays)       with ``gradient``: every stage's backward step, in reverse (the grad_* keys)

The streamed path (:mod:`attncli.core.stream`) runs the ``before`` and ``after`` stages with :func:`run`
too, and the ``attention`` ones block by block.  The :class:`Trace` is made here, in :func:`trace_of`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

import numpy as np

from attncli.core.errors import AttnError
from attncli.core.gradient_keys import GRADIENT_KEYS, gradient_key
from attncli.core.gradient_overflow import check_gradient
from attncli.core.gradients import seed_key
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, Stage
from attncli.core.stages import STAGES, writer
from attncli.core.trace import TRACE_ARRAYS, Trace

Step = Callable[[Spec, Arrays], Arrays]
Backward = Callable[[Spec, Arrays, Arrays], Arrays]
COMPUTED = TRACE_ARRAYS  # its arrays, by JSON key


def run(spec: Spec, arrays: Arrays | None = None, *, stages: Iterable[Stage] = STAGES,
        replace: dict[str, Step] | None = None, given: Arrays | None = None, lenient: bool = False) -> Arrays:
    """``stages`` in order (those the document has) on ``arrays`` -> every array they and earlier stages made.

    ``replace``: a stage's name -> another way to compute it; ``given``: arrays no stage may overwrite;
    ``lenient``: an ``after`` stage that cannot run (an output of another width meets no W_O, or overflows) leaves
    its arrays None instead of raising.
    """
    a = dict(arrays or {})
    given = given or {}
    a.update(given)
    for stage in stages:
        if not stage.present(spec):
            continue
        step = (replace or {}).get(stage.name, stage.run)
        try:
            made = step(spec, a)
        except (ValueError, TypeError, AttnError):
            if not (lenient and stage.part == "after"):
                raise
            made = dict.fromkeys(stage.keys)
        a.update({key: value for key, value in made.items() if key not in given})
    return a


@np.errstate(over="ignore", invalid="ignore")  # overflow is checked for, and named: no RuntimeWarning on stderr
def attend(spec: Spec) -> Trace:
    """Compute every intermediate of ``spec`` at once (and, with ``gradient``, every gradient)."""
    a = run(spec)
    if spec.gradient is not None:
        a.update(backward(spec, a))
    return trace_of(spec, a)


def backward(spec: Spec, a: Arrays, attention: Backward | None = None,
             keep: Collection[str] | None = None, replace: dict[str, Backward] | None = None) -> Arrays:
    """The backward pass: from the document's ``gradient`` (dL/d the block's last quantity), each stage's backward
    step in reverse order -> every gradient by its JSON key (``grad_queries``, ``delta`` …).

    A stage gets the gradients of what it wrote once every later stage has added its share; the first (latest)
    gradient of a rewritten quantity is the one kept (``grad_queries`` is taken with respect to the clamped Q).
    ``attention``: one step for all the ``attention`` stages at once (the streamed path's, which keeps no n × m
    matrix: :func:`attncli.core.stream_backward.attention_backward`).
    ``keep`` (``--only``'s JSON keys; None: all): a gradient it does not name is let go as soon as no later step
    reads it (dH once the attention's step has run), not kept to the end.
    ``replace``: a stage's name -> another backward step for it (check's wrong backward steps).
    """
    flowing: Arrays = {seed_key(spec): spec.gradient}
    kept: Arrays = {}
    wanted = set(GRADIENT_KEYS) if keep is None else set(keep)
    steps = [((replace or {}).get(stage.name, stage.backward), _made(stage)) for stage in reversed(STAGES)
             if stage.present(spec)
             and (attention is None or stage.part != "attention") and stage.backward is not None]
    if attention is not None:  # in the place of the attention stages (after the output's and the gate's steps)
        at = next(i for i, (_, made) in enumerate(steps) if "kernel_queries" in made)
        steps.insert(at, (attention, tuple(key for s in STAGES if s.part == "attention" for key in _made(s))))
    for step, made in steps:
        d = {key: flowing.pop(key) for key in made if key in flowing}
        if not d:
            continue
        for key, value in d.items():
            if gradient_key(key) in wanted:
                kept.setdefault(key, value)
        made_now, d = step(spec, a, d), None  # (d let go: what is not kept goes once the step has read it)
        for key, value in made_now.items():
            if value is not None:
                flowing[key] = value if key not in flowing else flowing[key] + value
                check_gradient(key, flowing[key])  # overflow is an error naming it, never inf in a result
    for key, value in flowing.items():
        if gradient_key(key) in wanted:
            kept.setdefault(key, value)
    return {gradient_key(key): as_given(spec, key, value) for key, value in kept.items()
            if gradient_key(key) in GRADIENT_KEYS}


def as_given(spec: Spec, key: str, gradient: np.ndarray) -> np.ndarray:
    """A parameter's gradient in the shape the document gave the parameter (PyTorch's rule, FORMAT.md Part 3): a
    weight given per head, h × d_in × d, gets its d_in × h·d gradient back as h × d_in × d; the rest as they come."""
    name = key.removeprefix("weight_")
    if name == key or name not in spec.per_head:
        return gradient
    heads = spec.w_g.shape[0] if name == "gate" else {"query": spec.heads}.get(name, spec.kv_heads)
    d_in, width = gradient.shape
    return gradient.reshape(d_in, heads, width // heads).transpose(1, 0, 2)  # (h, d_in, d), a view


def _made(stage: Stage) -> tuple[str, ...]:
    """What a stage writes: its quantities and the matrices it applies (the kernel's view is one)."""
    return (*stage.keys, *(q.key for q in stage.parameters))


def needed(keys: Iterable[str]) -> tuple[Stage, ...]:
    """The stages that make ``keys`` (JSON keys), and those they read from, in order."""
    wanted, chosen = set(keys), set()
    if wanted & set(GRADIENT_KEYS):  # a gradient: every stage, forward and back
        return tuple(STAGES)
    for i in range(len(STAGES) - 1, -1, -1):
        stage = STAGES[i]
        if wanted & {*stage.keys, *(q.key for q in stage.parameters)}:
            chosen.add(i)
            wanted |= set(stage.reads)
    return tuple(STAGES[i] for i in sorted(chosen))


def needs_no_attention(keys: list[str] | None) -> bool:
    """Whether ``keys`` (``--only``; None: everything) need no attention stage (made before the scores, or from
    the rows of X alone, as the output gate G)."""
    return bool(keys) and all(stage.part != "attention" for stage in needed(keys))


@np.errstate(over="ignore", invalid="ignore")
def attend_until(spec: Spec, keys: list[str]) -> Trace:
    """The stages ``keys`` need, and no more: a Trace whose other arrays are None."""
    if spec.gradient is not None and set(keys) & set(GRADIENT_KEYS):
        return attend(spec)
    return trace_of(spec, run(spec, stages=needed(keys)))


def rerun(spec: Spec, arrays: Arrays, given: Arrays | None = None, replace: dict[str, Step] | None = None) -> Arrays:
    """Every array again from the first stage ``given`` or ``replace`` changes on: the arrays ``given`` replace
    what their stages made, the stages named in ``replace`` are done otherwise, and everything after the first
    of them is computed anew (earlier arrays stay ``arrays``'); leniently (:func:`run`)."""
    given, replace = given or {}, replace or {}
    first = min([writer(key) + 1 for key in given] + [i for i, s in enumerate(STAGES) if s.name in replace],
                default=len(STAGES))
    with np.errstate(all="ignore"):
        return run(spec, arrays, stages=STAGES[first:], replace=replace, given=given, lenient=True)


def arrays_of(trace: Trace) -> Arrays:
    """The arrays a Trace holds, as :func:`run` keeps them."""
    return {**{key: getattr(trace, key) for key in COMPUTED}, **trace.gradients, "_empty_queries": trace.empty_queries}


def trace_of(spec: Spec, arrays: Arrays) -> Trace:
    """The one place a Trace is made: the arrays the stages made, by their JSON keys."""
    return Trace(spec=spec, empty_queries=tuple(arrays.get("_empty_queries", ())),
                 gradients={key: arrays[key] for key in GRADIENT_KEYS if arrays.get(key) is not None},
                 **{key: arrays.get(key) for key in COMPUTED})
