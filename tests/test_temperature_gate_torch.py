"""Llama 4's query temperature and chunked mask, Qwen3-Next's output gate and Granite's residual scale against the
real Hugging Face modules (issue 28), in float64, built from tiny configs with random weights (nothing downloaded).

What each comparison covers:

- ``Llama4TextAttention`` (τ's logarithm switched from float32 to float64) on a NoPE layer (``no_rope_layers: [0]``:
  no rotation and no qk L2-norm, which HF only applies with rope), with ``attn_temperature_tuning`` and HF's
  chunked causal mask (``masking_utils.chunked_causal_mask_function``, ``attention_chunk_size``): τ from the
  queries HF multiplies, S, Z, A, H, Y;
  also with a cached prefix (positions 7 …, keys 0 …) and a rope layer (interleaved complex rotation, qk_norm off);
- ``Qwen3NextAttention``, a full-attention layer with its gate: the gate's rows are cut out of ``q_proj`` (per head
  [query | gate]) with numpy and, from a safetensors file, by ``columns`` ranges after ``layout: torch``.  The module
  always normalises Q and K (q_norm, k_norm: a stage of its own), so both are replaced by ``nn.Identity`` here:
  the comparison covers the projections, the partial rotation, the gate G, H, H ⊙ G (o_proj's input) and Y;
- ``GraniteAttention`` (attention_multiplier as ``scale``) and ``GraniteDecoderLayer``'s residual
  ``R = X + residual_multiplier·Y`` (post_attention_layernorm's input), with its RMSNorm kept in float64.

The eager softmax is kept in float64 as in tests/test_modern_torch.py (its dtype=float32 dropped).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hf_modules import T, config, heads_of, hf_mask, randomize

import attncli

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
torch = pytest.importorskip("torch", minversion="2.5")
transformers = pytest.importorskip("transformers", minversion="5.23")
masking = pytest.importorskip("transformers.masking_utils")
pytestmark = pytest.mark.torch

F64 = torch.float64
TOL = 1e-9


def record(monkeypatch, attn) -> dict:
    """HF's scaled scores, Q′ and K′ as the kernel gets them, weights, o_proj's input and output; softmax in float64."""
    raw: dict = {}
    module = sys.modules[type(attn).__module__]
    eager, softmax = module.eager_attention_forward, torch.nn.functional.softmax

    def softmax64(input, dim=None, _stacklevel=3, dtype=None):
        raw["scaled_scores"] = input
        return softmax(input, dim=dim, dtype=None if input.dtype == F64 else dtype)

    def recording(mod, query, key, value, attention_mask, **kwargs):
        output, weights = eager(mod, query, key, value, attention_mask, **kwargs)
        raw.update(query=query, key=key, weights=weights, heads=output)
        return output, weights

    monkeypatch.setattr(torch.nn.functional, "softmax", softmax64)
    monkeypatch.setattr(module, "eager_attention_forward", recording)
    attn.o_proj.register_forward_hook(lambda _m, i, o: raw.update(concat=i[0], output=o))
    return raw


def expected(raw: dict, heads: int, kv_heads: int) -> dict:
    q, k = raw["query"][0], raw["key"][0].repeat_interleave(heads // kv_heads, dim=0)
    return {"scores": (q @ k.transpose(-1, -2)).numpy(), "scaled_scores": raw["scaled_scores"][0].numpy(),
            "weights": raw["weights"][0].numpy(), "head_outputs": raw["heads"][0].permute(1, 0, 2).numpy(),
            "output": raw["output"][0].detach().numpy()}


def compare(trace, want: dict, allowed: np.ndarray, label: str) -> None:
    """Each key's largest |attncli − HF| relative to the largest |HF| (at least 1), below TOL; scaled scores where
    allowed."""
    diffs = {}
    for key, ref in want.items():
        got = np.asarray(getattr(trace, key), dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        assert got.shape == ref.shape, (key, got.shape, ref.shape)
        if key == "scaled_scores":
            cells = np.broadcast_to(allowed, ref.shape)
            got, ref = got[cells], ref[cells]
        diffs[key] = float(np.abs(got - ref).max(initial=0.0) / max(np.abs(ref).max(initial=0.0), 1.0))
    print(f"\n{label}: " + ", ".join(f"{k} {v:.1e}" for k, v in diffs.items()))
    assert all(v < TOL for v in diffs.values()), diffs


# ---------------------------------------------------------------- Llama 4: temperature and chunks


def log1p_float64(monkeypatch) -> None:
    """HF takes τ's logarithm of float32 positions (``positions.float()``): the same formula in float64."""
    log1p = torch.log1p
    monkeypatch.setattr(torch, "log1p", lambda t: log1p(t.to(F64)))


