"""check's answer: takes the formula's names (S, Z, A, Q …) as compute --only does, and says what `query: [numbers]`
probably meant.  The numbers are worked by hand: X = I, no projections, scale none, so S = Z = I and each row of A
is softmax([1, 0]) = [e/(e + 1), 1/(e + 1)] = [0.7311, 0.2689]."""

from __future__ import annotations

import pytest
import yaml

from attncli.cli.main import app

DOC = {"tokens": ["a", "b"], "inputs": [[1, 0], [0, 1]], "scale": "none"}
RIGHT_A = [[0.7311, 0.2689], [0.2689, 0.7311]]


def _check(runner, tmp_path, answer: dict, *args):
    path = tmp_path / "hand.yaml"
    path.write_text(yaml.safe_dump({**DOC, "answer": answer}, sort_keys=False))
    return runner.invoke(app, ["check", str(path), *args])


@pytest.mark.parametrize("names", [("scores", "weights"), ("S", "A"), ("s", "a"), ("Z", "A")])
def test_symbols_are_answer_keys(runner, tmp_path, names):
    result = _check(runner, tmp_path, {names[0]: [[1, 0], [0, 1]], names[1]: RIGHT_A})
    assert result.exit_code == 0, result.output
    assert "correct" in result.stdout and "wrong" not in result.stdout


def test_a_wrong_answer_under_a_symbol_is_marked_wrong(runner, tmp_path):
    result = _check(runner, tmp_path, {"A": [[0.5, 0.5], [0.5, 0.5]]})
    assert result.exit_code == 1 and "weights" in result.stdout and "wrong" in result.stdout


def test_query_given_numbers_asks_for_queries(runner, tmp_path):
    result = _check(runner, tmp_path, {"query": [1, 0], "S": [[1, 0], [0, 1]]})
    assert result.exit_code == 2
    assert "answer.query: is a list" in result.stderr and "did you mean queries:" in result.stderr


def test_one_key_under_two_names_is_refused(runner, tmp_path):
    result = _check(runner, tmp_path, {"scores": [[1, 0], [0, 1]], "S": [[1, 0], [0, 1]]})
    assert result.exit_code == 2 and "gives scores twice, as scores and as S" in result.stderr
    close = _check(runner, tmp_path, {"Zz": 1})
    assert close.exit_code == 2 and "did you mean 'Z'?" in close.stderr
