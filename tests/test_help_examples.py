"""Every example in the commands' --help runs as written, in a folder holding what a fresh clone has (examples/)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES

BIN = Path(sys.executable).parent
COMMANDS = ("compute", "check", "explain", "heatmap", "init", "page", "card")


def help_examples(command: str) -> list[str]:
    """The example lines of ``attncli COMMAND --help``, read in this process (collection runs it on every worker)."""
    from typer.testing import CliRunner

    from attncli.cli import app

    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "300", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return [line.strip() for line in result.stdout.splitlines() if re.match(r"\s+(attncli|cat) ", line)]


def pytest_generate_tests(metafunc):
    if "example" in metafunc.fixturenames:
        if not (BIN / "attncli").exists():
            metafunc.parametrize("example", [pytest.param("", marks=pytest.mark.skip("attncli is not installed"))])
            return
        examples = [line for command in COMMANDS for line in help_examples(command)]
        metafunc.parametrize("example", examples, ids=lambda line: line[:60])


@pytest.fixture
def folder(tmp_path):
    """What a fresh clone has that the examples may name: the examples/ folder, and nothing else."""
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    return tmp_path


def test_every_command_has_examples():
    if not (BIN / "attncli").exists():
        pytest.skip("attncli is not installed")
    for command in COMMANDS:
        assert help_examples(command), command


@pytest.mark.slow  # one shell and its attncli processes each
def test_help_example_runs(example, folder):
    if "| jq" in example and shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "100"}
    result = subprocess.run(["bash", "-o", "pipefail", "-c", example], cwd=folder, capture_output=True, text=True,
                            env=env, timeout=120)
    expected = 1 if example.startswith("attncli check") else 0  # examples/check/homework.yaml rounds too early
    assert result.returncode == expected, result.stderr
    assert "Error" not in result.stderr and "Traceback" not in result.stderr
    for written in re.findall(r"(?:-o|--export|>) (\S+\.\w+)", example):
        assert (folder / written).stat().st_size > 0, written


def test_only_help_names_every_key_and_symbol_of_the_stage_list():
    """compute --help's --only text is written out (the CLI starts without numpy): it must name every key."""
    import re

    from attncli.cli.only_help import ONLY_HELP
    from attncli.core.stages import QUANTITIES

    words = set(re.findall(r"[^\s,;:.()]+(?: ⊙ G)?", ONLY_HELP))
    missing = [key for key in QUANTITIES if key not in words]
    symbols = [q.symbol for q in QUANTITIES.values() if q.symbol and q.symbol not in words]
    assert not missing and not symbols, (missing, symbols)


def test_only_help_names_every_key_and_symbol_of_a_linear_document():
    """A linear: document's --only keys (docs/format.md Part 4) and its formulas' names are in the help too."""
    from attncli.cli.only_help import parts
    from attncli.core.linear import KEYS, ON_REQUEST
    from attncli.outputs.linear import SYMBOLS

    found = parts()
    assert found["linear"].split(", ") == [key for key in KEYS if key not in ON_REQUEST]
    assert found["linear_named"].split(", ") == list(ON_REQUEST) == ["chunk_states", "decayed_scores"]
    assert found["linear_symbols"].split(", ") == list(SYMBOLS)
    assert {"slopes", "intra", "inter", "state", "final_state"} <= set(found["linear"].split(", "))


def test_only_help_is_the_one_the_stage_list_makes():
    """The written-out text is exactly what the stage list gives now (a stage added or renamed: write it again)."""
    from attncli.cli import only_help

    assert only_help.ONLY_HELP == only_help.written(), "stale: run python -m attncli.cli.only_help"


def test_compute_help_shows_the_only_text():
    """compute --help prints the generated --only text (its first and last keys, wherever Rich wraps them)."""
    from typer.testing import CliRunner

    from attncli.cli import app

    result = CliRunner().invoke(app, ["compute", "--help"], env={"COLUMNS": "300", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "Keep just this key (repeatable): inputs, positional" in text
    assert "db_UKV, d_sinks." in text
