"""check's search: the stage list run with one declared variant (or two) in place of the right step, and the
variants named that reproduce every number the learner gave.

Each stage of :data:`attncli.core.stages.STAGES` declares its wrong versions (``Stage.variants``,
:mod:`attncli.core.variants`).  :func:`candidates` runs the computation with each single variant the document can
show (a variant that changes nothing here is dropped), then with pairs: the second variant only from the stages
between the first one's and the stage of the first wrong number given, and only after a first variant that keeps
every number given before the second one's stage.  A candidate *fits* when it reproduces every given number, the
right ones too, within the answer's own precision (:meth:`Given.slack`); inf and NaN are numbers like the others.
When several fit, :func:`telling_apart` finds the first cell where two of them differ: the cheapest test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import numpy as np

from attncli.core import pipeline
from attncli.core.attention import OVERFLOW_ALLOWED
from attncli.core.gradient_keys import GRADIENT_KEYS
from attncli.core.stages import BY_NAME, QUANTITIES, STAGES, writer
from attncli.core.trace import Trace
from attncli.core.variants import Variant
from attncli.teach.check import probe
from attncli.teach.check.answer import Answer, Given, select
from attncli.teach.check.probe import FAILED, cells_match

ANSWERABLE = tuple(key for key, q in QUANTITIES.items() if not q.source)
BACKWARD = len(STAGES)  # the place of a backward variant: after every forward stage
WRITER = {key: writer(key) for key in QUANTITIES}  # the stage that makes each quantity (written once)
WRITER_OF = WRITER.__getitem__
SMALL = 250_000  # h·n·m cells up to which each single variant's arrays are kept for the pairs to start from


@dataclass(frozen=True)
class Change:
    """One variant in one stage, one of its cases."""

    index: int  # the stage's place in STAGES (BACKWARD for a backward step's variant)
    stage: str
    variant: Variant
    case: dict

    @property
    def name(self) -> str:
        return self.case.get("name", self.variant.name)

    @property
    def words(self) -> dict:
        return {key: value for key, value in self.case.items() if isinstance(value, (str, int, float))}


@dataclass(frozen=True)
class Candidate:
    changes: tuple[Change, ...]
    arrays: dict  # every answerable array with these changes (the output None when its sketch already differs)
    full: dict | None = field(default=None, compare=False, repr=False)  # every array, for a pair to start from

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.changes)


@np.errstate(all="ignore")  # (a case may probe a formula on made-up numbers)
def changes_of(spec) -> list[Change]:
    """Every variant case the document can show, in the list's order (forward stages, then the backward steps)."""
    forward, backward = [], []
    for i, stage in enumerate(STAGES):
        if not stage.present(spec):
            continue
        for variant in stage.variants:
            try:
                cases = variant.cases(spec)
            except FAILED:
                continue
            for case in cases:
                if variant.backward:
                    backward.append(Change(BACKWARD, stage.name, variant, case))
                else:
                    forward.append(Change(i, stage.name, variant, case))
    return forward + backward


def run_with(spec, base: dict, changes: tuple[Change, ...], start: int | None = None, gate=None,
             lazy: bool = False, backward: bool = True) -> dict | None:
    """Every array with ``changes`` in place of the right steps, from stage ``start`` on (default: the first
    changed stage); the stages before it keep ``base``'s arrays.  A step that cannot run leaves its arrays None.
    ``gate(stage, a, step)`` before each stage (``step``: the changed one, None for the right one; see
    :func:`.probe.gate`): False stops the run, None is returned (the candidate cannot fit), or with ``lazy`` the
    arrays so far, the later ones None.  ``backward=False``: the gradients None (:func:`with_backward` adds them)."""
    steps = {}
    for c in changes:
        if c.variant.backward:
            continue
        steps[c.stage] = partial(_step, c.variant.apply, c.case, BY_NAME[c.stage].run)
        for name, fn in c.variant.later:
            steps[name] = partial(_step, fn, c.case, BY_NAME[name].run)
    first = min((c.index for c in changes if not c.variant.backward), default=BACKWARD) if start is None else start
    a = dict(base)
    allowed = OVERFLOW_ALLOWED.set(True)  # e^800 = inf is the learner's number here: it may flow on, as NaN too
    try:
        if not _run_stages(spec, a, steps, first, gate):
            if not lazy:
                return None
            later = [key for stage in STAGES[WRITER_OF("output"):] for key in stage.keys]
            return {**a, **dict.fromkeys(later), **dict.fromkeys(GRADIENT_KEYS), "_stopped": True}
    finally:
        OVERFLOW_ALLOWED.reset(allowed)
    return with_backward(spec, a, changes) if backward else {**a, **dict.fromkeys(GRADIENT_KEYS)}


