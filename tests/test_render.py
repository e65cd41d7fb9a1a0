"""Tables rendered on a fixed-width console and compared as text (as Rich's own tests do)."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from conftest import EXAMPLES
from rich.console import Console

from attncli.core.pipeline import attend
from attncli.inputs.builder import build_spec
from attncli.inputs.document import read_document
from attncli.outputs.numbers import format_number
from attncli.views.tables import View, compute_tables, matrix_table


def text_of(renderable, width=80, color=None) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=color, legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()


def illustrated():
    return attend(build_spec(read_document(str(EXAMPLES / "illustrated.yaml"))))


WEIGHTS = """\
Weights  A = softmax(S)   3 × 3
┏━━━━━━━━━┳━━━━━━━━━┳━━━━━━━━━┳━━━━━━━━━┓
┃         ┃ Input 1 ┃ Input 2 ┃ Input 3 ┃
┡━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━┩
│ Input 1 │  0.0634 │  0.4683 │  0.4683 │
│ Input 2 │  0.0000 │  0.9820 │  0.0180 │
│ Input 3 │  0.0003 │  0.8805 │  0.1192 │
└─────────┴─────────┴─────────┴─────────┘
"""


def test_tables_are_as_wide_as_their_numbers_not_their_titles(runner):
    """Issue 32: four 13-character columns held 6-character numbers when the title was wider than the table, the
    token column changed width from one table to the next, and title lines ended in spaces."""
    from attncli.cli import app

    result = runner.invoke(app, ["compute", str(EXAMPLES / "two_heads.yaml")], env={"COLUMNS": "80", "NO_COLOR": "1"})
    lines = result.stdout.splitlines()
    assert result.exit_code == 0 and all(line == line.rstrip() for line in lines)
    queries = lines.index("Head 1 · Queries  Q = X·W_Q + b_Q   3 × 2")
    assert lines[queries + 1] == "┏━━━━━┳━━━━━━━━┳━━━━━━━━┓"  # 1.1000: 6 characters, padded by 1 each side
    assert lines[queries + 4] == "│ The │ 1.1000 │ 0.5000 │"
    rows = [line for line in lines if line.startswith(("│ The ", "│ cat ", "│ sat "))]
    assert len(rows) > 20 and {line.index("│", 1) for line in rows} == {6}  # one width of the token column


def test_weights_table_exact_text():
    tables = compute_tables(illustrated(), only=["weights"])
    assert len(tables) == 1
    assert text_of(tables[0]) == WEIGHTS


def test_tables_in_the_order_a_person_computes_them():
    titles = [t.title.split("  ")[0] for t in compute_tables(illustrated())]
    assert titles == ["Inputs", "Queries", "Keys", "Values", "Scores", "Scaled scores", "Weights",
                      "Head output", "Output"]
    scores = text_of(compute_tables(illustrated(), only=["scores"])[0])
    assert "Scores  S = Q·Kᵀ   3 × 3" in scores
    assert "│ Input 2 │       4 │      16 │      12 │" in scores  # whole numbers without decimals


def test_precision_and_negative_zero():
    table = compute_tables(illustrated(), View(precision=2), only=["output"])[0]
    assert "│ Input 1 │ 1.94 │ 6.68 │ 1.60 │" in text_of(table)
    assert format_number(-0.00001, 3) == "0.000" and format_number(-0.5, 1) == "-0.5"


def test_masked_cells_are_marked():
    doc = read_document(str(EXAMPLES / "illustrated.yaml"))
    trace = attend(build_spec(doc, {"mask": "causal"}))
    text = text_of(compute_tables(trace, only=["scaled_scores"])[0])
    assert "│ Input 1 │       2 │  masked │  masked │" in text


def test_large_matrix_is_summarised_unless_full():
    big = np.arange(30 * 40, dtype=float).reshape(30, 40)
    rows = [f"t{i}" for i in range(1, 31)]
    text = text_of(matrix_table("Big", big, rows), width=200)
    assert "⋮" in text and "…" in text
    assert "t1 " in text and "t30" in text and "t15 " not in text
    assert "1199" in text and " 600 " not in text  # last cell shown, a middle one not
    full = text_of(matrix_table("Big", big, rows, view=View(full=True)), width=400)
    assert "⋮" not in full and "t15 " in full and " 600 " in full


def test_heat_map_shades_more_weight_more_strongly():
    table = compute_tables(illustrated(), only=["weights"])[0]
    text = text_of(table, color="truecolor")
    # 0.0003 is left uncoloured, 0.0634 faintly coloured (issue 32: the blank band was the lowest eighth), 0.4683 more;
    # row 2's 0.9820 the most vivid of all (issue 18: the strength of a colour is its chroma, at one lightness, so that
    # it reads the same on dark and light terminals)
    def vividness(value: str) -> int:
        r, g, b = (int(c) for c in re.search(r"48;2;(\d+);(\d+);(\d+)m\s*" + re.escape(value), text).groups())
        return max(r, g, b) - min(r, g, b)

    assert re.search(r"│ +0\.0003 │", text) and not re.search(r"48;2;[\d;]+m\s*0\.0003", text)
    assert 0 < vividness("0.0634") < vividness("0.4683") < vividness("0.9820")


def test_huge_numbers_are_written_in_scientific_notation():
    matrix = np.array([[1e303, -2.5e20], [123456.5, 0.0]])
    text = text_of(matrix_table("Huge", matrix, ["a", "b"]), width=80)
    assert "1.0000e+303" in text and "-2.5000e+20" in text and "123456.5000" in text
    assert max(len(line) for line in text.splitlines()) < 60  # not 300 digits wide
    whole = text_of(matrix_table("Whole", np.array([[1e16, 2.0]]), ["a"]), width=80)
    assert "1.0000e+16" in whole and "2.0000" in whole


def _contrast(rgb_a: tuple[int, ...], rgb_b: tuple[int, ...]) -> float:
    """WCAG 2 contrast ratio of two sRGB colours (written out from the definition)."""

    def luminance(rgb):
        channel = [(c / 255) / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * channel[0] + 0.7152 * channel[1] + 0.0722 * channel[2]

    high, low = sorted((luminance(rgb_a), luminance(rgb_b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("weight", [0.0, 0.3, 0.46, 0.5, 0.7, 0.85, 0.98, 1.0])
def test_heat_cells_use_the_text_colour_that_reads_best(weight):
    from attncli.views.colours import UNCOLOURED, heat_style

    if weight < UNCOLOURED:  # the low end is left as the terminal has it (issue 18: readable on any background)
        assert heat_style(weight) == ""
        return
    text, _, background = heat_style(weight).partition(" on ")
    cell = tuple(int(c) for c in re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", background).groups())
    ours = _contrast(cell, (255, 255, 255) if text == "white" else (0, 0, 0))
    other = _contrast(cell, (0, 0, 0) if text == "white" else (255, 255, 255))
    assert ours >= other and ours >= 4.5  # and readable by WCAG AA's measure
