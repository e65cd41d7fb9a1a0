"""check names the slips the rope, latent, indexer and qk_norm stages declare (core/variants/rope.py, latent.py,
indexer.py, qknorm.py), each from a learner's numbers worked out here in numpy, or as the document without the
setting: the attention factor on the queries only, kv_norm left out, the indexer's head weights or scales left out
(the attention after it following the slip's selection), qk_norm moved, with its normalised queries given.
"""

from __future__ import annotations

import json
import math

import numpy as np
from test_indexer import rng_doc
from test_qknorm import document, loop_reference

import attncli
from attncli.cli import app

RNG = np.random.default_rng(44)


def check(runner, tmp_path, doc: dict, answer: dict, lang: str = "en") -> dict:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(dict(doc, answer=answer)))
    result = runner.invoke(app, ["check", str(path), "--format", "json", "--lang", lang])
    assert result.exit_code == 1, result.output
    return json.loads(result.stdout)


def rounded(a) -> list:
    return np.round(np.asarray(a, dtype=float), 6).tolist()


def named(found: dict) -> str:
    return found["slips"][0]["name"]


# ---------------------------------------------------------------- rope: the attention factor a on the queries only


def turned(x: np.ndarray, base: float, a: float) -> np.ndarray:
    """rotate_half at positions 0 … n − 1, cos and sin times a: x (n, d) -> (n, d)."""
    n, d = x.shape
    half = d // 2
    angle = np.arange(n)[:, None] * base ** (-2 * np.arange(half) / d)[None, :]  # (n, d/2)
    cos, sin = a * np.cos(angle), a * np.sin(angle)
    x1, x2 = x[:, :half], x[:, half:]
    return np.hstack([x1 * cos - x2 * sin, x2 * cos + x1 * sin])


def test_the_attention_factor_put_on_the_queries_only(runner, tmp_path):
    x, w_q, w_k, w_v = (RNG.normal(size=(4, 4)) for _ in range(4))
    doc = {"inputs": x.tolist(), "weights": {"query": w_q.tolist(), "key": w_k.tolist(), "value": w_v.tolist()},
           "rope": {"base": 100, "attention_factor": 1.5}}
    q, k = x @ w_q, x @ w_k
    right = turned(q, 100, 1.5) @ turned(k, 100, 1.5).T  # a² on every score
    np.testing.assert_allclose(attncli.compute(doc).scores[0], right, rtol=1e-12)  # (the document as worked here)
    once = turned(q, 100, 1.5) @ turned(k, 100, 1.0).T  # K′ turned without a
    found = check(runner, tmp_path, doc, {"scores": rounded(once)})
    assert named(found) == "rope_factor_once", found
    assert "a = 1.5" in found["findings"][0]["hint"] and "2.25" in found["findings"][0]["hint"]


# ---------------------------------------------------------------- latent: kv_norm left out

X = RNG.integers(-2, 3, (5, 4)).astype(float)
KV_DOWN = RNG.integers(-2, 3, (4, 5)).astype(float)  # r_kv = 3 latent columns, then d_r = 2 rotary ones
KV_UP = RNG.integers(-2, 3, (3, 4)).astype(float)  # per head [k_nope (1) | v (1)]
LATENT = {"inputs": X.tolist(), "heads": 2, "rope": {"dims": 2, "part": "last"},
          "latent": {"kv_norm": {"kind": "rms", "gamma": [1.5, 0.5, 2.0], "eps": 1e-6}},
          "weights": {"query": (RNG.integers(-2, 3, (4, 6)) / 2).tolist(), "kv_down": KV_DOWN.tolist(),
                      "kv_up": KV_UP.tolist()}}


def test_the_latent_not_normalised(runner, tmp_path):
    c = X @ KV_DOWN[:, :3]  # c_KV as the down-projection gives it (m, r_kv)
    values = np.stack([c @ KV_UP[:, 2 * h + 1:2 * h + 2] for h in range(2)])  # (h, m, d_v = 1)
    found = check(runner, tmp_path, LATENT, {"latent_kv": rounded(c), "values": rounded(values)})
    assert named(found) == "latent_kv_norm_left_out", found
    found = check(runner, tmp_path, LATENT, {"values": rounded(values)}, lang="zh")
    assert named(found) == "latent_kv_norm_left_out", found


# ---------------------------------------------------------------- the indexer: head weights, scales


def table_of(index_scores: np.ndarray) -> list:
    return [[None if math.isinf(v) else round(float(v), 6) for v in row] for row in index_scores]


def test_the_indexer_heads_all_weighed_1_and_the_attention_after_it(runner, tmp_path):
    doc = rng_doc(3, 3)
    weights = {k: v for k, v in doc["indexer"]["weights"].items() if k != "head_weights"}
    without = attncli.compute({**doc, "indexer": {**doc["indexer"], "weights": weights}})  # no W_IW: each head 1
    right = attncli.compute(doc)
    assert not np.array_equal(without.index_mask, right.index_mask)  # (other keys kept: the output differs too)
    found = check(runner, tmp_path, doc, {"index_scores": table_of(without.index_scores),
                                          "output": rounded(without.output)})
    assert named(found) == "indexer_head_weights_left_out", found
    found = check(runner, tmp_path, doc, {"output": rounded(without.output)})  # the output alone tells it too
    assert named(found) == "indexer_head_weights_left_out", found


def test_the_indexer_scales_left_out(runner, tmp_path):
    doc = rng_doc(4, 3)
    trace = attncli.compute(doc)
    factor = math.sqrt(3 * 4)  # √(H·d): d^(−1/2) inside the ReLU and H^(−1/2) outside it left out
    found = check(runner, tmp_path, doc, {"index_scores": table_of(trace.index_scores * factor)})
    assert named(found) == "indexer_scales_left_out", found
    assert "3.46" in found["findings"][0]["hint"]


# ---------------------------------------------------------------- qk_norm moved: its own normalised queries given

GAMMA = {"query": [1.0, 2.0, 0.5, 1.0], "key": [2.0, 1.0, 1.0, 0.5]}


def test_the_norm_after_the_rotation_with_the_normalised_queries_given(runner, tmp_path):
    doc = document(5, kind="rms", gamma=GAMMA)
    slip = loop_reference(dict(doc, qk_norm=dict(doc["qk_norm"], after_rope=True)))  # Q̂ = norm(rope(Q))
    found = check(runner, tmp_path, doc, {"head": 2, "normalized_queries": rounded(slip["normalized_queries"][1]),
                                          "output": rounded(slip["output"])})
    assert named(found) == "qk_norm_after_rope", found


def test_the_norm_before_the_rotation_with_the_normalised_queries_given(runner, tmp_path):
    doc = document(6, kind="rms", after_rope=True, gamma=GAMMA)
    slip = loop_reference(dict(doc, qk_norm=dict(doc["qk_norm"], after_rope=False)))  # Q̂ = norm(Q)
    found = check(runner, tmp_path, doc, {"head": 2, "normalized_queries": rounded(slip["normalized_queries"][1]),
                                          "output": rounded(slip["output"])})
    assert named(found) == "qk_norm_before_rope", found
