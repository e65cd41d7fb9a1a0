"""What else a wrong quantity can be when no slip explains it, for ``attncli check``'s hints.

First (before any slip is tried): the right numbers, rounded to fewer decimals than the tolerance asks for.
Then, when no slip explains the quantity:

- numbers written in masked cells, where a scaled score has none;
- the numbers of another query (with ``query:``) or of another head (with ``head:``);
- the right matrix written transposed (rows and columns swapped);
- numbers that follow correctly from the learner's own wrong earlier quantities (the slip was made
  earlier, and carried on): then only the earlier quantity needs fixing.
"""

from __future__ import annotations

import numpy as np

from attncli.core.errors import AttnError
from attncli.core.stages import writer
from attncli.core.trace import Trace
from attncli.outputs.serialize import array_of
from attncli.teach.check.answer import (
    NOT_PER_HEAD,
    PER_QUERY_AXIS,
    Answer,
    Given,
    expected_of,
    fit,
    part,
    row_axis,
    select,
)
from attncli.teach.check.shapes import heads_hint
from attncli.teach.check.slips import rerun


def other_part(trace: Trace, answer: Answer, f, givens: list[Given], tol: float, words: dict) -> str | None:
    """The hint for a wrong quantity no slip explains, or None."""
    g = next(g for g in givens if g.key == f.key)
    slack = g.slack(tol)
    elsewhere = other_place(trace, answer, f, givens, tol, words)
    if elsewhere is not None:
        return elsewhere
    expected = expected_of(trace, f.key, answer)
    if not g.rows and g.nullable.any() and fit(g, np.where(g.nullable, g.values, expected), slack) is not None:
        return words["masked_cell"]  # right but for numbers written where a masked score has none
    if not g.rows and expected.ndim >= 2 and expected.shape[-1] == expected.shape[-2]:
        if fit(g, np.swapaxes(expected, -1, -2), slack) is not None:
            return words["transposed_square"]
    return carried(trace, answer, f, givens, slack, words)


def other_place(trace: Trace, answer: Answer, f, givens: list[Given], tol: float, words: dict) -> str | None:
    """The right numbers of another query (with ``query:``) or of another head (with ``head:``): the hint, or None."""
    g = next(g for g in givens if g.key == f.key)
    spec, full, slack = trace.spec, array_of(trace, f.key), g.slack(tol)
    if g.values.shape != expected_of(trace, f.key, answer).shape and not g.rows:
        return None
    if answer.query is not None and row_axis(f.key, spec) is not None and not g.rows:
        other = "other_row" if f.key in PER_QUERY_AXIS else "other_token_row"  # (a key's row: a token's)
        for r in range(spec.n):
            if r != answer.query and fit(g, select(full, f.key, answer, spec, query=r), slack) is not None:
                return words[other].format(row=r + 1, token=spec.tokens[r], query=answer.query + 1)
    if answer.head is not None and f.key not in NOT_PER_HEAD:
        for h in range(spec.heads):
            if h != answer.head and fit(g, select(full, f.key, answer, spec, head=h), slack) is not None:
                return words["other_head"].format(head=h + 1, given=answer.head + 1)
    return None


def shape_hint(trace: Trace, key: str, given: np.ndarray, expected: np.ndarray, tol: float, words: dict,
               answer: Answer | None = None) -> str | None:
    """A wrong shape that is still recognisable: the heads side by side, the matrix transposed, or the heads
    combined wrongly (:mod:`attncli.teach.check.shapes`)."""
    if key == "head_outputs" and trace.spec.heads > 1 and given.shape == trace.concat.shape:
        if np.allclose(given, trace.concat, atol=max(tol, 0.05), rtol=0):
            return words["concat"]
    named = heads_hint(trace, key, given, answer, tol, words)
    if named is not None:
        return named
    if expected.ndim == 2 and given.shape == expected.T.shape:
        return words["transposed"]
    return None


def rounded_right(trace: Trace, answer: Answer, g: Given, tol: float, words: dict) -> str | None:
    """The hint for numbers right to the decimals the learner wrote, though not to the tolerance; else None."""
    slack = g.slack(tol)
    if g.rows or slack <= tol or fit(g, expected_of(trace, g.key, answer), slack) is None:
        return None
    return words["rounded_answer"].format(tol=f"{tol:g}", suggest=f"{slack * 1.0001:.2g}")


def carried(trace: Trace, answer: Answer, f, givens: list[Given], tol: float, words: dict) -> str | None:
    """Is the wrong quantity what the learner's own (wrong) earlier quantities give, computed on correctly?"""
    stage = writer(f.key)
    start = {}
    for g in givens:
        if writer(g.key) < stage and not g.rows:
            full = array_of(trace, g.key).copy()
            index = part(g.key, answer, trace.spec, full.ndim)
            if full[index].shape != g.values.shape:  # (a quantity of the wrong shape)
                continue
            mine = np.where(g.blank, full[index], g.values)
            if not np.allclose(mine, full[index], atol=tol, rtol=0):
                full[index] = mine
                start[g.key] = full
    if not start:
        return None
    g = next(g for g in givens if g.key == f.key)
    try:
        with np.errstate(all="ignore"):
            again = rerun(trace, start)
    except (AttnError, ArithmeticError, ValueError):
        return None
    if again.get(f.key) is None or fit(g, select(again[f.key], f.key, answer, trace.spec), tol) is None:
        return None
    return words["carried"].format(upstream=words["sep"].join(start))
