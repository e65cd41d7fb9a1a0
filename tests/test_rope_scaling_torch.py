"""``rope.scaling``, ``rope.attention_factor``, ``rope.part`` and ``interleaved_halves`` (Part 3) against Hugging Face.

- The frequencies and the attention factor of each scaling type against ``ROPE_INIT_FUNCTIONS[type]`` called
  directly with tiny configs, to 1e-12 relative.  modeling_rope_utils computes in float32 (``torch.float``,
  ``torch.float32``, ``Tensor.float()``); :func:`hf64` switches those to float64 for the call, so the comparison
  is of the formulas, not of float32's rounding.
- The rotated queries and keys and the attention output against real modules in float64: Phi3Attention with
  LongRoPE (partial rotary, the config's top-level original_max_position_embeddings), LlamaAttention with llama3,
  Qwen3Attention with YaRN (the attention factor on cos and sin), GptOssAttention's rotation (its sinks are not
  compared), DeepSeek V3's ``apply_rotary_pos_emb_interleave`` for ``interleaved_halves``.  The cos/sin tables are
  made in float64 from the frequencies HF's init function gives, times its attention factor; HF's own float32
  rotary module is checked against them to 1e-6 (so the right set of frequencies, short or long, is the one used).
"""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest

import attncli

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch", minversion="2.5")
transformers = pytest.importorskip("transformers", minversion="5.23")
rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
from test_modern_torch import F64, Recorder, T, attention_document, compare, config, hf_mask, randomize  # noqa: E402

pytestmark = pytest.mark.torch
REL = 1e-12


class Float64Torch:
    """``torch`` as modeling_rope_utils sees it during :func:`hf64`: float and float32 mean float64."""

    def __getattr__(self, name):
        return torch.float64 if name in ("float", "float32") else getattr(torch, name)


@pytest.fixture
def hf64(monkeypatch):
    """HF's rope init functions computing in float64."""
    monkeypatch.setattr(rope_utils, "torch", Float64Torch())
    monkeypatch.setattr(torch.Tensor, "float", torch.Tensor.double)
    return lambda cfg, p: _call(cfg, p)


def _call(cfg, p: int) -> tuple[np.ndarray, float]:
    frequencies, a = rope_utils.ROPE_INIT_FUNCTIONS[cfg.rope_parameters["rope_type"]](cfg, "cpu", seq_len=p)
    assert frequencies.dtype == F64
    return frequencies.numpy(), float(a)


def llama_config(dims: int, parameters: dict, max_positions: int = 64, theta: float = 10000.0):
    return config("Llama", hidden_size=2 * dims, num_attention_heads=2, head_dim=dims,
                  max_position_embeddings=max_positions, rope_parameters={"rope_theta": theta, **parameters})


def ours(dims: int, rope: dict, p: int) -> tuple[np.ndarray, float]:
    """attncli's rope_frequencies and rope_attention_factor for positions up to p − 1 (two tokens at p − 2, p − 1)."""
    rng = np.random.default_rng(dims)
    doc = {"inputs": rng.normal(size=(2, dims)).tolist(), "positions": [p - 2, p - 1], "rope": rope}
    trace = attncli.compute(doc)
    return trace.rope_frequencies, float(trace.rope_attention_factor)


def same(got: tuple, want: tuple) -> None:
    np.testing.assert_allclose(got[0], want[0], rtol=REL, atol=0)
    assert got[1] == pytest.approx(want[1], rel=REL, abs=0)


# ---------------------------------------------------------------- the frequencies and the factor

@pytest.mark.parametrize("factor", [2.0, 8.0, 0.5])
def test_linear(hf64, factor):
    cfg = llama_config(8, {"rope_type": "linear", "factor": factor})
    same(ours(8, {"scaling": {"type": "linear", "factor": factor}}, 10), hf64(cfg, 10))


