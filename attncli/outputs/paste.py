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

from attncli.core.errors import AttnError, visible
from attncli.core.trace import Trace
from attncli.outputs.blocks import KV_KEYS, PER_HEAD, Block, blocks
from attncli.outputs.latex_labels import CJK_NOTES, Frame, has_cjk
from attncli.outputs.numbers import EDGE_COLS, EDGE_ROWS, MAX_COLS, MAX_ROWS, all_whole, format_number, pick
from attncli.outputs.serialize import PROJECTIONS
from attncli.outputs.titles import phrase

MASKED_MARKDOWN, MASKED_LATEX = "masked", r"-\infty"  # a masked score takes no part: softmax sees −∞


def _cells(block: Block, precision: int, full: bool, masked: str, dots: tuple[str, str, str],
           cols: list[int | None] | None = None) -> tuple[list[int | None], list[int | None], list[list[str]]]:
    """The shown rows and columns (``cols``, or the usual summary), and their cells as text
    (``dots``: left-out column, row, both)."""
    matrix = block.matrix
    rows = pick(matrix.shape[0], MAX_ROWS, EDGE_ROWS, full)
    cols = pick(matrix.shape[1], MAX_COLS, EDGE_COLS, full) if cols is None else cols
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


def to_markdown(trace: Trace, precision: int = 4, full: bool = False, head: int | None = None,
                only: list[str] | None = None, lang: str = "en") -> str:
    """Each matrix as a Markdown table under a heading with its name (in ``lang``), formula and shape."""
    parts = []
    for block in blocks(trace, head, only, lang):
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


def to_latex(trace: Trace, precision: int = 4, full: bool = False, head: int | None = None,
             only: list[str] | None = None, lang: str = "en") -> str:
    r"""Each matrix as ``name = formula = matrix`` in an ``equation*`` (amsmath), its token labels beside it
    (:mod:`attncli.outputs.latex_labels`) and in a comment (the names in the comments in ``lang``).

    Every equation fits the text width of a page (:data:`TEXT_WIDTH_PT`): a summary shows fewer columns around
    ``\cdots``, and with ``full`` a wide matrix is written in blocks of columns, ``A_{cols 1–8}``, ``A_{cols 9–16}`` …
    """
    parts, tokens = [], (trace.spec.tokens, trace.spec.context_tokens)
    for block in blocks(trace, head, only, lang):
        frame = Frame(block.rows if block.rows in tokens else None, block.columns if block.columns in tokens else None)
        parts += [part for part in _latex_block(block, precision, full, frame, lang) if part]
        note = CJK_NOTES.get(lang, CJK_NOTES["en"])
        if has_cjk((frame.rows or []) + (frame.columns or [])) and parts[0] != note:
            parts.insert(0, note)
    return "\n\n".join(parts) + "\n"


# Does an equation fit the text of a page?  Widths in points, as TeX sets Computer Modern at 10 pt in LaTeX's article
# class (its text is 345 pt wide), measured with pdflatex: digits 5 pt, a point 2.78, a leading minus 7.78, the
# columns of a matrix 2 × 5 pt apart (\arraycolsep), its brackets about 7 pt each; in a formula, capitals about 8 pt,
# small letters 5, = and + with their spaces 13.3 and 12.2, a superscript or subscript at 0.75 of its size. The
# estimate of a formula is taken 8 % wide, so that it errs on the safe side (the tests compare it with pdflatex).
TEXT_WIDTH_PT = 345.0
_CELL_PT = {"-": 7.78, ".": 2.78, "e": 4.66, "+": 12.2, MASKED_LATEX: 17.8,
            r"\cdots": 13.4, r"\vdots": 2.78, r"\ddots": 13.4}
# \left, \frac, \operatorname, \text …: nothing of their own, their arguments counted
_COMMAND_PT = {"cdot": 7.2, "dots": 13.4, "cdots": 13.4, "top": 7.8, "infty": 10.0, "sqrt": 8.3, "tanh": 19.4, ",": 1.7,
               " ": 3.3, "quad": 10.0}
