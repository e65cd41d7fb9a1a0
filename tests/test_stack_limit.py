"""A stack's stated limit: more than MAX_LAYERS layers is refused in one line before any layer is read or computed
(100,000 stacked layers ran unbounded before)."""

from __future__ import annotations

import json
import time

import pytest

from attncli.cli import app
from attncli.inputs.stacked import MAX_LAYERS


def _stack(tmp_path, count: int) -> str:
    path = tmp_path / "stack.json"
    path.write_text(json.dumps({"inputs": [[1.0, 0.0], [0.0, 1.0]], "layers": [{"scale": "none"}] * count}))
    return str(path)


@pytest.mark.parametrize("command", [["compute"], ["explain"], ["heatmap"], ["check"], ["compute", "--layer", "2"]])
def test_a_stack_beyond_the_limit_is_refused_in_one_line(runner, tmp_path, command):
    doc = _stack(tmp_path, 100_000)
    started = time.process_time()
    result = runner.invoke(app, [command[0], doc, *command[1:]])
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert result.stderr == f"Error: {doc}: layers: holds 100000 layers; a stack has at most 1024 (the deepest " \
                            "models have about 130)\n"
    assert time.process_time() - started < 60  # (a bound that only an unbounded run breaks, not a benchmark)


def test_the_limit_is_the_documented_one_and_one_more_layer_is_refused(runner, tmp_path):
    from pathlib import Path

    format_md = (Path(__file__).resolve().parent.parent / "docs" / "format.md").read_text()
    assert MAX_LAYERS == 1024 and "A stack holds at most 1024 layers" in format_md
    result = runner.invoke(app, ["compute", _stack(tmp_path, MAX_LAYERS + 1)])
    assert result.exit_code == 2 and "holds 1025 layers; a stack has at most 1024" in result.stderr
    fits = runner.invoke(app, ["compute", _stack(tmp_path, 3), "--format", "json", "--only", "output"])
    assert fits.exit_code == 0 and len(json.loads(fits.stdout)["layers"]) == 3