@pytest.mark.parametrize("factor, p", [(2.0, 10), (2.0, 32), (2.0, 33), (4.0, 100), (3.5, 1000)])
def test_dynamic_below_and_beyond_the_length(hf64, factor, p):
    cfg = llama_config(8, {"rope_type": "dynamic", "factor": factor}, max_positions=32)
    scaling = {"type": "dynamic", "factor": factor, "original_max_position_embeddings": 32}
    got = ours(8, {"scaling": scaling}, p)
    same(got, hf64(cfg, p))
    assert np.array_equal(got[0], ours(8, {}, 2)[0]) == (p <= 32)  # the plain frequencies up to L


@pytest.mark.parametrize("fields", [{"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "L": 8192},
                                    {"factor": 32.0, "low_freq_factor": 2.0, "high_freq_factor": 8.0, "L": 2048},
                                    {"factor": 3.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "L": 64}])
def test_llama3(hf64, fields):
    fields = dict(fields)
    length = fields.pop("L")
    cfg = llama_config(32, {"rope_type": "llama3", "original_max_position_embeddings": length, **fields},
                       theta=500000.0)
    scaling = {"type": "llama3", "original_max_position_embeddings": length, **fields}
    got = ours(32, {"base": 500000.0, "scaling": scaling}, 12)
    same(got, hf64(cfg, 12))
    plain = ours(32, {"base": 500000.0}, 12)[0]
    kept, divided = np.isclose(got[0], plain, rtol=0), np.isclose(got[0], plain / fields["factor"], rtol=1e-15)
    assert kept.any() and divided.any() and (~kept & ~divided).any()  # the three regions are all tested


YARN = [{"factor": 4.0, "L": 4096},
        {"factor": 40.0, "L": 4096, "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0},
        {"factor": 40.0, "L": 4096, "mscale": 0.707, "mscale_all_dim": 0.707},
        {"factor": 16.0, "L": 4096, "mscale": 1.0, "mscale_all_dim": 0.5},
        {"factor": 8.0, "L": 512, "beta_fast": 16.0, "beta_slow": 2.0, "truncate": False},
        {"factor": 32.0, "L": 4096, "truncate": False},
        {"factor": 4.0, "L": 4096, "mscale": 1.0},  # alone: m(factor, 1)
        {"factor": 2.0, "L": 64, "attention_factor": 0.9},
        {"factor": 1.0, "L": 64}]


@pytest.mark.parametrize("fields", YARN)
def test_yarn(hf64, fields):
    fields = dict(fields)
    length, given = fields.pop("L"), fields.pop("attention_factor", None)
    cfg = llama_config(16, {"rope_type": "yarn", "original_max_position_embeddings": length, **fields,
                            **({"attention_factor": given} if given else {})}, max_positions=4 * length)
    rope = {"scaling": {"type": "yarn", "original_max_position_embeddings": length, **fields},
            **({"attention_factor": given} if given else {})}
    same(ours(16, rope, 9), hf64(cfg, 9))


@pytest.mark.parametrize("p, factor", [(10, 4.0), (16, 4.0), (17, 4.0), (200, 4.0), (17, None), (30, 1.0)])
def test_longrope_short_and_long(hf64, p, factor):
    rng = np.random.default_rng(p)
    short, long = (rng.uniform(1.0, 3.0, size=4).tolist() for _ in range(2))
    parameters = {"rope_type": "longrope", "short_factor": short, "long_factor": long,
                  "original_max_position_embeddings": 16, **({"factor": factor} if factor else {})}
    cfg = llama_config(8, parameters, max_positions=64)
    scaling = {"type": "longrope", "factor": factor or 64 / 16, "original_max_position_embeddings": 16,
               "short_factor": short, "long_factor": long}
    got = ours(8, {"scaling": scaling}, p)
    same(got, hf64(cfg, p))
    plain = ours(8, {}, 2)[0]
    np.testing.assert_allclose(got[0], plain / np.array(long if p > 16 else short), rtol=1e-15)


def test_phi3_top_level_original_length_wins(hf64):
    """Phi-3's config keeps the pretraining length outside rope_parameters, and HF uses that one."""
    short, long = [1.0, 1.1, 1.5, 2.0], [1.2, 2.0, 4.0, 8.0]
    cfg = config("Phi3", hidden_size=32, num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
                 original_max_position_embeddings=16, partial_rotary_factor=0.5,
                 rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": short,
                                  "long_factor": long, "original_max_position_embeddings": 64})
    assert cfg.rope_parameters["original_max_position_embeddings"] == 16
    for p in (16, 17, 40):
        rope = {"dims": 8, "scaling": {"type": "longrope", "factor": 128 / 16, "original_max_position_embeddings": 16,
                                       "short_factor": short, "long_factor": long}}
        got = attncli.compute({"inputs": np.eye(2, 16).tolist(), "positions": [p - 2, p - 1], "rope": rope})
        same((got.rope_frequencies, float(got.rope_attention_factor)), hf64(cfg, p))


# ---------------------------------------------------------------- real attention modules

def tables(frequencies: np.ndarray, a: float, positions, doubled: bool = True) -> tuple:
    """HF's (cos, sin) in float64, times the attention factor: (1, n, dims) (GptOss: (1, n, dims/2))."""
    angle = torch.tensor(np.outer(np.asarray(positions, dtype=np.float64), frequencies))
    emb = torch.cat((angle, angle), dim=-1)[None] if doubled else angle[None]
    return emb.cos() * a, emb.sin() * a


def check_module_tables(rotary, cfg, cos, sin, positions) -> None:
    """HF's own rotary module (float32 inside) agrees with the float64 tables: the same frequencies and factor."""
    x = torch.zeros(1, len(positions), 4, dtype=F64)
    hf_cos, hf_sin = rotary(x, torch.tensor([list(positions)]))
    np.testing.assert_allclose(hf_cos.numpy(), cos.numpy(), atol=2e-6)
    np.testing.assert_allclose(hf_sin.numpy(), sin.numpy(), atol=2e-6)


@pytest.mark.parametrize("start", [0, 30])  # P = 7 ≤ L (short factors) and P = 37 > L (long factors)
def test_phi3_attention_with_longrope(monkeypatch, hf64, start):
    n, heads, kv_heads, hidden = 7, 4, 2, 64
    head = hidden // heads
    rng = np.random.default_rng(start)
    short, long = rng.uniform(1.0, 2.0, size=4).tolist(), rng.uniform(1.0, 8.0, size=4).tolist()
    cfg = config("Phi3", hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads,
                 max_position_embeddings=256, original_max_position_embeddings=32, partial_rotary_factor=0.5,
                 rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": short,
                                  "long_factor": long, "original_max_position_embeddings": 4096})
    phi3 = importlib.import_module("transformers.models.phi3.modeling_phi3")
    attn = randomize(phi3.Phi3Attention(cfg, layer_idx=0), seed=11)
    positions = list(range(start, start + n))
    frequencies, a = hf64(cfg, start + n)
    assert a > 1
    cos, sin = tables(frequencies, a, positions)
    monkeypatch.undo()  # HF's own module in float32 again
    check_module_tables(phi3.Phi3RotaryEmbedding(cfg), cfg, cos, sin, positions)
    x = torch.randn(1, n, hidden, generator=torch.Generator().manual_seed(4), dtype=F64)
    mask, allowed = hf_mask(n, n)
    rec = Recorder(monkeypatch, attn, projections=("qkv_proj",), out="o_proj")
    with torch.no_grad():
        attn(x, position_embeddings=(cos, sin), attention_mask=mask)
    w = attn.qkv_proj.weight.detach().numpy()
    cut = np.cumsum([heads * head, kv_heads * head])
    doc = {"inputs": x[0].numpy(), "heads": heads, "kv_heads": kv_heads, "mask": "causal", "positions": positions,
           "weights": {"query": w[:cut[0]].T, "key": w[cut[0]:cut[1]].T, "value": w[cut[1]:].T,
                       "output": T(attn.o_proj)},
           "rope": {"dims": 8, "scaling": {"type": "longrope", "factor": 256 / 32, "short_factor": short,
                                           "long_factor": long, "original_max_position_embeddings": 32}}}
    qkv = rec.raw["qkv_proj"][0].detach()
    q = qkv[:, :cut[0]].reshape(n, heads, head).permute(1, 0, 2).numpy()
    k = qkv[:, cut[0]:cut[1]].reshape(n, kv_heads, head).permute(1, 0, 2).numpy()
    compare(attncli.compute(doc), rec.expected(heads, kv_heads, q=q, k=k), allowed, "Phi3Attention LongRoPE")


