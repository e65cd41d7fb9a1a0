"""attncli explain: --why against numpy written here, the extra steps, score/normalize variants, answer marking."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from conftest import EXAMPLES

from attncli.cli import app

X = np.array([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]], dtype=float)
W_Q = np.array([[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]], dtype=float)
W_K = np.array([[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]], dtype=float)
W_V = np.array([[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]], dtype=float)


def document(tmp_path, **changes):
    data = yaml.safe_load((EXAMPLES / "illustrated.yaml").read_text())
    data.update(changes)
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return str(path)


def explain_json(runner, *args) -> dict:
    result = runner.invoke(app, ["explain", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def numbers(step: dict, key: str) -> np.ndarray:
    return np.array(step["numbers"][key]["values"], dtype=float)


def row_softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------- --why


def test_why_walks_average_symmetric_query_key_softmax_on_the_users_numbers(runner):
    stages = {s["step"]: s for s in explain_json(runner, "--why")["steps"]}
    q, k, v = X @ W_Q, X @ W_K, X @ W_V
    assert numbers(stages["a"], "output") == pytest.approx(np.tile(v.mean(axis=0), (3, 1)))
    r = X @ X.T
    assert numbers(stages["b"], "relevance") == pytest.approx(r)
    a = r / r.sum(axis=1)[:, None]  # each row by its own sum
    assert numbers(stages["b"], "weights") == pytest.approx(a)
    assert numbers(stages["b"], "weights").sum(axis=1) == pytest.approx(np.ones(3))
    assert numbers(stages["b"], "output") == pytest.approx(a @ v)
    s = q @ k.T
    assert numbers(stages["c"], "weights") == pytest.approx(s / s.sum(axis=1)[:, None])
    assert numbers(stages["c"], "output") == pytest.approx(s / s.sum(axis=1)[:, None] @ v)
    assert numbers(stages["d"], "output") == pytest.approx(row_softmax(s) @ v)  # scale: none
    assert numbers(stages["d"], "output")[0] == pytest.approx([1.9366, 6.6831, 1.5951], abs=5e-5)


def test_why_symmetric_relevance_is_symmetric_and_query_key_relevance_is_not(runner):
    stages = {s["step"]: s for s in explain_json(runner, "--why")["steps"]}
    r = numbers(stages["b"], "relevance")
    assert np.array_equal(r, r.T)
    s = numbers(stages["c"], "relevance")
    assert np.array_equal(s, s.T)  # a coincidence of the walkthrough's weights, and step 4 says so
    assert "happens to be symmetric" in " ".join(explain_json(runner, "--step", "4")["text"])
    heads = {s["step"]: s for s in explain_json(runner, str(EXAMPLES / "two_heads.yaml"), "--why")["steps"]}
    s = numbers(heads["c"], "relevance")
    assert not np.allclose(s, s.T)
    text = " ".join(explain_json(runner, str(EXAMPLES / "two_heads.yaml"), "--step", "4")["text"])
    assert "the score of “The” for “sat” is q₁·k₃ = 0.5000, but the score of “sat” for “The” is q₃·k₁ = 2.0375" in text


def test_why_a_row_summing_to_zero_is_a_note_never_nan(runner, tmp_path):
    # the first input is orthogonal to the sum of the others: its row of X·Xᵀ adds up to 0
    path = document(tmp_path, inputs=[[1, -1, 0, 0], [1, 0, 0, 0], [-1, 2, 0, 0]])
    result = runner.invoke(app, ["explain", path, "--why", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert "NaN" not in result.stdout
    stage_b = json.loads(result.stdout)["steps"][1]
    assert len(stage_b["text"]) == 2 and "Input 1" in stage_b["text"][1]
    assert numbers(stage_b, "weights")[0] == pytest.approx([0, 0, 0])
    assert runner.invoke(app, ["explain", path, "--why", "--lang", "zh"]).exit_code == 0


def test_why_on_cross_attention_leaves_out_the_symmetric_stage(runner):
    data = explain_json(runner, str(EXAMPLES / "cross_attention.yaml"), "--why")
    assert [s["step"] for s in data["steps"]] == ["a", "b", "c", "d", "e"]  # (e: why the scale, issue 19)
    assert data["steps"][1]["numbers"] == {}


# ---------------------------------------------------------------- extra steps only when used


def test_no_extra_steps_without_positional_or_add_norm(runner):
    assert [s["step"] for s in explain_json(runner)["steps"]] == list(range(1, 9))


def test_positional_step_comes_after_step_1_with_the_sinusoidal_formula(runner, tmp_path):
    path = document(tmp_path, positional="sinusoidal")
    data = explain_json(runner, path)
    assert [s["step"] for s in data["steps"]][:3] == [1, "positional", 2]
    step = explain_json(runner, path, "--step", "positional")
    i, k = np.arange(3)[:, None], np.arange(2)[None, :]
    p = np.zeros((3, 4))
    p[:, 0::2], p[:, 1::2] = np.sin(i / 10000 ** (2 * k / 4)), np.cos(i / 10000 ** (2 * k / 4))
    assert numbers(step, "positional") == pytest.approx(p)
    assert numbers(step, "embedded") == pytest.approx(X + p)
    step_3 = explain_json(runner, path, "--step", "3")
    queries = numbers(step_3, "queries")
    assert step_3["formula"].startswith("Q = (X + P)·W_Q")
    assert queries == pytest.approx((X + p) @ W_Q)


def test_add_norm_step_comes_after_step_8_and_matches_layer_norm(runner, tmp_path):
    path = document(tmp_path, weights={"query": W_Q.tolist(), "key": W_K.tolist(), "value": W_V.tolist(),
                                       "output": np.eye(3, 4).tolist()}, add_norm=True)
    data = explain_json(runner, path)
    assert [s["step"] for s in data["steps"]][-2:] == [8, "add_norm"]
    step = explain_json(runner, path, "--step", "add_norm")
    y = row_softmax((X @ W_Q) @ (X @ W_K).T) @ (X @ W_V) @ np.eye(3, 4)
    r = X + y
    expected = (r - r.mean(axis=1, keepdims=True)) / np.sqrt(r.var(axis=1, keepdims=True) + 1e-5)
    assert numbers(step, "residual") == pytest.approx(r)
    assert numbers(step, "normalized") == pytest.approx(expected, abs=1e-9)
    for lang in ("en", "zh"):
        assert runner.invoke(app, ["explain", path, "--step", "add_norm", "--lang", lang]).exit_code == 0


# ---------------------------------------------------------------- score and normalize variants


def test_sum_normalisation_divides_by_the_row_sum_in_step_5(runner, tmp_path):
    path = document(tmp_path, normalize="sum")
    step = explain_json(runner, path, "--step", "5")
    assert numbers(step, "weights")[0] == pytest.approx(np.array([2, 4, 4]) / 10)
    assert "normalize: sum" in " ".join(step["text"])
    assert "2 / 10 = 0.2000" in step["lines"][0]


def test_additive_scores_explain_without_dot_products(runner, tmp_path):
    w = {"query": W_Q.tolist(), "key": W_K.tolist(), "value": W_V.tolist(),
         "w1": np.eye(3).tolist(), "w2": np.eye(3).tolist(), "v": [1.0, 1.0, 1.0]}
    path = document(tmp_path, score="additive", weights=w)
    step = explain_json(runner, path, "--step", "4")
    q, k = X @ W_Q, X @ W_K
    expected = np.tanh(q[0] + k).sum(axis=1)  # vᵀ·tanh(q·W₁ + k·W₂) with W₁ = W₂ = I, v = 1
    assert numbers(step, "scores")[0] == pytest.approx(expected)
    assert "Bahdanau" in " ".join(step["text"])
    for lang in ("en", "zh"):
        assert runner.invoke(app, ["explain", path, "--lang", lang]).exit_code == 0


# ---------------------------------------------------------------- the learner's answer


def test_the_first_wrong_step_is_marked_with_expected_and_given(runner, tmp_path):
    path = document(tmp_path, answer={"query": 1, "scores": [2, 4, 4], "weights": [0.06, 0.5, 0.44]})
    data = explain_json(runner, path)
    marked = [s["step"] for s in data["steps"] if s["notes"]]
    assert marked == [5]
    note = data["steps"][4]["notes"][0]
    assert "0.468" in note and "0.5" in note


def test_a_right_answer_marks_nothing(runner, tmp_path):
    path = document(tmp_path, answer={"query": 2, "scores": [4, 16, 12]})
    assert not any(s["notes"] for s in explain_json(runner, path)["steps"])


def test_forgotten_transpose_shape_is_marked_at_step_4_in_chinese_too(runner, tmp_path):
    path = document(tmp_path, answer={"scores": [[2, 4, 4], [4, 16, 12], [4, 12, 11]]})
    data = explain_json(runner, path, "--lang", "zh")
    (step,) = [s for s in data["steps"] if s["notes"]]
    assert step["step"] == 4 and "10" in step["notes"][0] and "11" in step["notes"][0]


# ---------------------------------------------------------------- Chinese paragraphs on a terminal


def test_chinese_paragraphs_break_between_characters_within_the_width():
    from rich.cells import cell_len

    from attncli.teach.explain.view import wrap_cjk
    from attncli.teach.texts import texts

    text = texts("zh")["scores"]["dot"].format(q="Input 1")
    for width in (20, 37, 80):
        lines = wrap_cjk(text, width)
        assert all(cell_len(line) <= width for line in lines)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")
        assert not any(line[0] in "，。；：" for line in lines)
    assert wrap_cjk(text, 80)[0].startswith("Input 1 对某个键")  # no jump to a new line after the label


def test_chinese_steps_fit_a_narrow_terminal(runner):
    import io

    from rich.cells import cell_len
    from rich.console import Console

    from attncli.cli.load import load
    from attncli.teach.explain.view import renderables
    from attncli.teach.explain.walkthrough import Focus, steps
    from attncli.teach.texts import texts

    trace = load(str(EXAMPLES / "illustrated.yaml"))
    out = Console(file=io.StringIO(), width=60, color_system=None)
    for item in renderables(steps(trace, Focus(0, 0, "zh")), texts("zh")):
        out.print(item)
    text = out.file.getvalue()
    assert all(cell_len(line) <= 60 for line in text.splitlines())
    assert "查询权重  W_Q   4 × 3" in text  # the table title on one line
