"""attncli extract for the linear-attention layers (attncli/models/linear_outlines.py): Qwen3-Next's Gated DeltaNet,
Kimi Linear's Kimi Delta Attention and MiniMax's lightning attention, each written as a linear: document; and the
full-attention layers between them (MiniMax's Mistral-like attention, Kimi Linear's latent attention without
rotation), written as ordinary documents.

Tiny models are built here from configs with random weights (never downloaded) and saved; each document is computed
with the plain ``attncli compute`` and compared with the layer's attention module run here on the document's X:
as transformers runs it (its rules, norms and decays in float32 inside) within 1e-5 of the largest entry, and a
float64 transcription of it written here (tests/delta_reference.py for the delta rules, the direct sum for
lightning), sharing no code with attncli, within 1e-10.
"""

from __future__ import annotations

import json

import delta_reference as ref
import numpy as np
import pytest
import tiny_models
from tiny_models import TEXT

from attncli.cli import app

pytestmark = [pytest.mark.torch, pytest.mark.slow]
SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 48,
         "max_position_embeddings": 24}
LAYERS = {"qwen3_next": 0, "kimi_linear": 1, "minimax": 0}
MODULE = {"qwen3_next": "layers.{L}.linear_attn"}


def configs(transformers, vocab: int) -> dict:
    small = {**SMALL, "vocab_size": vocab, "pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3}
    return {
        "qwen3_next": transformers.Qwen3NextConfig(**small, num_key_value_heads=2, head_dim=8,
                                                   layer_types=["linear_attention", "full_attention"],
                                                   linear_num_value_heads=4, linear_num_key_heads=2,
                                                   linear_key_head_dim=8, linear_value_head_dim=6, num_experts=2,
                                                   num_experts_per_tok=1, moe_intermediate_size=16,
                                                   shared_expert_intermediate_size=16),
        "kimi_linear": transformers.KimiLinearConfig(**small, num_key_value_heads=4, linear_num_heads=2,
                                                     linear_head_dim=8, linear_conv_kernel_dim=3,
                                                     layer_types=["full_attention", "linear_attention"],
                                                     num_experts=2, num_experts_per_token=1, moe_intermediate_size=16,
                                                     first_k_dense_replace=2),
        "minimax": transformers.MiniMaxConfig(**small, num_key_value_heads=2, head_dim=8, block_size=4,
                                              layer_types=["linear_attention", "full_attention"],
                                              num_local_experts=2, num_experts_per_tok=1, sliding_window=5),
        # (its full layer with q LoRA and small latent sizes; the full layer comes after a linear one)
        "kimi_q_lora": transformers.KimiLinearConfig(**small, num_key_value_heads=4, linear_num_heads=2,
                                                     linear_head_dim=8, linear_conv_kernel_dim=3,
                                                     layer_types=["linear_attention", "full_attention"],
                                                     num_experts=2, num_experts_per_token=1, moe_intermediate_size=16,
                                                     first_k_dense_replace=2, q_lora_rank=12, kv_lora_rank=10,
                                                     qk_rope_head_dim=4, qk_nope_head_dim=6, v_head_dim=5),
        # (what a document cannot write: fewer key/value heads under latent attention; a partial rotary factor
        # that MiniMax's rotary module ignores)
        "kimi_kv_heads": transformers.KimiLinearConfig(**small, num_key_value_heads=2, linear_num_heads=2,
                                                       linear_head_dim=8, layer_types=["full_attention"] * 2,
                                                       first_k_dense_replace=2, kv_lora_rank=10, qk_rope_head_dim=4,
                                                       qk_nope_head_dim=6, v_head_dim=5),
        "minimax_partial": transformers.MiniMaxConfig(**small, num_key_value_heads=2, head_dim=8,
                                                      layer_types=["linear_attention", "full_attention"],
                                                      num_local_experts=2, num_experts_per_tok=1,
                                                      rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                                                                       "partial_rotary_factor": 0.5}),
    }


@pytest.fixture(scope="module")
def folders(hf, tmp_path_factory):
    torch, transformers = hf
    tok = tiny_models.tokenizer(transformers, "llama")
    return tiny_models.built(torch, transformers, configs(transformers, len(tok)), tok,
                             tmp_path_factory.mktemp("linear_models"))


def close(ours, theirs, tol: float, what: str) -> None:
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    assert ours.shape == theirs.shape, what
    err = np.abs(ours - theirs).max() / np.abs(theirs).max()
    assert err <= tol, f"{what}: {err:.3g} of the largest entry"


