"""Messages whose Chinese became partly English (or reworded) when messages became data, and the lines they had
before (the regex catalogue of 1ec38a8, the reference here): a field the codemod built from English grammar
(``is `` + ``one`` + `` query head``, ``positive `` + ``finite number``, ``inputs have 4 columns``) and the
phrase ``{n} heads`` the catalogue had lost. The English line is checked too: it must not have changed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from attncli.cli import app

X = "inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]\n"
LATENT = Path(__file__).resolve().parent.parent / "examples" / "latent.yaml"


def _latent_with_a_short_kv_down() -> str:
    doc = yaml.safe_load(LATENT.read_text(encoding="utf-8"))
    doc["weights"]["kv_down"] = [[1, 2]]
    return yaml.safe_dump(doc)


CASES = [  # (document, English line, Chinese line), each after "doc.yaml: "
    (X + "heads: 3\nweights: {query: [[[1], [0], [1], [0]], [[1], [0], [1], [0]]]}\n",
     "weights.query: is 3-D with 2 heads but heads is 3", "weights.query: 是三维的，有 2 个头，但 heads 是 3"),
    ("queries: {random: normal, seed: 1, shape: [4, 2, 2]}\nkeys: [[1, 2]]\nvalues: [[1, 2]]\n",
     "keys: has 2 columns, which 4 heads cannot split into equal blocks",
     "keys: 有 2 列，无法被 4 个头平均分成等宽的块"),
    (_latent_with_a_short_kv_down(), "weights.kv_down: is 1×2 but inputs have 4 columns (need 4 rows)",
     "weights.kv_down: 是 1×2，但 inputs 有 4 列（需要 4 行）"),
    ("inputs: [[1, 0], [0, 1]]\nsoftcap: -1\n", "softcap: -1 is not a positive finite number",
     "softcap: -1 不是有限的正数"),
    ("inputs: [[1, 0], [0, 1]]\npre_norm: {kind: rms, eps: 0}\n", "pre_norm.eps: 0 is not a positive finite number",
     "pre_norm.eps: 0 不是有限的正数"),
    ("inputs: [[1, 0], [0, 1]]\nsinks: [1, 2, 3]\n", "sinks: is 3 but there is one query head: one sink logit each",
     "sinks: 是 3，但只有一个查询头：每个查询头一个 sink logit"),
    ("inputs: [[1, 0], [0, 1]]\nheads: 2\nsinks: [1, 2, 3]\n",
     "sinks: is 3 but there are 2 query heads: one sink logit each",
     "sinks: 是 3，但有 2 个查询头：每个查询头一个 sink logit"),
]


@pytest.mark.parametrize("doc, english, chinese", CASES,
                         ids=["3-D heads", "heads cannot split", "latent rows", "softcap", "eps", "one sink", "sinks"])
def test_the_line_is_what_it_was_in_both_languages(runner, monkeypatch, tmp_path, doc, english, chinese):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "doc.yaml").write_text(doc, encoding="utf-8")
    for lang, prefix, wanted in (("en", "Error: ", english), ("zh", "错误：", chinese)):
        result = runner.invoke(app, ["compute", "doc.yaml", "--format", "json", "--lang", lang])
        assert result.exit_code == 2 and result.stdout == "", result.stderr
        assert result.stderr == f"{prefix}doc.yaml: {wanted}\n"


OF = "'weights', 'scores', 'scaled_scores', 'score_bias', 'grad_weights', 'grad_scaled_scores', 'differential_weights'"
USAGE = [  # (arguments, English line, Chinese line): an option's value our own callback refuses
    (["compute", "doc.yaml", "-o", ""], "Error: Invalid value for '--output' / '-o': is empty; give a file name",
     "错误：'--output' / '-o' 的值无效：是空的；请给出文件名"),
    (["compute", "doc.yaml", "-o", "out/"],
     "Error: Invalid value for '--output' / '-o': 'out/' names a folder (it ends in /); give a file name",
     "错误：'--output' / '-o' 的值无效：'out/' 是文件夹（以 / 结尾）；请给出文件名"),
    (["compute", "doc.yaml", "-o", "."],
     "Error: Invalid value for '--output' / '-o': '.' names a folder; give a file name",
     "错误：'--output' / '-o' 的值无效：'.' 是文件夹；请给出文件名"),
    (["heatmap", "doc.yaml", "--of", "nope"],
     f"Error: Invalid value for '--of': 'nope' is not one of {OF} (or their formulas' names: S, B, Z, A, W, dA, dZ)",
     f"错误：'--of' 的值无效：'nope' 不是 {OF} 之一（也可以是它们的公式名：S, B, Z, A, W, dA, dZ）"),
]


@pytest.mark.parametrize("args, english, chinese", USAGE, ids=["empty", "slash", "dot", "heatmap --of"])
def test_an_options_value_is_said_in_the_language_given_after_it(capsys, monkeypatch, tmp_path, args, english,
                                                                  chinese):
    from attncli.cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ATTNCLI_LANG", raising=False)
    (tmp_path / "doc.yaml").write_text("inputs: [[1, 0], [0, 1]]\n", encoding="utf-8")
    command = args[0]
    for lang, wanted in (("en", english), ("zh", chinese)):
        with pytest.raises(SystemExit) as stop:
            main([*args, "--lang", lang])  # (--lang after the option: read once the callback has run)
        see = ("（见 ", f" {command} --help）\n") if lang == "zh" else (" (see ", f" {command} --help)\n")
        err = capsys.readouterr().err  # (the program's name is the test runner's here)
        assert stop.value.code == 2 and err.startswith(wanted + see[0]) and err.endswith(see[1]), err


@pytest.mark.parametrize("doc, chinese", [
    ("rope: bogus",
     "rope: 应为 true，或含有 base, dims, style, frequencies, part, attention_factor, scaling 中任意几个的映射"),
    ("pre_norm: bogus", "pre_norm: 应为含有 kind（rms 或 layer）以及 gamma, beta, eps 中任意几个的映射"),
    ("indexer: bogus", "indexer: 应为含有 top_k（必需）以及 heads, d, weights, key_norm, rope 中任意几个的映射"),
    ("differential: bogus",
     "differential: 应为含有 lambda_init 或 layer 以及 lambda_q1, lambda_k1, lambda_q2, lambda_k2 的映射"),
    ("score_bias: {relative: bogus}",
     "score_bias.relative: 应为含有 table 以及 buckets, max_distance, bidirectional 中任意几个的映射"),
], ids=["rope", "pre_norm", "indexer", "differential", "relative"])
def test_what_a_section_should_be_is_chinese(runner, monkeypatch, tmp_path, doc, chinese):
    """(English in both versions before: the mapping's description is built where it is raised.)"""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "doc.yaml").write_text(f"inputs: [[1, 0], [0, 1]]\n{doc}\n", encoding="utf-8")
    result = runner.invoke(app, ["compute", "doc.yaml", "--format", "json", "--lang", "zh"])
    assert result.exit_code == 2 and result.stderr == f"错误：doc.yaml: {chinese}\n"


def test_the_latent_a_kv_up_must_match_is_chinese(runner, monkeypatch, tmp_path):
    doc = yaml.safe_load(LATENT.read_text(encoding="utf-8"))
    doc["weights"]["kv_up"] = [[1, 2]]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "doc.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    said = {lang: runner.invoke(app, ["compute", "doc.yaml", "--lang", lang]).stderr for lang in ("en", "zh")}
    assert said["en"] == ("Error: doc.yaml: weights.kv_up: is 1×2 but the latent (r_kv = 2: weights.kv_down's 4 "
                          "columns less d_r = 2) has 2 numbers (need 2 rows)\n")
    assert said["zh"] == ("错误：doc.yaml: weights.kv_up: 是 1×2，但潜在向量（r_kv = 2："
                          "weights.kv_down 的 4 列减去 d_r = 2）有 2 个数（需要 2 行）\n")


@pytest.mark.parametrize("layout", ["{lengths: [1, 1]}", "[bshd]"])
def test_a_layout_that_is_not_a_name_is_an_error_not_a_bug(runner, monkeypatch, tmp_path, layout):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "doc.yaml").write_text(X + f"layout: {layout}\n", encoding="utf-8")
    result = runner.invoke(app, ["compute", "doc.yaml", "--lang", "en"])
    assert result.exit_code == 2 and result.stderr.startswith("Error: doc.yaml: layout: is "), result.stderr
    assert "expected one of bshd, bhsd, thd" in result.stderr and result.stderr.count("\n") == 1
