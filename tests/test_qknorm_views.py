"""``qk_norm`` as its users see it: explain's step (en, zh) with the chosen query's norm and the bound on the logits
computed here independently, check's hints for the three slips (answers computed here with numpy, the way a learner
would make the slip), a per-head key γ with the shared-head slip, and the memory plan counting Q̂ and K̂.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from test_qknorm import D_K, G, H, document, loop_reference

import attncli
from attncli.cli import app
from attncli.plan.estimate import resident_bytes

GAMMA_Q, GAMMA_K = [1.0, 2.0, 0.5, 1.0], [2.0, 1.0, 1.0, 0.5]


def _run(runner, tmp_path, doc: dict, *args: str):
    path = tmp_path / "qk.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, [*args[:1], str(path), *args[1:]], env={"COLUMNS": "200"})
    assert result.exit_code in ((0, 1) if args[0] == "check" else (0,)), result.stderr  # check: 1 for a wrong answer
    return result.stdout


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+\.\d+|-?\d+", text)]


@pytest.mark.parametrize("after_rope", [False, True])
def test_explain_writes_the_norm_and_the_bound_out(runner, tmp_path, after_rope):
    doc = document(1, kind="rms", after_rope=after_rope, gamma={"query": GAMMA_Q, "key": GAMMA_K})
    out = _run(runner, tmp_path, doc, "explain", "--step", "qk_norm", "--query", "1")  # (causal: not the default)
    trace = attncli.compute(doc)
    q = (trace.queries_rotated if after_rope else trace.queries)[0, 0]
    ms = float(np.mean(q * q))
    assert "mean(q²) = (" in out and f"= {ms:.4f}" in out
    assert ("q = q′ = [" in out) == after_rope
    # before: the longest query and key of head 1 (K/V head 1), by Cauchy–Schwarz, with the scale 1/√4
    q_len = max(math.sqrt(sum(x * x for x in row)) for row in trace.queries[0])
    k_len = max(math.sqrt(sum(x * x for x in row)) for row in trace.keys[0])
    before = 0.5 * q_len * k_len
    after = 0.5 * (2.0 * math.sqrt(D_K)) * (2.0 * math.sqrt(D_K))  # max|γ| = 2 on both sides
    assert f"= {before:.4f}" in out and f"can pass 0.5000 × 4 × 4 = {after:g}" in out
    reached = float(np.abs(0.5 * trace.scores[0])[np.tril(np.ones((5, 5), bool))].max())
    assert reached <= after and f"The largest here is {reached:.4f}" in out
    assert ("after the rotation (after_rope: true" in out) == after_rope
    zh = _run(runner, tmp_path, doc, "explain", "--step", "qk_norm", "--lang", "zh")
    assert "QK 归一化" in zh and f"{after:g}" in zh and "γ" in zh


def test_explain_puts_the_step_before_or_after_rope_and_step_4_multiplies_the_last(runner, tmp_path):
    out = _run(runner, tmp_path, document(2, kind="layer"), "explain")
    assert out.index("Step qk_norm") < out.index("Step rope") < out.index("Step 4")
    assert "S = Q′·K′ᵀ" in out
    out = _run(runner, tmp_path, document(2, kind="layer", after_rope=True), "explain", "--query", "1")
    assert out.index("Step rope") < out.index("Step qk_norm") < out.index("Step 4")
    assert "Formula: S = Q̂·K̂ᵀ" in out and "q̂₁ · k̂₁ = " in out


def test_explain_projection_scope_normalises_the_whole_token(runner, tmp_path):
    out = _run(runner, tmp_path, document(3, kind="rms", scope="projection"), "explain", "--step", "qk_norm")
    assert "over all h·d_k numbers of a token" in out and f"max|γ|·√{H * D_K}" in out
    assert f"the {H * D_K} query numbers of a token together, and its {G * D_K} key numbers" in out


def test_explain_refuses_the_step_without_qk_norm(runner, tmp_path):
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(document(4)))
    result = runner.invoke(app, ["explain", str(path), "--step", "qk_norm"])
    assert result.exit_code == 2 and "'qk_norm' needs qk_norm: in the document" in result.stderr
    result = runner.invoke(app, ["compute", str(path), "--only", "normalized_keys"])
    assert result.exit_code == 2 and "'normalized_keys' needs qk_norm: in the document" in result.stderr


# ---------------------------------------------------------------- check's slips, made here with the loop


def _slipped(doc: dict, **qk) -> list:
    wrong = dict(doc, qk_norm=dict(doc["qk_norm"], **qk))
    return np.round(loop_reference(wrong)["output"], 4).tolist()


def _without_norm(doc: dict) -> list:
    return np.round(loop_reference({k: v for k, v in doc.items() if k != "qk_norm"})["output"], 4).tolist()


SLIPS = [
    ("left out", lambda d: _without_norm(d), "Q and K were not normalised", "漏掉了对 Q 和 K 的归一化"),
    ("after rope", lambda d: _slipped(d, after_rope=True), "the norm came after the rotation", "归一化放在了旋转之后"),
    ("keys' γ", lambda d: _slipped(d, gamma={"query": GAMMA_K, "key": GAMMA_K}), "normalised with the keys' γ",
     "查询用了键的 γ"),
]


@pytest.mark.parametrize("name, wrong, en, zh", SLIPS, ids=[s[0] for s in SLIPS])
def test_check_names_each_slip(runner, tmp_path, name, wrong, en, zh):
    doc = document(5, kind="rms", gamma={"query": GAMMA_Q, "key": GAMMA_K})
    doc["answer"] = {"output": wrong(doc)}
    assert en in _run(runner, tmp_path, doc, "check")
    assert zh in _run(runner, tmp_path, doc, "check", "--lang", "zh")


def test_check_names_the_norm_put_before_the_rotation(runner, tmp_path):
    doc = document(6, kind="rms", after_rope=True, gamma={"query": GAMMA_Q, "key": GAMMA_K})  # (with γ = 1 the
    # RMS norm and the rotation commute: the slip would change nothing)
    doc["answer"] = {"output": _slipped(doc, after_rope=False)}
    assert "the norm came before the rotation: with after_rope: true" in _run(runner, tmp_path, doc, "check")


def test_check_with_a_key_gamma_per_key_head_and_the_shared_head_slip(runner, tmp_path):
    doc = document(7, kind="layer", gamma={"key": np.arange(1.0, 9.0).reshape(G, D_K).tolist()})
    doc["answer"] = {"output": np.round(attncli.compute(doc).output, 4).tolist()}
    assert "correct" in _run(runner, tmp_path, doc, "check")  # every slip (the shared-head one too) computes


def test_the_memory_plan_counts_the_normalised_queries_and_keys():
    plain, normed = attncli.load(document(8)), attncli.load(document(8, kind="rms"))
    assert resident_bytes(normed) - resident_bytes(plain) == 8 * (H * 5 + G * 5) * D_K


@pytest.mark.parametrize("kind", ["rms", "layer"])
def test_init_writes_a_qk_norm_document_that_computes(runner, kind):
    result = runner.invoke(app, ["init", "--n", "4", "--d-model", "8", "--heads", "2", "--kv-heads", "1", "--rope",
                                 "--qk-norm", kind, "--mask", "causal"])
    assert result.exit_code == 0, result.stderr
    assert f"qk_norm:\n  kind: {kind}\n" in result.stdout and "QK-norm" in result.stdout
    computed = runner.invoke(app, ["compute", "-", "-f", "json", "--only", "Khat"], input=result.stdout)
    keys = np.array(json.loads(computed.stdout)["normalized_keys"])
    assert keys.shape == (1, 4, 4)
    spread = np.sqrt(np.mean(keys ** 2, -1)) if kind == "rms" else keys.std(-1)
    np.testing.assert_allclose(spread, 1.0, atol=1e-3)  # γ = 1: every row of unit RMS (or unit deviation)
