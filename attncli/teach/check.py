"""Check a hand calculation: the document's ``answer:`` against the computed trace.

    answer:
      query: 2            # optional: the answer is this query's row (counting from 1, or a token)
      head: 1             # optional: for several heads, which one (counting from 1)
      scores: [4, 16, 12]
      weights: [0.0, 0.98, 0.02]

Each given key is compared cell by cell within an absolute tolerance.  The keys of today's
attention (``normalized_inputs``, ``queries_rotated``, ``keys_rotated``, ``residual`` …) may be
answered when the document computes them; for ``keys``, ``values`` and ``keys_rotated`` with
``kv_heads``, ``head`` names the query head, and the answer is for the key/value head it uses.  When an
answer is wrong, the classic mistakes are recomputed and compared too, so the
report can say *how* it went wrong (scaling forgotten, softmax over the wrong
axis, rounding too early, …), not only *where*.

A cell may be left ``null`` only where there is no number to give: a masked
scaled score.  Anywhere else a ``null`` is a cell left blank, so it is wrong
(the report says "yours null"), never quietly correct.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from attncli.core.attention import Trace, attend, softmax
from attncli.core.errors import AttnError, describe, shorten, unknown_key
from attncli.core.scores import kv_head_of, shared
from attncli.core.spec import Spec
from attncli.inputs.matrices import read_value
from attncli.outputs.serialize import NEEDS, array_of
from attncli.teach.check_modern import downstream, modern_mistakes

CHECKABLE = ("normalized_inputs", "queries", "keys", "values", "queries_rotated", "keys_rotated", "scores",
             "score_bias", "scaled_scores", "weights", "head_outputs", "output", "normalized_output", "residual", "normalized")
ANSWER_KEYS = ("query", "head", *CHECKABLE)
STEP: dict[str, int | str] = {"normalized_inputs": "pre_norm", "queries": 3, "keys": 3, "values": 3,
                              "queries_rotated": "rope", "keys_rotated": "rope", "scores": 4, "score_bias": 4, "scaled_scores": 4,
                              "weights": 5, "head_outputs": 7, "output": 8, "normalized_output": "residual",
                              "residual": "residual", "normalized": "add_norm"}
PER_QUERY_AXIS = {"normalized_inputs": 0, "queries": 1, "queries_rotated": 1, "scores": 1, "score_bias": 1, "scaled_scores": 1,
                  "weights": 1, "head_outputs": 1, "output": 0, "normalized_output": 0, "residual": 0, "normalized": 0}
NOT_PER_HEAD = ("normalized_inputs", "output", "normalized_output", "residual", "normalized")
KV = ("keys", "values", "keys_rotated")  # one per key/value head
DEFAULT_TOL = 0.005
LEFT_EMPTY = "only a masked scaled score may be left null; every other cell has a number (a masked key's weight is 0)"


@dataclass(frozen=True)
class Answer:
    arrays: dict[str, np.ndarray]  # key -> what the learner wrote (NaN where a cell was left null)
    query: int | None  # 0-based
    head: int | None  # 0-based


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


def read_answer(raw: Any, trace: Trace, folder) -> Answer:
    """Validate the document's ``answer`` section against the trace's sizes."""
    if not isinstance(raw, dict) or not raw:
        raise AttnError("expected a mapping with any of " + ", ".join(CHECKABLE), "answer")
    for key in raw:
        if key not in ANSWER_KEYS:
            raise unknown_key(key, ANSWER_KEYS).at("answer")
    spec = trace.spec
    query = _position(raw.get("query"), spec.tokens, "answer.query", "query")
    head = _position(raw.get("head"), [str(i) for i in range(1, spec.heads + 1)], "answer.head", "head")
    arrays = {}
    for key in CHECKABLE:
        if key in raw:
            if array_of(trace, key) is None:
                raise AttnError(f"needs {NEEDS[key]} in the document: without it there are no {key.replace('_', ' ')}",
                                f"answer.{key}")
            try:
                arrays[key] = _numbers(raw[key], folder)
            except AttnError as e:
                raise e.at(f"answer.{key}") from None
    if not arrays:
        raise AttnError("gives no result to check: add any of " + ", ".join(CHECKABLE), "answer")
    return Answer(arrays, query, head)


def _position(value: Any, labels: list[str], where: str, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if 1 <= value <= len(labels):
            return value - 1
        plural = "queries" if what == "query" else f"{what}s"
        raise AttnError(f"{shorten(value)} is out of range: {plural} are 1 to {len(labels)}", where)
    if isinstance(value, str) and value in labels:
        return labels.index(value)
    if isinstance(value, float) and str(value) in labels:  # (a label YAML reads as a number: 3.10 is '3.1')
        return labels.index(str(value))
    shown = ", ".join(shorten(label, 20) for label in labels[:12]) + (", …" if len(labels) > 12 else "")
    raise AttnError(f"{describe(value)} is neither a {what} number nor a label ({shown})", where)


def _numbers(value: Any, folder) -> np.ndarray:
    """Like any matrix, but a masked cell may be left ``null`` (it is not compared)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return read_value([value], folder)  # checked as a matrix's cell is (beyond float64, NaN)
    if isinstance(value, list):
        holes = _nulls(value)
        return np.where(holes, np.nan, read_value(_fill(value), folder)) if holes.any() else read_value(value, folder)
    return read_value(value, folder)


