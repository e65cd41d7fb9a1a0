"""Part 3's query temperature, output gate, residual scale and chunked mask (issue 28) against loops written here
(token by token, head by head, with numpy alone), the streamed path against the full one (chunks with many block,
tile and edge sizes), ``--only`` and every refused shape or value.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from stream_helpers import assert_equal_traces, document, spec_of

import attncli
from attncli.cli import app
from attncli.core import stream, tiles
from attncli.core.pipeline import attend
from attncli.core.stream import attend_streamed


def gated_document(seed: int = 0, n: int = 7, heads: int = 2, kv_heads: int = 1, **extra) -> dict:
    """d_model 4, d_k 3, d_v 2; a gate with its bias, an output projection back to d_model, rope."""
    rng = np.random.default_rng(seed)
    doc = {"inputs": rng.normal(size=(n, 4)).tolist(), "heads": heads, "kv_heads": kv_heads,
           "weights": {"query": rng.normal(size=(4, heads * 3)).tolist(), "key": rng.normal(size=(4, kv_heads * 3)),
                       "value": rng.normal(size=(4, kv_heads * 2)), "output": rng.normal(size=(heads * 2, 4)),
                       "gate": rng.normal(size=(4, heads * 2))},
           "bias": {"gate": rng.normal(size=heads * 2), "output": rng.normal(size=4)},
           "positions": [3 * i + 2 for i in range(n)], "rope": {"base": 100, "dims": 2},
           "query_temperature": {"floor_scale": 4, "attn_scale": 0.3}, "residual": {"scale": 0.25},
           "mask": {"causal": True, "chunk": 3}}
    doc["weights"] = {k: np.asarray(v).tolist() for k, v in doc["weights"].items()}
    doc["bias"] = {k: np.asarray(v).tolist() for k, v in doc["bias"].items()}
    return {k: v for k, v in (doc | extra).items() if v is not None}


def loop_reference(doc: dict) -> dict:
    """Every quantity one number at a time: rope on the first pair, τ per query, chunks, gate, α."""
    x, h, g = np.array(doc["inputs"]), doc["heads"], doc["kv_heads"]
    w = {k: np.array(v) for k, v in doc["weights"].items()}
    b = {k: np.array(v) for k, v in doc.get("bias", {}).items()}
    n, d_k, d_v = len(x), w["query"].shape[1] // h, w["value"].shape[1] // g
    p = np.array(doc["positions"], dtype=float)
    temp = doc.get("query_temperature")
    chunk = doc["mask"]["chunk"]
    out = {"tau": np.ones(n), "gate": np.ones((h, n, d_v)), "heads": np.zeros((h, n, d_v))}
    for i in range(n):
        if temp:
            out["tau"][i] = 1 + temp["attn_scale"] * math.log(1 + math.floor((p[i] + 1) / temp["floor_scale"]))
    for head in range(h):
        kv = head // (h // g)
        q = x @ w["query"][:, head * d_k:(head + 1) * d_k]
        k = x @ w["key"][:, kv * d_k:(kv + 1) * d_k]
        v = x @ w["value"][:, kv * d_v:(kv + 1) * d_v]
        for t in (q, k):  # rope, dims 2: the pair (0, 1) turned by p·1
            c, s = np.cos(p), np.sin(p)
            t[:, 0], t[:, 1] = t[:, 0] * c - t[:, 1] * s, t[:, 1] * c + t[:, 0] * s
        for i in range(n):
            keys = [j for j in range(n) if j <= i and j // chunk == i // chunk]
            z = [out["tau"][i] * float(q[i] @ k[j]) / math.sqrt(d_k) for j in keys]
            e = [math.exp(zj - max(z)) for zj in z]
            out["heads"][head, i] = sum(ej / sum(e) * v[j] for ej, j in zip(e, keys, strict=True))
            b_g = b.get("gate", np.zeros(h * d_v))
            if "gate" in w:
                for c in range(d_v):
                    logit = float(x[i] @ w["gate"][:, head * d_v + c]) + b_g[head * d_v + c]
                    out["gate"][head, i, c] = 1 / (1 + math.exp(-logit))
    concat = (out["heads"] * out["gate"]).transpose(1, 0, 2).reshape(n, -1)
    out["output"] = concat @ w["output"] + b.get("output", 0.0)
    alpha = doc["residual"]["scale"] if isinstance(doc.get("residual"), dict) else 1.0
    out["residual"] = x + alpha * out["output"]
    return out


def close(a, b) -> None:
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * max(1.0, float(np.abs(b).max())))


@pytest.mark.parametrize("heads, kv_heads", [(2, 1), (2, 2), (4, 2)])
def test_every_quantity_equals_the_loop(heads, kv_heads):
    doc = gated_document(heads, heads=heads, kv_heads=kv_heads)
    trace, want = attncli.compute(doc), loop_reference(doc)
    close(trace.query_temperature, want["tau"])
    close(trace.head_outputs, want["heads"])
    close(trace.gate, want["gate"])
    close(trace.gated_head_outputs, want["heads"] * want["gate"])
    close(trace.output, want["output"])
    close(trace.residual, want["residual"])
    assert len(set(trace.query_temperature)) > 2


def test_residual_true_is_scale_1_and_nothing_changes_without_the_keys():
    doc = gated_document(1, query_temperature=None, residual=True)
    assert attncli.load(doc).residual_scale == 1.0
    same = attncli.compute(gated_document(1, query_temperature=None, residual={"scale": 1}))
    np.testing.assert_array_equal(attncli.compute(doc).residual, same.residual)
    plain = gated_document(1, query_temperature=None, residual=None)
    del plain["weights"]["gate"], plain["bias"]["gate"]
    trace = attncli.compute(plain)
    assert trace.gate is None and trace.gated_head_outputs is None and trace.query_temperature is None
    close(trace.output, loop_reference(plain | {"residual": {"scale": 1.0}})["output"])


def test_residual_scale_with_post_norm_and_add_norm():
    base = gated_document(2, query_temperature=None)
    y = attncli.compute(base).output
    post = attncli.compute(base | {"post_norm": {"kind": "rms"}})
    rms = y / np.sqrt((y * y).mean(-1, keepdims=True) + 1e-6)
    close(post.residual, np.array(base["inputs"]) + 0.25 * rms)
    added = attncli.compute(base | {"add_norm": True})
    r = np.array(base["inputs"]) + 0.25 * y
    close(added.residual, r)
    close(added.normalized, (r - r.mean(-1, keepdims=True)) / np.sqrt(r.var(-1, keepdims=True) + 1e-5))


# ---------------------------------------------------------------- streamed = full, chunk with many blocks and tiles

SHAPES = [(1, 24, 3), (3, 24, 5), (16, 24, 3), (7, 100, 13), (5, 80, 1), (32, 512, 100)]


@pytest.mark.parametrize("rows, cells, edge", SHAPES)
@pytest.mark.parametrize("mask", [{"causal": True, "chunk": 5}, {"causal": "lower_right", "chunk": 4},
                                  {"causal": True, "chunk": 16, "window": 6}, {"chunk": 7},
                                  {"causal": True, "chunk": 1}, {"causal": True, "chunk": 9, "keys": "pad"}],
                         ids=["causal", "lower-right", "window", "bidirectional", "one", "padded"])
def test_streamed_chunks_equal_full(monkeypatch, rows, cells, edge, mask):
    monkeypatch.setattr(stream, "fast_rows", lambda spec: rows)
    monkeypatch.setattr(stream, "BLOCK_CELLS", cells)
    monkeypatch.setattr(tiles, "EDGE_KEYS", edge)
    m = 45 if mask.get("causal") == "lower_right" else None
    if mask.get("keys") == "pad":
        mask = dict(mask, keys=[j % 7 != 3 for j in range(37)])
    data = document(rows + cells, n=37, m=m, heads=2, query_temperature={"floor_scale": 5, "attn_scale": 0.2},
                    mask=mask)
    rng = np.random.default_rng(cells)
    data["weights"]["gate"] = rng.normal(size=(8, 6)).tolist()
    spec = spec_of(data)
    full, streamed = attend(spec), attend_streamed(spec, threads=2)
    assert_equal_traces(full, streamed)
    for key in ("query_temperature", "gate", "gated_head_outputs"):
        np.testing.assert_allclose(getattr(streamed, key), getattr(full, key), rtol=1e-12, atol=1e-12)


def test_a_chunk_skips_the_keys_of_other_chunks():
    spec = spec_of(document(0, n=40, heads=1, mask={"causal": True, "chunk": 8}))
    assert spec.mask.key_span(17, 20) == (16, 20)  # queries 17 … 19: their chunk 16 … 23, causal up to 19
    assert spec.mask.key_span(14, 18) == (8, 18)
    assert spec.mask.seen_by_all(17, 20) == (16, 18)
    assert spec.mask.seen_by_all(14, 18) == (16, 15)  # two chunks: no key seen by all
    assert spec.mask.query_span(0, 40, 24, 30) == (24, 32)


def test_inverted_and_bias_masks_keep_the_chunk():
    spec = spec_of(document(0, n=6, heads=1, mask={"causal": True, "chunk": 2, "keys": [1, 1, 0, 1, 1, 1]},
                            score_bias={"matrix": np.where(np.eye(6) > 0, -np.inf, 0.0).tolist()}))
    assert spec.mask.chunk == 2 and spec.mask.inverted().chunk == 2
    assert spec.allowed[0].astype(int).tolist() == [[0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0],
                                                    [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0]]


# ---------------------------------------------------------------- the command line


def _write(tmp_path, doc: dict, name: str = "doc.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_json_tables_latex_and_only(runner, tmp_path):
    path = _write(tmp_path, gated_document(3))
    result = runner.invoke(app, ["compute", str(path), "-f", "json"])
    data = json.loads(result.stdout)
    keys = list(data)
    assert keys.index("head_outputs") < keys.index("gate") < keys.index("gated_head_outputs") < keys.index("output")
    assert keys.index("queries_rotated") < keys.index("query_temperature") < keys.index("scores")
    assert len(data["query_temperature"]) == 7 and np.shape(data["gate"]) == (2, 7, 2)
    table = runner.invoke(app, ["compute", str(path)], env={"COLUMNS": "160"}).stdout
    for text in ("G = σ(X·W_G + b_G)", "H ⊙ G", "τ = 1 + 0.3·ln(1 + ⌊(p + 1) / 4⌋)", "S = (τ ⊙ Q′)·K′ᵀ",
                 "Y = concat(H ⊙ G)·W_O + b_O", "R = X + 0.25·Y"):
        assert text in table, text
    latex = runner.invoke(app, ["compute", str(path), "-f", "latex", "--only", "gated_head_outputs"]).stdout
    assert r"H^{(1)} \odot G^{(1)}" in latex
    only = runner.invoke(app, ["compute", str(path), "-f", "json", "--only", "gate", "--only", "W_G",
                               "--only", "b_G", "--only", "τ"])
    data = json.loads(only.stdout)
    assert {"gate", "weight_gate", "bias_gate", "query_temperature"} <= set(data) and "head_outputs" not in data
    close(np.array(data["gate"]), loop_reference(gated_document(3))["gate"])


def test_only_gate_runs_no_attention(monkeypatch):
    from attncli.core import pipeline

    assert pipeline.needs_no_attention(["gate"]) and pipeline.needs_no_attention(["query_temperature"])
    assert not pipeline.needs_no_attention(["gated_head_outputs"])


def test_only_gate_without_a_gate_is_refused(runner, tmp_path):
    doc = gated_document(4)
    del doc["weights"]["gate"], doc["bias"]["gate"]
    result = runner.invoke(app, ["compute", str(_write(tmp_path, doc)), "--only", "gate"])
    assert result.exit_code == 2 and "'gate' needs weights.gate: in the document" in result.stderr


def test_heatmap_draws_the_chunks(runner, tmp_path):
    doc = document(0, n=6, heads=1, mask={"causal": True, "chunk": 3}, tokens=list("abcdef"))
    result = runner.invoke(app, ["heatmap", str(_write(tmp_path, doc)), "--full"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    rows = {line[0]: line[3:].split() for line in lines if line[:1] in "abcdef" and line[1:3] == "  "}
    hatched = {token: [cell == "╱╱╱╱╱╱╱" for cell in cells if cell != "██"] for token, cells in rows.items()}
    assert hatched["c"] == [False] * 3 + [True] * 3  # c sees a, b, c
    assert hatched["d"] == [True] * 3 + [False] + [True] * 2  # d, in the second chunk, sees itself only


# ---------------------------------------------------------------- refused shapes and values

BAD = [
    ({"query_temperature": {"floor_scale": 0}}, "query_temperature.floor_scale", "is not a positive number"),
    ({"query_temperature": {"floor_scale": "8"}}, "query_temperature.floor_scale", "is not a number"),
    ({"query_temperature": {"attn_scale": float("inf")}}, "query_temperature.attn_scale", "is not a finite number"),
    ({"query_temperature": {"floor": 2}}, "query_temperature", "unknown key 'floor'"),
    ({"query_temperature": 3}, "query_temperature", "expected true, or a mapping with floor_scale and attn_scale"),
    ({"residual": {"scale": 0}}, "residual.scale", "is not a positive number"),
    ({"residual": {"scale": True}}, "residual.scale", "is not a number"),
    ({"residual": {}}, "residual.scale", "is required"),
    ({"residual": {"alpha": 2}}, "residual", "unknown key 'alpha'"),
    ({"residual": "yes"}, "residual", "is not true or false"),
    ({"mask": {"causal": True, "chunk": 0}}, "mask.chunk", "is not a whole number ≥ 1"),
    ({"mask": {"causal": True, "chunk": 2.5}}, "mask.chunk", "is not a whole number ≥ 1"),
    ({"mask": {"chunk": 2**40}}, "mask.chunk", "is more than 2^31 keys"),
]


def _gate_errors():
    bad_bias = {"gate": [0.0] * 3}
    return [
        ({"weights.gate": [[1.0] * 4] * 3}, "weights.gate", "is 3×4 but inputs have 4 columns (need 4×2·d_v)"),
        ({"weights.gate": [[1.0] * 6] * 4}, "weights.gate", "gives gates of width 3 per head but the values have "
                                                            "d_v = 2 (H ⊙ G needs 4×2·2)"),
        ({"weights.gate": [[1.0] * 5] * 4}, "weights.gate", "has 5 columns, which 2 heads cannot split"),
        ({"weights.gate": [1.0] * 4}, "weights.gate", "is a vector of 4"),
        ({"weights.gate": np.ones((3, 4, 2)).tolist()}, "weights.gate", "is 3-D with 3 heads but heads is 2"),
        ({"bias.gate": bad_bias["gate"]}, "bias.gate", "has length 3 but weights.gate gives 4 columns"),
        ({"weights.gate": None}, "bias.gate", "is given without weights.gate"),
    ]


@pytest.mark.parametrize("change, where, words", BAD + _gate_errors())
def test_wrong_shapes_and_values_are_refused(runner, tmp_path, change, where, words):
    doc = gated_document(5)
    for key, value in change.items():
        section, _, name = key.partition(".")
        if name:
            doc[section][name] = value
            doc[section] = {k: v for k, v in doc[section].items() if v is not None}
        else:
            doc[key] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc).replace("Infinity", "1e999"))
    result = runner.invoke(app, ["compute", str(path)])
    assert result.exit_code == 2, result.stdout
    assert where in result.stderr and words in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
