"""check on differential attention (DiffLlama): each slip of core/variants/differential.py named from the output alone.

The learner's numbers are worked here from examples/differential.yaml's own comment (causal, "cat" scores [1, 2] in
head 1 and [1, 1] in head 2, values [1, 0, 1, 0] and [1, 1, 1, 0] side by side), each slip done by hand in numpy,
sharing no code with attncli.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml
from conftest import ROOT

from attncli.cli import app

A1 = np.exp([1.0, 2.0]) / np.exp([1.0, 2.0]).sum()  # head 1's weights of "cat" over "the", "cat"
A2 = np.array([0.5, 0.5])  # head 2's
VALUES = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0]])  # [V₁ | V₂] of "the" and "cat"


def output(sign: float = -1.0, lambda_init: float = 0.2, norm: bool = True, factor: bool = True) -> list[float]:
    lam = math.exp(math.log(2.0)) - math.exp(0.0) + lambda_init  # e^(λq1·λk1) − e^(λq2·λk2) + λ_init
    o = (A1 + sign * lam * A2) @ VALUES
    o_hat = o / math.sqrt((o ** 2).mean() + 1e-5) if norm else o
    return [round(float(x), 4) for x in ((1.0 - lambda_init) * o_hat if factor else o_hat)]


SLIPS = {
    "λ·A₂ was added": output(sign=1.0),
    "the layer counted from 1": output(lambda_init=0.8 - 0.6 * math.exp(-0.3)),
    "RMSNorm of each pair's output was left out": output(norm=False),
    "the factor 1 − λ_init = 0.8 was left out": output(factor=False),
}


def _check(runner, tmp_path, given: list[float], *options: str):
    doc = yaml.safe_load((ROOT / "examples" / "differential.yaml").read_text())
    doc["answer"] = {"query": 2, "output": given}
    path = tmp_path / "homework.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return runner.invoke(app, ["check", str(path), *options], env={"COLUMNS": "200"})


def test_the_right_output_is_correct(runner, tmp_path):
    assert output() == [-1.0263, 0.6725, -1.0263, 0.0]  # the example's own comment
    assert _check(runner, tmp_path, output()).exit_code == 0


@pytest.mark.parametrize("slip", sorted(SLIPS))
def test_each_slip_is_named_from_the_output_alone(runner, tmp_path, slip):
    result = _check(runner, tmp_path, SLIPS[slip])
    assert result.exit_code == 1
    hints = [line for line in result.stdout.splitlines() if "hint:" in line]
    assert len(hints) == 1 and slip in hints[0], result.stdout
    assert not any(other in hints[0] for other in SLIPS if other != slip)
    assert "--step differential --query 2" in result.stdout  # where the slip happens, not the output's step 8


def test_the_slips_are_named_in_chinese(runner, tmp_path):
    said = _check(runner, tmp_path, SLIPS["λ·A₂ was added"], "--lang", "zh").stdout
    assert "把 λ·A₂ 加上了" in said and "hint" not in said


def _answer(runner, tmp_path, doc: dict, answer: dict, *options: str):
    doc = {**doc, "answer": answer}
    path = tmp_path / "pairs.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return runner.invoke(app, ["check", str(path), *options], env={"COLUMNS": "200"})


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_pairs_weights_and_outputs_may_be_answered_and_their_slips_are_named(runner, tmp_path, lang):
    """differential_weights W, differential_head_outputs O and normalized_head_outputs Ô are compute's keys, so an
    answer takes them: "cat"'s W = A₁ − λ·A₂ (λ = 1.2), and W with λ·A₂ added, named as that slip."""
    doc = yaml.safe_load((ROOT / "examples" / "differential.yaml").read_text())
    w = [round(float(x), 4) for x in A1 - 1.2 * A2] + [0.0]  # the masked key "sat": 0
    o = (A1 - 1.2 * A2) @ VALUES
    right = _answer(runner, tmp_path, doc, {"query": 2, "differential_weights": w, "differential_head_outputs":
                                            [round(float(x), 4) for x in o], "normalized_head_outputs": output()})
    assert right.exit_code == 0, right.output
    added = [round(float(x), 4) for x in A1 + 1.2 * A2] + [0.0]
    wrong = _answer(runner, tmp_path, doc, {"query": 2, "differential_weights": added}, "--lang", lang)
    assert wrong.exit_code == 1, wrong.output
    assert ("λ·A₂ was added" if lang == "en" else "λ·A₂") in wrong.stdout


