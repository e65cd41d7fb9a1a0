"""Masks and score biases (issue 16) against PyTorch and Hugging Face, every key to 1e-9 in float64.

Each mask or bias is handed to attncli exactly as the PyTorch user holds it: ``nn.MultiheadAttention``'s boolean
``attn_mask`` and ``key_padding_mask`` (True = masked) under ``convention: block`` unchanged, its float ``attn_mask``
as ``score_bias.matrix``, its 3-D per-head mask (N·num_heads, L, S) with N = 1 as an h × n × m matrix;
``scaled_dot_product_attention``'s ``is_causal`` (upper-left, n ≠ m) as ``mask: causal`` and ``{causal: true}``,
``causal_lower_right`` as ``{causal: lower_right}``, a float mask as ``score_bias.matrix``; T5's ``position_bias``
from its own ``relative_attention_bias.weight`` (``scale: none``: T5 does not scale); BLOOM's ALiBi; Mistral's
``sliding_window`` as ``{causal: true, window: W}``.

Models are built from configs with random weights (nothing is downloaded).  The helpers (float64 configs, random
weights, HF's float32 softmax kept in float64, rope tables) are those of tests/test_modern_torch.py.
"""

from __future__ import annotations

import importlib
import json
import warnings

import numpy as np
import pytest

import attncli
from attncli.cli import app

pytestmark = pytest.mark.torch  # a comparison: `pytest -m torch` runs it (CI, after installing PyTorch)

torch = pytest.importorskip("torch", minversion="2.5")
transformers = pytest.importorskip("transformers", minversion="5.23")
from test_modern_torch import (  # noqa: E402
    F64,
    Recorder,
    T,
    compare,
    config,
    heads_of,
    randomize,
    rope_tables,
    theta_frequencies,
)

masking = pytest.importorskip("transformers.masking_utils")
causal_bias = pytest.importorskip("torch.nn.attention.bias")  # causal_upper_left, causal_lower_right
F = torch.nn.functional
TOL = 1e-9


def split(t, heads: int) -> torch.Tensor:
    """(rows, h·d) -> (h, rows, d)."""
    return t.reshape(t.shape[0], heads, -1).transpose(0, 1)