def gated_deltanet64(torch, layer, x):
    """Qwen3NextGatedDeltaNet's steps in float64 (fix_query_key_value_ordering written out), the recurrence."""
    import torch.nn.functional as F

    h_k, h_v, d_k, d_v = layer.num_k_heads, layer.num_v_heads, layer.head_k_dim, layer.head_v_dim
    r, n = h_v // h_k, x.shape[1]
    q, k, v, z = torch.split(layer.in_proj_qkvz(x).view(1, n, h_k, -1), [d_k, d_k, r * d_v, r * d_v], dim=3)
    b, a = torch.split(layer.in_proj_ba(x).view(1, n, h_k, 2 * r), [r, r], dim=3)
    mixed = ref.conv_silu(torch.cat([t.reshape(1, n, -1) for t in (q, k, v)], dim=-1), layer.conv1d.weight[:, 0])
    q, k, v = torch.split(mixed, [h_k * d_k, h_k * d_k, h_v * d_v], dim=-1)
    g = -layer.A_log.exp() * F.softplus(a.reshape(1, n, h_v) + layer.dt_bias)
    o, _, _ = ref.recurrent(q.reshape(1, n, h_k, d_k), k.reshape(1, n, h_k, d_k), v.reshape(1, n, h_v, d_v), g,
                            b.reshape(1, n, h_v).sigmoid())
    y = ref.gated_norm(o, z.reshape(1, n, h_v, d_v), layer.norm.weight, layer.norm.variance_epsilon, F.silu)
    return layer.out_proj(y.reshape(1, n, -1))


def kimi64(torch, layer, x):
    """KimiLinearDeltaAttention's steps in float64, the recurrence per key channel."""
    import torch.nn.functional as F

    h, d, n, gate = layer.num_heads, layer.head_dim, x.shape[1], layer.forget_gate
    mixed = ref.conv_silu(torch.cat([layer.q_proj(x), layer.k_proj(x), layer.v_proj(x)], dim=-1),
                          layer.conv1d.weight[:, 0])
    q, k, v = (t.reshape(1, n, h, d) for t in torch.split(mixed, [h * d] * 3, dim=-1))
    a = gate.f_b_proj(gate.f_a_proj(x)) + gate.dt_bias
    g = -gate.A_log.reshape(1, 1, h, 1).exp() * F.softplus(a.reshape(1, n, h, d))
    o, _, _ = ref.recurrent(q, k, v, g, layer.b_proj(x).sigmoid())
    z = layer.g_b_proj(layer.g_a_proj(x)).reshape(1, n, h, d)
    y = ref.gated_norm(o, z, layer.o_norm.weight, layer.o_norm.variance_epsilon, torch.sigmoid)
    return layer.o_proj(y.reshape(1, n, -1))


def lightning64(torch, layer, x):
    """MiniMaxLightningAttention in float64: its slopes' formula, the direct sum, the RMSNorm over heads, the gate."""
    import torch.nn.functional as F

    h, d, n = layer.num_attention_heads, layer.head_dim, x.shape[1]
    factor = 1 - layer.layer_idx / (layer.num_hidden_layers - 1 + 1e-5) + 1e-5
    s = ((1 / 2 ** (8 / h)) ** torch.arange(1, h + 1, dtype=torch.float64) * factor)[:, None, None]
    q, k, v = torch.split(F.silu(layer.qkv_proj(x)).reshape(1, n, h, 3 * d).transpose(1, 2), d, dim=3)
    i = torch.arange(n, dtype=torch.float64)
    distance = i[:, None] - i[None, :]
    decay = torch.where(distance >= 0, torch.exp(-s * distance.clamp(min=0)), torch.zeros(()))
    o = (((q @ k.transpose(-1, -2)) * decay) @ v).transpose(1, 2).reshape(1, n, h * d)
    y = layer.norm.weight * o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + layer.norm.variance_epsilon)
    return layer.out_proj(torch.sigmoid(layer.output_gate(x)) * y)


TRANSCRIPTIONS = {"qwen3_next": gated_deltanet64, "kimi_linear": kimi64, "minimax": lightning64}
WANTS = {"qwen3_next": ["linear:\n  kind: gated_delta\n  heads: 2\n  value_heads: 4\n  weights:\n    query: {file:",
                        "columns: [[0, 8], [40, 48]]", "in_proj_ba.weight", "conv: {file:", "activation: silu"],
         "kimi_linear": ["kind: kda", "decay: {product: [{file:", "f_b_proj.weight", "A_log: [", "activation: sigmoid"],
         "minimax": ["kind: lightning", "slopes: {layer: 0, layers: 2}", "chunk: 4", "columns: [[0, 8], [24, 32],",
                     "output_gate.weight"]}


