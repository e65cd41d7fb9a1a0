"""The gradient tables of the page: every shown cell's arithmetic (:mod:`.gradients`) as string indices, and the
diverging colour scale of a signed table.
"""

from __future__ import annotations

import numpy as np

from attncli.core.trace import Trace
from attncli.teach.page.gradients import cell_work, needs
from attncli.teach.page.sums import WORDS, Work, sum_lines
from attncli.teach.page.tables import Shown

TERM_BUDGET = 150_000  # terms written out on one page, at most (a large document's page stays a few MB)


def _size(work: Work) -> tuple[int, float]:
    """(terms written, Σ |term|): what a cell costs and the size its rounding is measured against."""
    flat = [t[0] * t[1] if isinstance(t, tuple) else t for s in work.sums for t in s[2]]
    return len(flat) + len(work.lines or []), float(sum(abs(x) for x in flat))


def _entry(work: Work, strings, p: int) -> list:
    """[formula, [paragraphs per language], [lines per language]], as indices of ``strings``."""
    paragraphs, lines = [], []
    for lang in ("en", "zh"):
        paragraphs.append([strings(WORDS[lang][key].format(**values)) for key, values in work.words])
        written = list(work.lines or [])
        for lhs, symbolic, terms in work.sums:
            written += sum_lines(lhs, symbolic, terms, p, lang)
        written += work.tail or []
        lines.append([strings(line) for line in written])
    return [strings(work.formula), paragraphs, lines]


def gradient_cells(trace: Trace, shown: Shown, strings, precision: int, budget: list[int]) -> list | None:
    """Every shown cell's arithmetic (:func:`_entry`), None where a cell is not written out: a ``⋮``/``…`` cell, a
    stage these formulas leave out (its sum would not give the table's number back), or ``budget`` (terms left,
    in a one-item list) spent.  None for a table that is not a gradient's."""
    key, matrix = shown.block.key, shown.block.matrix
    if not (key.startswith("grad_") or key == "delta") or not needs(trace):
        return None
    largest = float(np.abs(matrix[np.isfinite(matrix)]).max(initial=0.0))
    out = []
    for i in shown.rows:
        row = []
        for j in shown.columns:
            work = None if i is None or j is None or budget[0] <= 0 else cell_work(trace, key, shown.head, i, j,
                                                                                    precision)
            if work is not None:
                count, size = _size(work)
                budget[0] -= count
                if abs(work.value - float(matrix[i, j])) > 1e-9 * max(size, largest, 1e-300):
                    work = None  # a stage these formulas leave out: no sum that does not give the number back
            row.append(None if work is None else _entry(work, strings, precision))
        out.append(row)
    return out


def signed_scale(shown: Shown) -> float | None:
    """A gradient table's largest |x| (its diverging colour scale runs from −it to +it); None: not a gradient."""
    key, matrix = shown.block.key, shown.block.matrix
    if not (key.startswith("grad_") or key == "delta") or shown.block.masked is not None and shown.block.masked.all():
        return None
    finite = matrix[np.isfinite(matrix)]
    largest = float(np.abs(finite).max(initial=0.0))
    return largest if largest > 0 else None
