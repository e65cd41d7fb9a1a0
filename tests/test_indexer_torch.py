"""``indexer`` against transformers' DeepseekV32Indexer and DeepseekV32Attention (DeepSeek-V3.2's sparse attention).

Tiny configs with random weights (nothing is downloaded).  transformers computes the indexer's q·k and head weights
in float32 even in a float64 model (``q.float()``): its table I agrees with attncli's within 1e-5 of the table's
largest number, and a float64 transcription of its forward written here (the same lines, without the casts) within
1e-12.  Its top-k (the indices it returns) is the same set of keys wherever no tie straddles the cut; the attention
that follows (MLA, q LoRA, interleaved rope, the top-k mask folded into the causal mask) agrees to 1e-12 with
HF's own RMSNorms put in float64 (HF computes their variance in float32).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import attncli

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch", minversion="2.5")
transformers = pytest.importorskip("transformers", minversion="5.24")
ds32 = pytest.importorskip("transformers.models.deepseek_v32.modeling_deepseek_v32")
from hf_modules import T, config, hf_mask, randomize  # noqa: E402
from test_rope_scaling_torch import tables  # noqa: E402

pytestmark = pytest.mark.torch
F64 = torch.float64
HEADS, HIDDEN, NOPE, ROPE, V_DIM, KV_RANK, Q_RANK = 2, 16, 4, 4, 3, 5, 6
I_HEADS, I_DIM = 3, 8


def deepseek32(top_k: int, seed: int):
    cfg = config("DeepseekV32", hidden_size=HIDDEN, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                 q_lora_rank=Q_RANK, kv_lora_rank=KV_RANK, qk_nope_head_dim=NOPE, qk_rope_head_dim=ROPE,
                 v_head_dim=V_DIM, index_topk=top_k, index_head_dim=I_DIM, index_n_heads=I_HEADS,
                 attention_bias=False, max_position_embeddings=256, rms_norm_eps=1e-6,
                 rope_parameters={"rope_theta": 10000.0, "rope_type": "default"})
    return cfg, randomize(ds32.DeepseekV32Attention(cfg, layer_idx=0), seed=seed)


def rms64(self, x):
    """DeepseekV32RMSNorm in float64 (HF computes the variance in float32)."""
    return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


def frequencies() -> np.ndarray:
    return 1.0 / 10000.0 ** (np.arange(0, ROPE, 2, dtype=np.float64) / ROPE)


def index64(ix, x, q_resid, cos, sin, allowed):
    """DeepseekV32Indexer.forward's lines in float64 (no ``.float()``): the table I (n × m), −inf where masked."""
    n = x.shape[1]
    q = ix.wq_b(q_resid).view(1, n, ix.n_heads, ix.head_dim)
    q_rot, q_pass = torch.split(q, [ix.qk_rope_head_dim, ix.head_dim - ix.qk_rope_head_dim], dim=-1)
    k = ix.k_norm(ix.wk(x)).unsqueeze(2)
    k_rot, k_pass = torch.split(k, [ix.qk_rope_head_dim, ix.head_dim - ix.qk_rope_head_dim], dim=-1)
    q_rot, k_rot = ds32.apply_rotary_pos_emb(q_rot, k_rot, cos, sin, unsqueeze_dim=2)
    q, k = torch.cat([q_rot, q_pass], dim=-1), torch.cat([k_rot, k_pass], dim=-1).squeeze(2)
    scores = torch.relu(torch.matmul(q, k.transpose(-1, -2).unsqueeze(1)) * ix.softmax_scale)  # (1, n, H, m)
    weights = ix.weights_proj(x) * ix.n_heads**-0.5
    table = torch.matmul(weights.unsqueeze(-2), scores).squeeze(-2)[0]  # (n, m)
    return table.masked_fill(~torch.from_numpy(allowed), float("-inf")).numpy()


class Recorder:
    """HF's q_resid, its indexer's table (what topk was called on) and indices, and the attention's weights."""

    def __init__(self, monkeypatch, attn):
        self.raw: dict = {}
        topk, eager = torch.Tensor.topk, ds32.eager_attention_forward

        def recording_topk(t, k, *args, **kwargs):
            self.raw["table"] = t[0].detach().clone()
            return topk(t, k, *args, **kwargs)

        def recording_eager(mod, query, key, value, attention_mask, **kwargs):
            output, weights = eager(mod, query, key, value, attention_mask, **kwargs)
            self.raw["weights"] = weights[0].detach().clone()
            return output, weights

        softmax = torch.nn.functional.softmax
        monkeypatch.setattr(torch.nn.functional, "softmax",  # the eager softmax in float64, not float32
                            lambda input, dim=None, _stacklevel=3, dtype=None: softmax(input, dim=dim))
        monkeypatch.setattr(torch.Tensor, "topk", recording_topk)
        monkeypatch.setattr(ds32, "eager_attention_forward", recording_eager)
        monkeypatch.setattr(ds32.DeepseekV32RMSNorm, "forward", rms64)
        attn.q_a_layernorm.register_forward_hook(lambda _m, _i, o: self.raw.__setitem__("q_resid", o))
        attn.indexer.register_forward_hook(lambda _m, _i, o: self.raw.__setitem__("indices", o[0].numpy()))
        attn.o_proj.register_forward_hook(lambda _m, _i, o: self.raw.__setitem__("output", o[0].detach().numpy()))