def softmax_masked(z: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """softmax over the allowed keys in float64; a row with none allowed is 0 (as SDPA since 2.5)."""
    return torch.nan_to_num(z.masked_fill(~allowed, -torch.inf).softmax(-1), nan=0.0)


# ---------------------------------------------------------------- nn.MultiheadAttention


def mha_case(seed: int, n: int, m: int, embed: int = 12, heads: int = 3, cross: bool = True):
    """A float64 nn.MultiheadAttention(batch_first) with random weights and biases, its inputs and its projections."""
    g = torch.Generator().manual_seed(seed)
    mha = randomize(torch.nn.MultiheadAttention(embed, heads, batch_first=True, dtype=F64), seed)
    x = torch.randn(1, n, embed, generator=g, dtype=F64)
    c = torch.randn(1, m, embed, generator=g, dtype=F64) if cross else x
    w, b = mha.in_proj_weight.detach(), mha.in_proj_bias.detach()
    q, k, v = (split(F.linear(t[0], w[i * embed:(i + 1) * embed], b[i * embed:(i + 1) * embed]), heads)
               for i, t in enumerate((x, c, c)))
    doc = {"inputs": x[0].numpy(), "heads": heads,
           "weights": {name: w[i * embed:(i + 1) * embed].numpy().T.copy()
                       for i, name in enumerate(("query", "key", "value"))}
           | {"output": T(mha.out_proj)},
           "bias": {name: b[i * embed:(i + 1) * embed].numpy() for i, name in enumerate(("query", "key", "value"))}
           | {"output": mha.out_proj.bias.detach().numpy()}}
    if cross:
        doc["context"] = c[0].numpy()
    return mha, x, c, (q, k, v), doc, g


def mha_expected(mha, x, c, qkv, allowed: torch.Tensor, bias=None, **masks) -> dict:
    """attncli's keys from what nn.MultiheadAttention returns (weights per head, output) and its projections.

    MHA calls F.linear on its out_proj's weight directly (no hook sees the concatenated heads): head_outputs are its
    own weights times its V, and the output is the module's.
    """
    q, k, v = qkv
    with torch.no_grad():
        output, weights = mha(x, c, c, need_weights=True, average_attn_weights=False, **masks)
    scores = q @ k.transpose(-1, -2)
    z = scores * q.shape[-1] ** -0.5 + (0 if bias is None else bias)
    expected = {"queries": q, "keys": k, "values": v, "scores": scores, "scaled_scores": z, "weights": weights[0],
                "head_outputs": weights[0] @ v, "output": output[0]}
    assert torch.equal(weights[0] == 0, ~allowed.expand_as(weights[0]))
    return {key: t.detach().numpy() for key, t in expected.items()}


def random_block_mask(g, shape: tuple, seen: int) -> torch.Tensor:
    """True = masked (MHA's meaning), never for key ``seen`` (so no row is fully masked: MHA would give NaN)."""
    mask = torch.rand(shape, generator=g) < 0.4
    mask[..., seen] = False
    return mask


@pytest.mark.parametrize("cross", [True, False], ids=["cross", "self"])
def test_multihead_attention_bool_mask_and_key_padding(cross):
    n, m = 5, 7 if cross else 5
    mha, x, c, qkv, doc, g = mha_case(1 + cross, n, m, cross=cross)
    attn_mask = random_block_mask(g, (n, m), seen=0)
    padding = torch.zeros(1, m, dtype=torch.bool)
    padding[0, -2:] = True  # the last two keys are padding
    allowed = ~attn_mask & ~padding[0]
    expected = mha_expected(mha, x, c, qkv, allowed, attn_mask=attn_mask, key_padding_mask=padding)
    doc["mask"] = {"matrix": attn_mask.numpy(), "keys": padding[0].numpy(), "convention": "block"}  # as given to MHA
    compare(attncli.compute(doc), expected, allowed.numpy(), "nn.MultiheadAttention bool attn_mask + key_padding_mask")


def test_multihead_attention_masks_from_npy_files_through_the_cli(runner, tmp_path, monkeypatch):
    n, m = 4, 6
    mha, x, c, qkv, doc, g = mha_case(3, n, m)
    attn_mask = random_block_mask(g, (n, m), seen=1)
    padding = torch.tensor([[False, False, True, False, False, True]])
    allowed = ~attn_mask & ~padding[0]
    expected = mha_expected(mha, x, c, qkv, allowed, attn_mask=attn_mask, key_padding_mask=padding)
    monkeypatch.chdir(tmp_path)
    np.save("attn_mask.npy", attn_mask.numpy())  # bool .npy files, saved as PyTorch holds them
    np.save("key_padding_mask.npy", padding.numpy())  # (1, m): the batch of one
    doc = {key: value.tolist() if isinstance(value, np.ndarray) else value for key, value in doc.items()}
    for section in ("weights", "bias"):
        doc[section] = {key: value.tolist() for key, value in doc[section].items()}
    doc["mask"] = {"matrix": "attn_mask.npy", "keys": "key_padding_mask.npy", "convention": "block"}
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    result = runner.invoke(app, ["compute", "doc.json", "--format", "json"])
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    got = json.loads(result.stdout)
    got["scaled_scores"] = np.where(allowed.numpy(), np.array(got["scaled_scores"], dtype=object), 0.0).astype(float)
    compare(got, expected, allowed.numpy(), "nn.MultiheadAttention, masks from .npy (CLI)")


def test_multihead_attention_float_mask_is_a_score_bias():
    n, m = 5, 6
    mha, x, c, qkv, doc, g = mha_case(4, n, m)
    bias = torch.randn(n, m, generator=g, dtype=F64) * 2
    expected = mha_expected(mha, x, c, qkv, torch.ones(n, m, dtype=torch.bool), bias=bias, attn_mask=bias)
    doc["score_bias"] = {"matrix": bias.numpy()}
    trace = attncli.compute(doc)
    assert np.array_equal(trace.score_bias, np.broadcast_to(bias.numpy(), trace.score_bias.shape))
    compare(trace, expected, np.ones((n, m), dtype=bool), "nn.MultiheadAttention float attn_mask")


def test_multihead_attention_float_mask_with_minus_inf():
    n, m = 5, 6
    mha, x, c, qkv, doc, g = mha_case(5, n, m)
    bias = torch.randn(n, m, generator=g, dtype=F64)
    blocked = random_block_mask(g, (n, m), seen=2)
    bias[blocked] = -torch.inf
    allowed = ~blocked
    expected = mha_expected(mha, x, c, qkv, allowed, bias=bias, attn_mask=bias)
    doc["score_bias"] = {"matrix": bias.numpy()}
    trace = attncli.compute(doc)
    assert np.array_equal(np.isneginf(trace.score_bias[0]), blocked.numpy())
    compare(trace, expected, allowed.numpy(), "nn.MultiheadAttention float attn_mask with −inf")


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_multihead_attention_per_head_mask(kind):
    n, m, heads = 4, 5, 3
    mha, x, c, qkv, doc, g = mha_case(6, n, m, heads=heads)
    if kind == "bool":  # (N·num_heads, L, S) with N = 1: one mask per head
        attn_mask = random_block_mask(g, (heads, n, m), seen=4)
        allowed, bias = ~attn_mask, None
        doc["mask"] = {"matrix": attn_mask.numpy(), "convention": "block"}
    else:
        attn_mask = bias = torch.randn(heads, n, m, generator=g, dtype=F64)
        allowed = torch.ones(heads, n, m, dtype=torch.bool)
        doc["score_bias"] = {"matrix": bias.numpy()}
    expected = mha_expected(mha, x, c, qkv, allowed, bias=bias, attn_mask=attn_mask)
    trace = attncli.compute(doc)
    assert kind == "float" or not (trace.spec.allowed[0] == trace.spec.allowed[1]).all()  # the heads differ
    compare(trace, expected, allowed.numpy(), f"nn.MultiheadAttention per-head {kind} mask")


# ---------------------------------------------------------------- scaled_dot_product_attention


def sdpa_case(seed: int, n: int, m: int, heads: int = 2, d_model: int = 6, d_k: int = 3):
    g = torch.Generator().manual_seed(seed)
    x, c = torch.randn(n, d_model, generator=g, dtype=F64), torch.randn(m, d_model, generator=g, dtype=F64)
    w = {name: torch.randn(d_model, heads * d_k, generator=g, dtype=F64) for name in ("query", "key", "value")}
    q, k, v = split(x @ w["query"], heads), split(c @ w["key"], heads), split(c @ w["value"], heads)
    doc = {"inputs": x.numpy(), "context": c.numpy(), "heads": heads,
           "weights": {key: t.numpy() for key, t in w.items()}}
    return doc, (q, k, v), g


def sdpa_expected(qkv, out: torch.Tensor, allowed: torch.Tensor, bias=None) -> dict:
    q, k, v = qkv
    scores = q @ k.transpose(-1, -2)
    z = scores * q.shape[-1] ** -0.5 + (0 if bias is None else bias)
    out = out[0]
    return {key: t.numpy() for key, t in {
        "queries": q, "keys": k, "values": v, "scores": scores, "scaled_scores": z,
        "weights": softmax_masked(z, allowed.expand_as(z)), "head_outputs": out,
        "output": out.transpose(0, 1).reshape(out.shape[1], -1)}.items()}


@pytest.mark.parametrize("n, m", [(3, 6), (6, 3), (4, 4)])
def test_sdpa_is_causal_is_upper_left(n, m):
    doc, (q, k, v), _ = sdpa_case(n * 10 + m, n, m)
    out = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=True)
    allowed = causal_bias.causal_upper_left(n, m)._materialize()
    expected = sdpa_expected((q, k, v), out, allowed)
    for mask in ("causal", {"causal": True}, {"causal": "upper_left"}):
        trace = attncli.compute(doc | {"mask": mask})
        compare(trace, expected, allowed.numpy(), f"SDPA is_causal n={n} m={m} as {mask}")
        assert trace.empty_queries == ()