def llama4(seed: int, rope: bool, heads: int = 4, kv_heads: int = 2, floor_scale: int = 3, chunk: int = 4):
    cfg = config("Llama4Text", hidden_size=32, num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=8,
                 no_rope_layers=[1 if rope else 0], attn_temperature_tuning=True, floor_scale=floor_scale,
                 attn_scale=0.4, use_qk_norm=False, attention_chunk_size=chunk)
    module = transformers.models.llama4.modeling_llama4
    return randomize(module.Llama4TextAttention(cfg, layer_idx=0), seed), cfg


def llama4_document(attn, x, heads, kv_heads, mask, **extra) -> dict:
    return {"inputs": x, "heads": heads, "kv_heads": kv_heads, "mask": mask,
            "weights": {name: T(getattr(attn, f"{name[0]}_proj")) for name in ("query", "key", "value", "output")}
            } | extra


@pytest.mark.parametrize("chunk", [3, 4])
def test_llama4_nope_layer_temperature_and_chunked_mask(monkeypatch, chunk):
    n, heads, kv_heads = 11, 4, 2
    attn, cfg = llama4(7 + chunk, rope=False, chunk=chunk)
    assert not attn.use_rope and attn.attn_temperature_tuning
    x = torch.randn(1, n, 32, generator=torch.Generator().manual_seed(chunk), dtype=F64)
    log1p_float64(monkeypatch)
    mask, allowed = hf_mask(n, n, masking.chunked_causal_mask_function(chunk, torch.zeros(1, dtype=torch.long)))
    raw = record(monkeypatch, attn)
    with torch.no_grad():
        attn(x, position_embeddings=None, attention_mask=mask)
    doc = llama4_document(attn, x[0].numpy(), heads, kv_heads, {"causal": True, "chunk": chunk},
                          query_temperature={"floor_scale": cfg.floor_scale, "attn_scale": cfg.attn_scale})
    trace = attncli.compute(doc)
    assert (trace.spec.allowed[0] == allowed).all()  # the document's chunk mask is HF's
    tau = raw["query"][0] / heads_of(attn.q_proj(x), heads)  # what HF multiplied each query by
    assert np.allclose(tau.numpy(), trace.query_temperature[None, :, None], rtol=1e-12)
    assert len(set(trace.query_temperature.round(12))) == 4  # τ grows at p + 1 = 3, 6, 9
    compare(trace, expected(raw, heads, kv_heads), allowed, f"Llama4 NoPE, chunk {chunk}")


def test_llama4_decode_with_cache_positions_the_temperature_and_the_chunks(monkeypatch):
    """Three new queries at positions 7, 8, 9 after a cache of 7: τ of p = 7 …, chunks of the absolute positions
    (the mask's lower_right causal, i′ = i + m − n)."""
    past, n, heads, kv_heads, chunk = 7, 3, 4, 2, 4
    attn, cfg = llama4(5, rope=False, chunk=chunk)
    x = torch.randn(1, past + n, 32, generator=torch.Generator().manual_seed(9), dtype=F64)
    log1p_float64(monkeypatch)
    cache = transformers.DynamicCache(config=cfg)
    prefix, _ = hf_mask(past, past, masking.chunked_causal_mask_function(chunk, torch.zeros(1, dtype=torch.long)))
    with torch.no_grad():
        attn(x[:, :past], position_embeddings=None, attention_mask=prefix, cache=cache)
    mask, allowed = hf_mask(n, past + n, masking.chunked_causal_mask_function(chunk, torch.zeros(1, dtype=torch.long)))
    raw = record(monkeypatch, attn)
    with torch.no_grad():
        attn(x[:, past:], position_embeddings=None, attention_mask=mask, cache=cache)
    doc = llama4_document(attn, x[0, past:].numpy(), heads, kv_heads, {"causal": "lower_right", "chunk": chunk},
                          context=x[0].numpy(), positions=list(range(past, past + n)),
                          query_temperature={"floor_scale": cfg.floor_scale, "attn_scale": cfg.attn_scale})
    trace = attncli.compute(doc)
    assert (trace.spec.allowed[0] == allowed).all()
    compare(trace, expected(raw, heads, kv_heads), allowed, "Llama4 decode")


