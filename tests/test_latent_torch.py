"""``latent`` (multi-head latent attention) against Hugging Face's DeepseekV2Attention and DeepseekV3Attention.

Tiny configs with random weights (nothing is downloaded), float64: q LoRA on and off, DeepSeek V3's rope_interleave
on and off, YaRN with mscale (the rotation's attention factor, and mscale² in the scale), attention biases, and a
decode step after a cache of compressed latents.  HF normalises in float32 and DeepSeek V2 turns its rotary part in
complex64 even in a float64 model: the tests put float64 (complex128) back, with the same formulas.  The captured
intermediates are HF's own: the latents from its norms, the projections from forward hooks, the rotated Q and K,
V and the weights that ``eager_attention_forward`` receives and returns, and o_proj's output; every one agrees with
attncli to 1e-12 of the array's largest number.  The absorbed queries are checked against the naive scores.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import attncli

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch", minversion="2.5")
transformers = pytest.importorskip("transformers", minversion="5.23")
ds2 = pytest.importorskip("transformers.models.deepseek_v2.modeling_deepseek_v2")
ds3 = pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")
from test_modern_torch import F64, T, compare, config, heads_of, hf_mask, randomize  # noqa: E402
from test_rope_scaling_torch import hf64, tables  # noqa: E402, F401 (hf64 is a fixture)

pytestmark = pytest.mark.torch
HEADS, HIDDEN, NOPE, ROPE, V_DIM, KV_RANK, Q_RANK = 3, 18, 4, 4, 3, 5, 6
YARN = {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 32, "beta_fast": 32.0,
        "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 0.8}


def rms64(self, x):
    """DeepseekV2/V3RMSNorm in float64 (HF computes the variance in float32)."""
    return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


def complex128_rope(xq, xk, freqs_cis):
    """DeepseekV2's apply_rotary_emb in complex128 instead of complex64."""
    turn = lambda x: torch.view_as_real(  # noqa: E731
        torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous()) * freqs_cis.unsqueeze(1)).flatten(3)
    return turn(xq), turn(xk)


def deepseek(version: int, q_lora: bool, interleave: bool = True, yarn: bool = False, bias: bool = False):
    fields = {"rope_interleave": interleave} if version == 3 else {}
    rope = dict(YARN) if yarn else {"rope_type": "default"}
    cfg = config(f"DeepseekV{version}", hidden_size=HIDDEN, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                 q_lora_rank=Q_RANK if q_lora else None, kv_lora_rank=KV_RANK, qk_nope_head_dim=NOPE,
                 qk_rope_head_dim=ROPE, v_head_dim=V_DIM, attention_bias=bias, max_position_embeddings=1280,
                 rms_norm_eps=1e-6, rope_parameters={"rope_theta": 10000.0, **rope}, **fields)
    modeling = ds3 if version == 3 else ds2
    attn = getattr(modeling, f"DeepseekV{version}Attention")(cfg, layer_idx=0)
    return cfg, randomize(attn, seed=10 * version + q_lora + 2 * interleave + 4 * yarn)


