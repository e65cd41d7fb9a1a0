"""PyTorch as an independent oracle (float64), when torch is installed.

The document gets PyTorch's own parameters the way the README tells users to
bring them: ``nn.Linear``-style weights (d_out × d_in) transposed to d_in × d_out.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from attncli.cli import app

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch  # the comparisons: `pytest -m torch` runs only these (README, "Checks")
F = torch.nn.functional


def run(runner, path):
    result = runner.invoke(app, ["compute", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def save(tmp_path, name, tensor):
    np.save(tmp_path / name, tensor.detach().numpy())
    return name


@pytest.mark.parametrize("n, d_model, heads", [(5, 8, 2), (6, 768, 12), (1, 6, 3)])
def test_multi_head_attention_module(runner, tmp_path, n, d_model, heads):
    torch.manual_seed(n + heads)
    mha = torch.nn.MultiheadAttention(d_model, heads, dtype=torch.float64, batch_first=True)
    with torch.no_grad():
        mha.in_proj_bias.normal_()
        mha.out_proj.bias.normal_()
    x = torch.randn(1, n, d_model, dtype=torch.float64)
    mask = torch.rand(n, n) < 0.3  # nn.MultiheadAttention: True = masked
    mask.fill_diagonal_(False)
    want, weights = mha(x, x, x, attn_mask=mask, average_attn_weights=False)
    w_q, w_k, w_v = mha.in_proj_weight.chunk(3)
    b_q, b_k, b_v = mha.in_proj_bias.chunk(3)
    doc = {
        "inputs": save(tmp_path, "x.npy", x[0]),
        "heads": heads,
        "weights": {"query": save(tmp_path, "wq.npy", w_q.T), "key": save(tmp_path, "wk.npy", w_k.T),
                    "value": save(tmp_path, "wv.npy", w_v.T),
                    "output": save(tmp_path, "wo.npy", mha.out_proj.weight.T)},
        "bias": {"query": save(tmp_path, "bq.npy", b_q), "key": save(tmp_path, "bk.npy", b_k),
                 "value": save(tmp_path, "bv.npy", b_v), "output": save(tmp_path, "bo.npy", mha.out_proj.bias)},
        "mask": (~mask).int().tolist(),  # attncli (like SDPA): 1 = may attend
    }
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    got = run(runner, tmp_path / "doc.json")
    assert np.abs(np.array(got["output"]) - want[0].detach().numpy()).max() < 1e-9
    assert np.abs(np.array(got["weights"]) - weights[0].detach().numpy()).max() < 1e-9


@pytest.mark.parametrize("scale", ["sqrt", 0.3, "none"])
def test_scaled_dot_product_attention_cross_attention(runner, tmp_path, scale):
    g = torch.Generator().manual_seed(7)
    n, m, d_model, d_ctx, h, d_k, d_v = 4, 6, 5, 3, 2, 4, 3
    x = torch.randn(n, d_model, generator=g, dtype=torch.float64)
    c = torch.randn(m, d_ctx, generator=g, dtype=torch.float64)
    w_q = torch.randn(h, d_model, d_k, generator=g, dtype=torch.float64)
    w_k = torch.randn(h, d_ctx, d_k, generator=g, dtype=torch.float64)
    w_v = torch.randn(h, d_ctx, d_v, generator=g, dtype=torch.float64)
    allowed = torch.rand(n, m, generator=g) < 0.6
    allowed[2] = False  # a query that may attend to nothing: zero weights and output
    q, k, v = x @ w_q, c @ w_k, c @ w_v  # (h, n|m, d)
    factor = {"sqrt": None, "none": 1.0}.get(scale, scale)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=factor)
    doc = {"inputs": x.tolist(), "context": c.tolist(), "weights": {"query": w_q.tolist(), "key": w_k.tolist(),
           "value": w_v.tolist()}, "mask": allowed.tolist(), "scale": scale}
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    got = run(runner, tmp_path / "doc.json")
    assert np.abs(np.array(got["head_outputs"]) - want.numpy()).max() < 1e-9
    assert np.array(got["head_outputs"])[:, 2].tolist() == [[0.0] * d_v] * h
    concat = want.transpose(0, 1).reshape(n, h * d_v)
    assert np.abs(np.array(got["output"]) - concat.numpy()).max() < 1e-9


def test_causal_matches_is_causal(runner, tmp_path):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(7, 4, generator=g, dtype=torch.float64)
    want = F.scaled_dot_product_attention(x[None], x[None], x[None], is_causal=True)[0]
    (tmp_path / "doc.json").write_text(json.dumps({"inputs": x.tolist(), "mask": "causal"}))
    got = run(runner, tmp_path / "doc.json")
    assert np.abs(np.array(got["output"]) - want.numpy()).max() < 1e-12


def test_gpt2_style_fused_projection_and_causal_mask(runner, tmp_path):
    """GPT-2 keeps c_attn as one d_model × 3·d_model matrix (Conv1D: already d_in × d_out); split its columns."""
    torch.manual_seed(2)
    n, d, heads = 16, 768, 12
    x = torch.randn(n, d, dtype=torch.float64)
    c_attn_w, c_attn_b = (0.02 * torch.randn(d, 3 * d, dtype=torch.float64),
                          0.02 * torch.randn(3 * d, dtype=torch.float64))
    c_proj_w, c_proj_b = 0.02 * torch.randn(d, d, dtype=torch.float64), 0.02 * torch.randn(d, dtype=torch.float64)
    q, k, v = (x @ c_attn_w + c_attn_b).split(d, dim=1)
    per_head = lambda t: t.view(n, heads, d // heads).transpose(0, 1)  # noqa: E731
    heads_out = F.scaled_dot_product_attention(per_head(q), per_head(k), per_head(v), is_causal=True)
    want = heads_out.transpose(0, 1).reshape(n, d) @ c_proj_w + c_proj_b
    w, b = c_attn_w.split(d, dim=1), c_attn_b.split(d)
    doc = {
        "inputs": save(tmp_path, "x.npy", x), "heads": heads, "mask": "causal",
        "weights": {name: save(tmp_path, f"w_{name}.npy", w[i]) for i, name in enumerate(("query", "key", "value"))},
        "bias": {name: save(tmp_path, f"b_{name}.npy", b[i]) for i, name in enumerate(("query", "key", "value"))},
    }
    doc["weights"]["output"] = save(tmp_path, "c_proj_w.npy", c_proj_w)
    doc["bias"]["output"] = save(tmp_path, "c_proj_b.npy", c_proj_b)
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    got = run(runner, tmp_path / "doc.json")
    assert np.abs(np.array(got["output"]) - want.numpy()).max() < 1e-9
    assert np.abs(np.array(got["head_outputs"]) - heads_out.numpy()).max() < 1e-9


def test_multi_head_attention_with_a_context_of_another_width(runner, tmp_path):
    """nn.MultiheadAttention(kdim=vdim≠embed_dim): separate q/k/v weights; keys and values from the context."""
    torch.manual_seed(5)
    mha = torch.nn.MultiheadAttention(8, 2, kdim=6, vdim=6, dtype=torch.float64, batch_first=True)
    with torch.no_grad():
        mha.in_proj_bias.normal_()
    x, c = torch.randn(1, 3, 8, dtype=torch.float64), torch.randn(1, 5, 6, dtype=torch.float64)
    want, weights = mha(x, c, c, average_attn_weights=False)
    b_q, b_k, b_v = mha.in_proj_bias.chunk(3)
    doc = {"inputs": x[0].tolist(), "context": c[0].tolist(), "heads": 2,
           "weights": {"query": mha.q_proj_weight.T.tolist(), "key": mha.k_proj_weight.T.tolist(),
                       "value": mha.v_proj_weight.T.tolist(), "output": mha.out_proj.weight.T.tolist()},
           "bias": {"query": b_q.tolist(), "key": b_k.tolist(), "value": b_v.tolist(),
                    "output": mha.out_proj.bias.tolist()}}
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    got = run(runner, tmp_path / "doc.json")
    assert np.abs(np.array(got["output"]) - want[0].detach().numpy()).max() < 1e-9
    assert np.abs(np.array(got["weights"]) - weights[0].detach().numpy()).max() < 1e-9


def test_float32_npy_is_computed_in_float64(runner, tmp_path):
    torch.manual_seed(7)
    x = torch.randn(4, 6, dtype=torch.float32)
    w = torch.randn(6, 6, dtype=torch.float32)
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "w.npy", w.numpy())
    (tmp_path / "doc.json").write_text(json.dumps({"inputs": "x.npy", "heads": 2,
                                                   "weights": {"query": "w.npy", "key": "w.npy"}}))
    got = run(runner, tmp_path / "doc.json")
    x64, w64 = x.double(), w.double()
    q = (x64 @ w64).view(4, 2, 3).transpose(0, 1)
    want = F.scaled_dot_product_attention(q, q, x64.view(4, 2, 3).transpose(0, 1))
    assert np.abs(np.array(got["head_outputs"]) - want.numpy()).max() < 1e-12