def test_llama4_rope_layer_chunked(monkeypatch):
    """A rope layer (interleaved pairs turned as complex numbers, in float64 here) with chunks, no temperature (HF
    tempers NoPE layers only) and no qk_norm."""
    n, heads, kv_heads, chunk = 9, 4, 2, 4
    attn, cfg = llama4(3, rope=True, chunk=chunk)
    module = sys.modules[type(attn).__module__]

    def rotate64(xq, xk, freqs_cis):  # HF's apply_rotary_emb without its .float()
        turn = lambda t: torch.view_as_real(torch.view_as_complex(t.reshape(*t.shape[:-1], -1, 2))  # noqa: E731
                                            * freqs_cis[:, :, None, :]).flatten(3)
        return turn(xq), turn(xk)

    monkeypatch.setattr(module, "apply_rotary_emb", rotate64)
    f = 1.0 / 500000.0 ** (np.arange(0, 8, 2) / 8)
    freqs_cis = torch.polar(torch.ones(n, 4, dtype=F64), torch.tensor(np.outer(np.arange(n), f)))[None]
    x = torch.randn(1, n, 32, generator=torch.Generator().manual_seed(4), dtype=F64)
    mask, allowed = hf_mask(n, n, masking.chunked_causal_mask_function(chunk, torch.zeros(1, dtype=torch.long)))
    raw = record(monkeypatch, attn)
    with torch.no_grad():
        attn(x, position_embeddings=freqs_cis, attention_mask=mask)
    doc = llama4_document(attn, x[0].numpy(), heads, kv_heads, {"causal": True, "chunk": chunk},
                          rope={"style": "interleaved", "frequencies": f})
    compare(attncli.compute(doc), expected(raw, heads, kv_heads), allowed, "Llama4 rope, chunked")


# ---------------------------------------------------------------- Qwen3-Next: the output gate


def qwen3_next(seed: int, monkeypatch, bias: bool):
    cfg = config("Qwen3Next", hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                 partial_rotary_factor=0.5, layer_types=["full_attention"], attention_bias=bias)
    module = transformers.models.qwen3_next.modeling_qwen3_next
    attn = randomize(module.Qwen3NextAttention(cfg, layer_idx=0), seed)
    attn.q_norm, attn.k_norm = torch.nn.Identity(), torch.nn.Identity()  # qk_norm: another stage (see the docstring)
    return attn


def rope_halves(frequencies: np.ndarray, n: int) -> tuple:
    angle = torch.tensor(np.outer(np.arange(n, dtype=np.float64), frequencies))
    emb = torch.cat((angle, angle), dim=-1)[None]
    return emb.cos(), emb.sin()


@pytest.mark.parametrize("bias", [False, True])
def test_qwen3_next_gated_attention(monkeypatch, bias):
    n, heads, kv_heads, d = 6, 4, 2, 8
    attn = qwen3_next(11, monkeypatch, bias)
    f = 1.0 / 10000.0 ** (np.arange(0, 4, 2) / 4)  # partial_rotary_factor 0.5: 4 of 8 dimensions turn
    x = torch.randn(1, n, 32, generator=torch.Generator().manual_seed(2), dtype=F64)
    mask, allowed = hf_mask(n, n, masking.causal_mask_function)
    raw = record(monkeypatch, attn)
    with torch.no_grad():
        attn(x, position_embeddings=rope_halves(f, n), attention_mask=mask)
    w = T(attn.q_proj).reshape(32, heads, 2, d)  # per head: [query | gate]
    doc = {"inputs": x[0].numpy(), "heads": heads, "kv_heads": kv_heads, "mask": "causal",
           "rope": {"dims": 4, "frequencies": f},
           "weights": {"query": w[:, :, 0].reshape(32, -1), "gate": w[:, :, 1].reshape(32, -1),
                       "key": T(attn.k_proj), "value": T(attn.v_proj), "output": T(attn.o_proj)}}
    if bias:
        b = attn.q_proj.bias.detach().numpy().reshape(heads, 2, d)
        doc["bias"] = {"query": b[:, 0].reshape(-1), "gate": b[:, 1].reshape(-1),
                       "key": attn.k_proj.bias.detach().numpy(), "value": attn.v_proj.bias.detach().numpy(),
                       "output": attn.o_proj.bias.detach().numpy()}
    trace = attncli.compute(doc)
    gate = torch.sigmoid(attn.q_proj(x)[0].reshape(n, heads, 2, d)[:, :, 1]).permute(1, 0, 2).detach().numpy()
    want = expected(raw, heads, kv_heads) | {"gate": gate, "gated_head_outputs": heads_of(raw["concat"], heads)}
    compare(trace, want, allowed, f"Qwen3NextAttention, bias {bias}")
    assert np.abs(trace.gated_head_outputs - trace.head_outputs).max() > 0.01  # the gate changed something