def test_llama_attention_with_llama3_scaling(monkeypatch, hf64):
    n, heads, kv_heads, positions = 6, 4, 2, list(range(100, 106))
    parameters = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 256}
    cfg = config("Llama", hidden_size=64, num_attention_heads=heads, num_key_value_heads=kv_heads,
                 max_position_embeddings=2048, rope_parameters={"rope_theta": 500000.0, **parameters})
    llama = transformers.models.llama.modeling_llama
    attn = randomize(llama.LlamaAttention(cfg, layer_idx=0), seed=12)
    frequencies, a = hf64(cfg, 106)
    cos, sin = tables(frequencies, a, positions)
    x = torch.randn(1, n, 64, generator=torch.Generator().manual_seed(5), dtype=F64)
    mask, allowed = hf_mask(n, n)
    rec = Recorder(monkeypatch, attn)
    with torch.no_grad():
        attn(x, position_embeddings=(cos, sin), attention_mask=mask)
    scaling = {"type": "llama3", **{k: v for k, v in parameters.items() if k != "rope_type"}}
    doc = attention_document(attn, x[0].numpy(), heads, kv_heads, "causal", positions=positions,
                             rope={"base": 500000.0, "scaling": scaling})
    compare(attncli.compute(doc), rec.expected(heads, kv_heads), allowed, "LlamaAttention llama3")