@pytest.mark.parametrize("n, m", [(3, 6), (6, 3), (4, 4)])
def test_sdpa_causal_lower_right(n, m):
    doc, (q, k, v), _ = sdpa_case(n * 10 + m + 1, n, m)
    with warnings.catch_warnings():  # n > m: "Lower right causal bias will produce NaNs" (it gives zeros since 2.5)
        warnings.simplefilter("ignore", UserWarning)
        bias = causal_bias.causal_lower_right(n, m)
        out = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=bias)
    assert torch.isfinite(out).all()
    allowed = bias._materialize()
    trace = attncli.compute(doc | {"mask": {"causal": "lower_right"}})
    compare(trace, sdpa_expected((q, k, v), out, allowed), allowed.numpy(), f"SDPA causal_lower_right n={n} m={m}")
    assert trace.empty_queries == tuple(range(max(n - m, 0)))  # the first n − m queries see no key: zero rows


@pytest.mark.parametrize("per_head", [False, True], ids=["n×m", "h×n×m"])
def test_sdpa_float_mask_is_a_score_bias(per_head):
    n, m, heads = 4, 5, 3
    doc, (q, k, v), g = sdpa_case(7 + per_head, n, m, heads=heads)
    bias = torch.randn((heads, n, m) if per_head else (n, m), generator=g, dtype=F64) * 3
    out = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=bias[None] if per_head else bias)
    allowed = torch.ones(n, m, dtype=torch.bool)
    trace = attncli.compute(doc | {"score_bias": {"matrix": bias.numpy()}})
    compare(trace, sdpa_expected((q, k, v), out, allowed, bias), allowed.numpy(), "SDPA float attn_mask")


