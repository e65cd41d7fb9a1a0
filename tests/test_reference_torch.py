"""attncli.reference against independent references in float64: torch SDPA with autograd, torch's CPU flex_attention
with the same score_mod / mask_mod callables, and FlashAttention's own test reference (tests/flash_reference.py):
every output, lse and gradient within 1e-12 of the largest entry, at random shapes (batch 1–4, grouped heads,
n ≠ m, d_v ≠ d_k)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import attncli

TOL = 1e-12


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def close(got, want) -> None:
    """Within TOL of the largest |want|; −inf where want is −inf."""
    got, want = (x.detach().double().numpy() if hasattr(x, "detach") else np.asarray(x) for x in (got, want))
    assert got.shape == want.shape
    inf = np.isneginf(want)
    assert (np.isneginf(got) == inf).all()
    scale = max(float(np.abs(want[~inf]).max(initial=0.0)), 1e-300)
    assert float(np.abs(got[~inf] - want[~inf]).max(initial=0.0)) <= TOL * scale


def shapes(rng):
    g = int(rng.integers(1, 3))
    return dict(b=int(rng.integers(1, 5)), h=g * int(rng.integers(1, 4)), g=g, n=int(rng.integers(1, 12)),
                m=int(rng.integers(12, 24)), d_k=int(rng.integers(2, 9)), d_v=int(rng.integers(2, 9)))


def tensors(torch, rng, s, layout="bshd"):
    """q, k, v, dO as float64 tensors in ``layout``, and the same as (b, h, s, d) views."""
    def make(rows, heads, d):
        x = torch.from_numpy(rng.normal(size=(s["b"], rows, heads, d)))
        return x if layout == "bshd" else x.transpose(1, 2).contiguous()

    arrays = make(s["n"], s["h"], s["d_k"]), make(s["m"], s["g"], s["d_k"]), make(s["m"], s["g"], s["d_v"]), \
        make(s["n"], s["h"], s["d_v"])
    return arrays, [x.transpose(1, 2) if layout == "bshd" else x for x in arrays]


@pytest.mark.parametrize("seed", range(8))
def test_sdpa_and_autograd_at_random_shapes(torch, seed):
    rng = np.random.default_rng(seed)
    s = shapes(rng)
    layout = ("bshd", "bhsd")[seed % 2]
    causal = (False, True, "upper_left", "bottom_right")[seed % 4]
    (q, k, v, d_o), (qt, kt, vt, d_ot) = tensors(torch, rng, s, layout)
    scale = None if seed % 3 else float(rng.uniform(0.1, 1.0))
    r = attncli.reference(q, k, v, layout=layout, causal=causal, scale=scale, dout=d_o)
    i, j = torch.arange(s["n"])[:, None], torch.arange(s["m"])[None]
    mask = None if not causal else (j <= i if causal == "upper_left" else j <= i + s["m"] - s["n"])
    leaves = [x.detach().clone().requires_grad_() for x in (qt, kt, vt)]
    out = torch.nn.functional.scaled_dot_product_attention(*leaves, attn_mask=mask, scale=scale, enable_gqa=True)
    out.backward(d_ot)
    z = leaves[0] @ leaves[1].repeat_interleave(s["h"] // s["g"], 1).transpose(-1, -2)
    z = z * (1 / math.sqrt(s["d_k"]) if scale is None else scale)
    lse = torch.logsumexp(z if mask is None else z.masked_fill(~mask, -math.inf), dim=-1)
    back = (lambda x: x.transpose(1, 2)) if layout == "bshd" else (lambda x: x)
    close(r.out, back(out))
    close(r.lse, lse)
    for got, leaf in zip((r.dq, r.dk, r.dv), leaves):
        close(got, back(leaf.grad))
    assert r.out.dtype == torch.float64 and isinstance(r.dq, torch.Tensor)


@pytest.mark.torch
def _flex(torch_module):
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    return flex


@pytest.mark.parametrize("seed", range(3))
def test_flex_attention_with_the_same_callables(torch, seed):
    flex = _flex(torch)
    rng = np.random.default_rng(10 + seed)
    s = shapes(rng)
    (q, k, v, d_o), (qt, kt, vt, d_ot) = tensors(torch, rng, s, "bhsd")
    table = torch.from_numpy(rng.normal(size=(s["h"],)))

    def score_mod(score, b, h, q_idx, kv_idx):
        return 3.0 * torch.tanh(score / 3.0) + table[h] * (q_idx - kv_idx) / 8.0 + 0.1 * b

    def mask_mod(b, h, q_idx, kv_idx):
        return (kv_idx <= q_idx + 6) & ((kv_idx + h) % 5 != 0)

    r = attncli.reference(q, k, v, layout="bhsd", score_mod=score_mod, mask_mod=mask_mod, dout=d_o)
    block = flex.create_block_mask(mask_mod, s["b"], s["h"], s["n"], s["m"], device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # flex_attention warns that it runs uncompiled on the CPU
        out, aux = flex.flex_attention(qt, kt, vt, score_mod=score_mod, block_mask=block, enable_gqa=True,
                                       return_aux=flex.AuxRequest(lse=True))
    close(r.out, out)
    close(r.lse, aux.lse)
    # flex_attention has no backward on the CPU: the gradients by autograd through the same callables on the whole
    # (b, h, n, m) score tensor
    leaves = [x.detach().clone().requires_grad_() for x in (qt, kt, vt)]
    b, h, i, j = (torch.arange(x).view(*[-1 if a == axis else 1 for a in range(4)]) for axis, x in
                  enumerate((s["b"], s["h"], s["n"], s["m"])))
    z = leaves[0] @ leaves[1].repeat_interleave(s["h"] // s["g"], 1).transpose(-1, -2) / math.sqrt(s["d_k"])
    z = score_mod(z, b, h, i, j).masked_fill(~mask_mod(b, h, i, j), -math.inf)
    out = torch.softmax(z, dim=-1) @ leaves[2].repeat_interleave(s["h"] // s["g"], 1)
    out.backward(d_ot)
    close(r.out, out)
    for got, leaf in zip((r.dq, r.dk, r.dv), leaves):
        close(got, leaf.grad)


def test_numpy_callables_give_what_torch_ones_give(torch):
    """The same score_mod on numpy arrays (its derivative by the complex step) and on tensors (autograd)."""
    rng = np.random.default_rng(3)
    s = dict(b=2, h=4, g=2, n=5, m=9, d_k=4, d_v=3)
    (q, k, v, d_o), _ = tensors(torch, rng, s)
    r_torch = attncli.reference(q, k, v, dout=d_o, score_mod=lambda z, b, h, i, j: torch.tanh(z) * (1 + h) + i * j,
                                mask_mod=lambda b, h, i, j: j <= i + 4)
    r_numpy = attncli.reference(*(x.numpy() for x in (q, k, v)), dout=d_o.numpy(),
                                score_mod=lambda z, b, h, i, j: np.tanh(z) * (1 + h) + i * j,
                                mask_mod=lambda b, h, i, j: j <= i + 4)
    for key in ("out", "lse", "dq", "dk", "dv"):
        close(getattr(r_numpy, key), getattr(r_torch, key))


@pytest.mark.parametrize("seed", range(6))
def test_flash_attention_reference(torch, seed):
    """softcap, ALiBi, window, causal bottom-right, dropout and seqused_k against FlashAttention's attention_ref."""
    import flash_reference as fa

    rng = np.random.default_rng(20 + seed)
    s = shapes(rng)
    (q, k, v, d_o), _ = tensors(torch, rng, s)
    causal = seed % 2 == 0
    window = ((int(rng.integers(0, 6)), -1 if causal else int(rng.integers(0, 6))) if seed % 3 else (-1, -1))
    softcap = float(rng.uniform(1, 5)) if seed % 2 else 0.0
    slopes = torch.from_numpy(rng.uniform(0, 1, size=(s["b"], s["h"])))
    used = torch.from_numpy(rng.integers(s["n"], s["m"] + 1, size=s["b"]))  # ≥ s_q keys: no row left empty
    p = 0.25 if seed >= 3 else 0.0
    keep = torch.from_numpy(rng.random((s["b"], s["h"], s["n"], s["m"])) >= p)
    r = attncli.reference(q, k, v, causal=causal, window=window, softcap=softcap, alibi_slopes=slopes,
                          seqused_k=used, dropout_p=p, dropout_mask=keep, dout=d_o, return_weights=True)
    leaves = [x.detach().clone().requires_grad_() for x in (q, k, v)]
    padding = torch.arange(s["m"])[None] < used[:, None]  # (b, s_k), True = a real key
    bias = fa.attn_bias_from_alibi_slopes(slopes, s["n"], s["m"], padding)
    out, attention, lse = fa.attention_ref(*leaves, key_padding_mask=padding, attn_bias=bias, dropout_p=p,
                                           dropout_mask=keep, causal=causal, window_size=window, softcap=softcap)
    out.backward(d_o)
    close(r.out, out)
    close(r.lse, lse)
    close(r.weights, attention)
    for got, leaf in zip((r.dq, r.dk, r.dv), leaves):
        close(got, leaf.grad)


