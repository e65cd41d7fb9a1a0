"""Differential attention as its users see it: explain's step (its lines worked by hand, in English and Chinese),
the tables' pairs, check's answers, and the commands that compute one kernel call, which refuse it."""

from __future__ import annotations

import json
import math

import pytest

from attncli.cli import app

# X = I₂, identity projections, two heads of one number, scale none (tests/test_differential.py works it by hand):
# A₁ = [[σ, 1 − σ], …], A₂ = [[½, ½], …] with σ = e/(e + 1); λ = 2 − 1 + 0.2 = 1.2
DOC = {"inputs": [[1, 0], [0, 1]], "heads": 2, "scale": "none",
       "differential": {"lambda_q1": [1], "lambda_k1": [math.log(2)], "lambda_q2": [1], "lambda_k2": [0], "layer": 0}}
S = math.e / (math.e + 1)
W0 = [S - 0.6, (1 - S) - 0.6]  # query 1's combined weights
RMS0 = math.sqrt((W0[0] ** 2 + W0[1] ** 2) / 2 + 1e-5)  # O = W (V′ = I₂)


def _write(tmp_path, doc, name="d.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_explain_works_out_the_pair(runner, tmp_path):
    path = _write(tmp_path, DOC)
    result = runner.invoke(app, ["explain", path, "--query", "1", "--step", "differential"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "λ_init = 0.8 − 0.6·e^(−0.3·0) = 0.2000" in out
    assert "λ = e^(λ_q1·λ_k1) − e^(λ_q2·λ_k2) + λ_init = 2 − 1 + 0.2000 = 1.2000" in out
    assert f"x1: w = {S:.4f} − 1.2000·0.5000 = {W0[0]:.4f}" in out
    assert f"√(mean(o²) + ε) = {RMS0:.4f}" in out
    assert f"ô = 0.8000·o / {RMS0:.4f} = [{0.8 * W0[0] / RMS0:.4f}, {0.8 * W0[1] / RMS0:.4f}]" in out
    zh = runner.invoke(app, ["explain", path, "--query", "1", "--step", "differential", "--lang", "zh"])
    assert zh.exit_code == 0 and "差分注意力" in zh.stdout and "λ = e^(λ_q1·λ_k1)" in zh.stdout


def test_explain_step_7_is_the_head_s_own_mix(runner, tmp_path):
    """Step 7 adds up a_j·v_j of the followed head's own values, and says the pair's step follows."""
    result = runner.invoke(app, ["explain", _write(tmp_path, DOC), "--query", "1", "--step", "7"])
    assert result.exit_code == 0, result.stderr
    assert f"= [{S:.4f}]" in result.stdout and "differential step" in " ".join(result.stdout.split())


def test_tables_name_the_pairs(runner, tmp_path):
    doc = {**DOC, "inputs": [[1, 0, 1, 0], [0, 1, 0, 1]], "heads": 4}
    result = runner.invoke(app, ["compute", _write(tmp_path, doc)])
    assert result.exit_code == 0, result.stderr
    assert "Pair 1 (heads 1 and 3) · Differential weights" in result.stdout
    assert "Pair 2 (heads 2 and 4) · Normalised head output" in result.stdout


def test_check_answers_lambda_and_the_head_outputs(runner, tmp_path):
    right = 0.8 * W0[0] / RMS0
    doc = {**DOC, "answer": {"query": 1, "head": 1, "differential_lambda": [1.2], "head_outputs": [right]}}
    result = runner.invoke(app, ["check", _write(tmp_path, doc)])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "differential_lambda correct" in result.stdout and "head_outputs  correct" in result.stdout
    wrong = {**DOC, "answer": {"differential_lambda": [0.2]}}
    result = runner.invoke(app, ["check", _write(tmp_path, wrong, "w.json")])
    assert result.exit_code == 1 and "expected 1.2" in result.stdout


@pytest.mark.parametrize("command", [["compute", "--emulate", "bf16"], ["card"]])
def test_one_kernel_call_commands_refuse_it_in_one_line(runner, tmp_path, command):
    result = runner.invoke(app, [command[0], _write(tmp_path, DOC), *command[1:]])
    assert result.exit_code == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "differential: " in result.stderr


def test_explain_backward_says_d_is_the_weighted_sum_of_da(runner, tmp_path):
    """With differential attention D_i = Σ_j a_ij·dA_ij, which is no longer dH_i·H_i: the line says the first."""
    doc = {**DOC, "gradient": [[1.0, -2.0], [0.5, 3.0]]}
    path = _write(tmp_path, doc)
    out = json.loads(runner.invoke(app, ["compute", path, "--format", "json"]).stdout)
    a, d_a = out["weights"][0][0], out["grad_weights"][0][0]
    delta = sum(x * y for x, y in zip(a, d_a, strict=True))
    dh_h = sum(x * y for x, y in zip(out["grad_head_outputs"][0][0], out["head_outputs"][0][0], strict=True))
    assert abs(delta - dh_h) > 1e-3  # (the identity of plain attention fails here)
    result = runner.invoke(app, ["explain", path, "--step", "backward", "--query", "1"])
    assert result.exit_code == 0, result.stderr
    assert f"x1: D = Σ_j a_j·dA_j = {delta:.4f}" in result.stdout and "dh·h" not in result.stdout


def test_head_keeps_only_the_pairs_the_head_has_a_part_in(runner, tmp_path):
    """--head 1 of four heads: pair 1 (heads 1 and 3) is its softmax's, and its H shows pair 1's numbers (H's heads
    2p−1, 2p); pair 2 (heads 2 and 4) is not shown, nor its λ."""
    vectors = {"lambda_q1": [[1], [2]], "lambda_k1": [[math.log(2)], [0.1]], "lambda_q2": [1], "lambda_k2": [0]}
    doc = {**DOC, "inputs": [[1, 0, 1, 0], [0, 1, 0, 1]], "heads": 4, "differential": {**vectors, "layer": 0}}
    path = _write(tmp_path, doc)
    out = runner.invoke(app, ["compute", path, "--head", "1"]).stdout
    assert "Pair 1 (heads 1 and 3) · Differential weights" in out and "Pair 2" not in out
    lam2 = f"{math.exp(0.2) - 1 + 0.2:.4f}"  # pair 2's λ = e^(2·0.1) − e^0 + 0.2
    assert "│ λ │ 1.2000 │\n" in out and lam2 not in out
    last = runner.invoke(app, ["compute", path, "--head", "4"]).stdout
    assert "Pair 2 (heads 2 and 4) · Differential weights" in last and "Pair 1" not in last
    assert f"│ λ │ {lam2} │\n" in last and "1.2000" not in last.split("Differential λ")[1].split("Pair 2")[0]


def test_head_output_title_counts_pairs_and_heads_from_1(runner, tmp_path):
    path = _write(tmp_path, DOC)
    assert "H = Ô, pair p as heads 2p−1, 2p" in runner.invoke(app, ["compute", path]).stdout
    assert "头对 p 即头 2p−1 与 2p" in runner.invoke(app, ["compute", path, "--lang", "zh"]).stdout


def test_heatmap_draws_the_combined_weights_on_a_scale_centred_on_0(runner):
    """examples/differential.yaml's W (worked in its comment): "the" 1 − 1.2·1 = −0.2, "cat" [−0.3311, 0.1311];
    the scale runs −max|W| … max|W| with 0 in the middle, each cell shaded by |w| / max|w| and its number signed."""
    from conftest import EXAMPLES

    big = 1.2 * 0.5 - (1 / (1 + math.e))  # |W| of cat·the, the largest: 0.3311
    result = runner.invoke(app, ["heatmap", str(EXAMPLES / "differential.yaml"), "--of", "W"],
                           env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Differential weights  W = A₁ − λ·A₂   pair 1 of 1 (heads 1 and 2)")
    assert lines[2].startswith(f"scale -{big:.2f} ▕█▓▒░0░▒▓█▏ {big:.2f}   shade: size, sign: the numbers")
    small = " ░▒▓█"[int((S - 0.6) / big * 5)]  # cat·cat: W = σ(1) − 1.2·0.5 = 0.1311, shade of 0.1311 / 0.3311
    assert f"cat  ██ -{big:.2f} {small * 2}  {S - 0.6:.2f} ╱╱╱╱╱╱╱╱" in lines
    zh = runner.invoke(app, ["heatmap", str(EXAMPLES / "differential.yaml"), "--of", "differential_weights",
                             "--lang", "zh"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert zh.exit_code == 0 and "差分权重  W = A₁ − λ·A₂   第 1 个头对（共 1 个；头 1 与 2）" in zh.stdout


def test_heatmap_of_w_needs_differential(runner, tmp_path):
    doc = {key: value for key, value in DOC.items() if key != "differential"}
    result = runner.invoke(app, ["heatmap", _write(tmp_path, doc), "--of", "W"])
    assert result.exit_code == 2 and "needs differential: in the document" in result.stderr


def test_lambda_init_alone_shows_the_formula_it_used(runner, tmp_path):
    """Without the λ vectors λ = λ_init: the title, the LaTeX and explain's line say that, not e^(λ_q1·λ_k1) − …"""
    path = _write(tmp_path, {**DOC, "differential": {"lambda_init": 0.3}})
    table = runner.invoke(app, ["compute", path, "--only", "differential_lambda"]).stdout
    assert "Differential λ  λ = λ_init = 0.3 " in table and "e^(" not in table and "│ λ │ 0.3000 │" in table
    latex = runner.invoke(app, ["compute", path, "--only", "differential_lambda", "--format", "latex"]).stdout
    assert r"\lambda = \lambda_{\text{init}} = " in latex and r"e^{" not in latex
    out = runner.invoke(app, ["explain", path, "--query", "1", "--step", "differential"]).stdout
    assert "  λ = λ_init = 0.3000\n" in out and "e^(λ_q1" not in out
    vectors = runner.invoke(app, ["compute", _write(tmp_path, DOC, "v.json"), "--only", "differential_lambda"]).stdout
    assert "λ = e^(λ_q1·λ_k1) − e^(λ_q2·λ_k2) + 0.2 " in vectors  # (the four vectors given: their formula)


def test_explain_shows_masked_combined_weights_as_compute_does(runner, tmp_path):
    """Causal: query 1 sees key 1 only; its combined weight for key 2 is 0 − λ·0 = 0, written 0.0000 in explain's
    table as in compute's (and as both write a masked cell of the weights A)."""
    path = _write(tmp_path, {**DOC, "mask": "causal"})
    out = runner.invoke(app, ["explain", path, "--query", "1", "--step", "differential"]).stdout
    cells = lambda text: [line.split() for line in text.splitlines() if line.startswith("│ x1")]  # noqa: E731
    table = out.split("Combined weights")[1].split("\n\n")[0]
    assert "masked" not in table and cells(table) == [["│", "x1", "│", "-0.2000", "│", "0.0000", "│"]]  # 1 − 1.2·1
    computed = runner.invoke(app, ["compute", path, "--only", "differential_weights"]).stdout
    assert cells(computed) == cells(table)


@pytest.mark.parametrize("lang, formula, note", [
    ("en", "H = Ô, pair p as heads 2p−1, 2p", "not the weights times V"),
    ("zh", "H = Ô，头对 p 即头 2p−1 与 2p", "不是权重乘以 V"),
])
def test_explain_step_8_of_differential_attention_gives_h_as_the_pairs_output(runner, lang, formula, note):
    """examples/differential.yaml: head 1's weights of "the" are [1, 0, 0] and its value [1, 0], yet its H row is
    Ô = 0.8·O / rms(O) = [−1.1311, 0], so step 8 may not say H = softmax(Q·Kᵀ)·V."""
    from conftest import EXAMPLES

    step = json.loads(runner.invoke(app, ["explain", str(EXAMPLES / "differential.yaml"), "--step", "8", "--lang",
                                          lang, "--format", "json"]).stdout)
    assert step["formula"].startswith(formula) and "softmax" not in step["formula"], step["formula"]
    assert note in " ".join(step["text"])
    assert step["numbers"]["head_outputs"]["values"][0] == pytest.approx([-1.1311, 0.0], abs=1e-4)
    assert step["numbers"]["weights"]["values"][0][0] == 1.0
