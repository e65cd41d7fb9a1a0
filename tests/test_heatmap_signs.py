"""A signed gradient's grid of heads without colour (piped, NO_COLOR): no numbers are drawn, so a − before the
shade says a cell is below 0 (−1.2 and +1.2 do not look alike), and the legend says so."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import EXAMPLES

import attncli
from attncli.cli import app
from attncli.cli.main import main
from attncli.views.heatmap import HATCH, SHADES

GRADS = EXAMPLES / "backward" / "grads.yaml"  # 2 heads, 4 queries × 4 keys, causal; keys "The cat sat down"


def expected_cell(value: float, big: float, masked: bool, width: int) -> str:
    """The cell by hand: the shade of |x| / max|x| (5 steps), a − in front when below 0 and not blank."""
    if masked:
        return HATCH * width
    mark = SHADES[min(int(abs(value) / big * len(SHADES)), len(SHADES) - 1)]
    return ("−" + mark * (width - 1)) if value < 0 and mark != " " else mark * width


def test_a_grid_of_signed_heads_without_colour_marks_the_negative_cells(runner):
    result = runner.invoke(app, ["heatmap", str(GRADS), "--of", "grad_weights"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "shade: size, −: below 0" in lines[1] and "sign: the numbers" not in result.stdout
    trace = attncli.compute(str(GRADS))
    d_a, allowed = trace.grad_weights, trace.spec.allowed
    allowed = np.broadcast_to(allowed, d_a.shape)
    big = float(np.abs(d_a[allowed]).max())
    width = 5  # the key labels' width ("down") + 1
    tokens = ["The", "cat", "sat", "down"]
    top = next(k for k, line in enumerate(lines) if line.lstrip().startswith("head 1"))
    rows = lines[top + 2:top + 6]
    negative_marked = 0
    for i, line in enumerate(rows):
        wanted = f"{tokens[i]:<4} " + "   ".join(
            "".join(expected_cell(d_a[h, i, j], big, not allowed[h, i, j], width) for j in range(4)) for h in range(2))
        assert line == wanted.rstrip(), (line, wanted)
        negative_marked += line.count("−")
    assert negative_marked >= 3  # (the example has large negative cells: the test sees the mark)


def test_one_head_keeps_the_numbers_for_the_sign(runner):
    result = runner.invoke(app, ["heatmap", str(GRADS), "--of", "grad_weights", "--head", "2"],
                           env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0 and "sign: the numbers" in result.stdout and "−" not in result.stdout.split("\n", 3)[3]
    assert "-2.49" in result.stdout  # head 2, down · down


@pytest.mark.parametrize("name, key", [("dZ", "grad_scaled_scores"), ("dz", "grad_scaled_scores"),
                                       ("dA", "grad_weights"), ("Z", "scaled_scores"), ("A", "weights"),
                                       ("GRAD_WEIGHTS", "grad_weights")])  # (a key in any case, as before)
def test_of_takes_the_names_compute_only_takes(runner, name, key):
    """heatmap --of NAME draws what --of KEY draws, and compute --only NAME writes that key (one resolver)."""
    env = {"COLUMNS": "80", "NO_COLOR": "1"}
    by_name = runner.invoke(app, ["heatmap", str(GRADS), "--of", name], env=env)
    by_key = runner.invoke(app, ["heatmap", str(GRADS), "--of", key], env=env)
    assert by_name.exit_code == 0 and by_name.stdout == by_key.stdout
    if name != key.upper():  # (compute --only takes the keys as they are written)
        only = runner.invoke(app, ["compute", str(GRADS), "--only", name, "-f", "json"], env=env)
        assert only.exit_code == 0 and key in json.loads(only.stdout)


def test_of_refuses_a_matrix_it_cannot_draw_in_one_line(capsys):
    with pytest.raises(SystemExit) as leaving:
        main(["heatmap", str(GRADS), "--of", "dQ"])
    out, err = capsys.readouterr()
    assert leaving.value.code == 2 and out == "" and err.count("\n") == 1 and err.startswith("Error: ")
    assert "'--of'" in err and "'dQ' is not one of" in err and "dZ" in err
