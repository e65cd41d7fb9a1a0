"""The command line as users meet it: the installed entry point as a real process, and CliRunner."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES

from attncli.cli import app

ENTRY_POINT = Path(sys.executable).parent / "attncli"


def run(*args, input=None, env=None):
    command = [str(ENTRY_POINT)] if ENTRY_POINT.exists() else [sys.executable, "-m", "attncli"]
    return subprocess.run([*command, *args], input=input, capture_output=True, text=True, env=env, timeout=60)


def test_entry_point_json_from_standard_input():
    doc = json.dumps({"tokens": "a b c", "inputs": [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]], "scale": "none"})
    result = run("compute", "-", "--format", "json", input=doc)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["tokens"] == ["a", "b", "c"]
    assert data["scores"][0][0] == [2.0, 0.0, 2.0]  # Q = K = X: [1,0,1,0] · each input


def test_module_entry_and_version():
    result = subprocess.run([sys.executable, "-m", "attncli", "--version"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and result.stdout.startswith("attncli ")


def test_piped_tables_are_plain_text():
    result = run("compute", str(EXAMPLES / "illustrated.yaml"), env={"PATH": "/usr/bin:/bin", "TERM": "xterm-256color"})
    assert result.returncode == 0, result.stderr
    assert "\x1b[" not in result.stdout
    assert "│ Input 1 │  0.0634 │  0.4683 │  0.4683 │" in result.stdout
    assert "Output  Y = H   3 × 3" in result.stdout


@pytest.mark.slow  # every example, BERT-base's included (tests/test_golden.py checks their numbers too)
def test_every_example_computes():
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        result = run("compute", str(path), "--format", "json", "--only", "output")
        assert result.returncode == 0, (path, result.stderr)
        assert json.loads(result.stdout)["output"], path


def test_help_has_examples(runner):
    result = runner.invoke(app, ["compute", "--help"])
    assert result.exit_code == 0
    assert "attncli compute examples/illustrated.yaml" in result.stdout and "--precision" in result.stdout


@pytest.mark.parametrize("args, message", [
    (["--head", "3"], "--head 3 is out of range: this document has heads 1 and 2"),  # (two: "1 and 2")
    (["--head", "1", "--format", "json"], "--head selects tables"),
    (["--only", "wieghts"], "unknown key 'wieghts' (did you mean 'weights'?)"),
    (["--scale", "huge"], "scale: 'huge' is not sqrt, none or a number"),
    (["--mask", "causal", "--heads", "3"], "3 heads cannot split"),
])
def test_option_errors(runner, args, message):
    result = runner.invoke(app, ["compute", str(EXAMPLES / "two_heads.yaml"), *args])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert message in result.stderr and "Traceback" not in result.stderr


def test_one_head_only(runner):
    result = runner.invoke(app, ["compute", str(EXAMPLES / "two_heads.yaml"), "--head", "2"])
    assert result.exit_code == 0
    assert "Head 2 · Weights" in result.stdout and "Head 1 ·" not in result.stdout


@pytest.mark.parametrize("command", [["compute"], ["explain", "--step", "5"], ["explain", "--step", "1"], ["heatmap"],
                                     ["heatmap", "--head", "1"], ["check"]])
def test_tokens_are_text_not_markup_or_control_codes(tmp_path, command):
    """BERT's [unused1], a stray [/] and an escape sequence are shown as written, never interpreted."""
    doc = tmp_path / "doc.json"
    # `check`: row 3 is wrong
    answer = {"weights": [[0.4011, 0.1978, 0.4011], [0.1978, 0.4011, 0.4011], [0.2, 0.2, 0.5]]}
    doc.write_text(json.dumps({"inputs": [[1, 0], [0, 1], [1, 1]], "tokens": ["[unused1]", "[/]", "\x1b[31mred"],
                               "answer": answer}))
    result = run(command[0], str(doc), *command[1:], env={"COLUMNS": "100", "NO_COLOR": "1", "PATH": "/usr/bin:/bin"})
    assert result.returncode == (1 if command == ["check"] else 0), result.stderr
    if command != ["check"]:
        assert "[unused1]" in result.stdout and "[/]" in result.stdout
    assert "\x1b" not in result.stdout and "\\x1b[31mred" in result.stdout


@pytest.mark.parametrize("args, names", [
    (["compute", "--bogus", "doc.yaml"], ["No such option: --bogus", "attncli compute --help"]),
    (["compute"], ["Missing argument 'FILE'"]),
    (["compute", "doc.yaml", "-p", "99"], ["'--precision'", "17"]),
    (["compute", "doc.yaml", "--format", "yaml"], ["'yaml' is not one of", "'json'"]),
    (["heatmap", "doc.yaml", "--of", "nope"], ["'--of'", "attncli heatmap --help"]),
    (["card", "doc.yaml", "--library", "cudnn"], ["'--library'", "attncli card --help"]),
    (["nosuch"], ["No such command 'nosuch'", "attncli --help"]),
])
def test_option_errors_are_one_line(args, names):
    """What the option parser refuses is one Error: line and exit code 2, like every other problem."""
    result = run(*args)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert all(name in result.stderr for name in names), result.stderr


@pytest.mark.parametrize("doc, args, message, chinese", [
    ("causal.yaml", ["--head", "2"], "--head 2 is out of range: this document has one head, head 1",
     "--head 2 超出范围：本文档只有一个头，即头 1"),
    ("causal.yaml", ["--query", "9"], "--query: 9 is out of range: this document has queries 1 to 4",
     "--query: 9 超出范围：本文档的查询是 1 到 4"),
    ("two_heads.yaml", ["--head", "5"], "--head 5 is out of range: this document has heads 1 and 2",
     "--head 5 超出范围：本文档的头是 1 和 2"),
])
def test_a_range_of_one_or_two_is_said_as_such(runner, doc, args, message, chinese):
    from conftest import EXAMPLES

    result = runner.invoke(app, ["explain", str(EXAMPLES / doc), *args])
    assert result.exit_code == 2 and result.stderr == f"Error: {message}\n", result.stderr
    zh = runner.invoke(app, ["explain", str(EXAMPLES / doc), *args, "--lang", "zh"]).stderr
    assert zh == f"错误：{chinese}\n", zh
