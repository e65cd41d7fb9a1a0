"""A learner's ``answer:`` section: read, validated against the trace's sizes, and the part of each array it is for.

    answer:
      query: 2            # optional: the answer is this query's row (counting from 1, or a token)
      head: 1             # optional: for several heads, which one (counting from 1)
      scores: [4, 16, 12]
      weights: [0.0, 0.98, 0.02]

A cell may be left ``null`` only where there is no number to give: a masked scaled score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attncli.core.attention import Trace
from attncli.core.errors import AttnError, describe, shorten, unknown_key
from attncli.core.scores import kv_head_of
from attncli.core.spec import Spec
from attncli.core.stages import QUANTITIES
from attncli.inputs.matrices import read_value
from attncli.outputs.serialize import NEEDS, array_of

CHECKABLE = ("normalized_inputs", "latent_queries", "latent_kv", "queries", "keys", "values", "queries_rotated",
             "keys_rotated", "scores",
             "score_bias", "scaled_scores", "weights", "head_outputs", "output", "normalized_output", "residual",
             "normalized", "normalized_queries", "normalized_keys")
ANSWER_KEYS = ("query", "head", *CHECKABLE)
PER_QUERY_AXIS = {"normalized_inputs": 0, "latent_queries": 0, "queries": 1, "queries_rotated": 1, "scores": 1,
                  "score_bias": 1,
                  "scaled_scores": 1, "weights": 1, "head_outputs": 1, "output": 0, "normalized_output": 0,
                  "residual": 0, "normalized": 0, "normalized_queries": 1}
PER_KEY_AXIS = {"latent_kv": 0, "keys": 1, "values": 1, "keys_rotated": 1, "normalized_keys": 1}  # one row per key
NOT_PER_HEAD = tuple(key for key, q in QUANTITIES.items() if not q.per_head and not q.source)  # computed, one per token
KV = tuple(key for key, q in QUANTITIES.items() if q.per_kv_head and not q.source)  # one per key/value head


@dataclass(frozen=True)
class Answer:
    arrays: dict[str, np.ndarray]  # key -> what the learner wrote (NaN where a cell was left null)
    query: int | None  # 0-based
    head: int | None  # 0-based
    whole: frozenset[str] = frozenset()  # keys, values … given as a whole matrix with query: (every token's row)


def read_answer(raw: Any, trace: Trace, folder) -> Answer:
    """Validate the document's ``answer`` section against the trace's sizes."""
    if not isinstance(raw, dict) or not raw:
        raise AttnError("expected a mapping with any of " + ", ".join(CHECKABLE), "answer")
    raw = by_json_key(raw)
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
                arrays[key] = _numbers(raw[key], folder, minus_inf=key in ("scaled_scores", "score_bias"))
            except AttnError as e:
                raise e.at(f"answer.{key}") from None
    if not arrays:
        raise AttnError("gives no result to check: add any of " + ", ".join(CHECKABLE), "answer")
    whole = frozenset(key for key in PER_KEY_AXIS if key in arrays and arrays[key].ndim >= 2)  # (the rows a query's
    return Answer(arrays, query, head, whole)  # scores need: every key's)


def by_json_key(raw: dict) -> dict:
    """The answer's keys as JSON keys: a formula's name (``S``, ``Z``, ``A``, ``Q′``, ``W_Q``, in any case, as
    ``compute --only`` takes them) stands for its key; a key given twice, under both names, is refused."""
    from attncli.outputs.serialize import ALIASES, key_of

    named: dict = {}
    given: dict = {}
    for key, value in raw.items():
        json_key = key if key in ANSWER_KEYS else key_of(str(key))
        if json_key not in ANSWER_KEYS:
            symbols = [symbol for symbol, k in ALIASES.items() if k in CHECKABLE]
            raise unknown_key(key, (*ANSWER_KEYS, *symbols)).at("answer")
        if json_key in named:
            raise AttnError(f"gives {json_key} twice, as {given[json_key]} and as {key}: keep one", "answer")
        if json_key == "query" and isinstance(value, list):  # `query: [0.1, 0.2]`: the queries' numbers
            raise AttnError("is a list: query: picks the row the answer is for (a number from 1, or a token); "
                            "did you mean queries: for the numbers of Q?", "answer.query")
        named[json_key], given[json_key] = value, key
    return named


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


def _numbers(value: Any, folder, minus_inf: bool = False) -> np.ndarray:
    """Like any matrix, but a masked cell may be left ``null`` (it is not compared); a scaled score may be −inf."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return read_value([value], folder, minus_inf=minus_inf)  # checked as a matrix's cell is (beyond float64, NaN)
    if isinstance(value, list):
        holes = _nulls(value)
        read = read_value(_fill(value) if holes.any() else value, folder, minus_inf=minus_inf)
        return np.where(holes, np.nan, read) if holes.any() else read
    return read_value(value, folder, minus_inf=minus_inf)


def _fill(value: Any) -> Any:
    return [_fill(v) for v in value] if isinstance(value, list) else (0 if value is None else value)


def _nulls(value: Any) -> np.ndarray:
    try:
        return np.array(_mark(value), dtype=bool)
    except ValueError:
        return np.zeros(1, dtype=bool)  # ragged: let read_value report it


def _mark(value: Any) -> Any:
    return [_mark(v) for v in value] if isinstance(value, list) else value is None


def part(key: str, answer: Answer, spec: Spec, ndim: int, head: int | None = None, query: int | None = None) -> tuple:
    """The index of the part of a full array (``ndim`` axes) the answer is for: one head (a key/value head for K, V,
    K′), one query's row.  ``head`` and ``query`` (0-based) stand in for the answer's own when given."""
    head = answer.head if head is None else head
    query = answer.query if query is None else query
    index: list = [slice(None)] * ndim
    heads = spec.kv_heads if key in KV else spec.heads
    if key not in NOT_PER_HEAD and (head is not None or heads == 1):
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

    @property
    def blank(self) -> np.ndarray:
        """The cells left null (or written −inf)."""
        return ~np.isfinite(self.values)

    def slack(self, tol: float) -> float:
        """The tolerance to match a slip's numbers: at least half a unit of the last decimal the learner wrote,
        and at most 0.05 (whole numbers are taken as written to one decimal: scores often are whole)."""
        finite = self.values[np.isfinite(self.values)]
        for decimals in range(1, 7):
            if np.all(np.abs(finite - np.round(finite, decimals)) <= 1e-9 * np.maximum(1.0, np.abs(finite))):
                return max(tol, 0.5 * 10.0 ** -decimals * (1 + 1e-9))
        return tol


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