def test_sinks_and_their_gradient_as_gpt_oss(torch):
    """gpt-oss's eager attention: the sink a column of the softmax, dropped after it; dsinks by autograd."""
    rng = np.random.default_rng(7)
    s = dict(b=3, h=4, g=2, n=6, m=8, d_k=5, d_v=3)
    (q, k, v, d_o), (qt, kt, vt, d_ot) = tensors(torch, rng, s)
    sinks = torch.from_numpy(rng.normal(size=s["h"]))
    r = attncli.reference(q, k, v, sinks=sinks, causal=True, dout=d_o)
    leaves = [x.detach().clone().requires_grad_() for x in (qt, kt, vt, sinks)]
    z = leaves[0] @ leaves[1].repeat_interleave(2, 1).transpose(-1, -2) / math.sqrt(s["d_k"])
    i, j = torch.arange(s["n"])[:, None], torch.arange(s["m"])[None]
    z = z.masked_fill(~(j <= i + s["m"] - s["n"]), -math.inf)
    column = leaves[3].view(1, -1, 1, 1).expand(s["b"], -1, s["n"], 1)
    both = torch.cat([z, column], dim=-1)
    a = torch.softmax(both, dim=-1)[..., :-1]
    out = a @ leaves[2].repeat_interleave(2, 1)
    out.backward(d_ot)
    close(r.out, out.transpose(1, 2))
    close(r.lse, torch.logsumexp(both, dim=-1))
    for got, leaf in zip((r.dq, r.dk, r.dv), leaves):
        close(got, leaf.grad.transpose(1, 2))
    close(r.dsinks, leaves[3].grad)