def test_sdpa_bool_mask_with_causal_and_a_window():
    """A boolean SDPA mask built by hand for a causal sliding window, against {causal: true, window: 3}."""
    n, m, window = 7, 7, 3
    doc, (q, k, v), _ = sdpa_case(8, n, m)
    i, j = torch.arange(n)[:, None], torch.arange(m)[None, :]
    allowed = (j <= i) & (j > i - window)
    out = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=allowed)
    trace = attncli.compute(doc | {"mask": {"causal": True, "window": window}})
    compare(trace, sdpa_expected((q, k, v), out, allowed), allowed.numpy(), "SDPA bool mask = causal window")


# ---------------------------------------------------------------- Hugging Face: T5's relative position bias


def t5_attention(decoder: bool, buckets: int, max_distance: int, seed: int, heads: int = 4):
    cfg = transformers.T5Config(vocab_size=16, d_model=16, d_kv=4, num_heads=heads, d_ff=32, num_layers=1,
                                relative_attention_num_buckets=buckets, relative_attention_max_distance=max_distance,
                                is_decoder=decoder, dropout_rate=0.0)
    cfg._attn_implementation = "eager"
    attn = transformers.models.t5.modeling_t5.T5Attention(cfg, has_relative_attention_bias=True, layer_idx=0,
                                                           is_causal=decoder)
    return randomize(attn, seed, std=0.5), cfg


class T5Recorder:
    """Q, K, V from hooks on q/k/v (every call: a cache's prefix too), the concatenated heads and output from o."""

    def __init__(self, attn, heads: int):
        self.calls: dict = {"q": [], "k": [], "v": []}
        for name in ("q", "k", "v"):
            getattr(attn, name).register_forward_hook(lambda _m, _i, o, name=name: self.calls[name].append(o[0]))
        attn.o.register_forward_hook(lambda _m, i, o: self.calls.update(concat=i[0][0], output=o[0]))
        self.heads = heads

    def expected(self, position_bias, weights, mask=None) -> dict:
        q = split(self.calls["q"][-1], self.heads)
        k, v = (split(torch.cat(self.calls[name]), self.heads) for name in ("k", "v"))
        scores = q @ k.transpose(-1, -2)
        z = scores + position_bias[0] + (0 if mask is None else mask[0])
        return {key: t.detach().numpy() for key, t in {
            "queries": q, "keys": k, "values": v, "scores": scores, "score_bias": position_bias[0], "scaled_scores": z,
            "weights": weights[0], "head_outputs": split(self.calls["concat"], self.heads),
            "output": self.calls["output"]}.items()}


