"""``qk_norm`` against the real Hugging Face attention modules, in float64: Qwen3 (RMSNorm per head), Gemma 3
(γ = 1 + w, a global and a sliding layer), OLMo 2 (RMSNorm over the whole projection), Command R+ (Cohere, LayerNorm
per head with γ h × d_k, interleaved rope), StableLM 2 (one LayerNorm per head, partial rope) and Llama 4 (a
weightless RMS norm after an interleaved rope).

Each module is built from a tiny config with random weights (nothing is downloaded) and called directly with rope
tables made in float64.  Hugging Face runs its norms, Llama 4's and Cohere's rotations and the softmax in float32
even in a float64 model; the tests put float64 back in each, with the same formula.  The intermediates are captured
where HF makes them: a forward hook on the q/k norms (Q̂, K̂), the queries and keys ``eager_attention_forward``
receives (the kernel's Q and K: rotated, or normalised after the rotation), its weights, and o_proj's output.  Every
one agrees with attncli to 1e-12 of the array's largest number.
"""

from __future__ import annotations

import importlib
import os
import sys

import numpy as np
import pytest
from hf_modules import attention_document, config, randomize

import attncli

os.environ["HF_HUB_OFFLINE"] = "1"  # build from configs only: never reach the Hub
os.environ["TRANSFORMERS_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers", minversion="5.0")
pytestmark = pytest.mark.torch

F64 = torch.float64
TOL = 1e-12  # of each array's largest number


def numpy(t) -> np.ndarray:
    return t.detach().numpy()


def tables(frequencies: np.ndarray, positions, interleaved: bool = False) -> tuple:
    """HF's (cos, sin), (1, n, 2·len(f)), in float64: each angle written twice, side by side (rotate_half) or as
    neighbours (Cohere's repeat_interleave)."""
    angle = torch.tensor(np.outer(np.asarray(positions, dtype=np.float64), frequencies))
    emb = torch.repeat_interleave(angle, 2, dim=-1) if interleaved else torch.cat((angle, angle), dim=-1)
    return emb.cos()[None], emb.sin()[None]


def theta(base: float, dims: int) -> np.ndarray:
    return 1.0 / base ** (np.arange(0, dims, 2, dtype=np.float64) / dims)


def causal(n: int, window: int | None = None) -> np.ndarray:
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    return (j <= i) & (j > i - window) if window else j <= i


def additive(allowed: np.ndarray) -> torch.Tensor:
    """The (1, 1, n, n) mask HF's eager attention adds: 0 where allowed, the dtype's minimum elsewhere."""
    return torch.tensor(np.where(allowed, 0.0, torch.finfo(F64).min))[None, None]


# ---------------------------------------------------------------- float64 where HF casts to float32


def _rms(plus: float = 0.0):
    def forward(self, x):
        eps = getattr(self, "variance_epsilon", getattr(self, "eps", None))
        weight = 1.0 if getattr(self, "weight", None) is None else self.weight + plus
        return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))
    return forward


def _layer(self, x):
    mean = x.mean(-1, keepdim=True)
    variance = (x - mean).pow(2).mean(-1, keepdim=True)
    return self.weight * ((x - mean) * torch.rsqrt(variance + self.variance_epsilon))


def _complex_rope(xq, xk, freqs_cis):
    """Llama 4's apply_rotary_emb in complex128 instead of complex64."""
    turn = lambda x: torch.view_as_real(  # noqa: E731
        torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous()) * freqs_cis[:, :, None, :]).flatten(3)
    return turn(xq), turn(xk)


def _cohere_rope(module):
    """Cohere's apply_rotary_pos_emb without its cast to float32."""
    def apply(q, k, cos, sin, unsqueeze_dim=1):
        cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
        return q * cos + module.rotate_half(q) * sin, k * cos + module.rotate_half(k) * sin
    return apply


FLOAT64_NORMS = {"qwen3": {"Qwen3RMSNorm": _rms()}, "gemma3": {"Gemma3RMSNorm": _rms(1.0)},
                 "olmo2": {"Olmo2RMSNorm": _rms()}, "cohere": {"CohereLayerNorm": _layer},
                 "stablelm": {}, "llama4": {"Llama4TextL2Norm": _rms()}}