def _fill(value: Any) -> Any:
    return [_fill(v) for v in value] if isinstance(value, list) else (0 if value is None else value)


def _nulls(value: Any) -> np.ndarray:
    try:
        return np.array(_mark(value), dtype=bool)
    except ValueError:
        return np.zeros(1, dtype=bool)  # ragged: let read_value report it


def _mark(value: Any) -> Any:
    return [_mark(v) for v in value] if isinstance(value, list) else value is None


def expected_of(trace: Trace, key: str, answer: Answer) -> np.ndarray:
    """The computed array the learner's answer for ``key`` should equal."""
    return select(array_of(trace, key), key, answer, trace.spec)


def select(full: np.ndarray, key: str, answer: Answer, spec: Spec) -> np.ndarray:
    """The part of ``full`` the answer is for: one head (a key/value head for K, V, K′), one query's row."""
    array = full
    per_head = key not in NOT_PER_HEAD
    heads = spec.kv_heads if key in KV else spec.heads
    if per_head and (answer.head is not None or heads == 1):
        head = answer.head or 0
        array = array[int(kv_head_of(spec.heads, spec.kv_heads)[head]) if key in KV else head]  # one head: may be left out
    if answer.query is not None and key in PER_QUERY_AXIS:
        axis = PER_QUERY_AXIS[key] - (1 if per_head and array.ndim < full.ndim else 0)
        array = np.take(array, answer.query, axis=axis)
    return array


def check_tolerance(tol: float) -> float:
    """``tol`` if it is a finite number ≥ 0: NaN would accept every answer (no difference is > NaN), so would inf."""
    if not (math.isfinite(tol) and tol >= 0):
        raise AttnError(f"the tolerance must be a finite number ≥ 0, not {tol!r}", "--tol")
    return tol


def may_be_null(trace: Trace, key: str, answer: Answer) -> np.ndarray:
    """Where the learner may write ``null`` (True), in the shape of :func:`expected_of`: masked scaled scores, and
    the −inf cells of a score bias."""
    full = np.zeros(array_of(trace, key).shape, dtype=bool)
    if key == "scaled_scores" and trace.spec.allowed is not None:
        full[:] = ~trace.spec.allowed  # (h, n, m)
    if key == "score_bias":
        full[:] = np.isneginf(trace.score_bias)
    return select(full, key, answer, trace.spec)


def shown(value: float | None) -> str:
    """A compared value as the report writes it: ``1.93662``, or ``null`` for a cell left null."""
    return "null" if value is None or math.isnan(value) else f"{value:.6g}"