def yarn_module(monkeypatch, hf64, name: str, positions: list, **fields):
    """A Qwen-style attention with YaRN (factor 4, L = 32), its float64 tables, and HF's module checked against them."""
    parameters = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32, **fields}
    cfg = config(name, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                 max_position_embeddings=128, rope_parameters={"rope_theta": 10000.0, **parameters})
    module = {"GptOss": "gpt_oss"}.get(name, name.lower())
    modeling = importlib.import_module(f"transformers.models.{module}.modeling_{module}")
    attn = randomize(getattr(modeling, f"{name}Attention")(cfg, layer_idx=0), seed=13)
    frequencies, a = hf64(cfg, max(positions) + 1)
    cos, sin = tables(frequencies, a, positions, doubled=name != "GptOss")
    monkeypatch.undo()
    rotary = getattr(modeling, f"{name}RotaryEmbedding")(cfg)
    check_module_tables(rotary, cfg, cos, sin, positions)
    scaling = {"type": "yarn", **{k: v for k, v in parameters.items() if k != "rope_type"}}
    return attn, a, (cos, sin), scaling


def test_qwen2_attention_with_yarn(monkeypatch, hf64):
    n, heads, kv_heads, positions = 5, 4, 2, [3, 9, 20, 41, 77]
    attn, a, tabled, scaling = yarn_module(monkeypatch, hf64, "Qwen2", positions)
    assert a == pytest.approx(0.1 * np.log(4.0) + 1, rel=1e-15)
    x = torch.randn(1, n, 64, generator=torch.Generator().manual_seed(6), dtype=F64)
    mask, allowed = hf_mask(n, n)
    rec = Recorder(monkeypatch, attn)
    with torch.no_grad():
        attn(x, position_embeddings=tabled, attention_mask=mask)
    doc = attention_document(attn, x[0].numpy(), heads, kv_heads, "causal", positions=positions,
                             rope={"scaling": scaling})
    compare(attncli.compute(doc), rec.expected(heads, kv_heads), allowed, "Qwen2Attention yarn")