def with_backward(spec, a: dict, changes: tuple[Change, ...]) -> dict:
    """``a`` with the gradients of the document's ``gradient``, the backward steps of ``changes`` done their way
    (None where the pass cannot run); ``a`` as it is without a gradient."""
    if spec.gradient is None:
        return a
    back = {c.stage: partial(_backward_step, c, BY_NAME[c.stage].backward) for c in changes if c.variant.backward}
    allowed = OVERFLOW_ALLOWED.set(True)
    try:
        return {**a, **dict.fromkeys(GRADIENT_KEYS), **pipeline.backward(spec, a, replace=back)}
    except FAILED:
        return {**a, **dict.fromkeys(GRADIENT_KEYS)}
    finally:
        OVERFLOW_ALLOWED.reset(allowed)


@np.errstate(all="ignore")
def _run_stages(spec, a: dict, steps: dict, first: int, gate=None) -> bool:
    """The stages from ``first`` on, in place on ``a``, each the changed step where there is one; False when
    ``gate`` stopped them."""
    for stage in STAGES[first:]:
        if stage.present(spec):
            if gate is not None and not gate(stage.name, a, steps.get(stage.name)):
                return False
            try:
                made = steps.get(stage.name, stage.run)(spec, a)
            except FAILED:
                made = dict.fromkeys(stage.keys)
            a.update(made)
    return True


def _step(fn, case: dict, run, spec, a: dict) -> dict:
    return fn(spec, a, case, run)


def _backward_step(c: Change, run, spec, a: dict, d: dict) -> dict:
    return c.variant.apply(spec, a, d, c.case, run)


def answerable(a: dict) -> dict:
    """The arrays a learner may give, and the weights as a rounding variant says the learner wrote them."""
    return {**{key: a.get(key) for key in ANSWERABLE}, "_weights_written": a.get("_weights_written")}


def same(x, y) -> bool:
    """The same numbers (NaN and inf as themselves), up to float noise."""
    if x is None or y is None:
        return x is None and y is None
    if np.shape(x) != np.shape(y):
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.all((x == y) | (np.isnan(x) & np.isnan(y))
                           | (np.abs(x - y) <= 1e-9 * np.maximum(1.0, np.abs(y)))))


def matches(g: Given, candidate, answer: Answer, spec, tol: float) -> bool:
    """Whether the candidate's array gives the learner's numbers ``g`` within ``tol`` (inf, NaN as themselves)."""
    if candidate is None:
        return False
    part = select(candidate, g.key, answer, spec)
    if g.rows:
        width = g.values.shape[-1]
        if part.size % max(width, 1):
            return False
        return any(cells_match(g, row, tol) for row in part.reshape(-1, width))
    return part.shape == g.values.shape and cells_match(g, part, tol)


def fits(candidate: Candidate, givens: list[Given], answer: Answer, spec, tol: float) -> bool:
    """Every given number reproduced (weights rounded before they multiply V may be written rounded, or not)."""
    written = candidate.arrays.get("_weights_written")
    return all(matches(g, candidate.arrays.get(g.key), answer, spec, g.slack(tol))
               or (g.key == "weights" and matches(g, written, answer, spec, 1e-9)) for g in givens)  # (exactly)


