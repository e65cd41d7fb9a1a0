"""The delta rule transcribed in PyTorch float64 from transformers' own functions (models/qwen3_next:
torch_recurrent_gated_delta_rule, torch_chunk_gated_delta_rule; models/kimi_linear: the same per channel), with
their float32 casts left out. Shares no code with attncli; torch is imported by the caller's test (importorskip).

Shapes as transformers': q, k (1, n, h_k, d_k), v (1, n, h_v, d_v), g (1, n, h_v) or (1, n, h_v, d_k), beta
(1, n, h_v); every tensor float64.
"""

from __future__ import annotations


def l2norm(x, eps: float = 1e-6):
    import torch

    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


def _prepare(query, key, value, g, beta, l2: bool):
    h_k, h_v = key.shape[2], value.shape[2]
    if h_k != h_v:
        query = query.repeat_interleave(h_v // h_k, dim=2)
        key = key.repeat_interleave(h_v // h_k, dim=2)
    query, key, value, beta, g = (x.transpose(1, 2) for x in (query, key, value, beta, g))
    if l2:
        query, key = l2norm(query), l2norm(key)
    return query / query.shape[-1] ** 0.5, key, value, g, beta


def recurrent(query, key, value, g, beta, initial_state=None, l2: bool = True):
    """-> o (1, n, h_v, d_v), every state (1, h_v, n, d_k, d_v), the last state."""
    import torch

    query, key, value, g, beta = _prepare(query, key, value, g, beta, l2)
    b, h, n, d_k = key.shape
    state = torch.zeros(b, h, d_k, value.shape[-1], dtype=torch.float64) if initial_state is None else initial_state
    out, states = torch.zeros_like(value), []
    for i in range(n):
        decay = g[:, :, i].exp()
        decay = decay[..., None, None] if decay.dim() == 2 else decay[..., None]  # per token or per key channel
        state = state * decay
        delta = (value[:, :, i] - (state * key[:, :, i].unsqueeze(-1)).sum(dim=-2)) * beta[:, :, i].unsqueeze(-1)
        state = state + key[:, :, i].unsqueeze(-1) * delta.unsqueeze(-2)
        out[:, :, i] = (state * query[:, :, i].unsqueeze(-1)).sum(dim=-2)
        states.append(state)
    return out.transpose(1, 2), torch.stack(states, dim=2), state


def conv_silu(mixed, weight):
    """transformers' causal_conv1d_fn in float64: mixed (1, n, c), weight (c, w) -> SiLU(conv) (1, n, c)."""
    import torch.nn.functional as F

    n = mixed.shape[1]
    out = F.conv1d(mixed.transpose(1, 2), weight.unsqueeze(1), padding=weight.shape[-1] - 1, groups=weight.shape[0])
    return F.silu(out[:, :, :n]).transpose(1, 2)


def gated_norm(o, z, gamma, eps: float, activation):
    """RMSNormGated in float64: o, z (…, d_v)."""
    import torch

    return gamma * o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + eps) * activation(z)