@pytest.mark.parametrize("name", ["Qwen3", "GptOss"])
def test_rotation_with_yarn_of(monkeypatch, hf64, name):
    """Qwen3 (its q/k norms are another key's) and gpt-oss (its sinks too): the rotation of HF's Q and K only."""
    n, positions = 5, [0, 5, 40, 41, 100]
    extra = {"beta_fast": 32.0, "beta_slow": 1.0, "truncate": False} if name == "GptOss" else {}
    attn, a, tabled, scaling = yarn_module(monkeypatch, hf64, name, positions, **extra)
    x = torch.randn(1, n, 64, generator=torch.Generator().manual_seed(7), dtype=F64)
    rec = Recorder(monkeypatch, attn, projections=("q_proj", "k_proj", "v_proj"))
    before = {}
    if name == "Qwen3":
        attn.q_norm.register_forward_hook(lambda _m, _i, o: before.__setitem__("q", o))
        attn.k_norm.register_forward_hook(lambda _m, _i, o: before.__setitem__("k", o))
    with torch.no_grad():
        attn(x, position_embeddings=tabled, attention_mask=hf_mask(n, n)[0])
    q = before.get("q", rec.raw["q_proj"].view(1, n, 4, 16))[0].transpose(0, 1).numpy()
    k = before.get("k", rec.raw["k_proj"].view(1, n, 2, 16))[0].transpose(0, 1).numpy()
    rope = attncli.compute({"inputs": np.eye(n, 16).tolist(), "positions": positions,
                            "rope": {"scaling": scaling}}).spec.rope
    from attncli.core.positions import rotate
    for got, want in ((rotate(q, np.array(positions, float), rope), rec.raw["queries_rotated"][0]),
                      (rotate(k, np.array(positions, float), rope), rec.raw["keys_rotated"][0])):
        np.testing.assert_allclose(got, want.numpy(), rtol=0, atol=1e-12 * np.abs(got).max())


def test_deepseek_v3_interleave_is_interleaved_halves():
    """DeepSeek V3's rope_interleave: HF's apply_rotary_pos_emb_interleave on the rotated part, with part: last."""
    ds = pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")
    g = torch.Generator().manual_seed(8)
    heads, n, nope, dims = 3, 5, 6, 8
    q, k = (torch.randn(1, h, n, nope + dims, generator=g, dtype=F64) for h in (heads, 1))
    positions = np.array([0.0, 2.0, 3.0, 17.0, 60.0])
    doc_rope = {"dims": dims, "part": "last", "style": "interleaved_halves",
                "scaling": {"type": "yarn", "factor": 40.0, "original_max_position_embeddings": 32, "mscale": 1.0,
                            "mscale_all_dim": 0.8}}
    rope = attncli.compute({"inputs": np.eye(n, nope + dims).tolist(), "positions": positions.tolist(),
                            "rope": doc_rope}).spec.rope
    cos, sin = tables(rope.frequencies, rope.attention_factor, positions)
    q_r, k_r = ds.apply_rotary_pos_emb_interleave(q[..., nope:], k[..., nope:], cos, sin)
    from attncli.core.positions import Rope, rotate
    got_q, got_k = rotate(q[0].numpy(), positions, rope), rotate(k[0].numpy(), positions, rope)
    np.testing.assert_array_equal(got_q[..., :nope], q[0, ..., :nope].numpy())  # the unrotated part first
    np.testing.assert_allclose(got_q[..., nope:], q_r[0].numpy(), rtol=0, atol=1e-13)
    np.testing.assert_allclose(got_k[..., nope:], k_r[0].numpy(), rtol=0, atol=1e-13)
    interleaved = Rope(rope.frequencies, "interleaved", None, "last", rope.attention_factor)  # the same scores
    s_halves = got_q @ got_k.transpose(0, 2, 1)
    s_pairs = rotate(q[0].numpy(), positions, interleaved) @ rotate(k[0].numpy(), positions, interleaved
                                                                    ).transpose(0, 2, 1)
    np.testing.assert_allclose(s_halves, s_pairs, rtol=0, atol=1e-12 * np.abs(s_pairs).max())
