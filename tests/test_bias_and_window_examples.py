"""The Part 2 examples and teaching: padding changes nothing for the real tokens, ALiBi and the window as written by
hand in numpy, explain step 4 writes the bias out, check names the bias and convention slips (answers made here)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml

import attncli
from attncli.cli import app

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _doc(name: str) -> dict:
    return yaml.safe_load((EXAMPLES / name).read_text(encoding="utf-8"))


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_padding_leaves_the_real_tokens_as_they_are_without_it():
    padded = attncli.compute(EXAMPLES / "padding.yaml")
    real = sum(_doc("padding.yaml")["mask"]["keys"])
    # the same layer on the real tokens alone, from the numbers the document drew (w: h × d_in × d_k -> d_in × h·d_k)
    weights = {name: np.concatenate(list(getattr(padded.spec, f"w_{name[0]}")), axis=1)
               for name in ("query", "key", "value")}
    trimmed = attncli.compute({"inputs": padded.inputs[:real], "heads": 2, "weights": weights})
    np.testing.assert_allclose(padded.output[:real], trimmed.output, rtol=0, atol=1e-14)
    assert np.all(padded.weights[:, :, real:] == 0)


def test_alibi_example_is_the_formula_written_out():
    trace = attncli.compute(EXAMPLES / "alibi.yaml")
    spec = trace.spec
    q, k, v = trace.queries, trace.keys, trace.values  # (h, n, d)
    n, d_k = spec.n, spec.d_k
    slopes = [1 / 4, 1 / 16, 1 / 64, 1 / 256]  # 2^(−8k/h), h = 4
    for h, slope in enumerate(slopes):
        z = q[h] @ k[h].T / np.sqrt(d_k)
        z = z + slope * (np.arange(n)[None, :] - np.arange(n)[:, None])
        z = np.where(np.tril(np.ones((n, n), bool)), z, -np.inf)
        np.testing.assert_allclose(trace.weights[h], _softmax(z), rtol=0, atol=1e-14)
        np.testing.assert_allclose(trace.head_outputs[h], _softmax(z) @ v[h], rtol=0, atol=1e-14)


def test_sliding_window_example_sees_w_keys(runner):
    result = runner.invoke(app, ["compute", str(EXAMPLES / "sliding_window.yaml"), "-f", "json", "--only", "weights"])
    weights = np.array(json.loads(result.stdout)["weights"])[0]  # (n, m)
    n = weights.shape[0]
    for i in range(n):
        seen = np.flatnonzero(weights[i] > 0)
        assert list(seen) == list(range(max(0, i - 2), i + 1))  # window: 3 with causal


def test_explain_step_4_writes_the_bias_out(runner):
    result = runner.invoke(app, ["explain", str(EXAMPLES / "alibi.yaml"), "--step", "4", "--query", "3", "--head", "1"])
    text = " ".join(result.stdout.split())
    assert result.exit_code == 0, result.output
    assert "ALiBi" in text and "no position embeddings" in text
    assert "+ 0.2500·(0 − 2) = 0.1811" in text  # slope 1/4, key 'the' at 0, query 'jumps' at 2
    zh = runner.invoke(app, ["explain", str(EXAMPLES / "t5_relative.yaml"), "--step", "4", "--lang", "zh"])
    assert zh.exit_code == 0 and "相对位置偏置" in zh.stdout and "bucket" in zh.stdout


def _check(runner, tmp_path: Path, doc: dict) -> str:
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = runner.invoke(app, ["check", str(path)])
    assert result.exit_code == 1, result.output
    return " ".join(result.stdout.split())


X = [[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 2.0], [1.0, 1.0, 1.0, 1.0]]


def test_check_names_a_bias_left_out(runner, tmp_path):
    x = np.array(X)
    z = x @ x.T  # scale: none, Q = K = V = X
    answer = _softmax(z)[2]  # query 3 without the bias: a learner's slip, computed here by hand
    doc = {"inputs": X, "scale": "none", "score_bias": {"alibi": {"slopes": [1.0]}},
           "answer": {"query": 3, "weights": answer.round(4).tolist()}}
    assert "the score bias was left out" in _check(runner, tmp_path, doc)


def test_check_names_an_inverted_mask_convention(runner, tmp_path):
    x = np.array(X)
    flags = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]], bool)  # block: True = masked
    z = np.where(flags, x @ x.T, -np.inf)  # the learner masked where the document allows
    answer = _softmax(z) @ x
    doc = {"inputs": X, "scale": "none", "mask": {"matrix": flags.astype(int).tolist(), "convention": "block"},
           "answer": {"head_outputs": answer.round(4).tolist()}}
    assert "the mask was read the other way round" in _check(runner, tmp_path, doc)


def test_heatmap_draws_the_score_bias(runner):
    result = runner.invoke(app, ["heatmap", str(EXAMPLES / "alibi.yaml"), "--of", "score_bias", "--head", "1"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Score bias  B = slope·(p_j − p_i)")
    assert "-1.25" in next(line for line in lines if line.startswith("dog"))  # 1/4 · (0 − 5)
    missing = runner.invoke(app, ["heatmap", str(EXAMPLES / "causal.yaml"), "--of", "score_bias"])
    assert missing.exit_code == 2 and "needs score_bias" in missing.stderr
