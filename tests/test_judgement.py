"""Judgement: `check` never calls a wrong answer correct, and `explain` never writes arithmetic that is false.

Three classes of problem, one table each:

- a tolerance that is NaN, infinite or negative (``--tol nan`` accepted every answer, since
  no difference is ``> nan``) is refused, exit 2, one line naming ``--tol``;
- a ``null`` in an answer is accepted only where the scaled score is masked; anywhere else
  it is a cell left blank: wrong (exit 1, "yours null"), never "correct", and it never
  lends a wrong answer a hint it does not deserve;
- extreme numbers (scores of -1000, of 1e12, tiny weights times huge values, a tiny scale)
  are written out so that every printed equation holds at the printed precision: step 5
  subtracts the row max when exp would overflow or underflow (no more "a = 0 / 0 = 0.7311"),
  and a factor too small for the decimals is written in e-notation when its product is not 0.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
import yaml

from attncli.cli import app
from attncli.cli.main import main
from attncli.core.errors import AttnError

X = [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]
WEIGHTS = {"query": [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]], "key": [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]],
           "value": [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]}
# The walkthrough's first query: scores [2, 4, 4], weights [0.0634, 0.4683, 0.4683], output [1.9366, 6.6831, 1.5951]


def write(tmp_path, answer, **doc) -> str:
    doc = {"inputs": X, "weights": WEIGHTS, "scale": "none", **doc, "answer": answer}
    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    return str(path)


def cli(capsys, *args) -> tuple[int, str, str]:
    """The installed entry point's code path (option errors included), in this process."""
    with pytest.raises(SystemExit) as leaving:
        main(list(args))
    out, err = capsys.readouterr()
    return leaving.value.code, out, err


# ---------------------------------------------------------------- --tol


@pytest.mark.parametrize("tol", ["nan", "NaN", "-nan", "inf", "+inf", "Infinity", "-inf", "1e400", "-1", "-0.001"])
def test_a_tolerance_that_is_not_a_finite_number_at_least_0_is_refused(tmp_path, capsys, tol):
    wrong = write(tmp_path, {"query": 1, "scores": [99, 4, 4]})  # a wrong answer that --tol nan/inf used to accept
    code, out, err = cli(capsys, "check", wrong, "--tol", tol)
    assert code == 2 and out == ""
    assert err.startswith("Error: ") and err.count("\n") == 1 and "--tol" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("tol, answer, code", [
    ("0", {"query": 1, "scores": [2, 4, 4]}, 0),  # exact: 0 is a tolerance
    ("0", {"query": 1, "weights": [0.0634, 0.4683, 0.4683]}, 1),  # rounded, so not exact
    ("0.0001", {"query": 1, "weights": [0.0634, 0.4683, 0.4683]}, 0),
    ("1e308", {"query": 1, "scores": [99, 4, 4]}, 0),  # huge but finite: the user asked for it
])
def test_finite_tolerances_still_work(tmp_path, capsys, tol, answer, code):
    result = cli(capsys, "check", write(tmp_path, answer), "--tol", tol)
    assert result[0] == code, result


def test_the_library_refuses_a_nan_tolerance_too():
    import attncli
    from attncli.teach.check.compare import check, read_answer

    trace = attncli.compute({"inputs": X, "weights": WEIGHTS, "scale": "none"})
    answer = read_answer({"query": 1, "scores": [99, 4, 4]}, trace, None)
    for tol in (math.nan, math.inf, -1.0):
        with pytest.raises(AttnError, match="--tol"):
            check(trace, answer, tol)
    assert [f.ok for f in check(trace, answer, 0.005)] == [False]


# ---------------------------------------------------------------- null cells

CAUSAL = {"tokens": ["a", "b", "c"], "mask": "causal"}
Q2_SCALED = [4, 16, None]  # query 2 under the causal mask: keys a, b seen, c masked (scale: none)
TWO_HEADS = {**CAUSAL, "heads": 2, "weights": {}, "scale": 1}


