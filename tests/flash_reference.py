"""FlashAttention's own test reference, rewritten here in torch: an independent oracle for attncli.reference.

Read from the public flash-attention repository (hopper/test_util.py: ``construct_local_mask``, ``attention_ref``;
hopper/test_flash_attn.py: ``attention_combine_ref``; tests/test_flash_attn.py: ``attn_bias_from_alibi_slopes``)
and written again for float64 on the CPU, without einops, keeping what these tests use: key padding (the first
``seqused`` keys of each sequence, as FlashAttention's ``seqused_k`` reads them), an additive ``attn_bias``,
dropout with an explicit mask, causal, the local window, the soft cap; ``attention_ref`` also returns the
log-sum-exp of the scores it gives the softmax (FlashAttention's kernels return it; its reference does not).
Layout (batch, seqlen, heads, dim), grouped heads repeated as its reference repeats them.
"""

from __future__ import annotations

import math

import torch


def construct_local_mask(seqlen_q: int, seqlen_k: int, window_size=(-1, -1), key_padding_mask=None):
    """True where a query may NOT attend (FlashAttention's convention here): (s_q, s_k) or (b, 1, s_q, s_k)."""
    row = torch.arange(seqlen_q).view(-1, 1)
    col = torch.arange(seqlen_k)
    sk = seqlen_k if key_padding_mask is None else key_padding_mask.sum(-1).view(-1, 1, 1, 1)
    sq = seqlen_q
    if window_size[0] < 0:
        return col > row + sk - sq + window_size[1]
    sk_full = torch.full_like(col, seqlen_k) if key_padding_mask is None else sk
    return torch.logical_or(col > torch.minimum(row + sk - sq + window_size[1], sk_full),
                            col < row + sk - sq - window_size[0])


def attn_bias_from_alibi_slopes(slopes, seqlen_q: int, seqlen_k: int, key_padding_mask=None):
    """−slope·|i + s_k − s_q − j| (b, h, s_q, s_k), its non-causal form (the causal one differs by a constant a
    row: the same softmax, another lse)."""
    slopes = slopes.view(*slopes.shape, 1, 1)
    row = torch.arange(seqlen_q).view(-1, 1)
    col = torch.arange(seqlen_k)
    sk = seqlen_k if key_padding_mask is None else key_padding_mask.sum(-1).view(-1, 1, 1, 1)
    return -slopes * torch.abs(row + sk - seqlen_q - col).to(slopes.dtype)


def attention_ref(q, k, v, key_padding_mask=None, attn_bias=None, dropout_p=0.0, dropout_mask=None, causal=False,
                  window_size=(-1, -1), softcap=0.0, scale=None):
    """(output (b, s_q, h, d_v), attention (b, h, s_q, s_k) before dropout, lse (b, h, s_q))."""
    if causal:
        window_size = (window_size[0], 0)
    group = q.shape[2] // k.shape[2]
    k, v = k.repeat_interleave(group, dim=2), v.repeat_interleave(group, dim=2)
    seqlen_q, seqlen_k = q.shape[1], k.shape[1]
    softmax_scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = torch.einsum("bthd,bshd->bhts", q * softmax_scale, k)
    if softcap > 0:
        scores = torch.tanh(scores / softcap) * softcap
    if key_padding_mask is not None:
        scores = scores.masked_fill(~key_padding_mask.view(key_padding_mask.shape[0], 1, 1, -1), float("-inf"))
    local_mask = None
    if window_size[0] >= 0 or window_size[1] >= 0:
        local_mask = construct_local_mask(seqlen_q, seqlen_k, window_size, key_padding_mask)
        scores = scores.masked_fill(local_mask, float("-inf"))
    if attn_bias is not None:
        scores = scores + attn_bias
    lse = torch.logsumexp(scores, dim=-1)
    attention = torch.softmax(scores, dim=-1)
    if key_padding_mask is not None:
        attention = attention.masked_fill(~key_padding_mask.view(key_padding_mask.shape[0], 1, 1, -1), 0.0)
    if local_mask is not None:
        attention = attention.masked_fill(torch.all(local_mask, dim=-1, keepdim=True), 0.0)
    attention_drop = attention if dropout_mask is None else attention.masked_fill(~dropout_mask, 0.0)
    output = torch.einsum("bhts,bshd->bthd", attention_drop, v * (1.0 / (1 - dropout_p)))
    return output, attention, lse


def attention_combine_ref(out_partial, lse_partial):
    """out_partial (splits, b, s, h, d), lse_partial (splits, b, h, s) -> (out (b, s, h, d), lse (b, h, s))."""
    lse = torch.logsumexp(lse_partial, dim=0)
    scale = torch.exp(lse_partial - lse)
    scale = torch.where(torch.isinf(scale) | torch.isnan(scale), torch.zeros_like(scale), scale)
    out = (scale.transpose(-1, -2).unsqueeze(-1) * out_partial).sum(0)  # lse (…, h, s) beside out (…, s, h, d)
    return out, lse