def document(attn, x: np.ndarray, top_k: int) -> dict:
    """attncli's document of one DeepseekV32Attention: MLA with q LoRA, its indexer, causal."""
    ix, eps = attn.indexer, 1e-6
    vec = lambda p: p.detach().numpy()  # noqa: E731
    return {"inputs": x, "heads": HEADS, "mask": "causal", "scale": float(attn.scaling),
            "rope": {"dims": ROPE, "part": "last", "style": "interleaved_halves",
                     "frequencies": frequencies().tolist()},
            "latent": {"kv_norm": {"kind": "rms", "gamma": vec(attn.kv_a_layernorm.weight), "eps": eps},
                       "query_norm": {"kind": "rms", "gamma": vec(attn.q_a_layernorm.weight), "eps": eps}},
            "weights": {"query_down": T(attn.q_a_proj), "query_up": T(attn.q_b_proj),
                        "kv_down": T(attn.kv_a_proj_with_mqa), "kv_up": T(attn.kv_b_proj), "output": T(attn.o_proj)},
            "indexer": {"top_k": top_k, "heads": I_HEADS,
                        "weights": {"query": T(ix.wq_b), "key": T(ix.wk), "head_weights": T(ix.weights_proj)},
                        "key_norm": {"kind": "layer", "gamma": vec(ix.k_norm.weight), "beta": vec(ix.k_norm.bias),
                                     "eps": float(ix.k_norm.eps)}}}


def run_hf(monkeypatch, n: int, top_k: int, seed: int):
    cfg, attn = deepseek32(top_k, seed)
    x = torch.randn(1, n, HIDDEN, generator=torch.Generator().manual_seed(seed), dtype=F64)
    mask, allowed = hf_mask(n, n)
    rec = Recorder(monkeypatch, attn)
    cos, sin = tables(frequencies(), 1.0, range(n))
    with torch.no_grad():
        attn(x, position_embeddings=(cos, sin), attention_mask=mask)
        table64 = index64(attn.indexer, x, rec.raw["q_resid"], cos, sin, allowed)
    monkeypatch.undo()
    return attn, x[0].numpy(), rec.raw, table64, allowed


@pytest.mark.parametrize("n, top_k, seed", [(10, 4, 1), (12, 5, 2), (9, 9, 3), (16, 3, 4), (14, 6, 5)])
def test_indexer_and_sparse_mla_against_transformers(monkeypatch, n, top_k, seed):
    attn, x, raw, table64, allowed = run_hf(monkeypatch, n, top_k, seed)
    trace = attncli.compute(document(attn, x, top_k))
    ours = trace.index_scores
    assert np.array_equal(np.isneginf(ours), ~allowed)
    big = np.abs(table64[allowed]).max()
    assert np.abs(ours[allowed] - table64[allowed]).max() <= 1e-12 * big  # the float64 transcription
    hf = raw["table"].numpy()  # float32 inside, as HF computes it
    assert np.abs(ours[allowed] - hf[allowed]).max() <= 1e-5 * big
    clean = trace.index_ties == 0  # rows whose cut splits no tie: the top-k set is defined
    for s in range(n):
        hf_kept = {int(t) for t in raw["indices"][s] if allowed[s, t]}  # HF's topk also returns masked keys
        kept = {int(t) for t in trace.index_selected[s] if t >= 0}
        if clean[s]:
            assert hf_kept == kept, s
        else:  # a tie at the cut: the same values kept, perhaps other keys (torch.topk keeps any of the tied)
            assert sorted(table64[s, list(hf_kept)]) == sorted(table64[s, list(kept)]), s
    hf_allowed = raw["weights"][0].numpy() > 0  # the keys HF's attention saw (causal and its top-k)
    assert np.array_equal(trace.index_mask.astype(bool)[clean], hf_allowed[clean])
    np.testing.assert_allclose(trace.weights[:, clean], raw["weights"].numpy()[:, clean], rtol=0, atol=1e-12)
    scale = np.abs(raw["output"]).max()
    assert np.abs(trace.output[clean] - raw["output"][clean]).max() <= 1e-12 * scale
    cache = np.concatenate([trace.latent_kv, trace.keys_rotated[0, :, NOPE:]], axis=1)  # (m, r_kv + d_r)
    z = np.where(trace.index_mask.astype(bool), trace.absorbed_queries @ cache.T * float(attn.scaling), -np.inf)
    absorbed = np.exp(z - z.max(axis=-1, keepdims=True))  # the absorbed form, over the kept keys only
    np.testing.assert_allclose(absorbed / absorbed.sum(axis=-1, keepdims=True), trace.weights, rtol=0, atol=1e-12)
    assert clean.sum() >= n - 1  # (ties at the cut are exact zeros of I: ReLU's; one query at most in these seeds)
    print(f"\nn={n} top_k={top_k}: I vs float64 transcription "
          f"{np.abs(ours[allowed] - table64[allowed]).max() / big:.1e}, "
          f"vs HF float32 {np.abs(ours[allowed] - hf[allowed]).max() / big:.1e}, output "
          f"{np.abs(trace.output[clean] - raw['output'][clean]).max() / scale:.1e}, ties {int((~clean).sum())}")


def test_dropped_weight_is_what_full_attention_gave_the_dropped_keys(monkeypatch):
    attn, x, _, _, allowed = run_hf(monkeypatch, 10, 4, 1)
    sparse = attncli.compute(document(attn, x, 4))
    dense = attncli.compute(document(attn, x, 10))  # top_k ≥ m: every allowed key, the dense attention
    assert np.all(dense.index_dropped_weight == 0.0) and dense.index_mask.astype(bool).tolist() == allowed.tolist()
    dropped = allowed & ~sparse.index_mask.astype(bool)
    want = np.where(dropped[None], dense.weights, 0.0).sum(axis=-1)  # (h, n)
    np.testing.assert_allclose(sparse.index_dropped_weight, want, rtol=0, atol=1e-15)
    assert sparse.index_dropped_weight.max() > 0.05