class Recorder:
    """HF's latents, projections, rotated Q and K, V, weights and output of one DeepSeek attention call."""

    def __init__(self, monkeypatch, attn):
        self.raw: dict = {}
        module = sys.modules[type(attn).__module__]
        eager, softmax = module.eager_attention_forward, torch.nn.functional.softmax

        def recording(mod, query, key, value, attention_mask, **kwargs):
            output, weights = eager(mod, query, key, value, attention_mask, **kwargs)
            self.raw.update(queries_rotated=query[0], keys_rotated=key[0], values=value[0], weights=weights[0])
            return output, weights

        monkeypatch.setattr(torch.nn.functional, "softmax",
                            lambda input, dim=None, _stacklevel=3, dtype=None: softmax(input, dim=dim))
        monkeypatch.setattr(module, "eager_attention_forward", recording)
        monkeypatch.setattr(getattr(module, type(attn.kv_a_layernorm).__name__), "forward", rms64)
        if module is ds2:
            monkeypatch.setattr(module, "apply_rotary_emb", complex128_rope)
        hooks = {"q": attn.q_proj or attn.q_b_proj, "kv_down": attn.kv_a_proj_with_mqa, "kv_up": attn.kv_b_proj,
                 "latent_kv": attn.kv_a_layernorm, "output": attn.o_proj}
        if attn.q_a_layernorm is not None:
            hooks["latent_queries"] = attn.q_a_layernorm
        for name, layer in hooks.items():
            layer.register_forward_hook(lambda _m, _i, o, name=name: self.raw.__setitem__(name, o[0]))

    def expected(self) -> dict:
        """attncli's keys from what HF computed; the unrotated keys only when every key is new (no cache)."""
        raw = self.raw
        kv = raw["kv_up"].reshape(-1, HEADS, NOPE + V_DIM).permute(1, 0, 2)  # (h, m, d_nope + d_v)
        k_r = raw["kv_down"][:, KV_RANK:]  # (new rows, d_r), before the rotation
        q_rot, k_rot = raw["queries_rotated"], raw["keys_rotated"]
        expected = {"queries": heads_of(raw["q"][None], HEADS), "values": raw["values"].numpy(),
                    "latent_kv": raw["latent_kv"].numpy(), "queries_rotated": q_rot.numpy(),
                    "keys_rotated": k_rot.numpy(), "scores": (q_rot @ k_rot.transpose(-1, -2)).numpy(),
                    "weights": raw["weights"].numpy(), "output": raw["output"].numpy()}
        if k_r.shape[0] == kv.shape[1]:
            expected["keys"] = torch.cat([kv[..., :NOPE], k_r.expand(HEADS, -1, -1)], dim=-1).numpy()
        if "latent_queries" in raw:
            expected["latent_queries"] = raw["latent_queries"].numpy()
        return {key: np.asarray(value) for key, value in expected.items()}


def document(attn, cfg, x: np.ndarray, rope: dict, scale: float, **extra) -> dict:
    """The attncli document of one DeepSeek attention module, its matrices from the module's Linear layers."""
    eps = cfg.rms_norm_eps
    latent = {"kv_norm": {"kind": "rms", "gamma": attn.kv_a_layernorm.weight.detach().numpy(), "eps": eps}}
    weights = {"kv_down": T(attn.kv_a_proj_with_mqa), "kv_up": T(attn.kv_b_proj), "output": T(attn.o_proj)}
    bias = {}
    if attn.q_proj is not None:
        weights["query"] = T(attn.q_proj)
    else:
        weights.update(query_down=T(attn.q_a_proj), query_up=T(attn.q_b_proj))
        latent["query_norm"] = {"kind": "rms", "gamma": attn.q_a_layernorm.weight.detach().numpy(), "eps": eps}
        if attn.q_a_proj.bias is not None:
            bias["query_down"] = attn.q_a_proj.bias.detach().numpy()
    if attn.kv_a_proj_with_mqa.bias is not None:
        bias.update(kv_down=attn.kv_a_proj_with_mqa.bias.detach().numpy(), output=attn.o_proj.bias.detach().numpy())
    return {"inputs": x, "heads": HEADS, "latent": latent, "weights": weights, "bias": bias,
            "rope": {"dims": ROPE, "part": "last", **rope}, "scale": scale, **extra}


def style(version: int, interleave: bool) -> str:
    """V2 turns complex pairs (2i, 2i + 1) in place; V3 rotate_half's halves, or its interleave's halves."""
    return "interleaved" if version == 2 else "interleaved_halves" if interleave else "half"


def frequencies_and_factor(cfg, hf64_call, yarn: bool, top: int) -> tuple[np.ndarray, float]:
    if yarn:
        return hf64_call(cfg, top)
    return 1.0 / 10000.0 ** (np.arange(0, ROPE, 2, dtype=np.float64) / ROPE), 1.0


def position_embeddings(version: int, frequencies: np.ndarray, a: float, positions):
    if version == 3:
        return tables(frequencies, a, positions)
    angle = torch.tensor(np.outer(np.asarray(positions, dtype=np.float64), frequencies))
    return (torch.polar(torch.ones_like(angle), angle) * a)[None]  # V2's freqs_cis, in complex128


def rope_of(version: int, interleave: bool, yarn: bool, frequencies: np.ndarray) -> dict:
    rope = {"style": style(version, interleave)}
    if yarn:
        rope["scaling"] = {"type": "yarn", **{k: v for k, v in YARN.items() if k != "rope_type"}}
    else:
        rope["frequencies"] = frequencies.tolist()
    return rope


