"""Lightning attention (MiniMax): linear attention with a fixed decay e^{−s} per head, in float64.

Shapes: h heads, n tokens, d_k and d_v the head widths, B the block size. The state S of a head is d_k × d_v:
S_t = e^{−s}·S_{t−1} + k_t·v_tᵀ and o_t = S_tᵀ·q_t, that is o_t = Σ_{j≤t} e^{−s(t−j)}·(q_t·k_j)·v_j
(+ e^{−s(t+1)}·S₀ᵀq_t).

>>> import numpy as np
>>> q = k = np.ones((1, 2, 1)); v = np.array([[[2.0], [4.0]]]); s = np.array([np.log(2.0)])
>>> o, states, final = recurrent(q, k, v, s)
>>> o[0, :, 0].tolist(), final[0].tolist()
([2.0, 5.0], [[5.0]])
"""

from __future__ import annotations

import numpy as np


def slopes(heads: int, layer: int, layers: int) -> np.ndarray:
    """transformers' MiniMaxLightningAttention.get_slope_rate: s_h = (2^{−8/H})^{h+1}·(1 − l/(L − 1 + 1e-5) + 1e-5),
    h = 0 … H − 1, l the layer (from 0) of L."""
    base = 1 / 2 ** (8 / heads)
    factor = 1 - layer / (layers - 1 + 1e-5) + 1e-5
    return base ** np.arange(1, heads + 1, dtype=np.float64) * factor


def recurrent(q: np.ndarray, k: np.ndarray, v: np.ndarray, s: np.ndarray, s0: np.ndarray | None = None,
              keep_state: bool = True):
    """Token by token: S ← e^{−s}·S + k_t·v_tᵀ, o_t = Sᵀq_t.

    q, k (h × n × d_k), v (h × n × d_v), s (h), s0 (h × d_k × d_v) -> o (h × n × d_v), the state after every token
    (h × n × d_k × d_v, or None), the last state.
    """
    h, n, d_k = k.shape
    decay = np.exp(-s)[:, None, None]  # (h, 1, 1)
    state = np.zeros((h, d_k, v.shape[-1])) if s0 is None else np.array(s0, dtype=np.float64)
    o = np.zeros((h, n, v.shape[-1]))
    states = np.zeros((h, n, d_k, v.shape[-1])) if keep_state else None
    for t in range(n):
        state = decay * state + k[:, t, :, None] * v[:, t, None, :]  # + k·vᵀ
        o[:, t] = np.einsum("hkv,hk->hv", state, q[:, t])
        if states is not None:
            states[:, t] = state
    return o, states, state


def decayed_scores(q: np.ndarray, k: np.ndarray, s: np.ndarray) -> np.ndarray:
    """(q_i·k_j)·e^{−s(i−j)} for j ≤ i, else 0: q (h × n × d_k), k (h × m × d_k) -> (h × n × m), i and j from 0."""
    n, m = q.shape[1], k.shape[1]
    distance = np.arange(n)[:, None] - np.arange(m)[None, :]  # i − j
    decay = np.where(distance >= 0, np.exp(-s[:, None, None] * np.maximum(distance, 0)), 0.0)  # (h, n, m)
    return (q @ np.swapaxes(k, -1, -2)) * decay


def direct(q: np.ndarray, k: np.ndarray, v: np.ndarray, s: np.ndarray, s0: np.ndarray | None = None) -> np.ndarray:
    """The direct sum o_i = Σ_{j≤i} e^{−s(i−j)}·(q_i·k_j)·v_j + e^{−s(i+1)}·S₀ᵀq_i -> (h × n × d_v)."""
    o = decayed_scores(q, k, s) @ v  # (h, n, d_v)
    if s0 is not None:
        reach = np.exp(-s[:, None] * np.arange(1, q.shape[1] + 1))  # (h, n): e^{−s(i+1)}
        o = o + reach[:, :, None] * (q @ s0)
    return o


def blocked(q: np.ndarray, k: np.ndarray, v: np.ndarray, s: np.ndarray, s0: np.ndarray | None = None,
            block: int = 256, keep_blocks: bool = False):
    """The block form (transformers' forward, MiniMax's kernels): per block of B tokens, i and j counted in it,

        intra = ((Q·Kᵀ) ∘ D)·V,  D_ij = e^{−s(i−j)} for j ≤ i, else 0      within the block
        inter = (Q ⊙ e^{−s(i+1)})·S                                       through the state before it
        S ← e^{−s·B}·S + (K ⊙ e^{−s(B−1−j)})ᵀ·V                            (B: the block's length)

    -> intra, inter (h × n × d_v; o = intra + inter), the state after each block (h × N × d_k × d_v, or None),
    the last state.
    """
    h, n, d_k = k.shape
    d_v = v.shape[-1]
    state = np.zeros((h, d_k, d_v)) if s0 is None else np.array(s0, dtype=np.float64)
    intra, inter = np.zeros((h, n, d_v)), np.zeros((h, n, d_v))
    starts = range(0, n, block)
    states = np.zeros((h, len(starts), d_k, d_v)) if keep_blocks else None
    for b, start in enumerate(starts):
        part = slice(start, min(start + block, n))
        size = part.stop - start
        i = np.arange(size, dtype=np.float64)
        intra[:, part] = decayed_scores(q[:, part], k[:, part], s) @ v[:, part]
        inter[:, part] = (q[:, part] * np.exp(-s[:, None, None] * (i[:, None] + 1))) @ state
        k_out = k[:, part] * np.exp(-s[:, None, None] * (size - 1 - i)[:, None])  # each key decayed to the block's end
        state = np.exp(-s * size)[:, None, None] * state + np.swapaxes(k_out, -1, -2) @ v[:, part]
        if states is not None:
            states[:, b] = state
    return intra, inter, states, state


def recurrent_backward(q: np.ndarray, k: np.ndarray, v: np.ndarray, s: np.ndarray, s0: np.ndarray | None,
                       states: np.ndarray, d_o: np.ndarray):
    """The gradients of L = Σ d_o ⊙ o through the recurrence, token by token from the last.

    Shapes as :func:`recurrent`; ``states`` its state after every token, d_o (h × n × d_v) -> dq, dk (h × n × d_k),
    dv (h × n × d_v), ds (h), dS₀ (h × d_k × d_v).
    """
    n = k.shape[1]
    decay = np.exp(-s)[:, None, None]
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    ds = np.zeros_like(s)
    grad = np.zeros(states.shape[:1] + states.shape[2:])  # dL/dS_t, from the tokens after t and o_t
    for t in range(n - 1, -1, -1):
        grad = grad + q[:, t, :, None] * d_o[:, t, None, :]  # o_t = S_tᵀq_t
        dq[:, t] = np.einsum("hkv,hv->hk", states[:, t], d_o[:, t])
        dk[:, t] = np.einsum("hkv,hv->hk", grad, v[:, t])  # S_t = e^{−s}S_{t−1} + k_t·v_tᵀ
        dv[:, t] = np.einsum("hkv,hk->hv", grad, k[:, t])
        before = states[:, t - 1] if t else (np.zeros_like(grad) if s0 is None else s0)
        ds -= decay[:, 0, 0] * np.sum(grad * before, axis=(1, 2))  # d e^{−s}/ds = −e^{−s}
        grad = decay * grad
    return dq, dk, dv, ds, grad
