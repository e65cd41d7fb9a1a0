"""Paste-ready text of every intermediate: Markdown tables, LaTeX ``bmatrix`` equations, CSV.

Markdown and LaTeX show ``precision`` decimals and summarise large matrices (as
the tables do) unless ``full``; CSV holds one matrix at full precision, so it
reads back as exactly the same float64 numbers.

>>> from attncli.outputs.paste import latex_matrix
>>> print(latex_matrix(np.array([[1.0, 0.5]]), 2))
\\begin{bmatrix}
1.00 & 0.50
\\end{bmatrix}
"""

from __future__ import annotations

import csv
import io
import re

import numpy as np

from attncli.core.attention import Trace
from attncli.core.errors import AttnError, visible
from attncli.outputs.blocks import KV_KEYS, PER_HEAD, Block, blocks
from attncli.outputs.numbers import EDGE_COLS, EDGE_ROWS, MAX_COLS, MAX_ROWS, all_whole, format_number, pick
from attncli.outputs.serialize import PROJECTIONS

MASKED_MARKDOWN, MASKED_LATEX = "masked", r"-\infty"  # a masked score takes no part: softmax sees −∞


def _cells(block: Block, precision: int, full: bool, masked: str, dots: tuple[str, str, str]) -> tuple[list[int | None], list[int | None], list[list[str]]]:
    """The shown rows and columns, and their cells as text (``dots``: left-out column, row, both)."""
    matrix = block.matrix
    rows = pick(matrix.shape[0], MAX_ROWS, EDGE_ROWS, full)
    cols = pick(matrix.shape[1], MAX_COLS, EDGE_COLS, full)
    shown = matrix if block.masked is None else np.where(block.masked, 0.0, matrix)
    whole = all_whole(shown)
    cells = []
    for i in rows:
        line = []
        for j in cols:
            if i is None or j is None:
                line.append(dots[2] if i is None and j is None else dots[1] if i is None else dots[0])
            elif block.masked is not None and block.masked[i, j]:
                line.append(masked)
            else:
                line.append(format_number(matrix[i, j], precision, whole))
        cells.append(line)
    return rows, cols, cells


def to_markdown(trace: Trace, precision: int = 4, full: bool = False, head: int | None = None, only: list[str] | None = None) -> str:
    """Each matrix as a Markdown table under a heading with its name, formula and shape."""
    parts = []
    for block in blocks(trace, head, only):
        rows, cols, cells = _cells(block, precision, full, MASKED_MARKDOWN, ("…", "⋮", "⋱"))
        n, d = block.matrix.shape
        lines = [f"### {block.name}: `{block.text}` ({n} × {d})", ""]
        lines.append("| | " + " | ".join("…" if j is None else _md(block.columns[j]) for j in cols) + " |")
        lines.append("| --- | " + " | ".join("---:" for _ in cols) + " |")
        for i, line in zip(rows, cells):
            lines.append(f"| {'⋮' if i is None else _md(block.rows[i])} | " + " | ".join(line) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _md(label: str) -> str:
    r"""A label safe inside a Markdown table cell: one line, control characters visible, markup escaped.

    >>> print(_md("a|b *c* ~d~ &amp; $x$ \x1b[31m"))
    a\|b \*c\* \~d\~ \&amp; \$x\$ \\x1b\[31m
    """
    label = visible(" ".join(label.split()))
    return _MARKDOWN_SPECIAL.sub(lambda m: "\\" + m.group(), label)


_MARKDOWN_SPECIAL = re.compile(r"[\\`*_\[\]<>|#~&$]")  # CommonMark lets a backslash escape any of them


def latex_matrix(matrix: np.ndarray, precision: int = 4, full: bool = False, masked: np.ndarray | None = None) -> str:
    """``\\begin{bmatrix} … \\end{bmatrix}`` of ``matrix`` (masked cells ``-\\infty``)."""
    block = Block("", "", "", "", matrix, [], [], masked)
    _, _, cells = _cells(block, precision, full, MASKED_LATEX, (r"\cdots", r"\vdots", r"\ddots"))
    body = " \\\\\n".join(" & ".join(line) for line in cells)
    return "\\begin{bmatrix}\n" + body + "\n\\end{bmatrix}"


def to_latex(trace: Trace, precision: int = 4, full: bool = False, head: int | None = None, only: list[str] | None = None) -> str:
    """Each matrix as ``name = formula = bmatrix`` in an ``equation*`` (amsmath), labels in a comment."""
    parts = []
    for block in blocks(trace, head, only):
        n, d = block.matrix.shape
        shown = len(pick(d, MAX_COLS, EDGE_COLS, full))
        comment = (f"% {block.name}: {block.text} ({n} × {d}); rows: {_tex_comment(block.rows)}; "
                   f"columns: {_tex_comment(block.columns)}")
        lines = [comment]
        if shown > 10:  # amsmath's matrices hold 10 columns unless told otherwise
            lines.append(f"\\setcounter{{MaxMatrixCols}}{{{shown}}}")
        lines += ["\\begin{equation*}", f"{block.latex} = {latex_matrix(block.matrix, precision, full, block.masked)}", "\\end{equation*}"]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _tex_comment(labels: list[str]) -> str:
    """Labels in a LaTeX comment: one line each (a line break would end the comment), control characters visible."""
    text = ", ".join(visible(" ".join(label.split())) for label in labels[:MAX_COLS])
    return text + (f", … ({len(labels)} in all)" if len(labels) > MAX_COLS else "")


def to_csv(trace: Trace, key: str, head: int | None = None) -> str:
    """One matrix as CSV at full precision: a label column, then one column per key token or dimension.

    A per-head quantity without ``head`` stacks every head, with a ``head`` column
    (counting from 1) first.  A masked scaled score is an empty cell.
    """
    found = blocks(trace, None, [key])
    if not found:
        raise AttnError(f"'{key}' was not computed for this document", "--only")
    if key not in PER_HEAD and head is not None:
        raise AttnError(f"'{key}' has no heads; leave out --head", "--head")
    if key == "positional":
        found = found[:1]  # P itself, not X + P
    stacked = key in PER_HEAD and head is None
    if key in PER_HEAD and head is not None:
        found = blocks(trace, head, [key])  # for K, V and K′: the key/value head that query head uses
    shared = key in KV_KEYS and trace.spec.kv_heads < trace.spec.heads
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    rows = "row" if key in PROJECTIONS else "token"  # a projection's rows are its input's dimensions
    writer.writerow((["kv_head" if shared else "head"] if stacked else []) + [rows, *map(visible, found[0].columns)])  # labels: never raw escapes
    for h, block in enumerate(found):
        for i, label in enumerate(block.rows):
            cells = ["" if block.masked is not None and block.masked[i, j] else repr(float(x)) for j, x in enumerate(block.matrix[i])]
            writer.writerow(([h + 1] if stacked else []) + [visible(label), *cells])
    return out.getvalue()