def check(trace: Trace, answer: Answer, tol: float = DEFAULT_TOL) -> list[Finding]:
    """One finding per answered key, in the order the steps compute them."""
    check_tolerance(tol)
    findings = []
    with np.errstate(all="ignore"):  # a mistake's numbers may overflow: it then matches nothing (see _matches)
        mistakes = _mistakes(trace)
    spec = trace.spec
    after = "add_norm" if spec.add_norm is not None else "residual"
    steps = dict(STEP, output=7 if spec.heads == 1 and spec.w_o is None and spec.b_o is None else 8,
                 residual=after, normalized_output=after)
    for key in sorted(answer.arrays, key=CHECKABLE.index):
        given, expected = answer.arrays[key], expected_of(trace, key, answer)
        if given.shape != expected.shape and given.size == expected.size and given.ndim == 1:
            given = given.reshape(expected.shape)
        if given.shape != expected.shape:
            hint = "it looks transposed" if given.shape == expected.T.shape and expected.ndim == 2 else None
            problem = f"has shape {_shape(given.shape)} but {key.replace('_', ' ')} here are {_shape(expected.shape)}"
            findings.append(Finding(key, steps[key], False, problem=problem, hint=hint))
            continue
        skip = np.isnan(given) & may_be_null(trace, key, answer)  # a masked scaled score left null: nothing to compare
        wrong = np.argwhere(~skip & ~(np.abs(given - expected) <= tol))  # a null elsewhere (NaN) is wrong
        if not len(wrong):
            findings.append(Finding(key, steps[key], True))
            continue
        cell = tuple(int(i) for i in wrong[0])
        if np.isnan(given[cell]):
            hint = LEFT_EMPTY
        else:
            hint = next((text for text, make in mistakes.get(key, []) if _matches(given, make, key, answer, spec, tol, skip)),
                        None)
        findings.append(Finding(key, steps[key], False, cell, float(expected[cell]), float(given[cell]), hint=hint))
    return findings


def _matches(given: np.ndarray, make: Callable[[], np.ndarray | None], key: str, answer: Answer, spec: Spec, tol: float,
             skip: np.ndarray) -> bool:
    """Whether a mistake's numbers are the answer; a mistake whose numbers overflow float64 matches nothing."""
    try:
        with np.errstate(all="ignore"):
            candidate = make()
    except (AttnError, OverflowError, ZeroDivisionError):  # attend's overflow error, or a Python float's
        return False
    return _close(given, None if candidate is None else select(candidate, key, answer, spec), tol, skip)


def _close(given: np.ndarray, candidate: np.ndarray | None, tol: float, skip: np.ndarray) -> bool:
    """Does the answer match this mistake's numbers everywhere (but where a masked cell was left null)?"""
    if candidate is None or candidate.shape != given.shape:
        return False
    return bool(np.all(skip | (np.abs(given - candidate) <= tol)))


def _shape(shape: tuple[int, ...]) -> str:
    return " × ".join(map(str, shape)) if shape else "one number"


# ---------------------------------------------------------------- the classic mistakes


