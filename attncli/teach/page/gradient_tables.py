"""The gradient tables of the page: every shown cell's arithmetic (:mod:`.gradients`) as string indices, and the
diverging colour scale of a signed table.
"""

from __future__ import annotations

import numpy as np

from attncli.core.trace import Trace
from attncli.teach.page.gradients import cell_work, needs
from attncli.teach.page.sums import MAX_TERMS, Work, sum_lines, words
from attncli.teach.page.tables import Shown

TERM_BUDGET = 30_000  # terms written out on one page, shared by its gradient tables (a large page stays a few MB)
SPENT = 0  # a cell past its table's share of the budget (None: a cell the formulas do not hold for)


def _size(work: Work) -> tuple[int, float]:
    """(terms written, Σ |term|): what a cell costs and the size its rounding is measured against."""
    flat = [t[0] * t[1] if isinstance(t, tuple) else t for s in work.sums for t in s[2]]
    written = sum(min(len(s[2]), MAX_TERMS) for s in work.sums) + len(work.lines or []) + len(work.tail or [])
    return written, float(sum(abs(x) for x in flat))


class Budget:
    """:data:`TERM_BUDGET` shared by a page's gradient tables in turn: each may write what is left divided by the
    tables still to come, so that what a small table leaves goes to the next ones."""

    def __init__(self, tables: int):
        self.left, self.tables = TERM_BUDGET, max(1, tables)

    def share(self) -> int:
        return self.left // max(1, self.tables)

    def spend(self, written: int) -> None:
        self.left, self.tables = self.left - written, self.tables - 1


def is_gradient(shown: Shown) -> bool:
    return shown.block.key.startswith("grad_") or shown.block.key == "delta"


def _entry(work: Work, strings, p: int) -> list:
    """[formula, [paragraphs per language], [lines per language]], as indices of ``strings``."""
    paragraphs, lines = [], []
    english = [sum_lines(lhs, symbolic, terms, p, "en") for lhs, symbolic, terms in work.sums]
    for lang in ("en", "zh"):
        paragraphs.append([strings(words(lang)[key].format(**values)) for key, values in work.words])
        written = list(work.lines or [])
        for made, (lhs, symbolic, terms) in zip(english, work.sums, strict=True):  # a long sum's count has words
            written += made if lang == "en" or len(terms) <= MAX_TERMS else sum_lines(lhs, symbolic, terms, p, lang)
        written += work.tail or []
        lines.append([strings(line) for line in written])
    return [strings(work.formula), paragraphs, lines]


def gradient_cells(trace: Trace, shown: Shown, strings, precision: int, budget: Budget) -> list | None:
    """Every shown cell's arithmetic (:func:`_entry`), row by row until the table's share of the ``budget`` is
    written (then :data:`SPENT`); None for a ``⋮``/``…`` cell and where a stage these
    formulas leave out comes between (:func:`~attncli.teach.page.gradients.written`, and a sum that would not give
    the table's number back).  None for a table that is not a gradient's."""
    matrix = shown.block.matrix
    if not is_gradient(shown) or not needs(trace):
        return None
    largest = float(np.abs(matrix[np.isfinite(matrix)]).max(initial=0.0))
    out, share = [], budget.share()
    start = share
    for i in shown.rows:
        row = []
        for j in shown.columns:
            if i is None or j is None:
                row.append(None)
                continue
            work = cell_work(trace, shown.block.key, shown.head, i, j, precision) if share > 0 else None
            if work is None:
                row.append(None if share > 0 else SPENT)
                continue
            count, size = _size(work)
            share -= count
            good = abs(work.value - float(matrix[i, j])) <= 1e-9 * max(size, largest, 1e-300)
            row.append(_entry(work, strings, precision) if good else None)  # never a sum that misses the number
        out.append(row)
    budget.spend(start - share)
    return out


def signed_scale(shown: Shown) -> float | None:
    """A gradient table's largest |x| (its diverging colour scale runs from −it to +it); None: not a gradient."""
    matrix = shown.block.matrix
    if not is_gradient(shown):
        return None
    finite = matrix[np.isfinite(matrix)]
    largest = float(np.abs(finite).max(initial=0.0))
    return largest if largest > 0 else None
