"""No English left in Chinese tables and pages (review fixes B): formula notes and the rotary formula in compute's
titles, a masked cell, the page's gradient titles, its terms (得分), and a vector's row label."""

from __future__ import annotations

import json
import re

import pytest
from conftest import EXAMPLES

import attncli
from attncli.cli import app
from attncli.outputs.blocks import blocks
from attncli.outputs.titles import formula
from attncli.teach.texts import texts

ENGLISH = re.compile(r"(?<![\w'.])[A-Za-z]{3,} [A-Za-z]{2,}(?![\w'])")  # two English words in a row


pytestmark = pytest.mark.usefixtures("language_from_environment")  # (conftest)


@pytest.fixture
def latent(tmp_path):
    """examples/latent.yaml with a gradient: grouped heads, partial RoPE, the latent's norm and every gradient."""
    doc = tmp_path / "lat.yaml"
    doc.write_text((EXAMPLES / "latent.yaml").read_text(encoding="utf-8")
                   + "\ngradient: {random: normal, seed: 0}\n", encoding="utf-8")
    return doc


def _run(runner, monkeypatch, args: list[str], lang: str) -> str:
    monkeypatch.setenv("ATTNCLI_LANG", lang)
    monkeypatch.setenv("COLUMNS", "200")  # (a title on one line)
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_computes_chinese_titles_have_no_english_words(runner, monkeypatch, latent):
    english = _run(runner, monkeypatch, ["compute", str(latent)], "en")
    chinese = _run(runner, monkeypatch, ["compute", str(latent), "--lang", "zh"], "zh")
    assert "(every path)" in english and "(summed over the group)" in english and "last 2 of 3 dims" in english
    titles = [line for line in chinese.splitlines() if re.search(r"[\u4e00-\u9fff]", line)]
    assert titles and not [line for line in titles if ENGLISH.search(line)], [t for t in titles if ENGLISH.search(t)]
    assert "dX = dL/dX（所有路径）" in chinese and "dK = dL/dK（对组内求和）" in chinese
    assert "Q′ = rope(Q): 配对 (i, i + 1), θ = 10000, 后 2 维（共 3 维）" in chinese


def test_a_formulas_words_in_chinese_keep_its_symbols():
    assert formula("Q = given", "zh") == "Q = 给定" and formula("Q = given", "en") == "Q = given"
    assert formula("pairs (2i, 2i + 1), given frequencies, yarn scaling ×4, first 4 of 8 dims", "zh") == \
        "配对 (2i, 2i + 1), 给定的频率, yarn 缩放 ×4, 前 4 维（共 8 维）"
    assert formula("d(H ⊙ G) = dY·W_Oᵀ per head", "zh") == "d(H ⊙ G) = dY·W_Oᵀ（每个头）"


def test_a_masked_cell_is_named_in_the_tables_language(runner, monkeypatch):
    grads = str(EXAMPLES / "backward" / "grads.yaml")
    english = _run(runner, monkeypatch, ["explain", grads, "--step", "backward"], "en")
    chinese = _run(runner, monkeypatch, ["explain", grads, "--step", "backward", "--lang", "zh"], "zh")
    assert "masked" in english and "masked" not in chinese and "已屏蔽" in chinese
    compute = _run(runner, monkeypatch, ["compute", grads, "--lang", "zh"], "zh")
    assert "masked" not in compute and "已屏蔽" in compute


def test_the_pages_chinese_titles_and_a_vectors_row(runner, monkeypatch, latent, tmp_path):
    out = tmp_path / "z.html"
    _run(runner, monkeypatch, ["page", str(latent), "--lang", "zh", "-o", str(out)], "zh")
    html = out.read_text(encoding="utf-8")
    zh = [json.loads(f'"{text}"') for text in re.findall(r'"zh":"((?:[^"\\]|\\.)*)"', html)]
    gradients = [text for text in zh if "梯度" in text]
    assert len(gradients) >= 10 and not [t for t in gradients if "Gradient" in t], gradients
    assert "c_KV 的梯度  dc_KV = dK_nope·W_UKᵀ + dV·W_UVᵀ" in zh
    assert "latent.kv_norm 的 γ 的梯度  dγ = dL/dγ (kv_norm)" in zh
    # a vector's one row is named (dγ), as a bias's is (b_Q)
    gamma = blocks(attncli.compute(latent), only=["grad_latent_kv_norm_gamma"])[0]
    assert gamma.rows == ["dγ"] and gamma.matrix.shape[0] == 1


def test_the_pages_chinese_says_defen_for_scores():
    words = json.dumps([texts("zh")["page"], texts("zh")["page_grads"]], ensure_ascii=False)
    assert "分数" not in words and "得分" in words


def test_the_head_columns_of_dy_are_written_in_symbols():
    from attncli.teach.page.gradients import _output

    doc = {"inputs": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], "heads": 2,
           "weights": {"query": [[1, 0], [0, 1]], "key": [[1, 0], [0, 1]], "value": [[1, 0], [0, 1]]},
           "gradient": [[0.5, -1.0], [2.0, 0.25], [1.0, 1.0]]}
    work = _output(attncli.compute(doc), "grad_head_outputs", 1, 2, 0, 4)
    assert work.formula == "dH_h = dY[:, (h − 1)·1 + 1 … h·1]" and work.value == 1.0  # head 2's column: dY[3, 2]