def _mistakes(trace: Trace) -> dict[str, list[tuple[str, Callable[[], np.ndarray]]]]:
    """For each key, (hint, how that mistake computes the key), tried in order."""
    spec = trace.spec
    redo = lambda **changes: attend(dataclasses.replace(spec, **changes))  # noqa: E731
    q = trace.queries if trace.queries_rotated is None else trace.queries_rotated
    k = shared(trace.keys if trace.keys_rotated is None else trace.keys_rotated, spec.heads)  # (h, m, d_k)
    s = trace.scores
    a_wrong_axis = softmax(np.swapaxes(trace.scaled_scores, -1, -2), None if spec.allowed is None else np.swapaxes(spec.allowed, -1, -2))
    a_wrong_axis = np.swapaxes(a_wrong_axis, -1, -2)
    unscaled = f"the scale was left out: scaled scores are scale × {'Q′·K′ᵀ' if spec.rope is not None else 'Q·Kᵀ'}"
    twice = "the scale was applied twice"
    inverted = "the scores were multiplied by √d_k instead of divided by it" if spec.scale_name == "sqrt" else None
    axis = "softmax ran down the columns (over queries); it runs along each row, over the keys"
    early = "the weights were rounded too early: keep full precision until the end"
    mistakes: dict[str, list] = {key: [] for key in CHECKABLE}
    if spec.scale != 1.0:
        for key in ("weights", "head_outputs", "output"):
            mistakes[key] += [(unscaled, lambda key=key: array_of(redo(scale=1.0), key)),
                              (twice, lambda key=key: array_of(redo(scale=spec.scale * spec.scale), key))]
        if spec.softcap is None:
            mistakes["scaled_scores"] += [(unscaled, lambda: s), (twice, lambda: spec.scale * spec.scale * s)]
        else:  # the cap comes after the scale: the slip is computed again through it
            mistakes["scaled_scores"] += [(unscaled, lambda: array_of(redo(scale=1.0), "scaled_scores")),
                                          (twice, lambda: array_of(redo(scale=spec.scale * spec.scale), "scaled_scores"))]
        if inverted:
            mistakes["scaled_scores"].append((inverted, lambda: s / spec.scale if spec.softcap is None else
                                              array_of(redo(scale=1 / spec.scale), "scaled_scores")))
        mistakes["scores"].append(("these are already scaled: the scores are Q·Kᵀ before scaling", lambda: spec.scale * s))
    mistakes["weights"].append((axis, lambda: a_wrong_axis))
    for key in ("head_outputs", "output"):
        mistakes[key].append((axis, lambda key=key: _from_weights(trace, a_wrong_axis, key)))
        for step in (0.5, 0.1, 0.01):  # weights rounded to halves (as the walkthrough does), 1 or 2 decimals
            rounded = lambda step=step: np.round(trace.weights / step) * step  # noqa: E731
            mistakes[key].append((early, lambda key=key, r=rounded: _from_weights(trace, r(), key)))
    if q.shape[-1] == k.shape[-2]:  # Q·K only has a shape when d_k = m
        mistakes["scores"].append(("K was not transposed: the scores are Q·Kᵀ, each query row dotted with each key row", lambda: q @ k))
    for key, name in (("queries", "w_q"), ("keys", "w_k"), ("values", "w_v")):
        mistakes[key] += _transposed_weight(spec, key, name)
    if spec.heads > 1:
        mistakes_split = lambda key: array_of(attend(_interleaved(spec)), key)  # noqa: E731
        for key in CHECKABLE:
            mistakes[key].append(("the heads were split wrongly: head i takes the i-th block of d_k consecutive columns",
                                  lambda key=key: mistakes_split(key)))
    for key, found in modern_mistakes(trace).items():
        mistakes[key] = mistakes.get(key, []) + found
    return mistakes


def _from_weights(trace: Trace, a: np.ndarray, key: str) -> np.ndarray:
    return downstream(trace, a @ shared(trace.values, trace.spec.heads), key)  # H = A·V (h, n, d_v), on


def _transposed_weight(spec, key: str, name: str) -> list:
    """The weight applied as W·x (PyTorch's nn.Linear layout) instead of x·W."""
    w = getattr(spec, name)  # (h, d_in, d)
    h, d_in, d = w.shape
    if d_in != h * d:
        return []
    full = w.transpose(1, 0, 2).reshape(d_in, h * d)
    swapped = full.T.reshape(d_in, h, d).transpose(1, 0, 2)
    hint = "the weights were applied as W·x; attncli uses row vectors, x·W (transpose PyTorch weights)"
    return [(hint, lambda: array_of(attend(dataclasses.replace(spec, **{name: swapped})), key))]


def _interleaved(spec):
    """Every head's weights taken as interleaved columns (head i: columns i, i+h, …)."""
    changes = {}
    for name in ("w_q", "w_k", "w_v"):
        w = getattr(spec, name)  # (h, d_in, d)
        h, d_in, d = w.shape
        full = w.transpose(1, 0, 2).reshape(d_in, h * d)
        changes[name] = full.reshape(d_in, d, h).transpose(2, 0, 1)
    return dataclasses.replace(spec, **changes)