def test_merge_is_flash_attention_combine(torch):
    import flash_reference as fa

    rng = np.random.default_rng(8)
    outs = torch.from_numpy(rng.normal(size=(4, 2, 5, 3, 6)))
    lses = torch.from_numpy(rng.normal(size=(4, 2, 3, 5)))
    lses[1] = -math.inf  # an empty split
    out, lse = attncli.merge(list(outs), list(lses))
    want_out, want_lse = fa.attention_combine_ref(outs, lses)
    close(out, want_out)
    close(lse, want_lse)


def test_any_float_tensor_is_read_and_float64_comes_back(torch):
    q = torch.ones(1, 3, 2, 4, dtype=torch.bfloat16)
    r = attncli.reference(q, q.half(), q.float(), causal=True)
    assert r.out.dtype == torch.float64 and r.lse.dtype == torch.float64
    close(r.lse[0, 0], torch.tensor([2.0, 2.0 + math.log(2), 2.0 + math.log(3)], dtype=torch.float64))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_torch_low_precision_sdpa_is_within_the_budget_and_a_bug_is_not(torch, dtype):
    """A real low-precision kernel (PyTorch's SDPA and its backward in bf16 / fp16) passes assert_close; the same
    kernel with the causal mask shifted by one key does not."""
    rng = np.random.default_rng(40)
    s = dict(b=2, h=4, g=2, n=24, m=24, d_k=16, d_v=16)
    (q, k, v, d_o), _ = tensors(torch, rng, s, "bhsd")
    r = attncli.reference(q, k, v, layout="bhsd", causal="upper_left", dout=d_o)
    low = getattr(torch, dtype)

    def kernel(shift: int):
        leaves = [x.to(low).requires_grad_() for x in (q, k, v)]
        i, j = torch.arange(s["n"])[:, None], torch.arange(s["m"])[None]
        out = torch.nn.functional.scaled_dot_product_attention(*leaves, attn_mask=j <= i + shift, enable_gqa=True)
        out.backward(d_o.to(low))
        return dict(out=out, dq=leaves[0].grad, dk=leaves[1].grad, dv=leaves[2].grad)

    found = attncli.assert_close(r, dtype=getattr(torch, dtype), **kernel(0))
    assert all(f.within for f in found.values())
    with pytest.raises(AssertionError, match=r"is outside the (bf16|fp16) budget at batch \d, head \d, row \d+"):
        attncli.assert_close(r, dtype=dtype, **kernel(1))