@pytest.mark.parametrize("family", list(LAYERS))
def test_each_linear_layer_reproduces_the_model(runner, hf, folders, family, tmp_path):
    torch, transformers = hf
    layer = LAYERS[family]
    doc = tmp_path / f"{family}.yaml"
    result = runner.invoke(app, ["extract", str(folders[family]), "--text", TEXT, "-o", str(doc), "--layer",
                                 str(layer)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1] == "The document reproduces the model (max |difference|):"
    text = doc.read_text()
    for fragment in WANTS[family]:
        assert fragment in text, (family, fragment, text)
    assert "linear attention (after its input norm)" in text
    got = json.loads(runner.invoke(app, ["compute", str(doc), "--format", "json", "--only", "output"]).stdout)
    x = torch.from_numpy(np.load(doc.with_suffix(".npy")))[None]
    model = transformers.AutoModel.from_pretrained(folders[family], dtype=torch.float64).eval()
    module = model.get_submodule(MODULE.get(family, "layers.{L}.self_attn").format(L=layer))
    with torch.no_grad():
        theirs = module(x, None, None)[0] if family == "minimax" else module(x)
        close(got["output"], theirs[0], 1e-5, f"{family}: output against the module (float32 inside)")
        close(got["output"], TRANSCRIPTIONS[family](torch, module, x)[0], 1e-10,
              f"{family}: output against the float64 transcription")


def causal_mask(torch, n: int, window: int | None) -> object:
    """Additive (1, 1, n, n): 0 where query i sees key j (j ≤ i, and i − j < window), −inf elsewhere."""
    i = torch.arange(n)
    d = i[:, None] - i[None, :]
    seen = (d >= 0) & (d < (window or n))
    return torch.zeros(n, n, dtype=torch.float64).masked_fill(~seen, float("-inf"))[None, None]


def softmax_attention64(torch, q, k, v, scale, mask):
    """(1, h, n, d) queries, keys and values (one per query head) -> (1, n, h·d_v) and the weights (1, h, n, n)."""
    weights = torch.softmax((q @ k.transpose(-1, -2)) * scale + mask, dim=-1)
    return (weights @ v).transpose(1, 2).reshape(1, q.shape[2], -1), weights


def mistral64(torch, layer, config, x):
    """MiniMaxAttention in float64: θ^(−2i/d) rotated rotate_half's way at positions 0 … n − 1, grouped-query heads
    repeated, the sliding window, d^(−1/2)."""
    h, g, d, n = config.num_attention_heads, config.num_key_value_heads, layer.head_dim, x.shape[1]
    q, k, v = (proj(x).reshape(1, n, -1, d).transpose(1, 2) for proj in (layer.q_proj, layer.k_proj, layer.v_proj))
    theta = config.rope_parameters["rope_theta"]
    angles = torch.arange(n, dtype=torch.float64)[:, None] / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()

    def turn(t):
        return t * cos + torch.cat((-t[..., d // 2:], t[..., :d // 2]), -1) * sin

    q, k = turn(q), turn(k)
    k, v = (t.repeat_interleave(h // g, dim=1) for t in (k, v))
    o, weights = softmax_attention64(torch, q, k, v, d**-0.5, causal_mask(torch, n, config.sliding_window))
    return layer.o_proj(o), weights


def latent64(torch, layer, config, x):
    """KimiLinearAttention in float64: the latent's RMSNorm written out, [k_nope | k_r] with k_r shared by every head
    and never rotated, (d_nope + d_r)^(−1/2)."""
    def rms(t, norm):
        return norm.weight * t / (t.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon).sqrt()

    h, n = config.num_attention_heads, x.shape[1]
    d_nope, d_r, d_v = config.qk_nope_head_dim, config.qk_rope_head_dim, config.v_head_dim
    cq = x if layer.q_proj is not None else rms(layer.q_a_proj(x), layer.q_a_layernorm)
    q = (layer.q_proj or layer.q_b_proj)(cq).reshape(1, n, h, d_nope + d_r).transpose(1, 2)
    c, k_r = torch.split(layer.kv_a_proj_with_mqa(x), [config.kv_lora_rank, d_r], dim=-1)
    kv = layer.kv_b_proj(rms(c, layer.kv_a_layernorm)).reshape(1, n, h, d_nope + d_v).transpose(1, 2)
    k = torch.cat((kv[..., :d_nope], k_r[:, None].expand(1, h, n, d_r)), dim=-1)
    o, weights = softmax_attention64(torch, q, k, kv[..., d_nope:], (d_nope + d_r) ** -0.5, causal_mask(torch, n, None))
    return layer.o_proj(o), weights


FULL = {"minimax": 1, "kimi_linear": 0, "kimi_q_lora": 1}
FULL_WANTS = {"minimax": ["kv_heads: 2", "q_proj.weight", "mask: {causal: true, window: 5}",
                          "rope: {base: 1000000.0, style: half}", "layer 1's attention (after its input norm)"],
              "kimi_linear": ["kv_down: {file:", "kv_a_proj_with_mqa", "kv_b_proj", "q_proj.weight", "mask: causal",
                              "rope: {frequencies: [" + ", ".join(["0.0"] * 32) + "], dims: 64, part: last",
                              "kv_norm: {kind: rms", "pre_norm:", "residual: true", "entering layer 0\n"],
              "kimi_q_lora": ["query_down: {file:", "q_b_proj.weight", "query_norm: {kind: rms",
                              "rope: {frequencies: [0.0, 0.0], dims: 4, part: last", "residual: true"]}


@pytest.mark.parametrize("family", list(FULL))
def test_each_full_attention_layer_reproduces_the_model(runner, hf, folders, family, tmp_path):
    """The full layers of the hybrid models: the model's weights and output projection (the module run here on the
    document's X, float32 softmax inside) within 1e-5, the float64 transcriptions within 1e-10."""
    torch, transformers = hf
    layer = FULL[family]
    doc = tmp_path / f"{family}.yaml"
    result = runner.invoke(app, ["extract", str(folders[family]), "--text", TEXT, "-o", str(doc), "--layer",
                                 str(layer)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1] == "The document reproduces the model (max |difference|):"
    assert "the model's output_attentions" in result.stdout
    text = doc.read_text()
    for fragment in FULL_WANTS[family]:
        assert fragment in text, (family, fragment, text)
    assert "\nlinear:" not in text
    assert ("pre_norm" in text, "residual" in text) == ((False, False) if family == "minimax" else (True, True))
    got = json.loads(runner.invoke(app, ["compute", str(doc), "--format", "json"]).stdout)
    x = torch.from_numpy(np.load(doc.with_suffix(".npy")))[None]
    model = transformers.AutoModel.from_pretrained(folders[family], dtype=torch.float64,
                                                   attn_implementation="eager").eval()
    config, block = model.config, model.layers[layer]
    n = x.shape[1]
    with torch.no_grad():
        if family == "minimax":  # X is the module's input already
            cos_sin = model.rotary_emb(x, torch.arange(n)[None])
            theirs = block.self_attn(x, cos_sin, causal_mask(torch, n, config.sliding_window))
            ours64 = mistral64(torch, block.self_attn, config, x)
        else:  # X enters the layer: its input norm first, written out
            norm = block.input_layernorm
            x_hat = norm.weight * x / (x.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon).sqrt()
            theirs = block.self_attn(x_hat, causal_mask(torch, n, None))
            ours64 = latent64(torch, block.self_attn, config, x_hat)
            close(got["residual"], (x + ours64[0])[0], 1e-10, f"{family}: residual against X + the transcription")
        for i, key in enumerate(("output", "weights")):
            close(got[key], theirs[i][0], 1e-5, f"{family}: {key} against the module (float32 softmax inside)")
            close(got[key], ours64[i][0], 1e-10, f"{family}: {key} against the float64 transcription")


@pytest.mark.parametrize("family, words", [
    ("kimi_kv_heads", "num_key_value_heads differs from num_attention_heads; latent attention expands"),
    ("minimax_partial", "rope_parameters turn 4 of the 8 dimensions of a head, but MiniMax's rotary module turns 8")])
def test_full_attention_layers_a_document_cannot_write_are_refused_in_one_line(runner, folders, tmp_path, family,
                                                                               words):
    doc = tmp_path / "full.yaml"
    result = runner.invoke(app, ["extract", str(folders[family]), "--text", TEXT, "-o", str(doc), "--layer", "1"])
    assert result.exit_code == 2 and words in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not doc.exists()


@pytest.mark.parametrize("family", ["kimi_linear", "kimi_q_lora"])
def test_a_latent_layers_weights_are_written_in_the_order_they_are_computed(runner, folders, family, tmp_path):
    """weights: the query's projection(s) first, then the latent's down and up projections, the output last."""
    doc = tmp_path / f"{family}.yaml"
    result = runner.invoke(app, ["extract", str(folders[family]), "--text", TEXT, "-o", str(doc), "--layer",
                                 str(FULL[family])])
    assert result.exit_code == 0, result.stderr
    lines = doc.read_text().split("\nweights:\n", 1)[1].split("\n")
    keys = [line.split(":")[0].strip() for line in lines[:lines.index(next(x for x in lines if not x.startswith(" ")))]]
    queries = ["query_down", "query_up"] if family == "kimi_q_lora" else ["query"]
    assert keys == [*queries, "kv_down", "kv_up", "output"], keys