@pytest.mark.parametrize("doc, answer, code, words", [
    ({}, {"query": 1, "scores": [2, None, 4]}, 1, ["step 4  scores", "wrong at column 2: expected 4, yours null",
                                                   "only a masked scaled score may be left null"]),
    ({}, {"query": 1, "weights": [None, None, None]}, 1, ["wrong at column 1: expected 0.0633789, yours null"]),
    ({}, {"output": [[None] * 3 for _ in range(3)]}, 1, ["wrong at row 1 ('x1'), column 1", "yours null"]),
    ({}, {"query": 1, "scaled_scores": [2, 4, None]}, 1, ["column 3: expected 4, yours null"]),  # no mask: no hole
    (CAUSAL, {"query": 2, "scaled_scores": Q2_SCALED}, 0, ["✓ step 4  scaled_scores correct"]),
    (CAUSAL, {"query": 2, "scaled_scores": [4, None, None]}, 1, ["column 2: expected 16, yours null"]),
    (CAUSAL, {"scaled_scores": [[2, None, None], [4, 16, None], [4, 12, 10]]}, 0, ["correct"]),
    (CAUSAL, {"scaled_scores": [[2, None, None], [4, 16, None], [4, None, 10]]}, 1,
     ["row 3 ('c'), column 2: expected 12, yours null"]),
    (CAUSAL, {"query": 2, "weights": [0.0, 1.0, None]}, 1, ["step 5  weights", "column 3: expected 0, yours null",
                                                           "a masked key's weight is 0"]),
    (CAUSAL, {"query": 2, "weights": [0.0, 1.0, 0]}, 0, ["correct"]),
    # two heads of Q = K = X (columns 1-2 and 3-4): both heads' scaled scores are [[1, -, -], [0, 4, -], [1, 2, 2]]
    (TWO_HEADS, {"head": 2, "query": 3, "scaled_scores": [1, 2, 3]}, 1, ["column 3: expected 2, yours 3"]),
    (TWO_HEADS, {"head": 2, "query": 2, "scaled_scores": [0, 4, None]}, 0, ["correct"]),
    (TWO_HEADS, {"scaled_scores": [[[1, None, None], [0, 4, None], [1, 2, 2]] for _ in range(2)]}, 0, ["correct"]),
    (TWO_HEADS, {"scaled_scores": [[[1, None, None], [0, 4, None], [1, 2, 2]], [[1, None, None], [None, 4, None],
                                                                               [1, 2, 2]]]}, 1,
     ["head 2, row 2 ('b'), column 1: expected 0, yours null"]),
])
def test_a_null_is_an_answer_only_where_the_cell_is_masked(runner, tmp_path, doc, answer, code, words):
    result = runner.invoke(app, ["check", write(tmp_path, answer, **doc)])
    assert result.exit_code == code, result.output
    for word in words:
        assert " ".join(word.split()) in " ".join(result.stdout.split()), result.stdout
    assert ("✗" in result.stdout) == (code == 1)


def test_a_null_never_earns_a_hint_about_a_mistake_it_did_not_make(runner, tmp_path):
    """Weights of the unscaled scores, with one cell left null: the cells given do show the forgotten scale,
    but the answer is not that mistake's numbers, so no hint about it; the wrong cell is a number here."""
    s = np.array(X) @ np.array(WEIGHTS["query"]) @ (np.array(X) @ np.array(WEIGHTS["key"])).T
    e = np.exp(s - s.max(axis=1, keepdims=True))
    unscaled = (e / e.sum(axis=1, keepdims=True)).round(4).tolist()
    full = runner.invoke(app, ["check", write(tmp_path, {"weights": unscaled}, scale="sqrt")])
    assert full.exit_code == 1 and "scale was left out" in full.stdout  # the hint, when it is deserved
    unscaled[2][2] = None
    holed = runner.invoke(app, ["check", write(tmp_path, {"weights": unscaled}, scale="sqrt")])
    assert holed.exit_code == 1 and "scale was left out" not in holed.stdout, holed.stdout


