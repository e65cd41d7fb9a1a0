"""Every example in the commands' --help runs as written, in a folder with the files it names."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import EXAMPLES

BIN = Path(sys.executable).parent
COMMANDS = ("compute", "check", "explain", "heatmap", "init")
HOMEWORK = "answer:\n  query: 1\n  scores: [2, 4, 4]\n  weights: [0.06, 0.47, 0.47]\n  output: [2.0, 7.0, 1.5]\n"


def help_examples(command: str) -> list[str]:
    env = {**os.environ, "COLUMNS": "300", "NO_COLOR": "1"}
    text = subprocess.run([str(BIN / "attncli"), command, "--help"], capture_output=True, text=True, env=env,
                          timeout=60, check=True).stdout
    return [line.strip() for line in text.splitlines() if re.match(r"\s+(attncli|cat) ", line)]


def pytest_generate_tests(metafunc):
    if "example" in metafunc.fixturenames:
        if not (BIN / "attncli").exists():
            metafunc.parametrize("example", [pytest.param("", marks=pytest.mark.skip("attncli is not installed"))])
            return
        examples = [line for command in COMMANDS for line in help_examples(command)]
        metafunc.parametrize("example", examples, ids=lambda line: line[:60])


@pytest.fixture
def folder(tmp_path):
    """The examples, plus the doc.yaml, doc.json and homework.yaml the help texts name."""
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    illustrated = (EXAMPLES / "illustrated.yaml").read_text(encoding="utf-8")
    (tmp_path / "doc.yaml").write_text(illustrated, encoding="utf-8")
    (tmp_path / "doc.json").write_text(json.dumps(yaml.safe_load(illustrated)), encoding="utf-8")
    (tmp_path / "homework.yaml").write_text(illustrated + HOMEWORK, encoding="utf-8")
    return tmp_path


def test_help_example_runs(example, folder):
    if "| jq" in example and shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "100"}
    result = subprocess.run(["bash", "-o", "pipefail", "-c", example], cwd=folder, capture_output=True, text=True,
                            env=env, timeout=120)
    expected = 1 if example.startswith("attncli check") else 0  # the homework rounds the output too early
    assert result.returncode == expected, result.stderr
    assert "Error" not in result.stderr and "Traceback" not in result.stderr
    for written in re.findall(r"(?:-o|--export|>) (\S+\.\w+)", example):
        assert (folder / written).stat().st_size > 0, written
