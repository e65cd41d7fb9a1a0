"""Trace -> Rich tables, in the order a person computes them.

Render functions return renderables and never print; the CLI chooses the
console.  Numbers are shown with ``precision`` decimals (whole numbers without
any), large matrices are summarised with an ellipsis unless ``full``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.table import Table
from rich.text import Text

from attncli.core.attention import Trace
from attncli.core.errors import visible
from attncli.outputs.blocks import blocks
from attncli.outputs.numbers import EDGE_COLS, EDGE_ROWS, MAX_COLS, MAX_ROWS, all_whole, format_number, pick

MASKED = "masked"


@dataclass(frozen=True)
class View:
    precision: int = 4
    full: bool = False


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
) -> Table:
    """One matrix as a table: row labels down the side, column labels across the top.

    ``masked`` (same shape, True = masked) shows those cells as ``masked``;
    ``heat`` shades each cell by its value in [0, 1] (attention weights).
    """
    n, d = matrix.shape
    columns = columns if columns is not None else [str(j) for j in range(1, d + 1)]
    row_index = pick(n, MAX_ROWS, EDGE_ROWS, view.full)
    col_index = pick(d, MAX_COLS, EDGE_COLS, view.full)
    title = f"{title}   {n} × {d}"
    table = Table(title=title, title_justify="left", title_style="bold", header_style="bold", min_width=len(title) + 1)
    table.add_column("", style="bold", no_wrap=True)
    for j in col_index:
        table.add_column("…" if j is None else label(columns[j]), justify="right", no_wrap=True)
    whole = all_whole(matrix)
    for i in row_index:
        if i is None:
            table.add_row("⋮", *["⋮" for _ in col_index])
            continue
        cells: list[Text | str] = []
        for j in col_index:
            if j is None:
                cells.append("…")
            elif masked is not None and masked[i, j]:
                cells.append(Text(MASKED, style="dim italic"))
            else:
                text = format_number(matrix[i, j], view.precision, whole)
                cells.append(Text(text, style=_heat_style(matrix[i, j])) if heat else text)
        table.add_row(label(rows[i]), *cells)
    return table


def _heat_style(weight: float) -> str:
    """Stronger colour for more weight: a blue that deepens with the weight, under black or white text.

    The text colour is the one with more contrast against the cell (WCAG relative luminance):
    black up to a weight of about 0.8, white on the deepest blues.
    """
    w = float(min(max(weight, 0.0), 1.0))
    rgb = [int(round(255 + (t - 255) * w)) for t in (30, 80, 200)]
    linear = [c / 3294.6 if c <= 10.31 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    white_wins = 1.05 / (luminance + 0.05) > (luminance + 0.05) / 0.05
    return f"{'white' if white_wins else 'black'} on rgb({rgb[0]},{rgb[1]},{rgb[2]})"


def compute_tables(trace: Trace, view: View = View(), head: int | None = None, only: list[str] | None = None) -> list[Table]:
    """Every table of ``attncli compute`` (the blocks of :mod:`attncli.outputs.blocks`), weights shaded.

    ``head`` (0-based) keeps one head; ``only`` keeps the tables of those JSON keys.
    """
    return [matrix_table(b.heading, b.matrix, b.rows, b.columns, view, b.masked, heat=b.key == "weights")
            for b in blocks(trace, head, only)]