def t5_document(attn, x, heads: int, relative: dict, **extra) -> dict:
    return {"inputs": x, "heads": heads, "scale": "none",  # T5 does not scale the scores
            "weights": {name: T(getattr(attn, name[0])) for name in ("query", "key", "value", "output")},
            "score_bias": {"relative": {"table": attn.relative_attention_bias.weight.detach().numpy()}
                           | relative}} | extra


@pytest.mark.parametrize("n, buckets, max_distance", [(12, 8, 9), (20, 32, 128), (40, 32, 16)])
def test_t5_encoder_bidirectional_buckets(n, buckets, max_distance):
    heads = 4
    attn, _ = t5_attention(False, buckets, max_distance, seed=n)
    x = torch.randn(1, n, 16, generator=torch.Generator().manual_seed(n), dtype=F64)
    rec = T5Recorder(attn, heads)
    keys = torch.ones(n, dtype=torch.bool)
    keys[[2, n - 1]] = False  # padding, as T5's encoder mask (batch, 1, 1, m) of 0 and the dtype's minimum
    mask = ((~keys).to(F64) * torch.finfo(F64).min)[None, None, None, :]
    with torch.no_grad():
        _, position_bias, weights = attn(x, mask=mask)
    doc = t5_document(attn, x[0].numpy(), heads, {"buckets": buckets, "max_distance": max_distance},
                      mask={"keys": keys.numpy()})
    allowed = np.broadcast_to(keys.numpy(), (n, n))
    compare(attncli.compute(doc), rec.expected(position_bias, weights, mask), allowed, f"T5 encoder n={n}")
    # the whole of T5's table is used: the buckets of every distance from −(n − 1) to n − 1
    assert len(np.unique(attn._relative_position_bucket(torch.arange(-n + 1, n), True, buckets, max_distance))) > 4


def test_t5_decoder_self_attention_is_causal_and_unidirectional():
    n, heads, buckets, max_distance = 14, 4, 16, 10
    attn, _ = t5_attention(True, buckets, max_distance, seed=5)
    x = torch.randn(1, n, 16, generator=torch.Generator().manual_seed(3), dtype=F64)
    rec = T5Recorder(attn, heads)
    mask, allowed = hf_mask(n, n)
    with torch.no_grad():
        _, position_bias, weights = attn(x, mask=mask)
    doc = t5_document(attn, x[0].numpy(), heads, {"buckets": buckets, "max_distance": max_distance,
                                                   "bidirectional": False}, mask="causal")
    compare(attncli.compute(doc), rec.expected(position_bias, weights, mask), allowed, "T5 decoder self-attention")


def test_t5_decoding_step_after_a_cache_uses_the_positions():
    prefix, n, heads, buckets, max_distance = 9, 3, 4, 8, 12
    m = prefix + n
    attn, cfg = t5_attention(True, buckets, max_distance, seed=8)
    x = torch.randn(1, m, 16, generator=torch.Generator().manual_seed(4), dtype=F64)
    rec = T5Recorder(attn, heads)
    cache = transformers.DynamicCache()
    with torch.no_grad():
        attn(x[:, :prefix], mask=hf_mask(prefix, prefix)[0], past_key_values=cache)
        mask, allowed = hf_mask(n, m)
        _, position_bias, weights = attn(x[:, prefix:], mask=mask, past_key_values=cache)
    assert position_bias.shape == (1, heads, n, m)
    doc = t5_document(attn, x[0, prefix:].numpy(), heads, {"buckets": buckets, "max_distance": max_distance,
                                                            "bidirectional": False},
                      context=x[0].numpy(), mask={"causal": "lower_right"},
                      positions=list(range(prefix, m)), context_positions=list(range(m)))
    compare(attncli.compute(doc), rec.expected(position_bias, weights, mask), allowed, "T5 decoding step")


