"""Positional encoding, Add & Norm, additive scores and other normalisations (issue 7's seeds).

References: the formulas written out with ``math`` loops, and PyTorch's
``nn.LayerNorm`` / ``nn.MultiheadAttention`` when torch is installed.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from reference import matmul, max_abs_diff, naive_attention

from attncli.cli import app

X = [[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 2.0], [1.0, 1.0, 1.0, 1.0]]


def compute(runner, tmp_path, doc, *args, code=0):
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    result = runner.invoke(app, ["compute", str(tmp_path / "doc.json"), "--format", "json", *args])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout) if code == 0 else result


def sinusoid(pos, i, d):
    angle = pos / 10000 ** (2 * (i // 2) / d)
    return math.sin(angle) if i % 2 == 0 else math.cos(angle)


@pytest.mark.parametrize("d", [4, 5])
def test_sinusoidal_positions_are_added_before_the_projections(runner, tmp_path, d):
    x = [[float(r + c) for c in range(d)] for r in range(3)]
    got = compute(runner, tmp_path, {"inputs": x, "positional": "sinusoidal"})
    p = [[sinusoid(pos, i, d) for i in range(d)] for pos in range(3)]
    assert max_abs_diff(got["positional"], p) < 1e-12
    xp = [[x[r][c] + p[r][c] for c in range(d)] for r in range(3)]
    assert max_abs_diff(got["output"], naive_attention(xp)["output"]) < 1e-9
    assert got["inputs"] == x  # the inputs stay as given


def test_positional_matrix(runner, tmp_path):
    p = [[0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 0.5, 0]]
    got = compute(runner, tmp_path, {"inputs": X, "positional": p})
    xp = [[a + b for a, b in zip(r, s)] for r, s in zip(X, p)]
    assert max_abs_diff(got["queries"][0], xp) < 1e-12


def layer_norm(row, gamma, beta, eps):
    mean = sum(row) / len(row)
    var = sum((v - mean) ** 2 for v in row) / len(row)
    return [g * (v - mean) / math.sqrt(var + eps) + b for v, g, b in zip(row, gamma, beta)]


def test_add_norm_written_out(runner, tmp_path):
    gamma, beta = [1.0, 2.0, 0.5, 1.5], [0.1, 0.0, -0.1, 0.2]
    got = compute(runner, tmp_path, {"inputs": X, "add_norm": {"gamma": gamma, "beta": beta, "eps": 1e-6}})
    y = naive_attention(X)["output"]
    residual = [[a + b for a, b in zip(r, s)] for r, s in zip(X, y)]
    assert max_abs_diff(got["residual"], residual) < 1e-12
    assert max_abs_diff(got["normalized"], [layer_norm(r, gamma, beta, 1e-6) for r in residual]) < 1e-9


@pytest.mark.torch
def test_bert_attention_block_with_add_norm_matches_torch(runner, tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    d, h, n = 48, 4, 5
    mha = torch.nn.MultiheadAttention(d, h, dtype=torch.float64, batch_first=True)
    norm = torch.nn.LayerNorm(d, eps=1e-12, dtype=torch.float64)
    with torch.no_grad():
        for t in (mha.in_proj_bias, mha.out_proj.bias, norm.weight, norm.bias):
            t.normal_()
    x = torch.randn(1, n, d, dtype=torch.float64)
    p = torch.randn(n, d, dtype=torch.float64)  # learned position embeddings, as in BERT
    e = x + p
    want = norm(e + mha(e, e, e)[0])[0].detach().numpy()
    w_q, w_k, w_v = mha.in_proj_weight.detach().chunk(3)
    b_q, b_k, b_v = mha.in_proj_bias.detach().chunk(3)
    doc = {"inputs": x[0].tolist(), "positional": p.tolist(), "heads": h,
           "weights": {"query": w_q.T.tolist(), "key": w_k.T.tolist(), "value": w_v.T.tolist(),
                       "output": mha.out_proj.weight.detach().T.tolist()},
           "bias": {"query": b_q.tolist(), "key": b_k.tolist(), "value": b_v.tolist(),
                    "output": mha.out_proj.bias.detach().tolist()},
           "add_norm": {"gamma": norm.weight.detach().tolist(), "beta": norm.bias.detach().tolist(), "eps": 1e-12}}
    got = compute(runner, tmp_path, doc, "--only", "normalized")
    assert np.abs(np.array(got["normalized"]) - want).max() < 1e-9


def test_add_norm_needs_output_as_wide_as_inputs(runner, tmp_path):
    doc = {"inputs": X, "weights": {"value": [[1, 0], [0, 1], [1, 1], [0, 0]]}, "add_norm": True}
    result = compute(runner, tmp_path, doc, code=2)
    assert "add_norm: needs the output as wide as the inputs (d_out = 2, d_model = 4)" in result.stderr


def test_additive_scores_hand_worked(runner, tmp_path):
    # Q = K = X (no projections); W₁, W₂: 4 × 2; v: 2
    w1 = [[0.5, 0.0], [0.0, 0.5], [0.5, 0.5], [0.0, -0.5]]
    w2 = [[0.0, 1.0], [1.0, 0.0], [-0.5, 0.0], [0.0, 0.5]]
    v = [1.0, -2.0]
    got = compute(runner, tmp_path, {"inputs": X, "score": "additive", "weights": {"w1": w1, "w2": w2, "v": v}})
    qw, kw = matmul(X, w1), matmul(X, w2)
    e = [[sum(v[a] * math.tanh(qw[i][a] + kw[j][a]) for a in range(2)) for j in range(3)] for i in range(3)]
    assert got["scale"] == 1.0  # additive scores are not scaled unless asked
    assert max_abs_diff(got["scores"][0], e) < 1e-12
    weights = [[math.exp(s) / sum(math.exp(t) for t in row) for s in row] for row in e]
    assert max_abs_diff(got["weights"][0], weights) < 1e-12


def test_normalize_by_row_sum_as_seed_002(runner, tmp_path):
    got = compute(runner, tmp_path, {"inputs": X, "normalize": "sum", "scale": "none"})
    relevance = matmul(X, [list(c) for c in zip(*X)])  # Q·Kᵀ with Q = K = X
    want = [[r / sum(row) for r in row] for row in relevance]  # each row by its own sum
    assert max_abs_diff(got["weights"][0], want) < 1e-12
    assert max_abs_diff(got["output"], matmul(want, X)) < 1e-12


def test_normalize_none_keeps_the_scaled_scores(runner, tmp_path):
    got = compute(runner, tmp_path, {"inputs": X, "normalize": "none", "mask": "causal", "scale": 0.5})
    assert got["weights"][0][1] == [0.5 * 2.0 * 0, 0.5 * 8.0, 0.0]


def test_sum_of_zero_is_an_error_naming_the_query(runner, tmp_path):
    # Q = K = X: query 1's scores are [1·1, 1·(−1)] = [1, −1], which sum to 0
    result = compute(runner, tmp_path, {"inputs": [[1, 0], [-1, 0]], "normalize": "sum"}, code=2)
    assert "query 1 ('x1')" in result.stderr and "sum to 0" in result.stderr


@pytest.mark.parametrize("doc, message", [
    ({"score": "cosine"}, "score: 'cosine' is not one of dot, additive"),
    ({"normalize": "max"}, "normalize: 'max' is not one of softmax, sum, none"),
    ({"score": "additive"}, "weights.w1 is missing"),
    ({"weights": {"w1": [[1]]}}, "weights.w1: is only used with score: additive"),
    ({"positional": [[1, 2]]}, "positional: is 1×2 but the inputs are 3×4"),
    ({"add_norm": {"gama": [1]}}, "unknown key 'gama' (did you mean 'gamma'?)"),
    ({"add_norm": {"eps": 0}}, "add_norm.eps: 0 is not a positive number"),
])
def test_bad_layer_options(runner, tmp_path, doc, message):
    result = compute(runner, tmp_path, {"inputs": X, **doc}, code=2)
    assert message in result.stderr and result.stdout == ""


def test_only_a_layer_the_document_lacks(runner, tmp_path):
    result = compute(runner, tmp_path, {"inputs": X}, "--only", "residual", code=2)
    assert "--only: 'residual' needs add_norm: or residual: true in the document" in result.stderr


def test_residual_adds_the_positions_too(runner, tmp_path):
    """R = X₀ + Y with X₀ = X + P: the residual carries the positional encoding as the projections saw it."""
    w_q = [[0.5, -1.0], [1.0, 0.25], [0.0, 2.0], [-0.5, 1.0]]
    got = compute(runner, tmp_path, {"inputs": X, "positional": "sinusoidal", "residual": True,
                                     "weights": {"query": w_q, "key": w_q, "value": [r + [1.0, 0.0] for r in w_q],
                                                 "output": [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0]]}})
    p = [[sinusoid(pos, i, 4) for i in range(4)] for pos in range(3)]
    xp = [[X[r][c] + p[r][c] for c in range(4)] for r in range(3)]
    want = naive_attention(xp, w_q, w_q, [r + [1.0, 0.0] for r in w_q],
                           output=[[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0]])["output"]
    assert max_abs_diff(got["output"], want) < 1e-12
    residual = [[xp[r][c] + want[r][c] for c in range(4)] for r in range(3)]
    assert max_abs_diff(got["residual"], residual) < 1e-12
    assert max(abs(p[r][c]) for r in range(3) for c in range(4)) > 0.5  # X + Y alone would be far off


def test_only_queries_with_pre_norm_are_the_normalised_inputs_projected(runner, tmp_path):
    gamma, w_q = [1.0, 2.0, 0.5, -1.0], [[1.0, 0.0], [0.5, 1.0], [0.0, -1.0], [2.0, 0.5]]
    doc = {"inputs": X, "pre_norm": {"kind": "rms", "gamma": gamma, "eps": 1e-6}, "weights": {"query": w_q, "key": w_q}}
    only = compute(runner, tmp_path, doc, "--only", "queries")
    rms = [math.sqrt(sum(x * x for x in row) / 4 + 1e-6) for row in X]
    x_hat = [[gamma[c] * X[r][c] / rms[r] for c in range(4)] for r in range(3)]
    assert max_abs_diff(only["queries"][0], matmul(x_hat, w_q)) < 1e-12
    assert only["queries"] == compute(runner, tmp_path, doc)["queries"]

