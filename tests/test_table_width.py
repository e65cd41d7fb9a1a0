"""Tables fit the terminal and never cut a number or a label (widths 40, 80, 120, 200; CJK and long labels)."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from rich.cells import cell_len
from rich.console import Console

from attncli.outputs.numbers import format_number
from attncli.views.tables import View, matrix_table

RNG = np.random.default_rng(7)
MATRIX = RNG.normal(0, 3, (20, 64))
LABELS = {
    "plain": [f"x{i}" for i in range(1, 21)],
    "cjk": list("我想吃酸菜鱼今天气很好们去公园散步吧啊呀"),
    "long": [f"token_with_a_rather_long_name_{i}" for i in range(1, 21)],
}


def render(renderable, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()


def cells_of(text: str) -> list[list[str]]:
    """The cells of every body row of every table (│ rules); a wrapped label's lines joined into one."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.split("│")[1:-1]]
            if rows and not any(cells[1:]):  # the rest of a wrapped label
                rows[-1][0] += cells[0]
            else:
                rows.append(cells)
    return rows


def headers_of(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.split("┃")[1:-1]] for line in text.splitlines() if line.startswith("┃")]


@pytest.mark.parametrize("width", [40, 80, 120, 200])
@pytest.mark.parametrize("labels", LABELS)
def test_every_number_shown_is_whole_and_in_its_column(width, labels):
    rows = LABELS[labels]
    text = render(matrix_table("Weights", MATRIX, rows), width)
    assert max(cell_len(line) for line in text.splitlines()) <= width
    assert not re.search(r"\d…|…\d", text), "a number was cut short"
    (header,) = headers_of(text)
    assert header[0] == "" and "…" in header  # a summary: first and last columns around …
    shown = [c for c in header[1:] if c != "…"]
    assert shown[0] == "1" and (shown[-1] == "64" or len(shown) == 1)  # first and last, or the first alone
    body = [row for row in cells_of(text) if row[0] and row[0] != "⋮"]
    for row in body:
        i = rows.index(row[0])
        values = [c for c, h in zip(row[1:], header[1:]) if h != "…"]
        for value, column in zip(values, shown):
            assert value == format_number(MATRIX[i, int(column) - 1], 4), (labels, width, row[0], column)
    assert f"{len(shown)} of 64 columns shown" in " ".join(text.split())  # (the title may wrap)


@pytest.mark.parametrize("width", [40, 80])
def test_a_long_label_wraps_and_is_not_cut(width):
    text = render(matrix_table("T", MATRIX[:2, :3], ["a_label_that_is_much_longer_than_a_third_of_it", "b"]), width)
    assert "a_label_that_is_much_longer" not in text.splitlines()[3 if width == 40 else 2]  # it did wrap
    assert max(cell_len(line) for line in text.splitlines()) <= width
    assert [row[0] for row in cells_of(text)] == ["a_label_that_is_much_longer_than_a_third_of_it", "b"]


@pytest.mark.parametrize("width", [40, 80, 120])
def test_full_splits_the_columns_into_blocks_that_fit(width):
    text = render(matrix_table("Output", MATRIX, LABELS["cjk"], view=View(full=True)), width)
    assert max(cell_len(line) for line in text.splitlines()) <= width
    columns = [int(c) for header in headers_of(text) for c in header[1:]]
    assert columns == list(range(1, 65))  # every column once, in order, none left out
    blocks = re.findall(r"columns (\d+)–(\d+) of 64", text)
    assert blocks[0][0] == "1" and blocks[-1][1] == "64" and len(blocks) == len(headers_of(text)) > 1
    for row in cells_of(text)[:20]:  # the first block: all 20 rows, every value exact
        i = LABELS["cjk"].index(row[0])
        assert row[1:] == [format_number(MATRIX[i, j], 4) for j in range(len(row) - 1)]


def test_a_matrix_that_fits_is_shown_whole_without_a_note():
    text = render(matrix_table("Small", MATRIX[:3, :4], ["a", "b", "c"]), 80)
    assert "…" not in text and "columns" not in text