class Search:
    """The single variants tried on a document and an answer (computed once), and the pairs made of them.

    ``_exhaustive`` (for the tests): none of the shortcuts, each candidate computed in full from the document's own
    arrays (no sketch or row of the output first, no pair left out because its first variant alone already
    contradicts an earlier number) and decided by :func:`fits`: the same names, found the slow way."""

    def __init__(self, trace: Trace, givens: list[Given], answer: Answer, wrong: list[str], tol: float,
                 _exhaustive: bool = False):
        self.spec, self.givens, self.answer, self.tol = trace.spec, givens, answer, tol
        self.exhaustive = _exhaustive
        self.base = pipeline.arrays_of(trace)
        self.last = min((WRITER_OF(key) for key in wrong), default=BACKWARD)  # the stage of the first wrong number
        self.tried: list[Candidate] = []
        self.fitting: list[Candidate] = []
        gate = None if _exhaustive else probe.gate(self.spec, givens, answer, tol)  # (the output's sketch)
        later = self._gradients_later()
        right = answerable(self.base)
        for c in changes_of(self.spec):
            if min(c.index, WRITER_OF(c.case.get("written", "output"))) > self.last:
                continue  # after the first wrong number (``written``: a quantity it changes as the learner writes it)
            self._single(c, gate, later and not c.variant.backward, right)
        self.tried = self.fitting + self.tried

    def _gradients_later(self) -> bool:
        """Whether a candidate's gradients can wait until it fits: no gradient given (the exhaustive way: never)."""
        return (not self.exhaustive and self.spec.gradient is not None
                and not any(g.key in GRADIENT_KEYS for g in self.givens))

    def _single(self, c: Change, gate, later: bool, right: dict) -> None:
        """One variant alone: fitting, tried (for the pairs), or dropped when it changes nothing here."""
        spec = self.spec
        full = run_with(spec, self.base, (c,), gate=gate, lazy=True, backward=not later)
        stopped = full.pop("_stopped", False)
        arrays = answerable(full)
        unchanged = all(same(arrays[key], right[key]) for key in ANSWERABLE if arrays[key] is not None)
        if unchanged and later and not stopped:  # (the same forward numbers: the gradients may still differ)
            full, later = with_backward(spec, full, (c,)), False
            arrays = answerable(full)
            unchanged = all(same(arrays[key], right[key]) for key in ANSWERABLE if arrays[key] is not None)
        if unchanged:
            return  # it changes nothing here
        small = spec.heads * spec.n * spec.m <= SMALL  # (else a pair computes its first again)
        one = Candidate((c,), arrays, full if small else None)
        if fits(one, self.givens, self.answer, spec, self.tol):
            if later:  # (every array kept: the test telling two apart reads them)
                full = with_backward(spec, full, (c,))
                one = Candidate((c,), answerable(full), full if small else None)
            self.fitting.append(one)
        else:  # only what the pairs' test reads
            kept = {g.key for g in self.givens} | {"_weights_written"}
            self.tried.append(Candidate((c,), {key: arrays[key] for key in kept if key in arrays},
                                        full if small else None))

    def singles(self) -> list[Candidate]:
        return list(self.fitting)

    def pairs(self) -> list[Candidate]:
        """The pairs that fit, in the order (first, second) of the list; the second from the stages after the first
        one's, up to the stage of the first wrong number."""
        gate = None if self.exhaustive else probe.gate(self.spec, self.givens, self.answer, self.tol, rows=True)
        later = self._gradients_later()  # (only for a pair that fits)
        fitting = []
        for first in self.tried:
            full = first.full  # (computed at the first second that needs it, once for all)
            for second in self.tried:
                c1, c2 = first.changes[0], second.changes[0]
                if c2.index <= c1.index or c2.index > self.last or c2.stage in {name for name, _ in c1.variant.later}:
                    continue  # (two ways of doing one stage are not a pair)
                if self.exhaustive:
                    made = run_with(self.spec, self.base, (c1, c2))
                elif not self._may_fit(first, c2):
                    continue
                else:
                    full = full or run_with(self.spec, self.base, (c1,), backward=not later)
                    made = run_with(self.spec, full, (c1, c2), start=c2.index, gate=gate,  # (None: the output's test)
                                    backward=not later)
                both = None if made is None else Candidate((c1, c2), answerable(made))
                if both is not None and fits(both, self.givens, self.answer, self.spec, self.tol):
                    made = with_backward(self.spec, made, (c1, c2)) if later else made  # (the notes read every array)
                    fitting.append(Candidate((c1, c2), answerable(made)))
        return fitting

    def _may_fit(self, first: Candidate, c2: Change) -> bool:
        """False when the first variant alone already contradicts a number the second cannot change."""
        before = [g for g in self.givens if WRITER_OF(g.key) < c2.index]
        return all(matches(g, first.arrays.get(g.key), self.answer, self.spec, g.slack(self.tol)) for g in before)


def telling_apart(fitting: list[Candidate], answer: Answer, spec) -> tuple[Candidate, str, tuple, float, float] | None:
    """The first quantity and cell (in the order of the computation) where the first fitting candidate and another
    differ: (the other, key, cell counting from 0 in the answer's part, its value in the first, in the other)."""
    first = fitting[0]
    for other in fitting[1:]:
        for key in ANSWERABLE:
            x, y = first.arrays.get(key), other.arrays.get(key)
            if key in answer.arrays:
                continue  # given: both fit it
            if x is None or y is None or np.shape(x) != np.shape(y) or same(x, y):
                continue
            px, py = select(x, key, answer, spec), select(y, key, answer, spec)
            if same(px, py):
                px, py = x, y
            with np.errstate(invalid="ignore"):
                far = ~((px == py) | (np.abs(px - py) <= 0.01 * np.maximum(1.0, np.abs(py))))
            if far.any():
                cell = tuple(int(i) for i in np.argwhere(far)[0])
                return other, key, cell, float(px[cell]), float(py[cell])
    return None
