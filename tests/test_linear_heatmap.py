"""attncli heatmap on a linear: document (docs/format.md Part 4): the state after one token and lightning's decayed
scores, with the numbers worked by hand (the examples of tests/test_delta_rule.py and tests/test_lightning.py), and
the options it refuses (exit 2)."""

from __future__ import annotations

import math

import yaml

from attncli.cli import app

# gated_delta by hand, no l2 norm, no scale: S after t1 = [1, 0], after t2 = [0.5, 4] (d_k = 2, d_v = 1)
DELTA = dict(kind="gated_delta", queries=[[[1, 0], [1, 1], [0, 1]]], keys=[[[1, 0], [0, 1], [1, 0]]],
             values=[[[2], [4], [3]]], beta=[[0.5, 1, 1]], g=[[0, math.log(0.5), 0]], l2norm=False, scale="none")
# lightning by hand, s = ln 2: (q_i·k_j)·2^{−(i−j)} = [[1, ·, ·], [0.5, 1, ·], [0, 0.5, 0]]; S after t3 = [3.5, 2]
LIGHTNING = dict(kind="lightning", queries=[[[1, 0], [1, 1], [0, 1]]], keys=[[[1, 0], [0, 1], [1, 0]]],
                 values=[[[2], [4], [3]]], slopes=[math.log(2)])


def drawn(runner, tmp_path, linear: dict, *args: str):
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump({"tokens": "a b c", "linear": linear}), encoding="utf-8")
    return runner.invoke(app, ["heatmap", str(path), *args], env={"NO_COLOR": "1"})


def cells(out: str, label: str) -> list[str]:
    """The numbers on the row labelled ``label`` (shades and hatching left out)."""
    row = next(line for line in out.splitlines() if line.split() and line.split()[0] == label)
    return [part for part in row.split()[1:] if any(c.isdigit() for c in part)]


def test_the_state_after_a_token(runner, tmp_path):
    result = drawn(runner, tmp_path, DELTA, "--of", "state", "--query", "2", "--head", "1")
    assert result.exit_code == 0, result.output
    assert "S after token 2 (b)" in result.stdout and "rows: key channels, columns: value channels" in result.stdout
    assert cells(result.stdout, "k1") == ["0.50"] and cells(result.stdout, "k2") == ["4.00"]
    last = drawn(runner, tmp_path, LIGHTNING, "--head", "1", "--query", "c")  # (--of state is the default)
    assert cells(last.stdout, "k1") == ["3.50"] and cells(last.stdout, "k2") == ["2.00"]


def test_lightnings_decayed_scores_hatch_the_future(runner, tmp_path):
    result = drawn(runner, tmp_path, LIGHTNING, "--of", "decayed_scores", "--head", "1")
    assert result.exit_code == 0, result.output
    assert cells(result.stdout, "b") == ["0.50", "1.00"] and cells(result.stdout, "c") == ["0.00", "0.50", "0.00"]
    assert "╱" in next(line for line in result.stdout.splitlines() if line.startswith("a "))


def test_in_chinese(runner, tmp_path):
    result = drawn(runner, tmp_path, DELTA, "--query", "1", "--lang", "zh")
    assert result.exit_code == 0 and "词元 1（a）之后的 S" in result.stdout
    assert "行：键通道，列：值通道" in result.stdout


def test_what_it_refuses(runner, tmp_path):
    for linear, args, place in ((DELTA, ["--of", "decayed_scores"], "--of"), (DELTA, ["--query", "4"], "--query"),
                                (LIGHTNING, ["--of", "decayed_scores", "--query", "1"], "--query")):
        result = drawn(runner, tmp_path, linear, *args)
        assert result.exit_code == 2 and f"{place}:" in result.stderr and result.stdout == "", result.output
    softmax = tmp_path / "softmax.yaml"
    softmax.write_text(yaml.safe_dump({"tokens": "a b", "queries": [[1, 0], [0, 1]], "keys": [[1, 0], [0, 1]]}))
    result = runner.invoke(app, ["heatmap", str(softmax), "--of", "state"])
    assert result.exit_code == 2 and "linear: document's state" in result.stderr


def test_the_state_title_is_the_kind_s_own_recurrence(runner, tmp_path):
    lightning = drawn(runner, tmp_path, LIGHTNING, "--head", "1", "--query", "c").stdout.splitlines()[0]
    assert lightning.startswith("S after token 3 (c): S_t = e^(−s)·S_(t−1) + k_t·v_tᵀ ") and "k·uᵀ" not in lightning
    delta = drawn(runner, tmp_path, DELTA, "--head", "1", "--query", "c").stdout.splitlines()[0]
    assert delta.startswith("S after token 3 (c): S ← e^g·S, then + k·uᵀ ") and "lightning" not in delta
    zh = drawn(runner, tmp_path, LIGHTNING, "--head", "1", "--lang", "zh").stdout.splitlines()[0]
    assert zh.startswith("词元 3（c）之后的 S：S_t = e^(−s)·S_(t−1) + k_t·v_tᵀ ")
