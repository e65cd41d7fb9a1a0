"""A decode step after a cache, against the real Hugging Face modules of 2025 (issue 28), in float64: the module is
called on a prefix of p tokens with a ``DynamicCache``, then on one more token, whose query (at position p) attends
to the p + 1 keys the cache and the new token give.  The document holds that one token as ``inputs``, every token as
the ``context``, and ``positions: [p]`` (the context's positions default to 0 … p).

- ``Qwen3Attention``: qk_norm (RMSNorm per head) before RoPE; the cached keys were normalised and rotated in the
  first call: Q̂ of the new token, K′ of all p + 1 keys, A and Y agree;
- ``GptOssAttention`` on a sliding layer: its sinks and its window after the cache (HF's DynamicCache keeps the
  last W − 1 keys of a sliding layer; the document keeps every key and says ``window: W``): the weights of the keys
  HF kept, 0 for the rest, the sink's share and Y agree.

Llama 4's chunked decode step is in tests/test_temperature_gate_torch.py and Llama's in tests/test_modern_torch.py.
HF's float32 steps (Qwen3's RMSNorm, the eager softmax) are put back in float64 with the same formula; the rotary
tables are made in float64 here.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hf_modules import attention_document, config, hf_mask, randomize

import attncli

torch = pytest.importorskip("torch", minversion="2.5")
transformers = pytest.importorskip("transformers", minversion="5.23")
pytest.importorskip("transformers.masking_utils")
pytestmark = pytest.mark.torch

F64 = torch.float64
TOL = 1e-12  # of each array's largest number (at least 1)


def record(monkeypatch, attn) -> dict:
    """The queries and keys the eager attention receives (after the cache), its weights, and o_proj's output."""
    raw: dict = {}
    module = sys.modules[type(attn).__module__]
    eager, softmax = module.eager_attention_forward, torch.nn.functional.softmax

    def recording(mod, query, key, value, attention_mask, **kwargs):
        output, weights = eager(mod, query, key, value, attention_mask, **kwargs)
        raw.update(query=query[0], key=key[0], weights=weights[0])
        return output, weights

    monkeypatch.setattr(torch.nn.functional, "softmax",  # (the eager softmax's dtype=float32 dropped)
                        lambda input, dim=None, _stacklevel=3, dtype=None: softmax(input, dim=dim))
    monkeypatch.setattr(module, "eager_attention_forward", recording)
    attn.o_proj.register_forward_hook(lambda _m, _i, out: raw.__setitem__("output", out[0]))
    return raw


def agree(got: np.ndarray, want, what: str) -> float:
    want = np.asarray(want.detach().numpy() if hasattr(want, "detach") else want, dtype=np.float64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    difference = float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max()))
    assert difference < TOL, (what, difference)
    return difference


def frequencies(base: float, dims: int) -> np.ndarray:
    return 1.0 / base ** (np.arange(0, dims, 2, dtype=np.float64) / dims)


def half_tables(f: np.ndarray, positions) -> tuple:
    """rotate_half's (cos, sin), (1, n, 2·len(f)), in float64."""
    angle = torch.tensor(np.outer(np.asarray(list(positions), dtype=np.float64), f))
    emb = torch.cat((angle, angle), dim=-1)[None]
    return emb.cos(), emb.sin()