def test_head_picks_the_pair_the_head_is_in(runner, tmp_path):
    """Four heads make pairs (1, 3) and (2, 4) (transformers' layout): head: 3 is pair 1's W, head: 4 pair 2's; the
    weights are worked here with one loop over the pair's two softmaxes (λ = λ_init, no λ vectors)."""
    x = np.array([[1.0, 0, 2, 1, 0, 1, 1, 0], [0, 1, 1, 0, 2, 0, 1, 1], [1, 1, 0, 2, 1, 1, 0, 1]])
    doc = {"tokens": "a b c", "inputs": x.tolist(), "heads": 4, "scale": "none", "mask": "causal",
           "differential": {"lambda_init": 0.5}}
    q = x.reshape(3, 4, 2)  # identity weights: head h reads columns 2h, 2h + 1

    def pair_weights(p: int, i: int) -> list[float]:
        rows = []
        for h in (p, p + 2):
            s = np.array([q[i, h] @ q[j, h] for j in range(i + 1)])
            rows.append(np.exp(s - s.max()) / np.exp(s - s.max()).sum())
        return [round(float(v), 4) for v in rows[0] - 0.5 * rows[1]] + [0.0] * (2 - i)

    for head, pair in ((3, 0), (4, 1), (1, 0)):
        result = _answer(runner, tmp_path, doc, {"head": head, "query": 2, "differential_weights":
                                                 pair_weights(pair, 1)})
        assert result.exit_code == 0, (head, result.output)
    other = _answer(runner, tmp_path, doc, {"head": 3, "query": 2, "differential_weights": pair_weights(1, 1)})
    assert other.exit_code == 1


@pytest.mark.parametrize("lang, where, closing", [
    ("en", "pair 2, row 3 ('c'), column 1", "No known slip explains differential_weights (step differential)"),
    ("zh", "第 2 个头对，第 3 行（'c'），第 1 列", "没有已知的失误能解释 differential_weights（步骤 差分注意力）"),
])
def test_a_pairs_wrong_cell_is_named_by_its_pair_and_the_closing_names_the_step_in_the_language(
        runner, tmp_path, lang, where, closing):
    """W has one matrix per pair (two here), not per head; the closing sentence's step is the report's language's.
    W worked by a loop: pair p's heads p and p + 2 (identity weights: head h reads columns 2h, 2h + 1)."""
    x = np.array([[1.0, 0, 2, 1, 0, 1, 1, 0], [0, 1, 1, 0, 2, 0, 1, 1], [1, 1, 0, 2, 1, 1, 0, 1]])
    doc = {"tokens": "a b c", "inputs": x.tolist(), "heads": 4, "scale": "none", "mask": "causal",
           "differential": {"lambda_init": 0.5}}
    q = x.reshape(3, 4, 2)
    w = np.zeros((2, 3, 3))
    for p in range(2):
        for i in range(3):
            for h, sign in ((p, 1.0), (p + 2, -0.5)):
                s = np.array([q[i, h] @ q[j, h] for j in range(i + 1)])
                w[p, i, :i + 1] += sign * np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    right = _answer(runner, tmp_path, doc, {"differential_weights": np.round(w, 4).tolist()})
    assert right.exit_code == 0, right.output
    w[1, 2, 0] += 0.3  # pair 2, "c", key "a": wrong by a number no slip makes
    result = _answer(runner, tmp_path, doc, {"differential_weights": np.round(w, 4).tolist()}, "--lang", lang,
                     "--format", "json")
    report = json.loads(result.stdout)
    assert report["findings"][0]["where"] == where, report
    assert report["notes"][0].startswith(closing), report["notes"]
