"""A stacked document's layer as the commands show it: which layer each title names (counted from 1, as --layer),
only what --only asks, and no backward pass to explain or draw in a stack (gradient: is refused there)."""

from __future__ import annotations

import re

from conftest import EXAMPLES

from attncli.cli import app

STACK = str(EXAMPLES / "stacked" / "two_layers.yaml")


def test_compute_only_shows_only_what_was_asked(runner):
    only = runner.invoke(app, ["compute", STACK, "--only", "weights"], env={"COLUMNS": "200"})
    assert only.exit_code == 0, only.output
    titles = [line for line in only.stdout.splitlines() if "×" in line and "│" not in line]
    assert titles and all(re.match(r"Layer [12] · (Head [12] · )?Weights", t) for t in titles), titles
    assert "Output of the stack" not in only.stdout
    every = runner.invoke(app, ["compute", STACK], env={"COLUMNS": "200"})
    assert "Output of the stack (layer 2's last quantity)" in every.stdout


def test_one_layers_titles_name_the_layer(runner, tmp_path):
    for lang, named in (("en", "Layer 2 · "), ("zh", "第 2 层 · ")):
        table = runner.invoke(app, ["compute", STACK, "--layer", "2", "--only", "weights", "--lang", lang])
        assert table.exit_code == 0 and table.stdout.startswith(named), table.output
        heat = runner.invoke(app, ["heatmap", STACK, "--layer", "2", "--lang", lang], env={"COLUMNS": "200"})
        assert heat.exit_code == 0 and heat.stdout.startswith(named), heat.output
        page = tmp_path / f"page_{lang}.html"
        made = runner.invoke(app, ["page", STACK, "--layer", "2", "--lang", lang, "-o", str(page)])
        assert made.exit_code == 0, made.output
        assert f"<title>{named}two_layers.yaml</title>" in page.read_text()
    alone = runner.invoke(app, ["compute", str(EXAMPLES / "illustrated.yaml"), "--only", "weights"])
    assert alone.stdout.startswith("Weights")  # a one-layer document: no layer named


def test_a_stack_has_no_backward_pass_to_explain(runner):
    for layer in ("1", "2"):
        result = runner.invoke(app, ["explain", STACK, "--layer", layer, "--step", "backward"])
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert "no backward pass" in result.stderr and "needs gradient" not in result.stderr
    drawn = runner.invoke(app, ["heatmap", STACK, "--layer", "1", "--of", "grad_weights"])
    assert drawn.exit_code == 2 and "no backward pass" in drawn.stderr
    zh = runner.invoke(app, ["explain", STACK, "--layer", "1", "--step", "backward", "--lang", "zh"])
    assert zh.exit_code == 2 and "没有反向计算" in zh.stderr
