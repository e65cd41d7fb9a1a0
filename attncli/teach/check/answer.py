"""A learner's ``answer:`` section: read, validated against the trace's sizes, and the part of each array it is for.

    answer:
      query: 2            # optional: the answer is this query's row (counting from 1, or a token)
      head: 1             # optional: for several heads, which one (counting from 1)
      scores: [4, 16, 12]
      weights: [0.0, 0.98, 0.02]

A cell may be left ``null`` only where there is no number to give: a masked scaled score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe, nearest, shorten, unknown_key
from attncli.core.gradient_keys import GRADIENT_KEYS, GRADIENTS
from attncli.core.scores import kv_head_of
from attncli.core.spec import Spec
from attncli.core.stages import QUANTITIES
from attncli.core.trace import Trace
from attncli.inputs.matrices import read_value
from attncli.outputs.serialize import NEEDS, array_of

# what a stage lets a learner give, in order, then every gradient compute writes (dA, D, dZ …, the weights')
CHECKABLE = (*(key for key, q in QUANTITIES.items() if q.checkable and key not in GRADIENT_KEYS),
             *(q.key for q in GRADIENTS if not q.parameter))
ANSWER_KEYS = ("query", "head", *CHECKABLE)
PER_QUERY_AXIS = {key: QUANTITIES[key].row_axis for key in CHECKABLE if QUANTITIES[key].rows == "query"}
PER_KEY_AXIS = {key: QUANTITIES[key].row_axis for key in CHECKABLE if QUANTITIES[key].rows == "key"}  # a row per key
PAIRED = tuple(key for key, q in QUANTITIES.items() if q.shape.startswith("p "))  # one per pair of heads
NOT_PER_HEAD = tuple(key for key, q in QUANTITIES.items() if not q.per_head and not q.source and key not in PAIRED)
#   (computed, one per token)
KV = tuple(key for key, q in QUANTITIES.items() if q.per_kv_head and not q.source)  # one per key/value head


@dataclass(frozen=True)
class Answer:
    arrays: dict[str, np.ndarray]  # key -> what the learner wrote (NaN where a cell was left null)
    query: int | None  # 0-based
    head: int | None  # 0-based
    whole: frozenset[str] = frozenset()  # keys, values … given as a whole matrix with query: (every token's row)
    nulls: dict = field(default_factory=dict)  # key -> where a cell was left null (NaN there; .nan is a number)


def read_answer(raw: Any, trace: Trace, folder) -> Answer:
    """Validate the document's ``answer`` section against the trace's sizes."""
    if not isinstance(raw, dict) or not raw:
        raise AttnError("answer.expected_mapping_any", "answer", checkable=", ".join(CHECKABLE))
    raw = by_json_key(raw, trace)
    spec = trace.spec
    query = _position(raw.get("query"), spec.tokens, "answer.query", "query")
    head = _position(raw.get("head"), [str(i) for i in range(1, spec.heads + 1)], "answer.head", "head")
    arrays, nulls = {}, {}
    for key in CHECKABLE:
        if key in raw:
            if array_of(trace, key) is None:
                raise AttnError("answer.needs_document_without_there_no",
                                f"answer.{key}", needs=NEEDS[key], replace=key.replace('_', ' '))
            try:
                arrays[key], nulls[key] = _numbers(raw[key], folder, minus_inf=key in ("scaled_scores", "score_bias"))
            except AttnError as e:
                raise e.at(f"answer.{key}") from None
    if not arrays:
        raise AttnError("answer.gives_no_result_check_add", "answer", checkable=", ".join(CHECKABLE))
    whole = frozenset(key for key in PER_KEY_AXIS if key in arrays and arrays[key].ndim >= 2)  # (the rows a query's
    return Answer(arrays, query, head, whole, nulls)  # scores need: every key's)


def by_json_key(raw: dict, trace: Trace | None = None) -> dict:
    """The answer's keys as JSON keys: a formula's name (``S``, ``Z``, ``A``, ``Q′``, ``W_Q``, in any case, as
    ``compute --only`` takes them) stands for its key; a key given twice, under both names, is refused.  An
    unknown key far from every name is answered with the keys ``trace``'s document computes (all: without it)."""
    from attncli.outputs.serialize import ALIASES, key_of

    named: dict = {}
    given: dict = {}
    for key, value in raw.items():
        json_key = key if key in ANSWER_KEYS else key_of(str(key))
        if json_key not in ANSWER_KEYS:
            symbols = [symbol for symbol, k in ALIASES.items() if k in CHECKABLE]
            known = (*ANSWER_KEYS, *symbols)
            if not nearest(str(key)[:100], known):  # the JSON keys; the formulas' names and gradients by example
                # (every name of every key would make a message of 600 characters)
                known = (*(k for k in ANSWER_KEYS if k not in GRADIENT_KEYS
                           and (trace is None or k in ("query", "head") or array_of(trace, k) is not None)),
                         "Q, K, S, A, dA, dQ …")
            raise unknown_key(key, known).at("answer")
        if json_key in named:
            raise AttnError("answer.gives_twice_keep_one", "answer", json_key=json_key, given=given[json_key], key=key)
        if json_key == "query" and isinstance(value, list):  # `query: [0.1, 0.2]`: the queries' numbers
            raise AttnError("answer.list_query_picks_row_answer", "answer.query")
        named[json_key], given[json_key] = value, key
    return named


