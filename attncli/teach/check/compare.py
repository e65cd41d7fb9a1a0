"""Check a hand calculation: the document's ``answer:`` against the computed trace, and name the slip.

Each given key is compared cell by cell within an absolute tolerance.  The keys of today's
attention (``normalized_inputs``, ``queries_rotated``, ``keys_rotated``, ``residual`` …) may be
answered when the document computes them; for ``keys``, ``values`` and ``keys_rotated`` with
``kv_heads``, ``head`` names the query head, and the answer is for the key/value head it uses.

When an answer is wrong, every slip a teacher sees (:mod:`attncli.teach.check.slips`, the computation
done again with one change) is tried on every quantity the answer gives, so a slip made in
step 3 is named from an answer that gives only the output; when several fit, the one that
explains the most given numbers is named.  When none does: the numbers of another query or
head, or numbers that follow correctly from the learner's own wrong earlier quantity; else a
note says which quantity is the first wrong one and which are right.

``query:`` picks the row of every per-token quantity: the query's, and in self-attention the same
token's row of the keys, values (and the latent they come from), unless they are given whole.  A one-row
answer without ``query:`` (or of the context's keys) is compared with every row, and the report says which
row it is.  A cell may be left ``null`` only where there is no number to give: a masked scaled score.
Anywhere else a ``null`` is a cell left blank, so it is wrong (the report says "yours null"), never quietly correct.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field, replace

import numpy as np

from attncli.core.errors import AttnError, visible
from attncli.core.gradient_keys import GRADIENT_KEYS
from attncli.core.stages import BY_NAME, QUANTITIES
from attncli.core.trace import Trace
from attncli.outputs.serialize import array_of
from attncli.teach.check import naming
from attncli.teach.check.answer import (
    CHECKABLE,
    PAIRED,
    Answer,
    Given,
    expected_of,
    fit,
    read_answer,
    row_axis,
    select,
)
from attncli.teach.check.near_misses import other_part, other_place, rounded_right, shape_hint
from attncli.teach.texts import texts

__all__ = ["CHECKABLE", "Answer", "Finding", "Report", "check", "diagnose", "expected_of", "read_answer", "shown"]
# the explain step a quantity is finished in, from the stage list (the output's and the residual's: by the document)
STEP: dict[str, int | str] = {key: q.steps[-1] for key, q in QUANTITIES.items() if q.steps}
DEFAULT_TOL = 0.005
MAX_CELLS = 4_000_000  # beyond h·n·m cells no one worked by hand: the slips are not computed again


@dataclass(frozen=True)
class Finding:
    key: str
    step: int | str  # 1 … 8, or an extra step's name (rope, pre_norm, residual, add_norm)
    ok: bool
    cell: tuple[int, ...] | None = None  # the first wrong cell, counting from 0, in the given array
    expected: float | None = None
    given: float | None = None  # NaN: the learner left the cell null
    problem: str | None = None  # a shape problem, when the answer has the wrong shape
    hint: str | None = None
    row: tuple[int, ...] | None = None  # a one-row answer without query: the row it was compared with
    nan: bool = False  # the given cell is a NaN the learner wrote (nan, .nan: e.g. inf / inf), not a null
    where: str | None = None  # the cell in words when its axes are not head, row, column (a linear: layer's state)


@dataclass(frozen=True)
class Report:
    findings: list[Finding]
    notes: list[str] = field(default_factory=list)  # which row a one-row answer is; what is right when no slip fits
    slips: list[dict] = field(default_factory=list)  # the slips named: {"name", "hint", "keys"}


def check_tolerance(tol: float) -> float:
    """``tol`` if it is a finite number ≥ 0: NaN would accept every answer (no difference is > NaN), so would inf."""
    if not (math.isfinite(tol) and tol >= 0):
        raise AttnError("compare.tolerance_must_finite_number_not", "--tol", tol=tol)
    return tol


def may_be_null(trace: Trace, key: str, answer: Answer) -> np.ndarray:
    """Where the learner may write ``null`` (True), in the shape of :func:`expected_of`: masked scaled scores, and
    the −inf cells of a score bias."""
    full = np.zeros(array_of(trace, key).shape, dtype=bool)
    if key == "scaled_scores" and trace.spec.allowed is not None:
        full[:] = ~trace.spec.allowed  # (h, n, m)
    if key == "score_bias":
        full[:] = np.isneginf(trace.score_bias)
    if key == "index_scores":
        full[:] = np.isneginf(trace.index_scores)  # a key the document's mask hides from the indexer
    return select(full, key, answer, trace.spec)


def shown(value: float | None) -> str:
    """A compared value as the report writes it: ``1.93662``, or ``null`` for a cell left null."""
    return "null" if value is None or math.isnan(value) else "-inf" if value == -math.inf else f"{value:.6g}"


def check(trace: Trace, answer: Answer, tol: float = DEFAULT_TOL, lang: str = "en") -> list[Finding]:
    """One finding per answered key, in the order the steps compute them."""
    return diagnose(trace, answer, tol, lang).findings


def diagnose(trace: Trace, answer: Answer, tol: float = DEFAULT_TOL, lang: str = "en",
             source: str | None = None, alternatives: tuple = (), layer: int | None = None) -> Report:
    """The findings, in the order the steps compute them, each wrong one with the slip that explains it;
    ``source``: the document's file, for the closing pointer to the step to read again; ``alternatives``: slips of
    the whole document as (name, the Trace computed with it, its sentence's words), such as a stack's layer fed the
    stack's own inputs; ``layer``: a stack's layer checked (``--layer N``), which the pointer names too."""
    check_tolerance(tol)
    spec, words = trace.spec, texts(lang)["check"]
    after = "add_norm" if spec.add_norm is not None else "residual"
    steps = dict(STEP, output=7 if spec.heads == 1 and spec.w_o is None and spec.b_o is None else 8,
                 residual=after, normalized_output=after, **dict.fromkeys(GRADIENT_KEYS, "backward"))
    if spec.differential is not None:  # H is the pairs' normalised output: explain's differential step
        steps["head_outputs"] = "differential"
    findings, givens, notes = [], [], []
    for key in sorted(answer.arrays, key=CHECKABLE.index):
        given, expected = answer.arrays[key], expected_of(trace, key, answer)
        if given.shape != expected.shape and given.size == expected.size and given.ndim == 1:
            given = given.reshape(expected.shape)
        if given.shape == (1, *expected.shape):  # compute's JSON of one head (or pair) keeps the head axis
            given = given[0]
        rows = (given.shape != expected.shape and given.ndim == 1 and expected.ndim >= 2
                and expected.shape[-1] == given.shape[0])
        if given.shape != expected.shape and not rows:  # a slip may still make numbers of this shape (A·K)
            hint = shape_hint(trace, key, given, expected, tol, words, answer)
            problem = words["problem"].format(given=_shape(given.shape, words), key=key,
                                              expected=_shape(expected.shape, words))
            findings.append(Finding(key, steps[key], False, problem=problem, hint=hint))
            givens.append(Given(key, given, np.zeros(given.shape, dtype=bool), False))
            continue
        nulls = answer.nulls.get(key)
        nulls = None if nulls is None or nulls.size != given.size else nulls.reshape(given.shape)
        g = Given(key, given, may_be_null(trace, key, answer), rows, nulls)
        givens.append(g)
        found = _compare(g, expected, steps[key], tol)
        if found.row is not None and _picked(key, answer, spec):  # query: took its row of each head: name it
            found = Finding(**{**found.__dict__, "row": (*found.row, answer.query)})  # (head, row) as without it
        findings.append(found)
    wrong = [f.key for f in findings if not f.ok]
    rounded = {g.key: rounded_right(trace, answer, g, tol, words) for g in givens if g.key in wrong}
    wrong = [key for key in wrong if not rounded[key]]  # right as far as the learner's decimals go: no slip
    shown_wrong = [f for f in findings if not f.ok and not f.problem and f.key in wrong]
    elsewhere = bool(shown_wrong) and all(other_place(trace, answer, f, givens, tol, words) for f in shown_wrong)
    plainer = lambda: any(other_part(trace, answer, f, givens, tol, words) for f in shown_wrong)  # noqa: E731
    hints, slips, told = (_slip_hints(trace, answer, givens, wrong, tol, lang, plainer, alternatives)
                          if wrong and not elsewhere else ({}, [], []))
    _rounded_weights(trace, answer, givens, wrong, hints, slips, lang)
    hints.update({key: hint for key, hint in rounded.items() if hint})
    for i, f in enumerate(findings):
        if f.problem and f.key in hints:
            findings[i] = f = Finding(**{**f.__dict__, "hint": hints[f.key]})
        elif not f.ok and not f.problem:
            g = next(g for g in givens if g.key == f.key)
            blank = f.given == -math.inf or (math.isnan(f.given) and bool(g.null[f.cell]))  # not a written .nan
            hint = (words["left_empty"] if blank
                    else hints.get(f.key) or other_part(trace, answer, f, givens, tol, words))
            findings[i] = f = Finding(**{**f.__dict__, "hint": hint})
        if f.row is not None:
            where = _row_name(trace, f.key, answer, f.row, words)
            kind = "" if answer.query is None else "_heads" if _picked(f.key, answer, spec) else "_context"
            template = ("row_match" if f.ok else "row_closest") + kind
            notes.append(words[template].format(key=f.key, row=where))
    names = texts(lang)["step_names"]
    told = [words["tell_apart"].format(**{**test, "cell": cell_name(test["cell"], test["key"], spec.tokens,
                                                                     spec.context_tokens, words["cell"]),
                                          "mine": shown(test["mine"]), "theirs": shown(test["theirs"])})
            for test in told]
    return Report(findings, notes + told + closing(findings, words, names)
                  + pointer(findings, trace, answer, source, words, names, layer, slips), slips)


def closing(findings: list[Finding], words: dict, names: dict | None = None) -> list[str]:
    """The closing sentence when no slip explains the first wrong quantity; it never contradicts the hints above
    (the quantities that follow correctly from it are said to, not to be wrong too); ``names``: the extra steps'
    names in the report's language."""
    first = next((f for f in findings if not f.ok), None)
    if first is None or first.hint is not None:
        return []
    first = replace(first, step=(names or {}).get(first.step, first.step))
    right = [f.key for f in findings if f.ok]
    follows = words["carried"].split("{upstream}")[0]
    after = [f.key for f in findings if not f.ok and f.hint is not None and f.hint.startswith(follows)]
    if after and not right:
        return [words["none_fits_carried"].format(key=first.key, step=first.step, after=words["sep"].join(after))]
    template = words["none_fits_right" if right else "none_fits_alone" if len(findings) > 1 else "none_fits_only"]
    return [template.format(key=first.key, step=first.step, keys=words["sep"].join(right))]


def pointer(findings: list[Finding], trace: Trace, answer: Answer, source: str | None, words: dict,
            names: dict | None = None, layer: int | None = None, slips: list[dict] = ()) -> list[str]:
    """``attncli explain FILE --step N --query i``: the step where the named slip happens (its stage's), else the
    step of the first wrong quantity a slip explains."""
    named = next((f for f in findings if not f.ok and f.hint is not None), None)
    if named is None or source is None or source == "-":
        return []
    step = slip_step(slips[0], named.step, trace) if slips else named.step
    query = answer.query if answer.query is not None else None if named.row is None else named.row[-1]
    head = answer.head if answer.head is not None else named.row[0] if named.row and len(named.row) == 2 else None
    command = f"attncli explain {shlex.quote(source)}" + ("" if layer is None else f" --layer {layer}")
    command += f" --step {step}"
    command += "" if query is None else f" --query {query + 1}"
    command += "" if head is None or trace.spec.heads == 1 else f" --head {head + 1}"
    where = (words["step_number"] if isinstance(step, int) else words["step_extra"] if step in (names or {})
             else words["step_other"]).format(step=step, name=(names or {}).get(step, step))
    return [words["read_step"].format(where=where, command=command)]


# explain's steps in the order it walks them (where the extra steps fall between the eight)
WALK = (1, "positional", 2, "pre_norm", 3, "qk_norm", "rope", "latent", "indexer", 4, 5, 6, 7, "differential", 8,
        "add_norm", "residual", "backward")


def slip_step(slip: dict, first_wrong: int | str, trace: Trace) -> int | str:
    """The step to read again: where the slip happens, the step of the stage whose declared variant it is
    (``_stage``, from the search: its named step, ``differential``, else the last step its quantities are worked
    in, the scale's 4), unless the first wrong quantity's step comes before it (weights rounded in the step that
    mixes them were written in step 5); ``first_wrong`` for a slip no stage declares."""
    stage = BY_NAME.get(slip.get("_stage"))
    variant = None if stage is None else next((v for v in stage.variants if v.name == slip["name"]), None)
    if variant is None:
        return first_wrong
    if variant.backward:
        return "backward" if trace.grad_scaled_scores is not None else first_wrong
    if first_wrong in stage.explained:  # (the residual stage's add_norm or residual: the document's)
        return first_wrong
    steps = list(stage.explained[-1:]) or [step for q in stage.writes if not q.parameter for step in q.steps][-1:]
    if not steps or steps[0] not in WALK or first_wrong not in WALK:
        return first_wrong
    return min(steps[0], first_wrong, key=WALK.index)


def _compare(g: Given, expected: np.ndarray, step, tol: float) -> Finding:
    """Right, or the first wrong cell (for a one-row answer: against the closest row, named by ``row``)."""
    if g.rows:
        width = g.values.shape[0]
        grid = expected.reshape(-1, width)
        match = fit(g, expected, tol)
        leading = expected.shape[:-1]
        if match is not None:
            return Finding(g.key, step, True, row=tuple(int(i) for i in np.unravel_index(match, leading)))
        nullable = g.nullable.reshape(grid.shape)
        with np.errstate(invalid="ignore"):
            off = ~((g.blank & nullable) | (np.abs(g.values - grid) <= tol))
            distance = np.where(g.blank, 0.0, np.abs(g.values - grid)).sum(axis=-1)
        best = int(np.lexsort((distance, off.sum(axis=-1)))[0])  # fewest wrong cells, then nearest
        j = int(np.argmax(off[best]))
        return Finding(g.key, step, False, (j,), float(grid[best, j]), float(g.values[j]),
                       row=tuple(int(i) for i in np.unravel_index(best, leading)))
    with np.errstate(invalid="ignore"):
        wrong = np.argwhere(~((g.blank & g.nullable) | (np.abs(g.values - expected) <= tol)))
    if not len(wrong):
        return Finding(g.key, step, True)
    cell = tuple(int(i) for i in wrong[0])
    return Finding(g.key, step, False, cell, float(expected[cell]), float(g.values[cell]),
                   nan=bool(np.isnan(g.values[cell]) and not g.null[cell]))


def _slip_hints(trace: Trace, answer: Answer, givens: list[Given], wrong: list[str], tol: float,
                lang: str, plainer, alternatives: tuple = ()) -> tuple[dict[str, str], list[dict], list[dict]]:
    """For the wrong keys the slip that reproduces every given number (:mod:`attncli.teach.check.naming`)."""
    spec = trace.spec
    if spec.heads * spec.n * spec.m > MAX_CELLS:
        return {}, [], []
    return naming.named(trace, answer, givens, wrong, tol, lang, plainer, alternatives)


def _rounded_weights(trace: Trace, answer: Answer, givens: list[Given], wrong: list[str], hints: dict,
                     slips: list[dict], lang: str) -> None:
    """Weights that are exactly the right ones rounded to halves, 1 or 2 decimals (the tutorial's [0.0, 0.5, 0.5])
    get the rounding's sentence, as the output made from them does: the two lines never disagree.
    (Exactly: near one-hot weights are within the tolerance of halves without being rounded.)"""
    g = next((g for g in givens if g.key == "weights"), None)
    if g is None or "weights" not in wrong or "weights" in hints or g.rows:
        return
    right = expected_of(trace, "weights", answer)
    for name, step in (("rounded_half", 0.5), ("rounded_1", 0.1), ("rounded_2", 0.01)):
        if g.values.shape == right.shape and np.allclose(g.values, np.round(right / step) * step, rtol=0, atol=1e-9):
            hints["weights"] = texts(lang)["slips"][name]
            entry = next((s for s in slips if s["name"] == name), None)
            if entry is None:
                slips.insert(0, {"name": name, "hint": hints["weights"], "keys": ["weights"]})
            else:
                entry["keys"].insert(0, "weights")
            return


def cell_name(cell: tuple[int, ...], key: str, tokens: list[str], key_tokens: list[str],
              words: dict | None = None) -> str:
    """Name a cell as people count: ``head 1, row 2 ('Input 2'), column 3`` (``words``: another language's)."""
    words = words or texts("en")["check"]["cell"]
    parts = []
    names = ("head", "row", "column")[3 - len(cell):] if len(cell) <= 3 else ("head", "row", "column")
    names = ("pair", *names[1:]) if key in PAIRED and len(cell) == 3 else names  # differential: a pair of heads
    for name, i in zip(names, cell):
        token = ""
        if name == "row":
            labels = key_tokens if key in ("keys", "values", "keys_rotated") else tokens
            token = words["token"].format(token=visible(labels[i])) if i < len(labels) else ""
        parts.append(words[name].format(i=i + 1) + token)
    return words["sep"].join(parts)


def _picked(key: str, answer: Answer, spec) -> bool:
    """Whether query: picked ``key``'s row (a one-row answer is then compared with that row of every head); else its
    rows are the context's tokens (cross-attention's keys and values), which query: does not pick."""
    return answer.query is not None and key not in answer.whole and row_axis(key, spec) is not None


def _row_name(trace: Trace, key: str, answer: Answer, row: tuple[int, ...], words: dict) -> str:
    spec = trace.spec
    name = cell_name((*row, 0), key, spec.tokens, spec.context_tokens, words["cell"])  # row: (head, row) or (row,)
    return name.rsplit(words["cell"]["sep"], 1)[0]  # without the column


def _shape(shape: tuple[int, ...], words: dict) -> str:
    return " × ".join(map(str, shape)) if shape else words["one_number"]
