"""``clip_qkv: c`` (Part 3, MPT and DBRX): Q, K and V clamped to [−c, c] after the projections and their biases.

Compared with a loop over tokens and heads written here, with PyTorch's clamp and scaled_dot_product_attention
when PyTorch is installed, and between the full and the streamed computation; and seen as its users see it: the
tables' formulas, ``--only``, explain's step 3, check's hint for a clamp left out, and the errors.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import attncli
from attncli.cli import app
from attncli.core.pipeline import attend
from attncli.core.stream import attend_streamed

C = 0.9


def document(seed: int = 0, clip: float | None = C, heads: int = 2, kv_heads: int = 1) -> dict:
    """Projections of N(0, 1) inputs whose numbers often pass ±0.9: the clamp changes many of them."""
    rng = np.random.default_rng(seed)
    n, d_model, d_k = 5, 6, 3
    doc = {"inputs": rng.normal(size=(n, d_model)).tolist(), "heads": heads, "kv_heads": kv_heads, "mask": "causal",
           "weights": {"query": rng.normal(size=(d_model, heads * d_k)).tolist(),
                       "key": rng.normal(size=(d_model, kv_heads * d_k)).tolist(),
                       "value": rng.normal(size=(d_model, kv_heads * d_k)).tolist(),
                       "output": rng.normal(size=(heads * d_k, d_model)).tolist()},
           "bias": {"query": rng.normal(size=heads * d_k).tolist(), "value": rng.normal(size=kv_heads * d_k).tolist()}}
    if clip is not None:
        doc["clip_qkv"] = clip
    return doc


def loop_reference(doc: dict) -> dict[str, np.ndarray]:
    """The layer token by token and head by head, with Python's min and max for the clamp."""
    x = np.array(doc["inputs"])
    w = {name: np.array(doc["weights"][name]) for name in ("query", "key", "value", "output")}
    b = {name: np.array(doc["bias"].get(name, np.zeros(w[name].shape[1]))) for name in ("query", "key", "value")}
    c, h, g = doc.get("clip_qkv", math.inf), doc["heads"], doc["kv_heads"]
    n, d_k = len(x), w["query"].shape[1] // h

    def clamp(v: float) -> float:
        return min(max(v, -c), c)

    project = lambda name: np.array([[clamp(float(x[i] @ w[name][:, j] + b[name][j])) for j in range(w[name].shape[1])]  # noqa: E731
                                     for i in range(n)])
    q, k, v = project("query"), project("key"), project("value")
    heads = np.zeros((n, h * d_k))
    for head in range(h):
        kv = head // (h // g)
        for i in range(n):
            scores = [sum(q[i, head * d_k + t] * k[j, kv * d_k + t] for t in range(d_k)) / math.sqrt(d_k)
                      for j in range(i + 1)]  # causal: keys 0 … i
            top = max(scores)
            e = [math.exp(s - top) for s in scores]
            for t in range(d_k):
                heads[i, head * d_k + t] = sum(e[j] * v[j, kv * d_k + t] for j in range(i + 1)) / sum(e)
    return {"queries": q, "keys": k, "values": v, "output": heads @ w["output"]}


def per_token(array: np.ndarray) -> np.ndarray:
    """(heads, rows, d) -> (rows, heads·d), as the loop keeps them."""
    return array.transpose(1, 0, 2).reshape(array.shape[1], -1)


@pytest.mark.parametrize("seed", range(4))
def test_clamped_layer_equals_a_loop_over_tokens(seed):
    doc = document(seed)
    trace, expected = attncli.compute(doc), loop_reference(doc)
    for key in ("queries", "keys", "values"):
        np.testing.assert_allclose(per_token(getattr(trace, key)), expected[key], rtol=1e-12, atol=1e-12)
    size = np.abs(expected["output"]).max()
    np.testing.assert_allclose(trace.output, expected["output"], rtol=1e-12, atol=1e-12 * size)
    assert np.abs(trace.queries).max() == C  # the clamp reached: the test's numbers do pass ±c
    unclipped = attncli.compute(document(seed, clip=None))
    assert not np.allclose(unclipped.output, trace.output)