def _position(value: Any, labels: list[str], where: str, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if 1 <= value <= len(labels):
            return value - 1
        plural = "queries" if what == "query" else f"{what}s"
        if len(labels) == 1 and what == "head":  # (not "heads are 1 to 1")
            raise AttnError("answer.out_range_there_one_head", where, value=shorten(value))
        if len(labels) == 1:
            raise AttnError("answer.out_range_there_one_query", where, value=shorten(value))
        if what == "head":  # (the noun written out, so that each language says it its own way)
            id = "answer.out_range_heads_2" if len(labels) == 2 else "answer.out_range_heads"
            raise AttnError(id, where, value=shorten(value), count=len(labels))
        id = "answer.out_range_2" if len(labels) == 2 else "answer.out_range"
        raise AttnError(id, where, value=shorten(value), plural=plural, count=len(labels))
    if isinstance(value, str) and value in labels:
        return labels.index(value)
    if isinstance(value, float) and str(value) in labels:  # (a label YAML reads as a number: 3.10 is '3.1')
        return labels.index(str(value))
    shown = ", ".join(shorten(label, 20) for label in labels[:12]) + (", …" if len(labels) > 12 else "")
    raise AttnError("answer.neither_number_nor_label", where, value=describe(value), what=what, shown=shown)


SPECIAL = {"inf": math.inf, "+inf": math.inf, ".inf": math.inf, "+.inf": math.inf, "infinity": math.inf,
           "-inf": -math.inf, "-.inf": -math.inf, "-infinity": -math.inf, "nan": math.nan, ".nan": math.nan}


def _numbers(value: Any, folder, minus_inf: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Like any matrix, but a masked cell may be left ``null`` (it is not compared), and a hand calculation's overflow
    is a number: ``inf``, ``-inf``, ``nan`` (``.inf``, ``.nan``).  -> (the numbers, where a cell was null)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (isinstance(value, list) or number or _special(value) is not None):
        read = read_value(value, folder, minus_inf=minus_inf)  # a file, an initialiser
        return read, np.zeros(read.shape, dtype=bool)
    cells = value if isinstance(value, list) else [value]
    holes, special = _mark(cells, lambda x: x is None), _mark(cells, lambda x: _special(x) is not None)
    if not (holes.any() or special.any()):
        read = read_value(cells, folder, minus_inf=minus_inf)  # checked as a matrix's cell is (beyond float64)
        return read, np.zeros(read.shape, dtype=bool)
    read = read_value(_fill(cells), folder, minus_inf=minus_inf)
    read = np.where(special, _mark(cells, lambda x: _special(x) or 0.0, float), read)
    return np.where(holes, np.nan, read), holes


def _special(x: Any) -> float | None:
    """inf, −inf or NaN written as a number (YAML's .inf, .nan) or as text (inf, -inf, nan); None for anything else."""
    if isinstance(x, float) and not math.isfinite(x):
        return x
    if isinstance(x, str):
        return SPECIAL.get(x.strip().lower())
    return None


def _mark(value: Any, test, dtype=bool) -> np.ndarray:
    """``test`` of every cell of a nested list, as an array (one False when the list is ragged: read_value says so)."""
    def mark(v):
        return [mark(x) for x in v] if isinstance(v, list) else test(v)
    try:
        return np.array(mark(value), dtype=dtype)
    except ValueError:
        return np.zeros(1, dtype=dtype)


def _fill(value: Any) -> Any:
    return [_fill(v) for v in value] if isinstance(value, list) else (0 if value is None or _special(value) is not None
                                                                        else value)


def part(key: str, answer: Answer, spec: Spec, ndim: int, head: int | None = None, query: int | None = None) -> tuple:
    """The index of the part of a full array (``ndim`` axes) the answer is for: one head (a key/value head for K, V,
    K′), one query's row.  ``head`` and ``query`` (0-based) stand in for the answer's own when given."""
    head = answer.head if head is None else head
    query = answer.query if query is None else query
    index: list = [slice(None)] * ndim
    heads = spec.kv_heads if key in KV else spec.heads
    if key in PAIRED:  # differential attention: head h is in pair h mod h/2 (pairs p and p + h/2)
        if head is not None or spec.heads == 2:
            index[0] = (head or 0) % (spec.heads // 2)
    elif key not in NOT_PER_HEAD and (head is not None or heads == 1):
        # one head: may be left out
        index[0] = int(kv_head_of(spec.heads, spec.kv_heads)[head or 0]) if key in KV else (head or 0)
    axis = _row_axis(key, answer, spec)
    if query is not None and axis is not None:
        index[axis] = query  # (axes of the full array: head first for a head's quantity)
    return tuple(index)


def row_axis(key: str, spec: Spec) -> int | None:
    """The axis of ``key``'s full array that ``query:`` picks a row of: the query's own row; for keys, values (and
    the latent they come from) the same token's row in self-attention, where the keys are the queries' tokens."""
    return PER_QUERY_AXIS.get(key, PER_KEY_AXIS.get(key) if spec.context is None else None)


def _row_axis(key: str, answer: Answer, spec: Spec) -> int | None:
    return None if key in answer.whole else row_axis(key, spec)


def select(full: np.ndarray, key: str, answer: Answer, spec: Spec, head: int | None = None,
           query: int | None = None) -> np.ndarray:
    """The part of ``full`` the answer is for (see :func:`part`)."""
    return full[part(key, answer, spec, full.ndim, head, query)]


def expected_of(trace: Trace, key: str, answer: Answer) -> np.ndarray:
    """The computed array the learner's answer for ``key`` should equal."""
    return select(array_of(trace, key), key, answer, trace.spec)


@dataclass(frozen=True)
class Given:
    """One answered quantity, ready to compare: the numbers, where a blank is an answer, and how it is compared."""

    key: str
    values: np.ndarray  # as given (reshaped when it was a flat list of the right size); NaN: null, or −inf
    nullable: np.ndarray  # where a blank is an answer (a masked scaled score), in the shape of the expected part
    rows: bool  # a one-row answer compared with every row of the expected part
    nulls: np.ndarray | None = None  # where a cell was left null (None: every NaN was a null)

    @property
    def null(self) -> np.ndarray:
        """The cells left null (a NaN written as ``nan`` or ``.nan`` is a number, not a null)."""
        return np.isnan(self.values) if self.nulls is None or self.nulls.shape != self.values.shape else self.nulls

    @property
    def blank(self) -> np.ndarray:
        """The cells left null (or written −inf)."""
        return self.null | (self.values == -np.inf)

    def slack(self, tol: float) -> float:
        """The tolerance to match a slip's numbers: at least half a unit of the last decimal the learner wrote,
        and at most 0.05 (whole numbers are taken as written to one decimal: scores often are whole)."""
        return tol if self._half_unit is None else max(tol, self._half_unit)

    @cached_property
    def _half_unit(self) -> float | None:
        """Half a unit of the last decimal written (1 to 6 decimals), or None (more decimals); found once: the
        search compares the same answer with hundreds of candidates."""
        finite = self.values[np.isfinite(self.values)]
        for decimals in range(1, 7):
            if np.all(np.abs(finite - np.round(finite, decimals)) <= 1e-9 * np.maximum(1.0, np.abs(finite))):
                return 0.5 * 10.0 ** -decimals * (1 + 1e-9)
        return None


def fit(g: Given, candidate: np.ndarray | None, tol: float) -> int | None:
    """The row of ``candidate`` (the expected part's shape) the given numbers are (0 for a whole answer), or None."""
    if candidate is None:
        return None
    width = g.values.shape[-1] if g.values.ndim else 1
    cand = candidate.reshape(-1, width) if g.rows and candidate.size % max(width, 1) == 0 else candidate
    if cand.shape != (g.values.shape if not g.rows else (cand.shape[0], width)):
        return None
    nullable = g.nullable.reshape(cand.shape) if g.nullable.size == cand.size else np.zeros(cand.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        # (+ float noise)
        right = (g.blank & nullable) | (np.abs(g.values - cand) <= tol + 8 * np.spacing(np.abs(cand)))
    if not g.rows:
        return 0 if right.all() else None
    rows = np.flatnonzero(right.all(axis=-1))
    return int(rows[0]) if len(rows) else None
