"""Smaller things seen in issue 32's second hour, each as its user sees it: the colour scale's low end and its
legend, written-out vectors at 80 columns."""

from __future__ import annotations

import io
import re

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
