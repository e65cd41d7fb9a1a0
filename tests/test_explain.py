"""attncli explain: every step on the built-in example with the walkthrough's numbers, every example, errors."""

from __future__ import annotations

import json
import math
import re

import pytest
from conftest import EXAMPLES

from attncli.cli import app

EXAMPLE_FILES = sorted(str(p) for p in EXAMPLES.rglob("*.yaml")
                       if p.parent.name not in ("stacked", "linear"))  # (test_stacked.py; linear: test_lightning.py)
CJK = re.compile(r"[\u4e00-\u9fff]")


def run(runner, *args):
    return runner.invoke(app, ["explain", *args])


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """Run from a folder with no examples in it: the built-in example must still be found."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def step_json(runner, *args) -> dict:
    result = run(runner, *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def values(data: dict, key: str) -> list:
    return data["numbers"][key]["values"]


# ---------------------------------------------------------------- the built-in example, step by step


def test_step_1_shows_the_three_inputs(runner, elsewhere):
    data = step_json(runner, "--step", "1")
    assert data["step"] == 1
    assert values(data, "inputs") == [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]


def test_step_2_shows_the_three_weight_matrices(runner, elsewhere):
    data = step_json(runner, "--step", "2")
    assert values(data, "w_k") == [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]]
    assert values(data, "w_q") == [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]]
    assert values(data, "w_v") == [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]


def test_step_3_shows_each_row_times_each_weight_matrix(runner, elsewhere):
    result = run(runner, "--step", "3")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())  # (a long line wraps)
    assert ("[1, 0, 1, 0] · W_Q = [1·1 + 0·1 + 1·0 + 0·0, 1·0 + 0·0 + 1·0 + 0·1, 1·1 + 0·0 + 1·1 + 0·1] "
            "= [1, 0, 2]") in text
    # each cell written out, so that a wrong k₂ can be traced to its products
    assert ("[0, 2, 0, 2] · W_K = [0·0 + 2·1 + 0·0 + 2·1, 0·0 + 2·1 + 0·1 + 2·1, 0·1 + 2·0 + 0·0 + 2·0] "
            "= [4, 4, 0]") in text
    assert ("[1, 1, 1, 1] · W_V = [1·0 + 1·0 + 1·1 + 1·1, 1·2 + 1·3 + 1·0 + 1·1, 1·0 + 1·0 + 1·3 + 1·0] "
            "= [2, 6, 3]") in text
    data = step_json(runner, "--step", "3")
    assert values(data, "keys") == [[0, 1, 1], [4, 4, 0], [2, 3, 1]]
    assert values(data, "values") == [[1, 2, 3], [2, 8, 0], [2, 6, 3]]


def test_step_4_writes_out_the_dot_products_of_input_1(runner, elsewhere):
    result = run(runner, "--step", "4")
    assert result.exit_code == 0
    for line in ("1·0 + 0·1 + 2·1 = 2", "1·4 + 0·4 + 2·0 = 4", "1·2 + 0·3 + 2·1 = 4"):
        assert line in result.stdout
    assert values(step_json(runner, "--step", "4"), "scores") == [[2, 4, 4]]


def test_step_4_of_query_2_shows_4_16_12(runner, elsewhere):
    assert values(step_json(runner, "--step", "4", "--query", "2"), "scores") == [[4, 16, 12]]
    assert values(step_json(runner, "--step", "4", "--query", "Input 2"), "scores") == [[4, 16, 12]]
    assert "2·0 + 2·1 + 2·1 = 4" in run(runner, "--step", "4", "--query", "2").stdout


def test_step_5_softmax_exponentials_sum_and_weights(runner, elsewhere):
    result = run(runner, "--step", "5")
    for text in ("7.3891", "54.5982", "116.5854", "0.0634", "0.4683"):  # e², e⁴, e² + 2e⁴
        assert text in result.stdout
    for line in ("Input 1: exp(2) = 7.3891", "Input 3: exp(4) = 54.5982", "Σ = 7.3891 + 54.5982 + 54.5982 = 116.5854",
                 "Input 2: a = 54.5982 / 116.5854 = 0.4683"):
        assert line in result.stdout
    weights = values(step_json(runner, "--step", "5"), "weights")[0]
    assert weights == pytest.approx([0.0634, 0.4683, 0.4683], abs=5e-5)


def test_step_6_multiplies_each_weight_by_its_value_row(runner, elsewhere):
    rows = values(step_json(runner, "--step", "6"), "weighted_values")
    assert rows[1] == pytest.approx([0.4683 * 2, 0.4683 * 8, 0], abs=1e-3)
    assert "× [2, 8, 0]" in run(runner, "--step", "6").stdout


def test_step_7_gives_the_exact_and_the_walkthroughs_rounded_output(runner, elsewhere):
    result = run(runner, "--step", "7")
    text = " ".join(result.stdout.split())
    assert "[0.0, 0.5, 0.5]" in text and "[2.0, 7.0, 1.5]" in text
    assert "[1.9366, 6.6831, 1.5951]" in text
    assert "scale: none" in text
    head_output = values(step_json(runner, "--step", "7"), "head_output")[0]
    assert head_output == pytest.approx([1.9366, 6.6831, 1.5951], abs=5e-5)


def test_step_8_shows_every_query_at_once(runner, elsewhere):
    data = step_json(runner, "--step", "8")
    assert "softmax" in data["formula"] and "V" in data["formula"]
    assert values(data, "head_outputs")[1] == pytest.approx([2.0, 7.9640, 0.0540], abs=5e-5)


def test_the_rounding_note_is_only_for_the_builtin_example(runner):
    text = run(runner, str(EXAMPLES / "two_heads.yaml"), "--step", "7").stdout
    assert "[2.0, 7.0, 1.5]" not in text
    assert "[2.0, 7.0, 1.5]" in " ".join(run(runner, str(EXAMPLES / "illustrated.yaml"), "--step", "7").stdout.split())


# ---------------------------------------------------------------- every example, step and language


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("file", EXAMPLE_FILES, ids=lambda p: p.split("examples/")[-1])
def test_every_example_every_step_every_language(runner, file, lang):
    for step in ["all", *map(str, range(1, 9))]:
        result = run(runner, file, "--step", step, "--lang", lang)
        assert result.exit_code == 0, (step, result.output)
        assert "Traceback" not in result.output


@pytest.mark.parametrize("file", EXAMPLE_FILES, ids=lambda p: p.split("examples/")[-1])
def test_every_chinese_step_text_is_chinese(runner, file):
    for step in step_json(runner, file, "--lang", "zh")["steps"]:
        assert CJK.search(step["title"]), step["title"]
        assert step["text"] and all(CJK.search(paragraph) for paragraph in step["text"]), step["text"]


def test_english_is_the_default_and_has_no_chinese_sentences(runner):
    for step in step_json(runner)["steps"]:
        assert not any(CJK.search(paragraph) for paragraph in step["text"])


def test_the_chosen_head_is_shown(runner):
    file = str(EXAMPLES / "two_heads.yaml")
    head_1 = values(step_json(runner, file, "--step", "4"), "scores")
    head_2 = values(step_json(runner, file, "--step", "4", "--head", "2"), "scores")
    assert head_1 != head_2
    data = step_json(runner, file, "--step", "8")
    assert {"concat", "output"} <= set(data["numbers"])
    assert "W_O" in data["formula"]


def test_cross_attention_scores_a_query_against_the_context(runner):
    data = step_json(runner, str(EXAMPLES / "cross_attention.yaml"), "--step", "4", "--query", "am")
    assert data["numbers"]["scores"]["columns"] == ["我", "是", "学生"]
    assert data["token"] == "am"
    assert "√3" in run(runner, str(EXAMPLES / "cross_attention.yaml"), "--step", "4").stdout


def test_causal_mask_shows_masked_keys_and_null_in_json(runner):
    data = step_json(runner, str(EXAMPLES / "causal.yaml"), "--step", "4", "--query", "2")
    assert data["numbers"]["scaled_scores"]["values"][0][2:] == [None, None]
    weights = values(step_json(runner, str(EXAMPLES / "causal.yaml"), "--step", "5", "--query", "2"), "weights")[0]
    assert weights[2:] == [0, 0] and sum(weights) == pytest.approx(1.0)


# ---------------------------------------------------------------- JSON


def test_json_of_one_step_is_one_object_with_its_fields(runner):
    data = step_json(runner, "--step", "4")
    assert {"step", "title", "formula", "text", "lines", "numbers", "query", "head", "lang"} <= set(data)
    assert data["numbers"]["scores"]["rows"] == ["Input 1"]


def test_json_of_all_steps_lists_them_in_order(runner):
    data = step_json(runner)
    assert [s["step"] for s in data["steps"]] == list(range(1, 9))


def test_json_is_strict(runner):
    text = run(runner, str(EXAMPLES / "causal.yaml"), "--format", "json").stdout
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("args, words", [
    (["--step", "0"], "1 to 8"),
    (["--step", "9"], "1 to 8"),
    (["--step", "soon"], "1 to 8"),
    (["--query", "0"], "queries count from 1"),  # (refused before the document is read: issue 26)
    (["--query", "4"], "1 to 3"),
    (["--query", "Input 9"], "1 to 3"),
    (["--head", "2"], "one head, head 1"),
    (["--step", "add_norm"], "add_norm:"),
    (["--why", "--step", "3"], "--why"),
    (["--export", "x.jpg"], ".svg"),  # (.png is a picture too since issue 18)
])
def test_errors_exit_2_naming_the_valid_range(runner, elsewhere, args, words):
    result = run(runner, *args)
    assert result.exit_code == 2, result.output
    assert words in result.stderr and result.stdout == ""
    assert "Traceback" not in result.output


def test_a_query_with_every_key_masked_says_so_instead_of_an_empty_sum(runner, tmp_path):
    path = tmp_path / "doc.yaml"
    path.write_text("inputs: [[1, 0], [0, 1], [1, 1]]\nmask: [[0, 0, 0], [1, 1, 0], [1, 1, 1]]\n")
    data = step_json(runner, str(path), "--step", "5", "--query", "1")
    assert values(data, "weights") == [[0, 0, 0]] and data["lines"] == []
    assert "Every key is masked" in " ".join(data["text"])
    data = step_json(runner, str(path), "--step", "5", "--query", "2")
    big = math.exp(1 / math.sqrt(2))  # x2 = [0, 1] against the keys [1, 0] and [0, 1]: scores 0 and 1, times 1/√2
    assert values(data, "exponentials")[0][:2] == pytest.approx([1.0, big])
    assert values(data, "exponentials")[0][2] is None
    assert values(data, "weights")[0] == pytest.approx([1 / (1 + big), big / (1 + big), 0])


def test_step_3_formula_names_the_biases_once(runner):
    data = step_json(runner, str(EXAMPLES / "two_heads.yaml"), "--step", "3")
    assert data["formula"] == "Q = X·W_Q + b_Q   K = X·W_K + b_K   V = X·W_V + b_V"
    cross = step_json(runner, str(EXAMPLES / "cross_attention.yaml"), "--step", "3")
    assert cross["formula"] == "Q = X·W_Q   K = C·W_K   V = C·W_V"


@pytest.mark.parametrize("lang, says, not_said", [
    ("en", "the one other key has weight 0 and adds nothing", "the other 1 keys"),
    ("zh", "剩下的那一个键权重是 0", "其余 1 个键"),
])
def test_step_7_with_one_key_at_weight_0_says_the_one_other_key(runner, lang, says, not_said):
    """causal.yaml's query 3 ("Riley") sees three of the four keys: the one other key has weight 0."""
    step = json.loads(runner.invoke(app, ["explain", str(EXAMPLES / "causal.yaml"), "--step", "7", "--query", "3",
                                          "--lang", lang, "--format", "json"]).stdout)
    text = " ".join(step["text"])
    assert says in text and not_said not in text, text
