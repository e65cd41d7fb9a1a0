"""The Chinese an audit found wanting (issue 44): --why's relevance stages call a row of R divided by its sum 权重
only when no number of it is negative, and write their formula line in Chinese; a tie of two is not 这几个; the
check hint for a one-row answer has one colon of its own; a LaTeX comment names its rows and columns in Chinese."""

from __future__ import annotations

import re

from conftest import EXAMPLES

from attncli.cli import app

CJK = re.compile(r"[\u4e00-\u9fff]")


def run(runner, args: list[str]) -> str:
    result = runner.invoke(app, args, env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.stdout


def stage(text: str, name: str) -> str:
    """Stage ``name`` (a to e) of --why's text."""
    return re.split(r"\n(?=(?:步骤|Step) [a-e] · )", "\n" + text)[" abcde".index(name)]


def test_a_negative_share_of_a_row_is_not_called_a_weight(runner, tmp_path):
    # X = [[2, 1], [-1, 1]]: X·Xᵀ = [[5, -1], [-1, 2]], rows summing to 4 and 1: [[1.25, -0.25], [-1, 2]]
    doc = tmp_path / "negative.yaml"
    doc.write_text("tokens: [a, b]\ninputs: [[2, 1], [-1, 1]]\nweights: {query: [[1, 0], [0, 1]], "
                   "key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}\nscale: none\n", encoding="utf-8")
    b = stage(run(runner, ["explain", str(doc), "--why", "--lang", "zh"]), "b")
    assert "公式：R = X·Xᵀ   A = R / 每行之和" in b and "row sum" not in b
    table = b.split("R / 每行之和   2 × 2")[1].split("输出")[0]
    assert ["1.2500", "-0.2500"] == re.findall(r"-?\d\.\d{4}", table)[:2] and "-1.0000" in table
    assert "\n权重   2 × 2" not in b
    d = stage(run(runner, ["explain", str(doc), "--why", "--lang", "zh"]), "d")
    assert "\n权重   2 × 2" in d  # softmax's weights are weights


def test_weights_of_a_row_with_no_negative_number_keep_their_name(runner):
    b = stage(run(runner, ["explain", "--why", "--lang", "zh"]), "b")  # X·Xᵀ of the illustrated inputs: all ≥ 0
    assert "\n权重   3 × 3" in b and "公式：R = X·Xᵀ   A = R / 每行之和" in b
    english = stage(run(runner, ["explain", "--why", "--lang", "en"]), "b")
    assert "A = R / row sum" in english and "Weights   3 × 3" in english


def test_a_tie_of_two_stalls_is_not_these_several(runner):
    # the illustrated query 1: scores 2, 4, 4, so weights e²/(e² + 2e⁴) and twice e⁴/(e² + 2e⁴) = 0.4683: 47%
    d = stage(run(runner, ["explain", "--why", "--lang", "zh"]), "d")
    sentence = "".join(d.split()).split("这里“Input1”在")[1].split("。")[0]  # (spaces and line breaks left out)
    assert sentence == "“Input2”和“Input3”的摊位上各花了47%的权重，这些摊位的得分不相上下"
    assert "这几个" not in d


def test_the_one_row_hint_has_one_colon_of_its_own():
    from attncli.teach.texts import texts

    CHECK = texts("zh")["check"]
    for key in ("row_match", "row_closest", "row_match_context", "row_closest_context"):
        assert CHECK[key].replace("query:", "").count("：") == 1, CHECK[key]


def test_a_latex_comment_names_rows_and_columns_in_chinese(runner):
    text = run(runner, ["compute", str(EXAMPLES / "illustrated.yaml"), "--only", "weights", "-f", "latex",
                        "--lang", "zh"])
    comment = text.splitlines()[0]
    assert comment == ("% 注意力权重：A = softmax(S)（3 × 3）；行：Input 1, Input 2, Input 3；"
                       "列：Input 1, Input 2, Input 3")
    english = run(runner, ["compute", str(EXAMPLES / "illustrated.yaml"), "--only", "weights", "-f", "latex"])
    assert english.splitlines()[0] == ("% Weights: A = softmax(S) (3 × 3); rows: Input 1, Input 2, Input 3; "
                                       "columns: Input 1, Input 2, Input 3")


def test_a_sum_normalised_formula_names_the_row_sum_in_chinese(runner, tmp_path):
    doc = tmp_path / "sum.yaml"
    doc.write_text((EXAMPLES / "illustrated.yaml").read_text(encoding="utf-8") + "normalize: sum\n", encoding="utf-8")
    text = run(runner, ["compute", str(doc), "--only", "weights", "--lang", "zh"])
    assert text.splitlines()[0].startswith("注意力权重  A = (S) / 每行之和   3 × 3")
    # the illustrated query 1: scores 2, 4, 4 divided by their sum 10
    assert "│ Input 1 │  0.2000 │  0.4000 │  0.4000 │" in text