def yarn_scale(yarn: bool) -> float:
    """1/√d_k, times DeepSeek's mscale² with YaRN: (0.1·mscale_all_dim·ln(factor) + 1)²."""
    m = 0.1 * YARN["mscale_all_dim"] * np.log(YARN["factor"]) + 1.0 if yarn else 1.0
    return m * m / np.sqrt(NOPE + ROPE)


def check_absorbed(trace) -> float:
    """absorbed_queries·[c_KV | k_r′]ᵀ against the naive Q′·K′ᵀ (the scores), relative to their largest."""
    cache = np.concatenate([trace.latent_kv, trace.keys_rotated[0, :, NOPE:]], axis=1)  # (m, r_kv + d_r)
    scores = trace.absorbed_queries @ cache.T  # (h, n, m)
    return float(np.abs(scores - trace.scores).max() / np.abs(trace.scores).max())


CASES = [(2, False, True, False, False), (2, True, True, False, True), (3, False, True, False, False),
         (3, True, True, False, True), (3, True, False, False, False), (3, False, False, True, False),
         (3, True, True, True, True), (2, True, True, True, False)]


@pytest.mark.parametrize("version, q_lora, interleave, yarn, bias", CASES)
def test_deepseek_attention(monkeypatch, hf64, version, q_lora, interleave, yarn, bias):  # noqa: F811
    n, positions = 6, [0, 1, 2, 5, 40, 41]
    cfg, attn = deepseek(version, q_lora, interleave, yarn, bias)
    frequencies, a = frequencies_and_factor(cfg, hf64, yarn, max(positions) + 1)
    monkeypatch.undo()  # hf64's float64 rope init only for the tables
    assert attn.scaling == pytest.approx(yarn_scale(yarn), rel=1e-15)
    x = torch.randn(1, n, HIDDEN, generator=torch.Generator().manual_seed(version), dtype=F64)
    mask, allowed = hf_mask(n, n)
    rec = Recorder(monkeypatch, attn)
    with torch.no_grad():
        attn(x, position_embeddings=position_embeddings(version, frequencies, a, positions), attention_mask=mask)
    doc = document(attn, cfg, x[0].numpy(), rope_of(version, interleave, yarn, frequencies), yarn_scale(yarn),
                   positions=positions, mask="causal")
    trace = attncli.compute(doc)
    compare(trace, rec.expected(), allowed, f"DeepseekV{version}Attention q_lora={q_lora} interleave={interleave} "
            f"yarn={yarn} bias={bias}")
    assert (trace.latent_queries is not None) == q_lora
    assert check_absorbed(trace) < 1e-13


@pytest.mark.parametrize("version", [2, 3])
def test_decode_step_after_a_cache(monkeypatch, version):
    """Two tokens after a cache of 7 compressed latents: inputs the new rows, context every row, at their positions."""
    past, new = 7, 2
    cfg, attn = deepseek(version, q_lora=True)
    frequencies, _ = frequencies_and_factor(cfg, None, False, 0)
    x = torch.randn(1, past + new, HIDDEN, generator=torch.Generator().manual_seed(3), dtype=F64)
    rec = Recorder(monkeypatch, attn)
    cache = transformers.DynamicCache(config=cfg)
    tables_of = lambda p: position_embeddings(version, frequencies, 1.0, p)  # noqa: E731
    with torch.no_grad():
        attn(x[:, :past], position_embeddings=tables_of(range(past)), attention_mask=hf_mask(past, past)[0],
             cache=cache)
        mask, allowed = hf_mask(new, past + new)
        attn(x[:, past:], position_embeddings=tables_of(range(past, past + new)), attention_mask=mask, cache=cache)
    doc = document(attn, cfg, x[0, past:].numpy(), rope_of(version, True, False, frequencies), yarn_scale(False),
                   context=x[0].numpy(), positions=[past, past + 1], context_positions=list(range(past + new)),
                   mask={"causal": "lower_right"})
    trace = attncli.compute(doc)
    expected = rec.expected()
    expected["latent_kv"] = cache.layers[0].keys[0, 0].numpy()  # the cache holds c_KV …
    assert np.allclose(cache.layers[0].values[0, 0].numpy(), trace.keys_rotated[0, :, NOPE:], rtol=0, atol=1e-12)
    compare(trace, expected, allowed, f"DeepseekV{version}Attention, a decode step after a cache")  # … and k_r′
    assert check_absorbed(trace) < 1e-13