def hf_mask(n: int, m: int) -> tuple:
    """HF's own eager causal mask (1, 1, n, m) for queries at the last n of m positions, and where it allows."""
    mask = masking.eager_mask(batch_size=1, q_length=n, kv_length=m, q_offset=m - n,
                              mask_function=masking.causal_mask_function, dtype=F64)
    return mask, (mask[0, 0] == 0).numpy()


# ---------------------------------------------------------------- Hugging Face: BLOOM's ALiBi


def bloom_case(heads: int, n: int, seed: int):
    bloom = transformers.models.bloom.modeling_bloom
    cfg = transformers.BloomConfig(vocab_size=16, hidden_size=4 * heads, n_head=heads, n_layer=1)
    cfg._attn_implementation = "eager"
    attn = randomize(bloom.BloomAttention(cfg, layer_idx=0), seed)
    x = torch.randn(1, n, 4 * heads, generator=torch.Generator().manual_seed(seed), dtype=F64)
    alibi = bloom.build_alibi_tensor(torch.ones(1, n, dtype=torch.long), heads, F64)  # (h, 1, n): slope_h · p_j
    # BLOOM's fused query_key_value: output features ordered (head, q|k|v, d)
    w = T(attn.query_key_value).reshape(4 * heads, heads, 3, 4)
    b = attn.query_key_value.bias.detach().numpy().reshape(heads, 3, 4)
    doc = {"inputs": x[0].numpy(), "heads": heads, "mask": "causal", "residual": True,
           "weights": {name: w[:, :, i].reshape(4 * heads, -1) for i, name in enumerate(("query", "key", "value"))}
           | {"output": T(attn.dense)},
           "bias": {name: b[:, i].reshape(-1) for i, name in enumerate(("query", "key", "value"))}
           | {"output": attn.dense.bias.detach().numpy()}}
    return attn, x, alibi, doc, bloom