class Capture:
    """What HF computes in one attention module: Q̂, K̂ from its norms, the kernel's Q and K, A and Y."""

    def __init__(self, monkeypatch, attn, family: str, norms: tuple[str, ...]):
        self.raw: dict = {"norms": []}
        module = sys.modules[type(attn).__module__]
        eager, softmax = module.eager_attention_forward, torch.nn.functional.softmax

        def recording(mod, query, key, value, attention_mask, **kwargs):
            output, weights = eager(mod, query, key, value, attention_mask, **kwargs)
            self.raw.update(query=query[0], key=key[0], weights=weights[0])
            return output, weights

        monkeypatch.setattr(torch.nn.functional, "softmax",
                            lambda input, dim=None, _stacklevel=3, dtype=None: softmax(input, dim=dim))
        monkeypatch.setattr(module, "eager_attention_forward", recording)
        for name, forward in FLOAT64_NORMS[family].items():
            monkeypatch.setattr(getattr(module, name), "forward", forward)
        if family == "llama4":
            monkeypatch.setattr(module, "apply_rotary_emb", _complex_rope)
        if family == "cohere":
            monkeypatch.setattr(module, "apply_rotary_pos_emb", _cohere_rope(module))
        for name in norms:
            getattr(attn, name).register_forward_hook(lambda _m, _i, out: self.raw["norms"].append(out[0]))
        attn.o_proj.register_forward_hook(lambda _m, _i, out: self.raw.__setitem__("output", out[0]))


def agree(trace, expected: dict, label: str) -> None:
    """Every key of ``expected`` equal to attncli's to TOL of its largest number."""
    diffs = {}
    for key, want in expected.items():
        got = getattr(trace, key)
        want = np.asarray(want, dtype=np.float64)
        assert got.shape == want.shape, (key, got.shape, want.shape)
        diffs[key] = float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max()))
    print(f"\n{label}: " + ", ".join(f"{k} {v:.1e}" for k, v in diffs.items()))
    assert all(v < TOL for v in diffs.values()), diffs


def run(monkeypatch, attn, family: str, norms: tuple[str, ...], x, position_embeddings, allowed) -> Capture:
    capture = Capture(monkeypatch, attn, family, norms)
    with torch.no_grad():
        attn(x, position_embeddings=position_embeddings, attention_mask=additive(allowed))
    return capture


def document(attn, x, heads: int, kv_heads: int, mask, **extra) -> dict:
    return attention_document(attn, numpy(x[0]), heads, kv_heads, mask, **extra)


def heads_first(t, heads: int) -> np.ndarray:
    """(n, h, d) or (n, h·d) -> (h, n, d)."""
    return numpy(t.reshape(t.shape[0], heads, -1).permute(1, 0, 2))


def inputs(n: int, hidden: int, seed: int):
    return torch.randn(1, n, hidden, generator=torch.Generator().manual_seed(seed), dtype=F64)


# ---------------------------------------------------------------- the modules


