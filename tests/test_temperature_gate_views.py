"""Part 3's temperature, gate, residual scale and chunks in explain (en, zh) and in check's slips (issue 28)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attncli
from attncli.cli import app
from attncli.core.attention import concat_heads, output_projection


def base(**changes) -> dict:
    rng = np.random.default_rng(3)
    doc = {"tokens": list("abcde"), "inputs": rng.normal(size=(5, 4)).tolist(), "heads": 2, "rope": True,
           "weights": {k: rng.normal(size=(4, 4)).tolist() for k in ("query", "key", "value", "output", "gate")},
           "mask": {"causal": True, "chunk": 2}, "query_temperature": {"floor_scale": 2, "attn_scale": 0.5},
           "residual": {"scale": 0.5}}
    return {k: v for k, v in (doc | changes).items() if v is not None}


def _run(runner, tmp_path, doc: dict, *args: str):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, [*args[:1], str(path), *args[1:]], env={"COLUMNS": "400"})
    assert result.exit_code in (0, 1), result.stderr
    return result.stdout


@pytest.mark.parametrize("lang, words", [
    ("en", ["τ = 1 + 0.5·ln(1 + ⌊(3 + 1) / 2⌋) = 1 + 0.5·ln(3) = 1.5493", "temperature τ", "chunks of 2",
            "only sees the keys of its own chunk, c … d", "d: g = σ(x·W_G) = [", "y ⊙ g = [", "Qwen3-Next",
            "r = x + 0.5·y", "α = 0.5", "Y = concat(H ⊙ G)·W_O"]),
    ("zh", ["τ = 1 + 0.5·ln(1 + ⌊(3 + 1) / 2⌋) = 1 + 0.5·ln(3) = 1.5493", "温度 τ", "每块 2 个", "即 c … d", "门控",
            "α = 0.5"]),
])
def test_explain_writes_each_out(runner, tmp_path, lang, words):
    out = _run(runner, tmp_path, base(), "explain", "--query", "4", "--lang", lang)
    for text in words:
        assert text in out, text
    trace = attncli.compute(base())
    tau = trace.query_temperature[3]
    assert f"{tau:.4f}" == "1.5493" and trace.gate[0, 3].round(4).tolist() == [
        float(x) for x in out.split("d: g = σ(x·W_G) = [")[1].split("]")[0].split(", ")]


def _slip_answer(wrong: dict, key: str = "residual") -> dict:
    return {key: np.round(getattr(attncli.compute(wrong), key), 4).tolist()}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("wrong, en, zh", [
    (base(query_temperature=None), "the query temperature was left out", "漏掉了查询温度"),
    (base(residual=True), "the residual's scale was left out: the output is multiplied by 0.5", "漏掉了残差的缩放"),
    (dict(base(), weights={k: v for k, v in base()["weights"].items() if k != "gate"}),
     "the output gate was left out", "漏掉了输出门控"),
], ids=["temperature", "residual-scale", "gate"])
def test_check_names_the_slip(runner, tmp_path, lang, wrong, en, zh):
    out = _run(runner, tmp_path, base(answer=_slip_answer(wrong)), "check", "--lang", lang)
    assert (en if lang == "en" else zh) in out


def test_check_names_the_gate_applied_after_the_output_projection(runner, tmp_path):
    trace = attncli.compute(base())
    y = output_projection(trace.head_outputs, trace.spec) * concat_heads(trace.gate)
    out = _run(runner, tmp_path, base(answer={"output": np.round(y, 4).tolist()}), "check")
    assert "the gate was applied after the output projection" in out
