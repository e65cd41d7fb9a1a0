"""Trace -> Rich tables, in the order a person computes them.

Render functions return renderables and never print; the CLI chooses the
console.  Numbers are shown with ``precision`` decimals (whole numbers without
any), large matrices are summarised with an ellipsis unless ``full``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from attncli.core.errors import visible
from attncli.core.trace import Trace
from attncli.outputs.blocks import blocks
from attncli.outputs.numbers import EDGE_COLS, EDGE_ROWS, MAX_COLS, MAX_ROWS, all_whole, dims, format_number, pick
from attncli.outputs.titles import phrase
from attncli.views.colours import FEW_COLOURS, heat_style, ink_style

MASKED = {"en": "masked", "zh": "已屏蔽"}  # a masked cell, in the language of the titles


@dataclass(frozen=True)
class View:
    precision: int = 4
    full: bool = False
    lang: str = "en"  # the language of the titles (en or zh)


def label(text: str) -> Text:
    """A token for a table: plain text (``[unused1]`` is not Rich markup), control characters visible."""
    return Text(visible(text))


def matrix_table(
    title: str,
    matrix: np.ndarray,
    rows: list[str],
    columns: list[str] | None = None,
    view: View = View(),
    masked: np.ndarray | None = None,
    heat: bool = False,
) -> MatrixTable:
    """One matrix as a table: row labels down the side, column labels across the top.

    ``masked`` (same shape, True = masked) shows those cells as ``masked``;
    ``heat`` shades each cell by its value in [0, 1] (attention weights).
    The table fits the width it is drawn in (see :class:`MatrixTable`).
    """
    return MatrixTable(title, matrix, rows, columns, view, masked, heat)


class MatrixTable:
    """A matrix drawn as whole numbers and whole labels in whatever width the console has.

    A large matrix shows its first and last rows and columns around ``⋮`` and ``…`` (as NumPy
    does); when the columns chosen do not fit, fewer are shown, and the title says which.
    With ``full``, every column is shown, split into blocks of columns that fit ("columns
    1–8 of 64"). A number or a label is never cut short; a label wider than half the width
    wraps onto a second line.
    """

    def __init__(self, title: str, matrix: np.ndarray, rows: list[str], columns: list[str] | None = None,
                 view: View = View(), masked: np.ndarray | None = None, heat: bool = False):
        n, d = matrix.shape
        self.title = f"{title}   {n} × {d}"
        self.matrix, self.rows, self.view, self.masked, self.heat = matrix, rows, view, masked, heat
        self.columns = columns if columns is not None else dims(d)
        self.row_index = pick(n, MAX_ROWS, EDGE_ROWS, view.full)
        self.whole = all_whole(matrix)
        self._texts: dict[int, list[str]] = {}

    @property
    def min_lines(self) -> int:
        """Lines it takes at least (a picture too large is refused before the layout): its title and a line a row."""
        return 1 + len(self.row_index)

    def cells(self, j: int) -> list[str]:
        """The shown cells of column ``j`` as text (formatted once)."""
        if j not in self._texts:
            column = []
            for i in self.row_index:
                if i is None:
                    column.append("⋮")
                elif self.masked is not None and self.masked[i, j]:
                    column.append(MASKED.get(self.view.lang, MASKED["en"]))
                else:
                    column.append(format_number(self.matrix[i, j], self.view.precision, self.whole))
            self._texts[j] = column
        return self._texts[j]

    def column_width(self, j: int) -> int:
        """Columns a table column takes: its widest cell or label, padding 2, one rule."""
        return max(cell_len(visible(self.columns[j])), *(cell_len(c) for c in self.cells(j))) + 3

    def label_width(self, width: int) -> int:
        labels = [cell_len(visible(self.rows[i])) for i in self.row_index if i is not None]
        return min(max(labels, default=0), max(width // 2 - 4, 1)) + 4  # 2 padding, 2 rules (left and right)

    def layout(self, width: int) -> list[list[int | None]]:
        """The column indices of each table to draw (None: the ``…`` column of left-out columns)."""
        d = self.matrix.shape[1]
        room = width - self.label_width(width)
        if self.view.full:
            parts: list[list[int | None]] = [[]]
            used = 0
            for j in range(d):
                w = self.column_width(j)
                if parts[-1] and used + w > room:
                    parts.append([])
                    used = 0
                parts[-1].append(j)
                used += w
            return parts
        wanted = pick(d, MAX_COLS, EDGE_COLS, False)
        if sum(4 if j is None else self.column_width(j) for j in wanted) <= room:
            return [wanted]
        left, right, used = [0], [d - 1], self.column_width(0) + self.column_width(d - 1) + 4
        if used > room:  # not even the first and last columns: the first alone
            return [[0, None]]
        while len(left) + len(right) < d - 1:
            j = left[-1] + 1 if len(left) <= len(right) else right[-1] - 1
            w = self.column_width(j)
            if used + w > room:
                break
            used += w
            (left if len(left) <= len(right) else right).append(j)
        return [left + [None] + right[::-1]]

    def tables(self, width: int, few_colours: bool = False) -> list[tuple[Text, Table]]:
        """Each table to draw with its title, a line of its own above it: the table as narrow as its numbers and
        labels (a title wider than it neither widens its columns nor wraps inside it).  ``few_colours``: a terminal
        of 8 or 16 colours, where a weight is its number's ink (:func:`~attncli.views.colours.ink_style`)."""
        parts = self.layout(width)
        d = self.matrix.shape[1]
        tables = []
        for part in parts:
            title = self.title
            shown = [j for j in part if j is not None]
            if len(parts) > 1:
                title += "   " + phrase(self.view.lang, "columns", a=shown[0] + 1, b=shown[-1] + 1, d=d)
            elif None in part:
                title += "   " + phrase(self.view.lang, "shown", k=len(shown), d=d)
            tables.append((Text(title, style="bold"), self._table(part, width, few_colours)))
        return tables

    def _table(self, part: list[int | None], width: int, few_colours: bool) -> Table:
        # the cells pad themselves (Padding, not the table's padding), so that a weight's colour fills its cell
        table = Table(header_style="bold", padding=0)
        shading = ink_style if few_colours else heat_style
        label_max = self.label_width(width) - 4
        table.add_column(_pad(""), style="bold", overflow="fold", max_width=label_max + 2)
        for j in part:
            table.add_column(_pad("…" if j is None else label(self.columns[j])), justify="right", no_wrap=True)
        for r, i in enumerate(self.row_index):
            if i is None:
                table.add_row(*[_pad("⋮") for _ in range(len(part) + 1)])
                continue
            cells: list[Padding] = []
            for j in part:
                if j is None:
                    cells.append(_pad("…"))
                elif self.masked is not None and self.masked[i, j]:
                    cells.append(_pad(Text(self.cells(j)[r], style="dim italic")))
                else:
                    text = self.cells(j)[r]
                    cells.append(_pad(text, shading(self.matrix[i, j]) if self.heat else ""))
            table.add_row(_pad(label(self.rows[i])), *cells)
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for k, (title, table) in enumerate(self.tables(options.max_width, console.color_system in FEW_COLOURS)):
            if k:
                yield Text("")
            yield title
            yield table

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widths = [Measurement.get(console, options, table) for _, table in self.tables(options.max_width)]
        titles = max(min(title.cell_len, options.max_width) for title, _ in self.tables(options.max_width))
        return Measurement(max(w.minimum for w in widths), max(titles, *(w.maximum for w in widths)))


def _pad(cell: Text | str, style: str = "") -> Padding:
    """A table cell with a space each side, in ``style`` (a weight's colour) from rule to rule."""
    return Padding(cell, (0, 1), style=style)


def compute_tables(trace: Trace, view: View = View(), head: int | None = None,
                   only: list[str] | None = None, layer: str = "") -> list[Table]:
    """Every table of ``attncli compute`` (the blocks of :mod:`attncli.outputs.blocks`),
    weights shaded as heat maps are.

    ``head`` (0-based) keeps one head; ``only`` keeps the tables of those JSON keys; ``layer`` goes before each
    title (``Layer 2 · ``, a stacked document's).
    """
    return [matrix_table(layer + b.heading, b.matrix, b.rows, b.columns, view, b.masked, heat=b.key == "weights")
            for b in blocks(trace, head, only, view.lang)]