def test_qwen3_decode_step_after_a_cache(monkeypatch):
    past, heads, kv_heads, d_k, hidden = 6, 4, 2, 8, 32
    cfg = config("Qwen3", hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=d_k,
                 rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 1e6})
    qwen3 = sys.modules[transformers.Qwen3Model.__module__]
    attn = randomize(qwen3.Qwen3Attention(cfg, layer_idx=0), seed=21)
    monkeypatch.setattr(qwen3.Qwen3RMSNorm, "forward",  # in float64: γ ⊙ x / √(mean(x²) + ε)
                        lambda self, x: self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)
                                                                        + self.variance_epsilon)))
    f = frequencies(1e6, d_k)
    x = torch.randn(1, past + 1, hidden, generator=torch.Generator().manual_seed(21), dtype=F64)
    cache = transformers.DynamicCache(config=cfg)
    q_hat: list = []
    attn.q_norm.register_forward_hook(lambda _m, _i, out: q_hat.append(out[0]))
    with torch.no_grad():
        attn(x[:, :past], position_embeddings=half_tables(f, range(past)), attention_mask=hf_mask(past, past)[0],
             cache=cache)
        raw = record(monkeypatch, attn)
        attn(x[:, past:], position_embeddings=half_tables(f, [past]), attention_mask=hf_mask(1, past + 1)[0],
             cache=cache)
    assert raw["key"].shape[1] == past + 1  # the cached keys and the new one
    gamma = {"query": attn.q_norm.weight.detach().numpy(), "key": attn.k_norm.weight.detach().numpy()}
    doc = attention_document(attn, x[0, past:].numpy(), heads, kv_heads, "none", context=x[0].numpy(),
                             positions=[past], rope={"base": 1e6}, qk_norm={"kind": "rms", "eps": 1e-6, "gamma": gamma})
    trace = attncli.compute(doc)
    agree(trace.normalized_queries, q_hat[-1].reshape(1, heads, d_k).permute(1, 0, 2), "normalized_queries")
    agree(trace.queries_rotated, raw["query"], "queries_rotated")
    agree(trace.keys_rotated, raw["key"], "keys_rotated (the cache's and the new one)")
    agree(trace.weights, raw["weights"], "weights")
    agree(trace.output, raw["output"], "output")
    plain = attncli.compute(dict(doc, qk_norm=None))
    assert not np.allclose(trace.keys_rotated[:, :past], plain.keys_rotated[:, :past])  # the cache's keys were normed


def test_gpt_oss_decode_step_with_sinks_after_a_sliding_cache(monkeypatch):
    past, heads, kv_heads, d_k, hidden, window = 7, 4, 2, 4, 16, 3
    cfg = config("GptOss", hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=d_k,
                 sliding_window=window, layer_types=["sliding_attention"])
    gpt_oss = sys.modules[transformers.GptOssModel.__module__]
    attn = randomize(gpt_oss.GptOssAttention(cfg, layer_idx=0), seed=5, std=0.5)
    with torch.no_grad():
        attn.sinks.copy_(torch.tensor([0.5, -1.0, 2.5, 0.0], dtype=F64))
    f = frequencies(150000.0, d_k)
    tables = lambda positions: tuple(t[..., : d_k // 2] for t in half_tables(f, positions))  # noqa: E731 (d/2 angles)
    x = torch.randn(1, past + 1, hidden, generator=torch.Generator().manual_seed(5), dtype=F64)
    cache = transformers.DynamicCache(config=cfg)
    sliding = transformers.masking_utils.sliding_window_causal_mask_function(window)
    with torch.no_grad():
        attn(x[:, :past], tables(range(past)), hf_mask(past, past, sliding)[0], cache=cache)
        raw = record(monkeypatch, attn)
        kept = cache.layers[0].keys.shape[2]  # what the sliding cache still holds
        mask, allowed = hf_mask(1, kept + 1, sliding)
        attn(x[:, past:], tables([past]), mask, cache=cache)
    assert kept == window - 1 and allowed.all()  # HF kept W − 1 keys: with the new one, the window
    doc = attention_document(attn, x[0, past:].numpy(), heads, kv_heads, {"causal": "lower_right", "window": window},
                             context=x[0].numpy(), positions=[past], rope={"frequencies": f},
                             sinks=attn.sinks.detach().numpy())
    trace = attncli.compute(doc)
    seen = trace.weights[..., past + 1 - window:]  # the window's keys: the cache's last W − 1 and the new one
    agree(seen, raw["weights"], "weights in the window")
    assert (trace.weights[..., : past + 1 - window] == 0).all()
    agree(trace.sink_weights[:, 0], 1 - raw["weights"].sum(-1)[:, 0], "the sink's share")
    agree(trace.keys_rotated[:, past + 1 - window:], raw["key"], "keys_rotated in the window")
    agree(trace.output, raw["output"], "output")
    assert trace.sink_weights.max() > 0.5  # the sinks matter here
