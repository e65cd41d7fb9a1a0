"""The slips that are no stage's variant (the answer's writing), each the computation done again with one change.

Every slip of a stage is that stage's declared variant (:mod:`attncli.core.variants`, searched by
:mod:`attncli.teach.check.search`).  A :class:`Slip` here is one change a variant cannot say, a slip of the
answer's writing (the scaled scores given as the scores; the rotated queries as the projected ones, in
:mod:`.modern`; the weights as the scores, in :mod:`.arith`), and every quantity an answer may give, computed
with it; :mod:`attncli.teach.check.naming` names it only when it reproduces every number given.  Its sentence is
``texts(lang)["slips"][name]``, filled with ``words``.

:func:`rerun` does the computation again from any stage on (:func:`attncli.core.pipeline.rerun`): the stages
given replace the trace's, everything after them is computed anew (earlier ones stay the trace's).  A slip
of the document's settings is :func:`attend` on a changed :class:`~attncli.core.spec.Spec` (the document
alternatives of :mod:`.naming`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from attncli.core import pipeline
from attncli.core.errors import AttnError
from attncli.core.gate import gated_or_not
from attncli.core.pipeline import attend
from attncli.core.scores import shared
from attncli.core.stages import QUANTITIES, writer
from attncli.core.trace import Trace
from attncli.outputs.serialize import array_of

Arrays = dict[str, np.ndarray | None]
ANSWERABLE = tuple(key for key, q in QUANTITIES.items() if not q.source)  # what an answer may give: what is computed
AFTER_WEIGHTS = tuple(key for key in ANSWERABLE if writer(key) > writer("weights"))  # what rounding the weights changes
ROUNDINGS = (0.01, 0.1)  # a slip's weights also tried rounded to 2 or 1 decimals before they multiply V


@dataclass(frozen=True)
class Slip:
    """One slip: its name (the key of its sentence), the sentence's placeholders, and its numbers."""

    name: str
    make: Callable[[float | None], Arrays]  # the quantities with this slip (weights rounded to a step, or not)
    words: dict = field(default_factory=dict)
    rounded: bool = True  # also try the slip with its weights rounded before they multiply the values
    cache: dict = field(default_factory=dict, compare=False, repr=False)

    def arrays(self, rounding: float | None = None) -> Arrays:
        """The slip's quantities, computed once; {} when they cannot be computed (an overflow, a zero sum)."""
        if rounding not in self.cache:
            try:
                with np.errstate(all="ignore"):
                    self.cache[rounding] = self.make(rounding)
            except (AttnError, ArithmeticError, ValueError):  # an overflow, normalize: sum by 0, a shape
                self.cache[rounding] = {}
        return self.cache[rounding]


def arrays_of(trace: Trace) -> Arrays:
    return {key: array_of(trace, key) for key in ANSWERABLE}


def rerun(trace: Trace, start: Arrays, rounding: float | None = None,
          mix: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
          project: Callable[[np.ndarray], np.ndarray] | None = None, steps: dict | None = None) -> Arrays:
    """Every answerable quantity, with the stages in ``start`` replaced and everything after them computed again.

    ``rounding``: the weights rounded to this step before they multiply the values; ``mix(a, v)``: the head
    outputs made otherwise than a·V; ``project(heads)``: the output made otherwise than concat·W_O + b_O;
    ``steps``: stages done otherwise, by name (``{"qk_norm": step(spec, arrays) -> arrays}``).
    """
    replace = dict(steps or {})
    if rounding is not None or mix is not None:
        def mixed(spec, a: Arrays) -> Arrays:
            weights = a["weights"] if rounding is None else np.round(a["weights"] / rounding) * rounding
            v = shared(a["values"], spec.heads)
            return {"head_outputs": weights @ v if mix is None else mix(weights, v)}
        replace["mix"] = mixed
    if project is not None:
        replace["output"] = lambda spec, a: {"output": project(gated_or_not(a))}  # H ⊙ G with a gate
    got = pipeline.rerun(trace.spec, pipeline.arrays_of(trace), given=start, replace=replace)
    return {key: got.get(key) for key in ANSWERABLE}


def allowed_of(spec) -> np.ndarray | None:
    return None if spec.mask is None else spec.mask.full()


def by_spec(trace: Trace, **changes) -> Callable[[float | None], Arrays]:
    """The slip of a changed setting: the whole computation again (its weights rounded, when asked)."""
    def make(rounding: float | None) -> Arrays:
        changed = attend(dataclasses.replace(trace.spec, **changes))
        return arrays_of(changed) if rounding is None else rerun(changed, {}, rounding)
    return make


def by_stage(trace: Trace, start: Callable[[], Arrays], **how) -> Callable[[float | None], Arrays]:
    """The slip of one stage done otherwise: the trace's stages up to it, the rest computed again."""
    return lambda rounding: rerun(trace, start(), rounding, **how)


# ---------------------------------------------------------------- the slips not declared as a stage's variant


def classic_slips(trace: Trace) -> list[Slip]:
    """The 2017 layer's slips of the answer's writing (its stages' slips are their declared variants,
    :mod:`attncli.core.variants`): the scaled scores given as the scores."""
    spec = trace.spec
    if spec.scale == 1.0:
        return []
    return [Slip("scores_scaled", lambda rounding: dict(arrays_of(trace), scores=spec.scale * trace.scores),
                 rounded=False)]