_CHAR_PT = {"(": 3.9, ")": 3.9, "[": 2.8, "]": 2.8, "=": 13.3, "+": 12.2, "-": 12.2, ",": 4.4, "'": 2.8, "/": 5.0,
            ".": 2.8, "–": 5.0}
_DOTS_LATEX = (r"\cdots", r"\vdots", r"\ddots")


def _cell_pt(text: str) -> float:
    if text in _CELL_PT:
        return _CELL_PT[text]
    # 1.5e-05: a binary minus
    return sum(_CELL_PT.get(c, 5.0) if i == 0 or c != "-" else 12.2 for i, c in enumerate(text))


def _char_pt(c: str) -> float:
    if c in _CHAR_PT:
        return _CHAR_PT[c]
    return 5.0 if c.isdigit() else 8.0 if c.isupper() else 5.0 if c.isalpha() else 6.0


def _formula_pt(tex: str) -> float:
    r"""The width of ``tex = `` in display math, a little more than TeX makes it.

    >>> round(_formula_pt(r"H^{(1)} = A^{(1)} V^{(1)}"))  # pdflatex: 80.8 pt
    85
    """
    total, scales, i, script = 0.0, [1.0], 0, None
    tex = tex.replace("--", "–")  # an en dash, in \text
    while i < len(tex):
        c = tex[i]
        if c in "^_":
            script, i = scales[-1] * 0.75, i + 1
            continue
        if c in "{}":
            if c == "{":
                scales.append(script or scales[-1])
            elif len(scales) > 1:
                scales.pop()
            script, i = None, i + 1
            continue
        if c == "\\":
            name = re.match(r"\\([A-Za-z]+|.)", tex[i:]).group(1)
            width, i = _COMMAND_PT.get(name, 0.0), i + 1 + len(name)
            if width == 0.0:
                continue
        else:
            width, i = _char_pt(c), i + 1
            if c.isspace():
                continue
        total += width * (script or scales[-1])
        script = None
    return 1.08 * total + 13.3  # and " = " before the matrix


def _column_pts(cells: list[list[str]]) -> list[float]:
    return [max(_cell_pt(line[j]) for line in cells) for j in range(len(cells[0]))]


def _matrix_pt(cells: list[list[str]]) -> float:
    """The width of a ``bmatrix`` of ``cells``."""
    return Frame(None, None).total_pt([], _column_pts(cells))


def _latex_block(block: Block, precision: int, full: bool, frame: Frame, lang: str = "en") -> list[str]:
    r"""The equations of one matrix: one when it fits the page beside its formula (a summary first drops columns
    around ``\cdots``, then leaves the formula on a line of its own), else the formula and blocks of columns."""
    d = block.matrix.shape[1]
    symbol = block.latex.split(" = ")[0]
    tries = [(block.latex, None)] if full else [(lhs, fits) for lhs in (block.latex, symbol)
                                                for fits in range(MAX_COLS, 2, -1)]
    if not full and d <= MAX_COLS:  # a matrix shown whole: its formula on a line of its own before a column goes
        tries.insert(1, (symbol, MAX_COLS))
    for lhs, fits in tries:
        chosen = None if fits is None else pick(d, MAX_COLS, EDGE_COLS, False, fits)
        rows, cols, cells = _cells(block, precision, full, MASKED_LATEX, _DOTS_LATEX, chosen)
        if _formula_pt(lhs) + frame.total_pt(rows, frame.column_pts(cols, _column_pts(cells))) <= TEXT_WIDTH_PT:
            equation = _equation(block, rows, cols, cells, lhs, frame, lang=lang)
            return [equation] if lhs == block.latex else [_formula_alone(block, lang), equation]
    parts = [_formula_alone(block, lang)]
    widest = f"{{{symbol}}}_{{\\text{{cols }}{d}\\text{{--}}{d}}}"
    widths = frame.column_pts(cols, _column_pts(cells))
    for start, stop in _column_blocks(widths, TEXT_WIDTH_PT - _formula_pt(widest), lambda w: frame.total_pt(rows, w)):
        shown = [j + 1 for j in cols[start:stop] if j is not None]
        if not shown:
            continue  # a block of the \cdots column alone: it stands between the blocks around it
        span = f"{shown[0]}" if len(shown) == 1 else f"{shown[0]}\\text{{--}}{shown[-1]}"
        lhs = f"{{{symbol}}}_{{\\text{{col{'s' if len(shown) > 1 else ''} }}{span}}}"
        parts.append(_equation(block, rows, cols[start:stop], [line[start:stop] for line in cells], lhs, frame,
                               phrase(lang, "tex_part", columns=phrase(lang, "columns", a=shown[0], b=shown[-1], d=d)),
                               lang))
    return parts


