"""Today's attention against the real implementations: Hugging Face's Llama, Mistral, Qwen2, Gemma 2 and GPT-NeoX
attention (and their pre-norm decoder blocks), PyTorch's scaled_dot_product_attention with enable_gqa, and a decoding
step after a cached prefix; every key of the Trace agrees to 1e-9.

The models are built from configs with random weights (nothing is downloaded) and run in float64.  Each attncli
document is written as a user would write it: ``nn.Linear.weight`` transposed to d_in × d_out, a fused weight cut
with numpy, Gemma's stored γ − 1 plus 1, the model's own ``inv_freq`` as ``rope.frequencies``.

Hugging Face computes three steps in float32 even in a float64 model (an error of ~1e-8, above 1e-9); the tests
switch each back to float64 without changing what is computed:

- RoPE: the rotary-embedding module makes cos and sin in float32.  The tests call each attention module's (or
  decoder layer's) forward directly with ``position_embeddings=(cos, sin)`` computed in float64 by
  :func:`rope_tables`, from the same frequencies HF would use (θ^(−2i/d), or the module's ``inv_freq`` buffer).
- softmax: the eager attention calls ``softmax(..., dtype=torch.float32)``.  Within each test (pytest's
  monkeypatch) :class:`Recorder` replaces ``torch.nn.functional.softmax`` by one that keeps float64; the models use
  ``attn_implementation="eager"`` so that the attention probabilities exist.
- RMSNorm: its variance is taken after ``.to(torch.float32)``; the block tests replace the RMSNorm class's forward
  by the same formula in float64.

The intermediates are captured where HF makes them: forward hooks on q_proj/k_proj/v_proj (Q, K, V before the
rotation), on o_proj (the concatenated heads and the output) and on the norms; a wrapper around the module's
``eager_attention_forward`` (Q′, K′ and V after the cache, and the weights); the softmax's input (the scaled and
capped scores; compared where the mask allows).  ``scores`` is Q′·K′ᵀ from HF's own Q′ and K′.  The masks HF gets
are made by its own ``masking_utils.eager_mask``; the documents hold the mask matrix a user writes.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys

import hf_modules
import numpy as np
import pytest
from hf_modules import T, attention_document, heads_of, hf_mask, randomize

import attncli
from attncli.cli import app

os.environ["HF_HUB_OFFLINE"] = "1"  # build from configs only: never reach the Hub
os.environ["TRANSFORMERS_OFFLINE"] = "1"
torch = pytest.importorskip("torch", minversion="2.5")  # scaled_dot_product_attention(..., enable_gqa=True)
transformers = pytest.importorskip("transformers", minversion="5.23")  # rope_parameters, masking_utils (tested)
masking = pytest.importorskip("transformers.masking_utils")
pytestmark = pytest.mark.torch  # the comparisons: `pytest -m torch` runs only these (README, "Checks")

F64 = torch.float64
TOL = 1e-9
config = functools.partial(hf_modules.config, intermediate_size=64)


def rope_tables(frequencies: np.ndarray, positions) -> tuple:
    """HF's (cos, sin), (1, n, 2·len(f)), in float64: the angles p·f written twice (rotate_half's layout)."""
    angle = torch.tensor(np.outer(np.asarray(positions, dtype=np.float64), frequencies))
    emb = torch.cat((angle, angle), dim=-1)[None]
    return emb.cos(), emb.sin()


def theta_frequencies(theta: float, dims: int) -> np.ndarray:
    return 1.0 / theta ** (np.arange(0, dims, 2, dtype=np.float64) / dims)


class Recorder:
    """HF's intermediates of one attention module, with the eager softmax kept in float64."""

    def __init__(self, monkeypatch, attn, projections=("q_proj", "k_proj", "v_proj"), out="o_proj"):
        self.raw: dict = {}
        module = sys.modules[type(attn).__module__]
        eager, softmax = module.eager_attention_forward, torch.nn.functional.softmax

        def softmax64(input, dim=None, _stacklevel=3, dtype=None):
            self.raw["scaled_scores"] = input
            return softmax(input, dim=dim, dtype=None if input.dtype == F64 else dtype)

        def recording(mod, query, key, value, attention_mask, **kwargs):
            output, weights = eager(mod, query, key, value, attention_mask, **kwargs)
            self.raw.update(queries_rotated=query, keys_rotated=key, values=value, weights=weights)
            return output, weights

        monkeypatch.setattr(torch.nn.functional, "softmax", softmax64)
        monkeypatch.setattr(module, "eager_attention_forward", recording)
        for name in projections:
            getattr(attn, name).register_forward_hook(lambda _m, _i, o, name=name: self.raw.__setitem__(name, o))
        getattr(attn, out).register_forward_hook(lambda _m, i, o: self.raw.update(concat=i[0], output=o))

    def expected(self, heads: int, kv_heads: int, q=None, k=None) -> dict:
        """attncli's keys from what HF computed: Q, K (before rotation), Q′, K′, V, S, Z, A, H, Y."""
        raw = self.raw
        q_rot, k_rot = raw["queries_rotated"][0], raw["keys_rotated"][0]
        return {
            "queries": heads_of(raw["q_proj"], heads) if q is None else q,
            "keys": heads_of(raw["k_proj"], kv_heads) if k is None else k,
            "values": raw["values"][0].numpy(),
            "queries_rotated": q_rot.numpy(),
            "keys_rotated": k_rot.numpy(),
            "scores": (q_rot @ k_rot.repeat_interleave(heads // kv_heads, dim=0).transpose(-1, -2)).numpy(),
            "scaled_scores": raw["scaled_scores"][0].numpy(),
            "weights": raw["weights"][0].numpy(),
            "head_outputs": heads_of(raw["concat"], heads),
            "output": raw["output"][0].detach().numpy(),
        }


def compare(trace, expected: dict, allowed: np.ndarray, label: str, tol: float = TOL) -> dict:
    """The largest |attncli − reference| of each key, all below ``tol``; scaled scores where ``allowed`` (n × m or
    h × n × m); the reference's masked weights are 0."""
    allowed = np.broadcast_to(allowed, np.shape(expected["weights"]))
    diffs = {}
    for key, want in expected.items():
        got = np.asarray(trace[key] if isinstance(trace, dict) else getattr(trace, key), dtype=np.float64)
        want = np.asarray(want, dtype=np.float64)
        assert got.shape == want.shape, (key, got.shape, want.shape)
        if key == "scaled_scores":
            got, want = got[allowed], want[allowed]
        diffs[key] = float(np.abs(got - want).max(initial=0.0))
    print(f"\n{label}: " + ", ".join(f"{k} {v:.1e}" for k, v in diffs.items()))
    assert all(v < tol for v in diffs.values()), diffs
    assert np.all(np.asarray(expected["weights"])[~allowed] == 0)
    return diffs


def causal(n: int, m: int, window: int | None = None) -> np.ndarray:
    """The mask a user writes: key j allowed for query i when j ≤ i + (m − n) (and within the window)."""
    i, j = np.arange(n)[:, None] + (m - n), np.arange(m)[None, :]
    return (j <= i) & (j > i - window) if window else j <= i


# ---------------------------------------------------------------- attention modules

MODELS = [  # (config name, config fields, window of the mask)
    ("Llama", {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}, None),
    ("Mistral", {"rope_parameters": {"rope_type": "default", "rope_theta": 1e6}, "sliding_window": 3}, 3),
    ("Qwen2", {"rope_parameters": {"rope_type": "default", "rope_theta": 1e4}}, None),
]


@pytest.mark.parametrize("name, fields, window", MODELS, ids=[m[0] for m in MODELS])
def test_gqa_rope_attention_module(monkeypatch, name, fields, window):
    n, heads, kv_heads = 6, 8, 2
    cfg = config(name, hidden_size=64, num_attention_heads=heads, num_key_value_heads=kv_heads, **fields)
    modeling = importlib.import_module(f"transformers.models.{name.lower()}.modeling_{name.lower()}")
    attn = randomize(getattr(modeling, f"{name}Attention")(cfg, layer_idx=0), seed=len(name))
    x = torch.randn(1, n, 64, generator=torch.Generator().manual_seed(1), dtype=F64)
    theta = cfg.rope_parameters["rope_theta"]
    frequencies = theta_frequencies(theta, 64 // heads)
    function = masking.sliding_window_causal_mask_function(window) if window else None
    mask, allowed = hf_mask(n, n, function)
    assert (allowed == causal(n, n, window)).all()  # the user's window mask is Mistral's sliding_window
    rec = Recorder(monkeypatch, attn)
    with torch.no_grad():
        attn(x, position_embeddings=rope_tables(frequencies, range(n)), attention_mask=mask)
    doc = attention_document(attn, x[0].numpy(), heads, kv_heads, causal(n, n, window) if window else "causal",
                             rope={"base": theta})
    if name == "Qwen2":
        assert set(doc["bias"]) == {"query", "key", "value"}
    compare(attncli.compute(doc), rec.expected(heads, kv_heads), allowed, f"{name}Attention")


def test_llama3_rope_scaling_with_the_models_inv_freq(monkeypatch):
    n, heads, kv_heads, positions = 7, 4, 2, np.arange(40, 47)
    scaling = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
    cfg = config("Llama", hidden_size=64, num_attention_heads=heads, num_key_value_heads=kv_heads,
                 rope_parameters=scaling, max_position_embeddings=512)
    llama = transformers.models.llama.modeling_llama
    attn = randomize(llama.LlamaAttention(cfg, layer_idx=0), seed=3)
    inv_freq = llama.LlamaRotaryEmbedding(cfg).inv_freq.numpy().astype(np.float64)
    assert not np.allclose(inv_freq, theta_frequencies(500000.0, 16))  # the scaling changed the frequencies
    x = torch.randn(1, n, 64, generator=torch.Generator().manual_seed(2), dtype=F64)
    mask, allowed = hf_mask(n, n)
    rec = Recorder(monkeypatch, attn)
    with torch.no_grad():
        attn(x, position_embeddings=rope_tables(inv_freq, positions), attention_mask=mask)
    doc = attention_document(attn, x[0].numpy(), heads, kv_heads, "causal", positions=positions,
                             rope={"frequencies": inv_freq})
    compare(attncli.compute(doc), rec.expected(heads, kv_heads), allowed, "Llama 3 rope")


def test_gpt_neox_partial_rotary_and_fused_qkv(monkeypatch):
    n, hidden, heads, rotary_pct = 5, 48, 4, 0.5
    size = hidden // heads
    cfg = config("GPTNeoX", hidden_size=hidden, num_attention_heads=heads, rotary_pct=rotary_pct,
                 rotary_emb_base=10000, attention_bias=True)
    neox = transformers.models.gpt_neox.modeling_gpt_neox
    attn = randomize(neox.GPTNeoXAttention(cfg, layer_idx=0), seed=5)
    assert attn.rotary_ndims == int(rotary_pct * size) == 6
    x = torch.randn(1, n, hidden, generator=torch.Generator().manual_seed(3), dtype=F64)
    mask, allowed = hf_mask(n, n)
    rec = Recorder(monkeypatch, attn, projections=("query_key_value",), out="dense")
    with torch.no_grad():
        attn(x, attention_mask=mask, position_embeddings=rope_tables(theta_frequencies(10000.0, 6), range(n)))
    # The user's cut of the fused layout: per head, rows [q | k | v] of head_size each.
    w = attn.query_key_value.weight.detach().numpy().reshape(heads, 3, size, hidden)
    b = attn.query_key_value.bias.detach().numpy().reshape(heads, 3, size)
    doc = {"inputs": x[0].numpy(), "heads": heads, "mask": "causal", "rope": {"dims": int(rotary_pct * size)},
           "weights": {name: w[:, i].reshape(hidden, hidden).T for i, name in enumerate(("query", "key", "value"))}
           | {"output": T(attn.dense)},
           "bias": {name: b[:, i].reshape(-1) for i, name in enumerate(("query", "key", "value"))}
           | {"output": attn.dense.bias.detach().numpy()}}
    qkv = rec.raw["query_key_value"][0].reshape(n, heads, 3 * size).permute(1, 0, 2)
    q, k, _ = (t.numpy() for t in qkv.chunk(3, dim=-1))
    expected = rec.expected(heads, heads, q=q, k=k)
    compare(attncli.compute(doc), expected, allowed, "GPTNeoXAttention")


# ---------------------------------------------------------------- decoder blocks: norms and the residual


def rms_float64(weight_plus: float):
    """An RMSNorm forward that keeps float64: γ ⊙ x / √(mean(x²) + ε), γ = weight (+ 1 for Gemma)."""

    def forward(self, x):
        eps = getattr(self, "variance_epsilon", getattr(self, "eps", None))
        return (self.weight + weight_plus) * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    return forward


def block_recorder(monkeypatch, layer, raw: dict):
    rec = Recorder(monkeypatch, layer.self_attn)
    layer.input_layernorm.register_forward_hook(lambda _m, _i, o: raw.__setitem__("normalized_inputs", o))
    return rec


def test_llama_pre_norm_block(monkeypatch):
    n, heads, kv_heads = 6, 4, 2
    cfg = config("Llama", hidden_size=32, num_attention_heads=heads, num_key_value_heads=kv_heads, rms_norm_eps=1e-5)
    llama = transformers.models.llama.modeling_llama
    monkeypatch.setattr(llama.LlamaRMSNorm, "forward", rms_float64(0.0))
    layer = randomize(llama.LlamaDecoderLayer(cfg, layer_idx=0), seed=7)
    x = torch.randn(1, n, 32, generator=torch.Generator().manual_seed(4), dtype=F64) * 3
    mask, allowed = hf_mask(n, n)
    raw: dict = {}
    rec = block_recorder(monkeypatch, layer, raw)
    layer.post_attention_layernorm.register_forward_pre_hook(lambda _m, i: raw.__setitem__("residual", i[0]))
    with torch.no_grad():
        layer(x, attention_mask=mask, position_embeddings=rope_tables(theta_frequencies(10000.0, 8), range(n)))
    doc = attention_document(layer.self_attn, x[0].numpy(), heads, kv_heads, "causal", rope=True, residual=True,
                             pre_norm={"kind": "rms", "gamma": layer.input_layernorm.weight.detach().numpy(),
                                       "eps": cfg.rms_norm_eps})
    expected = rec.expected(heads, kv_heads) | {key: raw[key][0].numpy() for key in ("normalized_inputs", "residual")}
    compare(attncli.compute(doc), expected, allowed, "Llama decoder block")


def test_gemma2_sandwich_block_through_the_cli(monkeypatch, runner, tmp_path):
    n, hidden, heads, kv_heads, head_dim, scalar, cap = 7, 32, 4, 2, 16, 24, 2.0
    cfg = config("Gemma2", hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads,
                 head_dim=head_dim, query_pre_attn_scalar=scalar, attn_logit_softcapping=cap, sliding_window=64,
                 rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    gemma = transformers.models.gemma2.modeling_gemma2
    monkeypatch.setattr(gemma.Gemma2RMSNorm, "forward", rms_float64(1.0))
    layer = randomize(gemma.Gemma2DecoderLayer(cfg, layer_idx=0), seed=11)
    x = torch.randn(1, n, hidden, generator=torch.Generator().manual_seed(5), dtype=F64) * 2
    mask, allowed = hf_mask(n, n)
    raw: dict = {}
    rec = block_recorder(monkeypatch, layer, raw)
    layer.post_attention_layernorm.register_forward_hook(lambda _m, _i, o: raw.__setitem__("normalized_output", o))
    layer.pre_feedforward_layernorm.register_forward_pre_hook(lambda _m, i: raw.__setitem__("residual", i[0]))
    with torch.no_grad():
        layer(x, attention_mask=mask, position_embeddings=rope_tables(theta_frequencies(10000.0, head_dim), range(n)))
    expected = rec.expected(heads, kv_heads)
    expected |= {key: raw[key][0].numpy() for key in ("normalized_inputs", "normalized_output", "residual")}
    assert np.abs(expected["scores"][:, allowed]).max() * scalar**-0.5 > 3 * cap  # the cap bites

    def save(name, array):
        np.save(tmp_path / f"{name}.npy", array)
        return f"{name}.npy"

    attn, eps = layer.self_attn, cfg.rms_norm_eps
    doc = {"inputs": save("x", x[0].numpy()), "heads": heads, "kv_heads": kv_heads, "mask": "causal",
           "weights": {name: save(name, T(getattr(attn, f"{name[0]}_proj")))
                       for name in ("query", "key", "value", "output")},
           "scale": scalar ** -0.5, "softcap": cfg.attn_logit_softcapping, "rope": {"base": 10000},
           "pre_norm": {"kind": "rms", "eps": eps,
                        "gamma": save("g1", layer.input_layernorm.weight.detach().numpy() + 1)},
           "post_norm": {"kind": "rms", "eps": eps,
                         "gamma": save("g2", layer.post_attention_layernorm.weight.detach().numpy() + 1)},
           "residual": True}
    (tmp_path / "gemma2.json").write_text(json.dumps(doc))
    result = runner.invoke(app, ["compute", str(tmp_path / "gemma2.json"), "--format", "json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["kv_heads"] == kv_heads and got["scale"] == scalar ** -0.5
    got["scaled_scores"] = np.where(allowed, np.array(got["scaled_scores"], dtype=float), np.nan)
    compare(got, expected, allowed, "Gemma2 decoder block (CLI)")


# ---------------------------------------------------------------- PyTorch's SDPA and a KV cache


@pytest.mark.parametrize("heads, kv_heads, cross, causal_mask", [(8, 2, False, True), (4, 1, True, False),
                                                                  (6, 3, True, False), (4, 4, False, False)])
def test_scaled_dot_product_attention_enable_gqa(heads, kv_heads, cross, causal_mask):
    g = torch.Generator().manual_seed(heads * 10 + kv_heads)
    n, m, d_model, d_k, d_v = 5, 7 if cross else 5, 12, 4, 3
    x = torch.randn(n, d_model, generator=g, dtype=F64)
    c = torch.randn(m, d_model, generator=g, dtype=F64) if cross else x
    w_q, w_o = (torch.randn(d_model, heads * d_k, generator=g, dtype=F64),
                torch.randn(heads * d_v, 6, generator=g, dtype=F64))
    w_k, w_v = (torch.randn(d_model, kv_heads * d, generator=g, dtype=F64) for d in (d_k, d_v))
    split = lambda t, h: t.reshape(t.shape[0], h, -1).transpose(0, 1)  # noqa: E731  (rows, h·d) -> (h, rows, d)
    q, k, v = split(x @ w_q, heads), split(c @ w_k, kv_heads), split(c @ w_v, kv_heads)
    allowed = torch.ones(n, m, dtype=torch.bool).tril() if causal_mask else torch.rand(n, m, generator=g) < 0.7
    allowed[:, 0] = True
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=True)
    doc = {"inputs": x.numpy(), "heads": heads, "kv_heads": kv_heads,
           "mask": "causal" if causal_mask else allowed.numpy(),
           "weights": {"query": w_q.numpy(), "key": w_k.numpy(), "value": w_v.numpy(), "output": w_o.numpy()}}
    if cross:
        doc["context"] = c.numpy()
    trace = attncli.compute(doc)
    expected = {"queries": q.numpy(), "keys": k.numpy(), "values": v.numpy(), "head_outputs": want.numpy(),
                "output": (want.transpose(0, 1).reshape(n, -1) @ w_o).numpy()}
    scores = q @ k.repeat_interleave(heads // kv_heads, dim=0).transpose(-1, -2)
    expected["weights"] = (scores * d_k**-0.5).masked_fill(~allowed, -torch.inf).softmax(-1).numpy()
    compare(trace, expected, allowed.numpy(), f"SDPA enable_gqa h={heads} g={kv_heads}")


def test_decoding_step_after_a_cached_prefix(monkeypatch):
    prefix, n, heads, kv_heads, hidden = 4, 3, 4, 2, 32
    m = prefix + n
    cfg = config("Llama", hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads)
    llama = transformers.models.llama.modeling_llama
    attn = randomize(llama.LlamaAttention(cfg, layer_idx=0), seed=13)
    frequencies = theta_frequencies(10000.0, hidden // heads)
    x = torch.randn(1, m, hidden, generator=torch.Generator().manual_seed(6), dtype=F64)
    cache = transformers.DynamicCache(config=cfg)
    rec = Recorder(monkeypatch, attn)
    with torch.no_grad():
        attn(x[:, :prefix], position_embeddings=rope_tables(frequencies, range(prefix)),
             attention_mask=hf_mask(prefix, prefix)[0], past_key_values=cache)
        prefix_keys = rec.raw["k_proj"]
        mask, allowed = hf_mask(n, m)
        attn(x[:, prefix:], position_embeddings=rope_tables(frequencies, range(prefix, m)), attention_mask=mask,
             past_key_values=cache)
    assert (allowed == causal(n, m)).all()  # the user's j ≤ i + (m − n) is HF's mask after a cache
    doc = attention_document(attn, x[0, prefix:].numpy(), heads, kv_heads, causal(n, m), context=x[0].numpy(),
                             rope=True, positions=list(range(prefix, m)), context_positions=list(range(m)))
    keys = heads_of(torch.cat((prefix_keys, rec.raw["k_proj"]), dim=1), kv_heads)
    compare(attncli.compute(doc), rec.expected(heads, kv_heads, k=keys), allowed, "decoding step with a KV cache")
