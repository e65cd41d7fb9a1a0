"""Issue 32, what was left: compute's tables on a terminal of 16 colours, and what its three users met again at 80
columns (each test asserts what the user sees)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import EXAMPLES
from rich.cells import cell_len
from rich.console import Console

from attncli.cli import app
from attncli.core.pipeline import attend
from attncli.inputs.builder import build_spec
from attncli.inputs.document import read_document
from attncli.views.tables import View, compute_tables

SGR = re.compile(r"\x1b\[([0-9;]*)m")


def styled_numbers(out: str) -> list[tuple[set[int], float]]:
    """(SGR codes, number) of each weight as Rich wrote it."""
    return [({int(c) for c in sgr.split(";") if c}, float(text)) for sgr, text in
            re.findall(r"\x1b\[([0-9;]*)m\s*(\d\.\d+)\s*\x1b\[0m", out)]


def cell_luminance(codes: set[int], dark: bool) -> float:
    """How bright a cell looks on a terminal of 16 colours (xterm's palette: text 229 on 0, or 0 on 255): its
    background's relative luminance over 3/4 of the cell and its text's over 1/4 (bold text 0.35), ``dim`` text
    halfway to the background, ``reverse`` swapping text and background. An independent model of the terminal."""
    def lum(v: float) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    ink, ground = (229.0, 0.0) if dark else (0.0, 255.0)
    if codes & ({48} | set(range(40, 48)) | set(range(100, 108))):
        raise AssertionError(f"a background colour from the palette: {codes}")
    if 2 in codes:
        ink = (ink + ground) / 2
    if 7 in codes:
        ink, ground = ground, ink
    share = 0.35 if 1 in codes else 0.25
    return (1 - share) * lum(ground) + share * lum(ink)


def contrast(codes: set[int], dark: bool) -> float:
    ink, ground = (229.0, 0.0) if dark else (0.0, 255.0)
    if 2 in codes:
        ink = (ink + ground) / 2
    lums = sorted(((v / 255 + 0.055) / 1.055) ** 2.4 for v in (ink, ground))
    return (lums[1] + 0.05) / (lums[0] + 0.05)


def test_weights_on_a_16_colour_terminal_grow_in_brightness_and_stay_readable():
    """TERM=xterm without COLORTERM: Rich mapped the even-lightness scale onto the palette, white cells for 0.11–0.39
    and red or yellow ones for 0.66–1.00, so on a dark background the smaller weights were the brighter cells.
    Now no palette background: the number's ink grows from dim to reversed, brighter with the weight on a dark
    background and darker with it on a light one."""
    trace = attend(build_spec(read_document(str(EXAMPLES / "causal.yaml"))))
    console = Console(width=80, file=io.StringIO(), color_system="standard", force_terminal=True, legacy_windows=False)
    for table in compute_tables(trace, View(2), only=["weights"]):
        console.print(table)
    out = console.file.getvalue()
    cells = styled_numbers(out)
    weights = np.round(trace.weights[0], 2)
    plain = weights[(weights >= 0.25) & (weights < 0.5)]  # plain ink: no SGR code of their own
    assert sorted(v for _, v in cells) == sorted(weights[(weights < 0.25) | (weights >= 0.5)].tolist())
    assert plain.tolist() == [0.39, 0.29] and re.search(r"│  0\.39 │  0\.29 │", SGR.sub("", out))
    for dark in (True, False):
        ordered = sorted(cells + [(set(), float(v)) for v in plain], key=lambda c: c[1])
        lums = [cell_luminance(codes, dark) for codes, _ in ordered]
        steps = np.diff(lums)
        assert (steps >= -1e-12).all() if dark else (steps <= 1e-12).all(), (dark, ordered)
        assert all(contrast(codes, dark) >= 3.0 for codes, _ in cells)
    top = [codes for codes, v in cells if v >= 0.75]
    assert top and all(7 in codes for codes in top)  # the largest weights stand out most: reversed
    assert all(2 in codes for codes, v in cells if v < 0.25)  # a weight under 1/4: dim
    truecolor = Console(width=80, file=io.StringIO(), color_system="truecolor", legacy_windows=False)
    for table in compute_tables(trace, View(2), only=["weights"]):
        truecolor.print(table)
    assert "48;2;" in truecolor.file.getvalue()  # full-colour terminals keep the colour scale


def test_compute_at_a_16_colour_terminal_through_the_cli():
    env = {k: v for k, v in os.environ.items() if k not in ("COLORTERM", "NO_COLOR")}
    env.update(TERM="xterm", FORCE_COLOR="1", COLUMNS="80")
    done = subprocess.run([sys.executable, "-m", "attncli", "compute", str(EXAMPLES / "causal.yaml"), "--only",
                           "weights", "-p", "2"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    codes = {int(c) for sgr in SGR.findall(done.stdout) for c in sgr.split(";") if c}
    assert codes and not codes & {48, *range(40, 48), *range(100, 108)}  # no background from the palette
    assert ({7, 1}, 1.0) in styled_numbers(done.stdout) and ({2}, 0.11) in styled_numbers(done.stdout)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explained_vectors_are_not_broken_across_lines_at_80_columns(runner, lang):
    """The student at 80 columns: step 6 (zh) ended a line inside '[0.0634, 0.4683,' and step 7 inside '[2.0,'
    (the prose wrapped inside vectors; the worked lines already did not)."""
    broken = []
    for step in range(1, 9):
        for doc in ([], [str(EXAMPLES / "causal.yaml")], [str(EXAMPLES / "two_heads.yaml")]):
            result = runner.invoke(app, ["explain", *doc, "--step", str(step), "--lang", lang],
                                   env={"COLUMNS": "80", "NO_COLOR": "1"})
            assert result.exit_code == 0, result.output
            assert max(cell_len(line) for line in result.stdout.splitlines()) <= 80
            # a vector split over two lines although it fits one (74 cells: a worked line's continuation indent)
            split = [re.sub(r"\s*\n\s*", " ", v) for v in re.findall(r"\[[^\[\]]*\]", result.stdout) if "\n" in v]
            broken += [(step, doc, v) for v in split if cell_len(v) <= 74]
    assert not broken, broken[:3]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_check_points_to_a_command_whole_on_its_own_line_at_80_columns(runner, lang, monkeypatch):
    """The student marking homework at 80 columns: 'Read step 7 … beside it: attncli explain' then the file and
    options on the next line, so the copied line ran 'attncli explain' alone."""
    monkeypatch.chdir(EXAMPLES.parent)
    result = runner.invoke(app, ["check", "examples/check/homework.yaml", "--lang", lang],
                           env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert "    attncli explain examples/check/homework.yaml --step 7 --query 1" in lines
    assert [line for line in lines if "attncli" in line] == [
        "    attncli explain examples/check/homework.yaml --step 7 --query 1"]
    wide = runner.invoke(app, ["check", "examples/check/homework.yaml"], env={"COLUMNS": "120", "NO_COLOR": "1"})
    assert "beside it: attncli explain examples/check/homework.yaml --step 7 --query 1" in wide.stdout  # fits: as is


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("command", [[], ["compute"], ["heatmap"], ["explain"], ["check"], ["init"], ["extract"],
                                     ["page"]])
def test_help_at_80_columns_breaks_no_bracket_across_lines(runner, command, lang):
    """init --help broke '{random: xavier, seed: 1, shape: [4,' from '4]}' at 80 columns (in Chinese too)."""
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "80", "NO_COLOR": "1", "ATTNCLI_LANG": lang})
    assert result.exit_code == 0, result.output
    text = re.sub(r"\[(default|默认)[:：][^\]]*\]", "", result.stdout.replace("│", " "), flags=re.S)  # Typer's own
    split = [v for v in re.findall(r"\[[^\[\]]*\]", text) if "\n" in v]
    assert not split and text.count("[") == text.count("]"), split


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_long_formula_line_wraps_between_its_parts_without_trailing_spaces(runner, lang):
    """The engineer reading RoPE at 80 columns: the formula line broke '(a·cos φ − b·sin φ, b·cos φ + ' from
    'a·sin φ)', the first line ending in a space."""
    result = runner.invoke(app, ["explain", str(EXAMPLES / "rope.yaml"), "--step", "rope", "--lang", lang],
                           env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert not [line for line in lines if line.endswith(" ")]
    assert any("(a·cos φ − b·sin φ, b·cos φ + a·sin φ)" in line for line in lines[1:4])
    assert max(cell_len(line) for line in lines) <= 80