def test_qwen3_next_gate_cut_from_a_checkpoint_in_torch_layout(monkeypatch, tmp_path):
    """weights.gate as a user points at q_proj.weight in a safetensors file: layout torch, columns per head."""
    safetensors = pytest.importorskip("safetensors.numpy")
    n, heads, kv_heads, d = 5, 4, 2, 8
    attn = qwen3_next(13, monkeypatch, False)
    tensors = {f"{name}.weight": getattr(attn, name).weight.detach().numpy().copy()
               for name in ("q_proj", "k_proj", "v_proj", "o_proj")}
    safetensors.save_file(tensors, str(tmp_path / "m.safetensors"))
    x = torch.randn(1, n, 32, generator=torch.Generator().manual_seed(8), dtype=F64)
    raw = record(monkeypatch, attn)
    mask, allowed = hf_mask(n, n, masking.causal_mask_function)
    with torch.no_grad():
        attn(x, position_embeddings=rope_halves(np.array([1.0, 0.01]), n), attention_mask=mask)
    part = lambda name, cols=None: {"file": "m.safetensors", "tensor": f"{name}.weight", "layout": "torch",  # noqa
                                    **({"columns": cols} if cols else {})}
    doc = {"inputs": x[0].numpy().tolist(), "heads": heads, "kv_heads": kv_heads, "mask": "causal",
           "rope": {"dims": 4, "frequencies": [1.0, 0.01]},
           "weights": {"query": part("q_proj", [[2 * d * i, 2 * d * i + d] for i in range(heads)]),
                       "gate": part("q_proj", [[2 * d * i + d, 2 * d * (i + 1)] for i in range(heads)]),
                       "key": part("k_proj"), "value": part("v_proj"), "output": part("o_proj")}}
    (tmp_path / "doc.json").write_text(__import__("json").dumps(doc))
    trace = attncli.compute(str(tmp_path / "doc.json"))
    compare(trace, expected(raw, heads, kv_heads) | {"gated_head_outputs": heads_of(raw["concat"], heads)}, allowed,
            "Qwen3Next gate from a checkpoint")


# ---------------------------------------------------------------- Granite: attention_multiplier and the residual


def test_granite_decoder_layer_residual_multiplier(monkeypatch):
    n, heads, kv_heads, alpha = 6, 4, 2, 0.22
    cfg = config("Granite", hidden_size=32, num_attention_heads=heads, num_key_value_heads=kv_heads,
                 attention_multiplier=0.07, residual_multiplier=alpha, rms_norm_eps=1e-6)
    module = transformers.models.granite.modeling_granite
    layer = randomize(module.GraniteDecoderLayer(cfg, layer_idx=0), 21)

    def rms64(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

    monkeypatch.setattr(module.GraniteRMSNorm, "forward", rms64)
    raw = record(monkeypatch, layer.self_attn)
    layer.post_attention_layernorm.register_forward_hook(lambda _m, i, o: raw.update(residual=i[0]))
    x = torch.randn(1, n, 32, generator=torch.Generator().manual_seed(6), dtype=F64)
    f = 1.0 / 10000.0 ** (np.arange(0, 8, 2) / 8)
    mask, allowed = hf_mask(n, n, masking.causal_mask_function)
    with torch.no_grad():
        layer(x, position_embeddings=rope_halves(f, n), attention_mask=mask)
    attn = layer.self_attn
    assert attn.scaling == 0.07
    doc = {"inputs": x[0].numpy(), "heads": heads, "kv_heads": kv_heads, "mask": "causal", "scale": 0.07,
           "rope": {"frequencies": f}, "residual": {"scale": alpha},
           "pre_norm": {"kind": "rms", "gamma": layer.input_layernorm.weight.detach().numpy(), "eps": 1e-6},
           "weights": {name: T(getattr(attn, f"{name[0]}_proj")) for name in ("query", "key", "value", "output")}}
    want = expected(raw, heads, kv_heads) | {"residual": raw["residual"][0].numpy()}
    compare(attncli.compute(doc), want, allowed, "GraniteDecoderLayer")
