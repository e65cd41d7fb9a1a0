"""Smaller things seen in issue 32's second hour, each as its user sees it: the colour scale's low end and its
legend, written-out vectors at 80 columns."""

from __future__ import annotations

import io
import re

import pytest
from conftest import EXAMPLES
from rich.console import Console

from attncli.cli import app


def test_close_weights_get_close_colours_and_the_legend_shows_the_uncoloured_end():
    """0.11 was left uncoloured and 0.13 coloured: close weights looked like nothing and something."""
    from attncli.views.colours import heat_rgb, heat_style

    low, high = heat_rgb(0.11), heat_rgb(0.13)
    assert low is not None and high is not None and max(abs(a - b) for a, b in zip(low, high)) <= 4
    assert heat_style(0.0) == heat_style(0.01) == ""  # as good as 0: the terminal's own background
    from test_heatmap import trace_of

    from attncli.views.heatmap import HeatMap

    console = Console(width=80, file=io.StringIO(), color_system="truecolor", legacy_windows=False)
    console.print(HeatMap(trace_of(EXAMPLES / "causal.yaml")))
    legend = next(line for line in console.file.getvalue().splitlines() if line.startswith("scale"))
    plain = re.sub(r"\x1b\[[0-9;]*m", "", legend)
    assert plain.startswith("scale 0.00 ▕··" + " " * 14 + "▏ 1.00")  # the uncoloured swatch marked, then 7 colours
    assert len(re.findall(r"48;2;", legend)) == 7


def test_written_out_vectors_are_not_broken_at_80_columns(runner):
    result = runner.invoke(app, ["explain", str(EXAMPLES / "bert_base.yaml"), "--step", "7"],
                           env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    worked = [line for line in result.stdout.splitlines() if line.startswith("  ") and "[" in line]
    assert len(worked) >= 5 and all(len(line) <= 80 for line in worked)
    for line in worked:  # each vector whole on its line: 6 + 1 entries around …
        assert line.count("[") == line.count("]"), line
        assert all(len(v.split(", ")) == 7 for v in re.findall(r"\[([^\]]*)\]", line)), line


def test_init_integers_writes_small_whole_numbers_to_work_by_hand(runner, tmp_path):
    import json

    import yaml

    doc = tmp_path / "hand.yaml"
    result = runner.invoke(app, ["init", "--tokens", "a b c", "--d-model", "2", "--heads", "2", "--d-k", "1",
                                 "--integers", "--seed", "3", "-o", str(doc)])
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(doc.read_text(encoding="utf-8"))
    matrices = [data["inputs"], *data["weights"].values()]
    assert [len(m) for m in matrices] == [3, 2, 2, 2, 2] and {len(row) for m in matrices for row in m} == {2}
    assert all(type(x) is int and -2 <= x <= 2 for m in matrices for row in m for x in row)
    assert len({x for m in matrices for row in m for x in row}) >= 3  # not all one number
    again = runner.invoke(app, ["init", "--tokens", "a b c", "--d-model", "2", "--heads", "2", "--d-k", "1",
                                "--integers", "--seed", "3"])
    assert again.stdout == doc.read_text(encoding="utf-8")  # the same seed, the same numbers
    computed = json.loads(runner.invoke(app, ["compute", str(doc), "--format", "json"]).stdout)
    x, wq, wk = (data["inputs"], data["weights"]["query"], data["weights"]["key"])
    for h in range(2):  # head h's scores by hand: q_i · k_j with one column each
        q = [sum(x[i][r] * wq[r][h] for r in range(2)) for i in range(3)]
        k = [sum(x[j][r] * wk[r][h] for r in range(2)) for j in range(3)]
        assert computed["scores"][h] == [[q[i] * k[j] for j in range(3)] for i in range(3)]


def test_init_integers_leaves_the_scale_out_so_scaled_scores_stay_whole(runner):
    """With d_k = 2, scale: sqrt made every scaled score a multiple of 1/√2; --integers writes scale: none."""
    import json

    import yaml

    made = runner.invoke(app, ["init", "--tokens", "a b c", "--d-model", "2", "--integers"])
    assert made.exit_code == 0 and yaml.safe_load(made.stdout)["scale"] == "none"
    assert "# none here (--integers)" in made.stdout
    computed = json.loads(runner.invoke(app, ["compute", "-", "--format", "json"], input=made.stdout).stdout)
    z = computed["scaled_scores"]
    assert z == computed["scores"] and all(float(v).is_integer() for row in z[0] for v in row)
    plain = yaml.safe_load(runner.invoke(app, ["init", "--tokens", "a b c", "--d-model", "2"]).stdout)
    assert plain["scale"] == "sqrt"


def test_picture_rules_join_from_row_to_row_and_a_weight_fills_its_cell(runner, tmp_path):
    """Light-theme PNGs showed a gap in every vertical rule at every row, and a weight's colour behind its digits
    only, not its cell."""
    from attncli.views.picture_size import CELL

    out = tmp_path / "w.svg"
    args = ["compute", str(EXAMPLES / "illustrated.yaml"), "--only", "weights", "--export", str(out),
            "--theme", "light"]
    assert runner.invoke(app, args, env={"COLUMNS": "80"}).exit_code == 0
    svg = out.read_text(encoding="utf-8")
    assert not re.search(r">[^<]*[│┃][^<]*</text>", svg)  # the rules are bars, not the font's short glyphs
    bars = [tuple(float(v) for v in m) for m in re.findall(r'<rect class="[^"]*" x="([\d.]+)" y="([\d.]+)" '
                                                           r'width="1.3" height="([\d.]+)"/>', svg)]
    left = sorted((y, h) for x, y, h in bars if x == min(b[0] for b in bars))
    assert len(left) >= 4 and all(y2 <= y1 + h1 for (y1, h1), (y2, _) in zip(left, left[1:]))  # no gap between rows
    # 0.4683: its colour from rule to rule, the column's 7 cells ("Input 2") and a space each side (was its 6 digits)
    fills = [float(w) for w in re.findall(r'<rect fill="#c2779a" x="[\d.]+" y="99.1" width="([\d.]+)"', svg)]
    assert sum(fills[:3]) == pytest.approx(9 * CELL, abs=0.01)


@pytest.mark.parametrize("args", [["compute", "bert_base.yaml"], ["explain", "--step", "all"],
                                  ["explain", "--lang", "zh", "--step", "5"], ["check", "check/homework.yaml"],
                                  ["heatmap", "bert_base.yaml"], ["heatmap", "causal.yaml"]])
def test_piped_text_has_no_trailing_spaces(runner, args):
    """Title lines of tables ended in spaces up to the table's width: copied into a document, they show."""
    args = [str(EXAMPLES / a) if a.endswith(".yaml") else a for a in args]
    result = runner.invoke(app, args, env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code in (0, 1) and result.stdout.strip(), result.output
    assert [line for line in result.stdout.splitlines() if line != line.rstrip()] == []