def _column_blocks(widths: list[float], room: float, width) -> list[tuple[int, int]]:
    """(start, stop) of blocks of columns (``widths`` wide) each at most ``room`` wide as ``width`` of their widths
    measures a matrix, as few as fit and as even as they can be."""
    d = len(widths)
    count, start = 0, 0
    while start < d:  # how many blocks, filling each in turn
        stop = start + 1
        while stop < d and width(widths[start:stop + 1]) <= room:
            stop += 1
        count, start = count + 1, stop
    while True:  # then the same number (or one more, where the widths are uneven) of even blocks
        size = -(-d // count)
        spans = [(a, min(a + size, d)) for a in range(0, d, size)]
        if size == 1 or all(width(widths[a:b]) <= room for a, b in spans):
            return spans
        count += 1


def _formula_alone(block: Block, lang: str = "en") -> str:
    n, d = block.matrix.shape
    lines = ["% " + phrase(lang, "tex_formula", name=block.name, text=block.text, n=n, d=d), "\\begin{equation*}",
             block.latex, "\\end{equation*}"]
    return "\n".join(lines) if " = " in block.latex else ""


def _equation(block: Block, rows: list[int | None], cols: list[int | None], cells: list[list[str]], lhs: str,
              frame: Frame, part: str = "", lang: str = "en") -> str:
    n, d = block.matrix.shape
    lines = ["% " + phrase(lang, "tex_equation", name=block.name, text=block.text, n=n, d=d, part=part,
                           rows=_tex_comment(block.rows, rows), columns=_tex_comment(block.columns, cols))]
    if len(cols) > 10 and not frame.labelled:  # amsmath's matrices hold 10 columns unless told otherwise
        lines.append(f"\\setcounter{{MaxMatrixCols}}{{{len(cols)}}}")
    lines += ["\\begin{equation*}", f"{lhs} = {frame.matrix(rows, cols, cells)}", "\\end{equation*}"]
    return "\n".join(lines)


def _tex_comment(labels: list[str], shown: list[int | None]) -> str:
    """The labels of the rows or columns shown, ``…`` for those left out: one line (a line break would end the
    comment), control characters visible."""
    return ", ".join("…" if i is None else visible(" ".join(labels[i].split())) for i in shown)


def to_csv(trace: Trace, key: str, head: int | None = None) -> str:
    """One matrix as CSV at full precision: a label column, then one column per key token or dimension.

    A per-head quantity without ``head`` stacks every head, with a ``head`` column
    (counting from 1) first.  A masked scaled score is an empty cell.
    """
    found = blocks(trace, None, [key])
    if not found:
        raise AttnError("paste.was_not_computed_this_document", "--only", key=key)
    if key not in PER_HEAD and head is not None:
        raise AttnError("compute.has_no_heads_leave_out", "--head", keys=key)
    if key == "positional":
        found = found[:1]  # P itself, not X + P
    stacked = key in PER_HEAD and head is None
    if key in PER_HEAD and head is not None:
        found = blocks(trace, head, [key])  # for K, V and K′: the key/value head that query head uses
    shared = key in KV_KEYS and trace.spec.kv_heads < trace.spec.heads
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    rows = "row" if PROJECTIONS.get(key) else "token"  # a projection's rows are its input's dimensions
    # labels: never raw escapes
    writer.writerow((["kv_head" if shared else "head"] if stacked else []) + [rows, *map(visible, found[0].columns)])
    for h, block in enumerate(found):
        for i, label in enumerate(block.rows):
            cells = ["" if block.masked is not None and block.masked[i, j] else repr(float(x))
                     for j, x in enumerate(block.matrix[i])]
            writer.writerow(([h + 1] if stacked else []) + [visible(label), *cells])
    return out.getvalue()