def test_qwen3_rms_per_head(monkeypatch):
    n, heads, kv_heads, d_k = 6, 4, 2, 8
    cfg = config("Qwen3", hidden_size=32, num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=d_k,
                 rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    qwen3 = importlib.import_module("transformers.models.qwen3.modeling_qwen3")
    attn = randomize(qwen3.Qwen3Attention(cfg, layer_idx=0), seed=1)
    x, allowed = inputs(n, 32, 1), causal(n)
    cap = run(monkeypatch, attn, "qwen3", ("q_norm", "k_norm"), x, tables(theta(1e4, d_k), range(n)), allowed)
    doc = document(attn, x, heads, kv_heads, "causal", rope={"base": 10000.0},
                   qk_norm={"kind": "rms", "eps": 1e-6,
                            "gamma": {"query": numpy(attn.q_norm.weight), "key": numpy(attn.k_norm.weight)}})
    q_hat, k_hat = cap.raw["norms"]
    agree(attncli.compute(doc), {"normalized_queries": heads_first(q_hat, heads),
                                 "normalized_keys": heads_first(k_hat, kv_heads),
                                 "queries_rotated": cap.raw["query"], "keys_rotated": cap.raw["key"],
                                 "weights": cap.raw["weights"], "output": cap.raw["output"]}, "Qwen3Attention")


@pytest.mark.parametrize("layer", ["full_attention", "sliding_attention"])
def test_gemma3_one_plus_w(monkeypatch, layer):
    n, heads, kv_heads, d_k, window = 7, 4, 2, 8, 3
    cfg = config("Gemma3Text", hidden_size=32, num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=d_k,
                 query_pre_attn_scalar=16, sliding_window=window, layer_types=[layer],
                 rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                                  "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}})
    gemma3 = importlib.import_module("transformers.models.gemma3.modeling_gemma3")
    attn = randomize(gemma3.Gemma3Attention(cfg, layer_idx=0), seed=2)
    base = 1e6 if layer == "full_attention" else 1e4
    x = inputs(n, 32, 2)
    allowed = causal(n, window if layer == "sliding_attention" else None)
    cap = run(monkeypatch, attn, "gemma3", ("q_norm", "k_norm"), x, tables(theta(base, d_k), range(n)), allowed)
    gamma = {"query": 1 + numpy(attn.q_norm.weight), "key": 1 + numpy(attn.k_norm.weight)}  # Gemma stores γ − 1
    doc = document(attn, x, heads, kv_heads, allowed.astype(int).tolist() if layer != "full_attention" else "causal",
                   rope={"base": base}, scale=16 ** -0.5, qk_norm={"kind": "rms", "gamma": gamma, "eps": 1e-6})
    q_hat, k_hat = cap.raw["norms"]
    agree(attncli.compute(doc), {"normalized_queries": numpy(q_hat), "normalized_keys": numpy(k_hat),
                                 "queries_rotated": cap.raw["query"], "keys_rotated": cap.raw["key"],
                                 "weights": cap.raw["weights"], "output": cap.raw["output"]}, f"Gemma3 {layer}")


def test_olmo2_rms_over_the_projection(monkeypatch):
    n, heads, kv_heads, hidden = 6, 4, 2, 32
    d_k = hidden // heads
    cfg = config("Olmo2", hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads,
                 rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
    olmo2 = importlib.import_module("transformers.models.olmo2.modeling_olmo2")
    attn = randomize(olmo2.Olmo2Attention(cfg, layer_idx=0), seed=3)
    x, allowed = inputs(n, hidden, 3), causal(n)
    cap = run(monkeypatch, attn, "olmo2", ("q_norm", "k_norm"), x, tables(theta(5e5, d_k), range(n)), allowed)
    doc = document(attn, x, heads, kv_heads, "causal", rope={"base": 500000.0},
                   qk_norm={"kind": "rms", "scope": "projection",
                            "gamma": {"query": numpy(attn.q_norm.weight), "key": numpy(attn.k_norm.weight)}})
    q_hat, k_hat = cap.raw["norms"]
    trace = attncli.compute(doc)
    agree(trace, {"normalized_queries": heads_first(q_hat, heads), "normalized_keys": heads_first(k_hat, kv_heads),
                  "queries_rotated": cap.raw["query"], "keys_rotated": cap.raw["key"],
                  "weights": cap.raw["weights"], "output": cap.raw["output"]}, "Olmo2Attention")
    per_head = attncli.compute(dict(doc, qk_norm=dict(doc["qk_norm"], gamma=None)))
    assert not np.allclose(per_head.normalized_queries, trace.normalized_queries)  # γ matters here


def test_cohere_layer_norm_per_head(monkeypatch):
    n, heads, kv_heads, hidden = 6, 4, 2, 32
    d_k = hidden // heads
    cfg = config("Cohere", hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads,
                 use_qk_norm=True, layer_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 1e4})
    cohere = importlib.import_module("transformers.models.cohere.modeling_cohere")
    attn = randomize(cohere.CohereAttention(cfg, layer_idx=0), seed=4)
    assert tuple(attn.q_norm.weight.shape) == (heads, d_k)  # γ: one row per head
    x, allowed = inputs(n, hidden, 4), causal(n)
    cap = run(monkeypatch, attn, "cohere", ("q_norm", "k_norm"), x, tables(theta(1e4, d_k), range(n), True), allowed)
    doc = document(attn, x, heads, kv_heads, "causal", rope={"base": 1e4, "style": "interleaved"},
                   qk_norm={"kind": "layer",
                            "gamma": {"query": numpy(attn.q_norm.weight), "key": numpy(attn.k_norm.weight)}})
    q_hat, k_hat = cap.raw["norms"]
    agree(attncli.compute(doc), {"normalized_queries": heads_first(q_hat, heads),
                                 "normalized_keys": heads_first(k_hat, kv_heads),
                                 "queries_rotated": cap.raw["query"], "keys_rotated": cap.raw["key"],
                                 "weights": cap.raw["weights"], "output": cap.raw["output"]}, "CohereAttention")


def test_stablelm_layer_norm_per_head(monkeypatch):
    n, heads, kv_heads, hidden = 5, 4, 2, 32
    d_k = hidden // heads
    cfg = config("StableLm", hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads,
                 qk_layernorm=True, partial_rotary_factor=0.5, use_qkv_bias=True, layer_norm_eps=1e-5,
                 rope_parameters={"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5})
    stablelm = importlib.import_module("transformers.models.stablelm.modeling_stablelm")
    attn = randomize(stablelm.StableLmAttention(cfg, layer_idx=0), seed=5)
    dims = attn.rotary_ndims
    assert dims == d_k // 2
    x, allowed = inputs(n, hidden, 5), causal(n)
    cap = run(monkeypatch, attn, "stablelm", ("q_layernorm", "k_layernorm"), x, tables(theta(1e4, dims), range(n)),
              allowed)
    gamma = {side: np.stack([numpy(norm.weight) for norm in getattr(attn, f"{side[0]}_layernorm").norms])
             for side in ("query", "key")}
    doc = document(attn, x, heads, kv_heads, "causal", rope={"base": 1e4, "dims": dims},
                   qk_norm={"kind": "layer", "gamma": gamma})
    q_hat, k_hat = cap.raw["norms"]
    agree(attncli.compute(doc), {"normalized_queries": numpy(q_hat), "normalized_keys": numpy(k_hat),
                                 "queries_rotated": cap.raw["query"], "keys_rotated": cap.raw["key"],
                                 "weights": cap.raw["weights"], "output": cap.raw["output"]}, "StableLmAttention")


def test_llama4_weightless_norm_after_rope(monkeypatch):
    """A rope layer of Llama 4 (no temperature there: Llama 4 tempers its NoPE layers only)."""
    n, heads, kv_heads, hidden, d_k = 6, 4, 2, 32, 8
    positions = np.arange(3, 3 + n)
    cfg = config("Llama4Text", hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads,
                 head_dim=d_k, use_qk_norm=True, no_rope_layers=[1], rms_norm_eps=1e-5, intermediate_size_mlp=32)
    llama4 = importlib.import_module("transformers.models.llama4.modeling_llama4")
    attn = randomize(llama4.Llama4TextAttention(cfg, layer_idx=0), seed=6)
    assert attn.use_rope and hasattr(attn, "qk_norm")
    frequencies = theta(5e5, d_k)
    freqs_cis = torch.polar(torch.ones(n, d_k // 2, dtype=F64), torch.tensor(np.outer(positions, frequencies)))[None]
    x, allowed = inputs(n, hidden, 6), causal(n)
    cap = Capture(monkeypatch, attn, "llama4", ("qk_norm",))
    with torch.no_grad():
        attn(x, position_embeddings=freqs_cis, attention_mask=additive(allowed))
    doc = document(attn, x, heads, kv_heads, "causal", positions=positions,
                   rope={"frequencies": frequencies, "style": "interleaved"},
                   qk_norm={"kind": "rms", "eps": 1e-5, "after_rope": True})
    q_hat, k_hat = cap.raw["norms"]
    expected = heads_first(q_hat, heads), heads_first(k_hat, kv_heads)
    agree(attncli.compute(doc), {"normalized_queries": expected[0], "normalized_keys": expected[1],
                                 "weights": cap.raw["weights"], "output": cap.raw["output"]}, "Llama4TextAttention")
    np.testing.assert_array_equal(expected[0], numpy(cap.raw["query"]))  # the norm's output is what the scores see