def test_explain_marks_the_step_of_a_null_left_in_the_answer(runner, tmp_path):
    path = write(tmp_path, {"query": 1, "weights": [0.06, None, 0.47]})
    data = json.loads(runner.invoke(app, ["explain", path, "--step", "5", "--format", "json"]).stdout)
    assert data["notes"][0] == "Your answer first goes wrong here: weights at column 2: expected 0.468311, yours null."
    assert "only a masked scaled score may be left null" in data["notes"][1]


# ---------------------------------------------------------------- explain with extreme numbers

NUMBER = r"-?\d+(?:\.\d+)?(?:e[+-]\d+)?"


def explain(runner, doc: dict, tmp_path, *args) -> dict:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, ["explain", str(path), *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def close(shown: str, value: float, precision: int = 4) -> bool:
    """Does the printed number ``shown`` stand for ``value`` (its last decimal rounded; e-notation relative)?"""
    x = float(shown)
    if "e" in shown:
        return math.isclose(x, value, rel_tol=10.0 ** -precision)
    return abs(x - value) <= 0.5 * 10.0 ** -precision * (1 + 1e-9) + 1e-12 * abs(value)


def assert_softmax_lines_hold(lines: list[str], precision: int = 4) -> None:
    """Each written exponential, the sum and every quotient are true at the printed precision."""
    exps = [re.fullmatch(rf".*: exp\(({NUMBER})(?: − \(?({NUMBER})\)?)?\) = ({NUMBER})", line) for line in lines]
    exps = [m for m in exps if m]
    assert exps, lines
    for m in exps:
        z, shift, e = float(m[1]), float(m[2] or 0), m[3]
        assert close(e, math.exp(z - shift), precision), m[0]
    total = next(line for line in lines if line.startswith("Σ = "))
    terms, result = total[4:].rsplit(" = ", 1)
    assert float(result) >= 1, total  # the largest exponential is e^0 = 1 or more: no 0 / 0
    assert abs(sum(float(t) for t in terms.split(" + ")) - float(result)) <= len(exps) * 10.0 ** -precision, total
    for line in lines:
        m = re.fullmatch(rf".*: a = ({NUMBER}) / ({NUMBER}) = ({NUMBER})", line)
        if m:
            assert float(m[2]) != 0, line
            assert abs(float(m[1]) / float(m[2]) - float(m[3])) <= 2 * 10.0 ** -precision, line


def one_query(scores: list[float]) -> dict:
    """A document whose first query's scaled scores are exactly ``scores`` (scale: none): Q = [1], K = scores."""
    return {"inputs": [[1.0]] + [[0.0]] * (len(scores) - 1), "context": [[s] for s in scores], "scale": "none"}


@pytest.mark.parametrize("scores, shifted", [
    ([-1000, -1001], True),  # every exponential underflows: it wrote "a = 0 / 0 = 0.7311"
    ([-1000, -1001, -1000.5], True),
    ([-8, -9], True),  # exp(-8) = 0.0003: "0.0003 / 0.0005 = 0.7311" was false
    ([-0.25, -3], True),
    ([1e12, 0, 3e6], True),  # exp overflows: the max was subtracted before, and still is
    ([31, 30], True),
    ([30, 29], False),  # from 0 to 30, exp(z) as the walkthrough writes it
    ([2, 4, 4], False),
    ([0, -800], False),
])
def test_step_5_shows_the_stable_softmax_and_every_line_holds(runner, tmp_path, scores, shifted):
    for lang in ("en", "zh"):
        data = explain(runner, one_query(scores), tmp_path, "--step", "5", "--lang", lang)
        assert_softmax_lines_hold(data["lines"])
        assert (" − " in data["lines"][0]) == shifted, data["lines"]
        e = np.array(data["numbers"]["exponentials"]["values"][0])
        a = np.array(data["numbers"]["weights"]["values"][0])
        assert e.max() >= 1 and np.allclose(e / e.sum(), a, rtol=1e-12, atol=0)
        title = data["numbers"]["exponentials"]["title"]
        assert title.endswith("e^(z − max z)" if shifted else "e^z"), title


def test_step_5_says_why_it_subtracts_the_max_of_negative_scores(runner, tmp_path):
    en = explain(runner, one_query([-1000, -1001]), tmp_path, "--step", "5")
    assert en["lines"][:3] == ["c1: exp(-1000 − (-1000)) = 1", "c2: exp(-1001 − (-1000)) = 0.3679",
                               "Σ = 1 + 0.3679 = 1.3679"]
    assert en["lines"][3:] == ["c1: a = 1 / 1.3679 = 0.7311", "c2: a = 0.3679 / 1.3679 = 0.2689"]
    assert any("Every score that takes part here is negative" in p and "0 / 0" in p for p in en["text"]), en["text"]
    zh = explain(runner, one_query([-1000, -1001]), tmp_path, "--step", "5", "--lang", "zh")
    assert zh["lines"] == en["lines"]
    assert any("得分全是负数" in p and "0 / 0" in p for p in zh["text"]), zh["text"]
    big = explain(runner, one_query([1e12, 0]), tmp_path, "--step", "5")
    assert any("keeps e^z from overflowing" in p for p in big["text"]) and not any("negative" in p for p in big["text"])


def test_step_5_with_masked_keys_and_extreme_scores(runner, tmp_path):
    doc = {**one_query([-1000, 5000, -1001]), "mask": [[1, 0, 1], [1, 1, 1], [1, 1, 1]]}
    data = explain(runner, doc, tmp_path, "--step", "5")
    assert_softmax_lines_hold(data["lines"])
    assert data["lines"][0] == "c1: exp(-1000 − (-1000)) = 1" and len(data["lines"]) == 5  # the masked key is left out


@pytest.mark.parametrize("doc, args, line", [
    # a weight of 1.05e-20 times a value of 1e25: it read "0.0000 × [0, 1.0000e+25] = [0, 105306.1736]"
    ({"inputs": [[1, 0], [0, 1]], "scale": "none",
      "weights": {"query": [[0, 0], [0, -46]], "value": [[1, 0], [0, 1e25]]}},
     ["--step", "6", "--query", "2"], "x2: 1.0531e-20 × [0, 1.0000e+25] = [0, 105306.1736]"),
    # a scale of 1e-10 times a score of 1e12: it read "0.0000 × 1000000000000 = 100"
    ({"inputs": [[1, 0], [0, 1]], "scale": 1e-10, "weights": {"key": [[1e12, 0], [0, 1]]}},
     ["--step", "4"], "x1: q₁ · k₁ = 1·1000000000000 + 0·0 = 1000000000000   →   1.0000e-10 × 1000000000000 = 100"),
    ({"inputs": [[1, 0], [0, 1]], "scale": 1e-10, "weights": {"key": [[1e12, 0], [0, 1]]}},
     ["--step", "4"], "x2: q₁ · k₂ = 1·0 + 0·1 = 0   →   1.0000e-10 × 0 = 0"),  # one scale, written one way
    # a query of 1e-6 against a key of 1e6: it read "0.0000·1000000 = 1"
    ({"inputs": [[1e-6, 1e-6]], "context": [[1e6, 0]], "scale": "none"}, ["--step", "4"],
     "c1: q₁ · k₁ = 1.0000e-06·1000000 + 0.0000·0 = 1"),  # 1e-6·0 is 0 at any precision
    # normalize: sum of tiny scores: it read "0.0000 / 0.0000 = 0.5000"
    ({"inputs": [[1e-6, 0], [1e-6, 1e-6]], "normalize": "sum", "scale": "none"}, ["--step", "5"],
     "x1: a = 1.0000e-12 / 2.0000e-12 = 0.5000"),
])
def test_a_factor_too_small_for_the_decimals_is_written_so_the_line_holds(runner, tmp_path, doc, args, line):
    assert line in explain(runner, doc, tmp_path, *args)["lines"]


def test_small_numbers_that_read_0_stay_0_where_the_product_is_0_too(runner, tmp_path):
    """The built-in walkthrough keeps its look: query 2's weight 6e-06 times [1, 2, 3] is 0.0000 either way."""
    data = json.loads(runner.invoke(app, ["explain", "--step", "6", "--query", "2", "--format", "json"]).stdout)
    assert data["lines"][0] == "Input 1: 0.0000 × [1, 2, 3] = [0.0000, 0.0000, 0.0000]"


def test_add_norm_writes_large_means_in_e_notation(runner, tmp_path):
    doc = {"inputs": [[1, 2], [3, 4]], "scale": "none", "add_norm": True, "weights": {"value": [[1e20, 0], [0, 1e20]]}}
    lines = explain(runner, doc, tmp_path, "--step", "add_norm")["lines"]
    assert re.fullmatch(rf"mean = ({NUMBER})   var = ({NUMBER})   ε = 1e-05", lines[1]) and "e+" in lines[1], lines
    assert len(lines[1]) < 60  # not 50 digits of float noise


@pytest.mark.parametrize("weights", [{"value": [[1e200, 0], [0, 1e200]]}, {"value": [[1e160, 0], [0, 1]]}])
def test_add_norm_whose_variance_overflows_is_an_error_not_zeros(runner, tmp_path, weights):
    """LayerNorm of [3e200, 4e200] is [-1, 1]; with the variance overflowing to inf it came out [0, 0]."""
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"inputs": [[1, 2], [3, 4]], "scale": "none", "add_norm": True, "weights": weights}))
    for args in (["compute", str(path), "--format", "json"], ["explain", str(path), "--step", "add_norm"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and result.stdout == "", result.output
        assert "Add & Norm overflows float64 at row 1 ('x1'): the variance of the residual" in result.stderr


def test_a_residual_that_overflows_is_an_error_not_an_internal_one(runner, tmp_path):
    path = tmp_path / "doc.json"
    tiny = [[1e-300, 0], [0, 1e-300]]
    path.write_text(json.dumps({"inputs": [[1e308, 1e308]], "weights": {"query": tiny, "key": tiny}, "add_norm": True}))
    result = runner.invoke(app, ["compute", str(path), "--format", "json"])
    assert result.exit_code == 2 and "residual overflow float64 at row 1 ('x1')" in result.stderr, result.output


def test_why_does_not_call_tiny_relevances_zero(runner, tmp_path):
    x = np.array([[1e-7, 2e-7], [3e-7, -1e-7]])
    stages = {s["step"]: s for s in explain(runner, {"inputs": x.tolist()}, tmp_path, "--why")["steps"]}
    r = x @ x.T
    for name in ("b", "c"):
        assert not any("add up to 0" in p for p in stages[name]["text"]), stages[name]["text"]
        assert np.allclose(stages[name]["numbers"]["weights"]["values"], r / r.sum(axis=1, keepdims=True))
    cancelled = explain(runner, {"inputs": [[1, 0], [-1, 0]]}, tmp_path, "--why")["steps"][1]  # rows [1, -1]: sum 0
    assert sum("add up to 0" in p for p in cancelled["text"]) == 2


def test_why_with_relevances_that_overflow_is_one_error_line(runner, tmp_path):
    path = tmp_path / "doc.json"
    tiny = [[1e-200, 0], [0, 1e-200]]
    path.write_text(json.dumps({"inputs": [[1e200, 2e200], [3e200, -1e200]], "weights": {"query": tiny, "key": tiny}}))
    result = runner.invoke(app, ["explain", str(path), "--why"])
    assert result.exit_code == 2 and result.stdout == ""
    err = result.stderr
    assert err.startswith("Error: ") and err.count("\n") == 1, err
    assert "--why: stage b" in err and "relevance overflow float64" in err, err