@pytest.mark.parametrize("heads", [4, 6, 12], ids=["h=4", "h=6 (not a power of two)", "h=12 (slopes not float32)"])
def test_bloom_alibi(monkeypatch, heads):
    """BLOOM's eager attention takes its softmax in float32 even in a float64 model, so the comparison is made twice:

    1. the module as it is, against attncli's document with ``alibi: true`` (the contract's float64 slopes): weights,
       output and residual to 1e-6, a float32-sized tolerance;
    2. the module with its softmax kept in float64 (``F.softmax`` replaced within this test, as Recorder does):
       every key to 1e-9 against the document whose ``score_bias.matrix`` is BLOOM's own alibi tensor, then against
       ``alibi: {slopes: BLOOM's float32 slopes}``.  BLOOM multiplies slope·p_j in float32: exact when the slopes
       are powers of two (h = 4, 6), rounded otherwise (h = 12: that comparison is to 1e-6).

    BLOOM adds slope·p_j; the contract's bias is slope·(p_j − p_i), one constant less per row, which the softmax
    ignores: the weights are the same, and the scaled scores differ from BLOOM's by exactly slope·p_i.
    """
    n = 9
    attn, x, alibi, doc, bloom = bloom_case(heads, n, seed=heads)
    mask, allowed = hf_mask(n, n)
    with torch.no_grad():
        output32, probs32 = attn(x, residual=x, alibi=alibi, attention_mask=mask, output_attentions=True)
    trace = attncli.compute(doc | {"score_bias": {"alibi": True}})
    assert np.abs(trace.weights - probs32[0].numpy()).max() < 1e-6
    # dense(context) + residual = X₀ + Y, entries up to ~10: float32's rounding scales with them
    want = output32[0].numpy()
    assert np.abs(trace.residual - want).max() < 1e-6 * max(1.0, np.abs(want).max())

    raw: dict = {}
    softmax = torch.nn.functional.softmax

    def softmax64(input, dim=None, _stacklevel=3, dtype=None):
        raw["z"] = input
        return softmax(input, dim=dim)

    monkeypatch.setattr(torch.nn.functional, "softmax", softmax64)
    attn.query_key_value.register_forward_hook(lambda _m, _i, o: raw.update(qkv=o[0]))
    attn.dense.register_forward_hook(lambda _m, i, o: raw.update(concat=i[0][0], output=o[0]))
    with torch.no_grad():
        residual, probs = attn(x, residual=x, alibi=alibi, attention_mask=mask, output_attentions=True)
    q, k, v = raw["qkv"].reshape(n, heads, 3, 4).permute(2, 1, 0, 3)
    rows = alibi[:, 0, :][:, None, :].expand(heads, n, n)  # what BLOOM adds to every row: slope·p_j
    expected = {"queries": q, "keys": k, "values": v, "scores": q @ k.transpose(-1, -2), "score_bias": rows,
                "scaled_scores": raw["z"][0], "weights": probs[0], "head_outputs": split(raw["concat"], heads),
                "output": raw["output"], "residual": residual[0]}
    expected = {key: t.detach().numpy() for key, t in expected.items()}
    compare(attncli.compute(doc | {"score_bias": {"matrix": rows.numpy()}}), expected, allowed,
            f"BLOOM h={heads}, its alibi tensor as score_bias.matrix")

    slopes = bloom._get_alibi_slopes(heads, "cpu").to(F64)
    p = torch.arange(n, dtype=F64)
    exact = torch.equal(alibi[:, 0, :], slopes[:, None] * p)  # float32 held slope·p exactly
    assert exact == (heads != 12)
    shift = (slopes[:, None, None] * p[None, :, None]).numpy()  # slope·p_i
    expected |= {"score_bias": expected["score_bias"] - shift, "scaled_scores": expected["scaled_scores"] - shift}
    compare(attncli.compute(doc | {"score_bias": {"alibi": {"slopes": slopes.numpy()}}}), expected, allowed,
            f"BLOOM ALiBi h={heads}, its slopes", tol=TOL if exact else 1e-6)
    if heads == 6:  # the contract's float64 slopes are BLOOM's float32 ones, exactly: 2^(−8k/4), then 2^(−1), 2^(−3)
        assert np.array_equal(slopes.numpy(), [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3])
    if heads == 12:  # the odd powers of 2^(−1/2) are not float32 numbers: BLOOM's slopes are the contract's, rounded
        contract = [2.0 ** (-k) for k in range(1, 9)] + [2.0 ** (-0.5 * k) for k in (1, 3, 5, 7)]
        assert 0 < np.abs(slopes.numpy() - contract).max() < 1e-7
        assert np.abs(attncli.compute(doc | {"score_bias": {"alibi": True}}).score_bias[:, 0, 1] - contract).max() == 0


# ---------------------------------------------------------------- Hugging Face: Mistral's sliding window


