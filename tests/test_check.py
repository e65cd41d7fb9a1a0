"""`attncli check`: a learner's answer with one kind of mistake gets the cell, the step and the hint.

Every wrong answer here is worked out independently (tests/reference.py and
plain Python), the way a learner would have made the mistake.
"""

from __future__ import annotations

import math

import pytest
import yaml
from reference import matmul, naive_attention

from attncli.cli import app

X = [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]
W_Q = [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]]
W_K = [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]]
W_V = [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]


def soft(row):
    top = max(row)
    e = [math.exp(x - top) for x in row]
    return [x / sum(e) for x in e]


def check(runner, tmp_path, answer, scale="none", **doc):
    doc = {"inputs": X, "weights": {"query": W_Q, "key": W_K, "value": W_V}, "scale": scale, **doc,
           "answer": answer}
    (tmp_path / "hw.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True))
    return runner.invoke(app, ["check", str(tmp_path / "hw.yaml")])


def test_a_correct_answer_exits_0(runner, tmp_path):
    result = check(runner, tmp_path, {"query": 1, "scores": [2, 4, 4], "weights": [0.06, 0.47, 0.47],
                                      "output": [1.94, 6.68, 1.60]})
    assert result.exit_code == 0, result.output
    assert result.stdout.count("correct") == 3 and "wrong" not in result.stdout


def test_one_wrong_cell_is_named_with_step_expected_and_given(runner, tmp_path):
    result = check(runner, tmp_path, {"scores": [[2, 4, 4], [4, 16, 12], [4, 13, 10]]})
    assert result.exit_code == 1
    assert "step 4  scores" in result.stdout
    assert "row 3 ('x3'), column 2: expected 12, yours 13" in result.stdout


def test_scaling_forgotten(runner, tmp_path):
    raw = [[sum(a * b for a, b in zip(q, k)) for k in matmul(X, W_K)] for q in matmul(X, W_Q)]
    result = check(runner, tmp_path, {"weights": [soft(row) for row in raw]}, scale="sqrt")
    assert result.exit_code == 1
    assert "step 5  weights" in result.stdout and "scale was left out" in result.stdout


def test_scaling_applied_twice(runner, tmp_path):
    raw = naive_attention(X, W_Q, W_K, W_V)["scores"][0]
    result = check(runner, tmp_path, {"scaled_scores": [[s / 3 for s in row] for row in raw]}, scale="sqrt")
    assert result.exit_code == 1 and "scale was applied twice" in result.stdout


def test_scaling_forgotten_in_the_scaled_scores(runner, tmp_path):
    raw = [[sum(a * b for a, b in zip(q, k)) for k in matmul(X, W_K)] for q in matmul(X, W_Q)]  # Q·Kᵀ, unscaled
    result = check(runner, tmp_path, {"scaled_scores": raw}, scale="sqrt")
    assert result.exit_code == 1
    assert "step 4  scaled_scores wrong at row 1 ('x1'), column 1" in result.stdout  # 2 given, 2/√3 expected
    assert "hint: the scale was left out: multiply every score by 1/√3" in result.stdout


def test_softmax_over_the_wrong_axis(runner, tmp_path):
    s = naive_attention(X, W_Q, W_K, W_V, scale="none")["scores"][0]
    columns = [soft([s[i][j] for i in range(3)]) for j in range(3)]  # normalised down each column
    wrong = [[columns[j][i] for j in range(3)] for i in range(3)]
    result = check(runner, tmp_path, {"weights": wrong})
    assert result.exit_code == 1 and "softmax ran down the columns" in result.stdout


def test_keys_not_transposed(runner, tmp_path):
    q, k = matmul(X, W_Q), matmul(X, W_K)
    result = check(runner, tmp_path, {"scores": matmul(q, k)})  # Q·K instead of Q·Kᵀ
    assert result.exit_code == 1 and "K was not transposed" in result.stdout


def test_weights_applied_as_w_times_x(runner, tmp_path):
    x3 = [[1, 0, 2], [0, 1, 1]]
    w = [[1, 2, 0], [0, 1, 3], [2, 0, 1]]
    w_t = [list(col) for col in zip(*w)]
    doc = {"inputs": x3, "weights": {"query": w}}
    result = check(runner, tmp_path, {"queries": matmul(x3, w_t)}, **doc)
    assert result.exit_code == 1 and "applied as W·x" in result.stdout and "step 3  queries" in result.stdout


def test_heads_split_wrongly(runner, tmp_path):
    w = [[1, 0, 2, 1], [0, 1, 1, 0], [2, 1, 0, 1], [1, 1, 1, 0]]
    q = matmul(X, w)
    interleaved = [[[row[0], row[2]] for row in q], [[row[1], row[3]] for row in q]]  # columns 1,3 | 2,4
    result = check(runner, tmp_path, {"queries": interleaved}, heads=2, weights={"query": w})
    assert result.exit_code == 1 and "heads were split wrongly" in result.stdout


def test_rounding_too_early_the_walkthroughs_output(runner, tmp_path):
    result = check(runner, tmp_path, {"query": 1, "output": [2.0, 7.0, 1.5]})
    assert result.exit_code == 1
    assert "expected 1.93662, yours 2" in result.stdout and "rounded too early" in result.stdout


def test_wrong_shape_is_a_wrong_answer(runner, tmp_path):
    result = check(runner, tmp_path, {"scores": [[2, 4], [4, 16]]})
    text = " ".join(result.stdout.split())  # (wrapped to the terminal)
    assert result.exit_code == 1 and "has shape 2 × 2, but scores here has shape 3 × 3" in text


@pytest.mark.parametrize("answer, message", [
    ({"query": 4, "scores": [1, 2, 3]}, "answer.query: 4 is out of range: queries are 1 to 3"),
    ({"scroes": [1, 2, 3]}, "unknown key 'scroes' (did you mean 'scores'?)"),
    ({"query": 1, "scores": [1, "two", 3]}, "answer.scores: entry 2: the string 'two' is not a number"),
])
def test_a_bad_answer_section_exits_2(runner, tmp_path, answer, message):
    result = check(runner, tmp_path, answer)
    assert result.exit_code == 2 and result.stdout == ""
    assert message in result.stderr


def test_no_answer_section(runner, tmp_path):
    (tmp_path / "doc.yaml").write_text("inputs: [[1, 2]]\n")
    result = runner.invoke(app, ["check", str(tmp_path / "doc.yaml")])
    assert result.exit_code == 2 and "has no 'answer:' section" in result.stderr