@pytest.mark.torch
def test_clamped_layer_equals_torch():
    torch = pytest.importorskip("torch")
    doc = document(7)
    trace = attncli.compute(doc)
    t = lambda a: torch.tensor(np.array(a), dtype=torch.float64)  # noqa: E731
    x, w, b = t(doc["inputs"]), {k: t(v) for k, v in doc["weights"].items()}, {k: t(v) for k, v in doc["bias"].items()}
    n, d_k = x.shape[0], 3
    q = torch.clamp(x @ w["query"] + b["query"], -C, C).reshape(n, 2, d_k).transpose(0, 1)
    k = torch.clamp(x @ w["key"], -C, C).reshape(n, 1, d_k).transpose(0, 1)
    v = torch.clamp(x @ w["value"] + b["value"], -C, C).reshape(n, 1, d_k).transpose(0, 1)
    heads = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    y = heads.transpose(0, 1).reshape(n, -1) @ w["output"]
    np.testing.assert_allclose(trace.output, y.numpy(), rtol=1e-12, atol=1e-12 * float(y.abs().max()))


def test_streamed_equals_full():
    spec = attncli.load(document(3))
    full, streamed = attend(spec), attend_streamed(spec, threads=2)
    for key in ("queries", "keys", "values", "head_outputs", "output"):
        np.testing.assert_allclose(getattr(streamed, key), getattr(full, key), rtol=1e-12, atol=1e-12)


def test_without_clip_nothing_changes():
    assert attncli.load(document(1, clip=None)).clip_qkv is None
    assert attncli.load(dict(document(1, clip=None), clip_qkv=False)).clip_qkv is None
    np.testing.assert_array_equal(attncli.compute(dict(document(1, clip=None), clip_qkv=False)).output,
                                  attncli.compute(document(1, clip=None)).output)


def _write(tmp_path, doc: dict):
    path = tmp_path / "clip.json"
    path.write_text(json.dumps(doc))
    return path


def test_tables_json_and_only_show_the_clamped_numbers(runner, tmp_path):
    path = _write(tmp_path, document(2))
    table = runner.invoke(app, ["compute", str(path)], env={"COLUMNS": "120"})
    assert table.exit_code == 0, table.stderr
    assert "Q = clamp(X·W_Q + b_Q, −0.9, 0.9)" in table.stdout and "K = clamp(X·W_K, −0.9, 0.9)" in table.stdout
    latex = runner.invoke(app, ["compute", str(path), "-f", "latex", "--only", "V"])
    assert r"\operatorname{clamp}(X W_V^{[1]} + b_V^{[1]}, -0.9, 0.9)" in latex.stdout
    only = runner.invoke(app, ["compute", str(path), "-f", "json", "--only", "Q"])
    queries = np.array(json.loads(only.stdout)["queries"])
    np.testing.assert_allclose(per_token(queries), loop_reference(document(2))["queries"], rtol=1e-12, atol=1e-12)


def test_explain_writes_the_clamp_out(runner, tmp_path):
    path = _write(tmp_path, document(2))
    result = runner.invoke(app, ["explain", str(path), "--step", "3", "--query", "1"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    assert "clamp(X·W_Q + b_Q, −0.9, 0.9)" in result.stdout
    assert "clamped to the interval from −0.9 to 0.9" in result.stdout
    first = next(line for line in result.stdout.splitlines() if "q₁ = clamp(" in line)
    assert first.rstrip().endswith("]") and ", −0.9, 0.9) = [" in first


@pytest.mark.parametrize("lang, words", [("en", "were not clamped"), ("zh", "漏掉了对 Q、K、V 的截断")])
def test_check_names_the_clamp_left_out(runner, tmp_path, lang, words):
    doc = document(4)
    doc["answer"] = {"output": np.round(attncli.compute(document(4, clip=None)).output, 3).tolist()}
    result = runner.invoke(app, ["check", str(_write(tmp_path, doc)), "--lang", lang], env={"COLUMNS": "200"})
    assert words in result.stdout and "0.9" in result.stdout


@pytest.mark.parametrize("value", [0, -1, "8", True, float("nan"), [1]])
def test_a_clip_that_is_not_a_positive_number_is_refused(runner, tmp_path, value):
    doc = dict(document(0, clip=None), clip_qkv=value)
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(doc).replace("NaN", ".nan"))
    result = runner.invoke(app, ["compute", str(path)])
    assert result.exit_code == 2 and result.stdout == ""
    assert "clip_qkv" in result.stderr and "Traceback" not in result.stderr and result.stderr.count("\n") == 1
