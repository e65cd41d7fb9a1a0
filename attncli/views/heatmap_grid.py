"""Several heads as small multiples: panels in a grid that uses the width, the query labels shared at the left.

The layout is chosen to fit a 50-line screen: the key labels' own width first, then numbered columns two cells
wide, then one cell wide (a ruler ``1···5····10`` above them); a blank line between rows of panels when there is
room for it.  When even the narrowest does not fit, the legend (drawn first) says that ``--head N`` draws one head.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.text import Text

from attncli.outputs.numbers import pick

BUDGET = 49  # lines of the picture: with the blank line after it, 50 (a screen)
GAP = 3  # spaces between two panels
LABEL_WIDTH = 12  # query labels longer than this are cut, with an ellipsis
HeatMap = Any  # a views.heatmap.HeatMap, which draws its panels with this module (its import would circle)


def fit(label: str, width: int, align: str = "left") -> str:
    """``label`` in exactly ``width`` terminal cells: padded, or cut with an ellipsis (CJK counts double)."""
    label = " ".join(label.split())  # no newlines or tabs inside a grid
    if cell_len(label) > width:
        kept = label
        while kept and cell_len(kept) > width - 1:  # a wide character cut in half is dropped whole
            kept = kept[:-1]
        label = kept + "…"
    room = width - cell_len(label)
    left = {"left": 0, "right": room, "center": room // 2}[align]
    return " " * left + label + " " * (room - left)


@dataclass(frozen=True)
class Layout:
    width: int  # terminal cells per matrix cell
    numbered: bool  # key labels as numbers (the rows numbered too when the keys are the queries)
    across: int  # panels side by side
    blank: bool  # a blank line between two rows of panels
    lines: int  # lines of the whole picture
    fits: bool  # within BUDGET


def numbered_rows(hm: HeatMap, numbered: bool) -> bool:
    """Rows carry the columns' numbers when the keys are the queries (then no keys: line is needed)."""
    return numbered and list(hm.spec.tokens) == list(hm.spec.context_tokens)


def row_labels(hm: HeatMap, rows: list, numbered: bool) -> tuple[list[str], int]:
    """The query labels of ``rows`` (``⋮`` for the ones left out) and the width they take."""
    tokens = [" ".join(t.split()) for t in hm.spec.tokens]
    digits = len(str(len(tokens))) if numbered_rows(hm, numbered) else -1  # -1: no number, nor its space
    label_w = min(max(cell_len(t) for t in tokens), LABEL_WIDTH) + digits + 1
    return ["⋮".ljust(label_w) if i is None else
            (f"{i + 1:>{digits}} " if digits > 0 else "") + fit(tokens[i], label_w - digits - 1) for i in rows], label_w


def ruler(cols: list, width: int, labels: list[str] | None) -> str:
    """The line above a panel's cells: each key's label, or numbers spaced apart (``1 2 … 9 10  12``; one cell a
    key: ``1···5····10``) so that no two run together."""
    if labels is not None:
        return "".join(fit("…" if j is None else labels[j], width, "left") for j in cols)
    line = list(("·" if width == 1 else " ") * (len(cols) * width))
    end = -1  # where the last number written stops
    for k, j in enumerate(cols):
        start, number = k * width, "…" if j is None else str(j + 1)
        wanted = j is None or width > 1 or j == 0 or (j + 1) % 5 == 0
        if wanted and start > end and start + len(number) <= len(line):
            line[start:start + len(number)] = number
            end = start + len(number) - (j is None)  # a number may follow … closely
    return "".join(line)


def shape(hm: HeatMap, width: int, numbered: bool, room: int, extra: int) -> Layout:
    """The layout with cells ``width`` wide in ``room`` columns; ``extra``: the lines besides the panels."""
    rows = pick(hm.spec.n, *hm.limits(True), hm.full)
    cols = pick(hm.spec.m, *hm.limits(True), hm.full, fits=max(1, (room // 2) // width))
    _, label_w = row_labels(hm, rows, numbered)
    panel_w = max(len(cols) * width + (width + 2 if hm.sinks is not None else 0),
                  cell_len(hm.words["head"].format(h=max(hm.heads) + 1)))
    most = max(1, min(len(hm.heads), (room - label_w - 1 + GAP) // (panel_w + GAP)))
    grid_rows = -(-len(hm.heads) // most)
    across = -(-len(hm.heads) // grid_rows)  # the same rows of panels, evened out
    body = grid_rows * (2 + len(rows))
    lines = extra + body + grid_rows - 1
    if lines <= BUDGET:
        return Layout(width, numbered, across, True, lines, True)
    return Layout(width, numbered, across, False, lines - grid_rows + 1, lines - grid_rows + 1 <= BUDGET)


def choose(hm: HeatMap, room: int) -> Layout:
    """The widest cells whose picture fits BUDGET lines (else the shortest picture)."""
    tried = []
    widths = ([(hm.cell_width(True), False)] if not hm.numbered else []) + [(2, True), (1, True)]
    for width, numbered in widths:
        head = hm.header_lines(room, numbered, hint=False)  # the title, legend and keys, then a blank line
        tried.append(shape(hm, width, numbered, room, len(head) + 1))
        if tried[-1].fits:
            return tried[-1]
    return min(tried, key=lambda layout: layout.lines)


def panels(hm: HeatMap, layout: Layout, room: int) -> Iterator[Text]:
    """The rows of panels: a line of head names, a line of key labels, one line per query."""
    rows = pick(hm.spec.n, *hm.limits(True), hm.full)
    cols = pick(hm.spec.m, *hm.limits(True), hm.full, fits=max(1, (room // 2) // layout.width))
    labels, label_w = row_labels(hm, rows, layout.numbered)
    key_labels = None if layout.numbered else [" ".join(t.split()) for t in hm.spec.context_tokens]
    top = ruler(cols, layout.width, key_labels)
    if hm.sinks is not None:
        top += " │" + ("σ" * layout.width if layout.width < 4 else fit(hm.words["sink"], layout.width))
    panel_w = max(cell_len(top), cell_len(hm.words["head"].format(h=max(hm.heads) + 1)))
    for start in range(0, len(hm.heads), layout.across):
        heads = hm.heads[start:start + layout.across]
        if start and layout.blank:
            yield Text("")
        names = Text(" " * (label_w + 1))
        for k, h in enumerate(heads):
            names.append(fit(hm.words["head"].format(h=h + 1), panel_w + (GAP if k < len(heads) - 1 else 0)),
                         style="bold")
        names.rstrip()
        yield names
        padded = top + " " * (panel_w - cell_len(top))
        yield Text(" " * (label_w + 1) + (" " * GAP).join(padded for _ in heads).rstrip())
        for r, i in enumerate(rows):
            line = Text(no_wrap=True, overflow="crop")
            line.append(labels[r] + " ", style="bold" if i is not None else "")
            for k, h in enumerate(heads):
                cells = hm.cells(h, i, cols, layout.width)
                if k < len(heads) - 1:
                    cells.pad_right(panel_w - cells.cell_len + GAP)
                line.append_text(cells)
            if not hm.color:  # blank cells at the end of a shaded line: no trailing spaces in piped text
                line.rstrip()
            yield line