def mistral(window: int, heads: int = 4, kv_heads: int = 2, hidden: int = 32, seed: int = 2):
    cfg = config("Mistral", hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads,
                 sliding_window=window, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    modeling = importlib.import_module("transformers.models.mistral.modeling_mistral")
    attn = randomize(modeling.MistralAttention(cfg, layer_idx=0), seed=seed)
    return attn, cfg, theta_frequencies(10000.0, hidden // heads)


def sliding_mask(cfg, x, positions, cache=None):
    """The mask MistralModel makes for its layers (masking_utils.create_sliding_window_causal_mask)."""
    mask = masking.create_sliding_window_causal_mask(config=cfg, inputs_embeds=x, attention_mask=None,
                                                     past_key_values=cache, position_ids=torch.tensor([positions]))
    return mask, (mask[0, 0] == 0).numpy()


@pytest.mark.parametrize("window", [1, 3, 5])
def test_mistral_sliding_window(monkeypatch, window):
    """HF's sliding_window W (transformers 5.x masking_utils.sliding_window_overlay: kv_idx > q_idx − W, with the
    causal kv_idx ≤ q_idx) lets each query see itself and the W − 1 keys before it: W keys, the lower bound exclusive.
    That is ``{causal: true, window: W}`` (i − W < j ≤ i), the same W, as docs/format.md says."""
    n, heads, kv_heads = 9, 4, 2
    attn, cfg, frequencies = mistral(window)
    x = torch.randn(1, n, 32, generator=torch.Generator().manual_seed(window), dtype=F64)
    mask, allowed = sliding_mask(cfg, x, list(range(n)))
    assert (allowed.sum(axis=1) == np.minimum(np.arange(n) + 1, window)).all()  # W keys once the window is full
    rec = Recorder(monkeypatch, attn)
    with torch.no_grad():
        attn(x, position_embeddings=rope_tables(frequencies, range(n)), attention_mask=mask)
    doc = document(attn, x[0].numpy(), heads, kv_heads, {"causal": True, "window": window}, rope={"base": 10000.0})
    trace = attncli.compute(doc)
    assert np.array_equal(trace.spec.allowed[0], allowed)
    compare(trace, rec.expected(heads, kv_heads), allowed, f"Mistral sliding_window={window}")


def test_mistral_sliding_window_decoding_step_with_its_cache(monkeypatch):
    """After a prefix, Mistral's sliding cache keeps the last W − 1 keys; the new queries see them and themselves:
    ``{causal: lower_right, window: W}`` over the keys HF kept, at their real positions."""
    prefix, n, window, heads, kv_heads = 6, 2, 3, 4, 2
    attn, cfg, frequencies = mistral(window, seed=7)
    x = torch.randn(1, prefix + n, 32, generator=torch.Generator().manual_seed(11), dtype=F64)
    cache = transformers.DynamicCache(config=cfg)
    rec = Recorder(monkeypatch, attn)
    with torch.no_grad():
        attn(x[:, :prefix], position_embeddings=rope_tables(frequencies, range(prefix)),
             attention_mask=sliding_mask(cfg, x[:, :prefix], list(range(prefix)), cache)[0], past_key_values=cache)
        prefix_keys = rec.raw["k_proj"]
        mask, allowed = sliding_mask(cfg, x[:, prefix:], list(range(prefix, prefix + n)), cache)
        attn(x[:, prefix:], position_embeddings=rope_tables(frequencies, range(prefix, prefix + n)),
             attention_mask=mask, past_key_values=cache, position_ids=torch.arange(prefix, prefix + n)[None])
    kept = rec.raw["keys_rotated"].shape[2] - n  # the cached keys HF still holds
    assert kept == window - 1 and allowed.shape == (n, kept + n)
    first = prefix - kept
    doc = document(attn, x[0, prefix:].numpy(), heads, kv_heads, {"causal": "lower_right", "window": window},
                   context=x[0, first:].numpy(), rope=True, positions=list(range(prefix, prefix + n)),
                   context_positions=list(range(first, prefix + n)))
    keys = heads_of(torch.cat((prefix_keys[:, first:], rec.raw["k_proj"]), dim=1), kv_heads)
    trace = attncli.compute(doc)
    assert np.array_equal(trace.spec.allowed[0], allowed)
    compare(trace, rec.expected(heads, kv_heads, k=keys), allowed, "Mistral decoding step, sliding cache")


@pytest.mark.parametrize("window", [1, 2, 4])
def test_bidirectional_sliding_window_is_inclusive(window):
    """HF's bidirectional window W allows |i − j| ≤ W (sliding_window_bidirectional_overlay): ``window: W + 1`` here."""
    n = 8
    hf = masking.eager_mask(batch_size=1, q_length=n, kv_length=n,
                            mask_function=masking.sliding_window_bidirectional_mask_function(window), dtype=F64)
    doc = {"inputs": np.eye(n), "mask": {"window": window + 1}}
    assert np.array_equal(attncli.load(doc).allowed[0], (hf[0, 0] == 0).numpy())


def document(attn, x, heads: int, kv_heads: int, mask, **extra) -> dict:
    """A Mistral attention's document: q/k/v/o_proj transposed to d_in × d_out."""
    weights = {name: T(getattr(attn, f"{name[0]}_proj")) for name in ("query", "key", "value", "output")}
    return {"inputs": x, "heads": heads, "kv_heads": kv_heads, "mask": mask, "weights": weights} | extra
