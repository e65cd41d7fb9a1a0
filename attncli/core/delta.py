"""The delta rule of linear attention (Gated DeltaNet, Kimi Delta Attention): recurrent and chunked, in float64.

Shapes: h value heads (the query/key heads already repeated to them), n tokens, d_k and d_v the head widths,
C the chunk size. A decay ``g`` is ``h × n`` (Gated DeltaNet: one per token) or ``h × n × d_k`` (KDA: one per key
channel); the state S of a head is ``d_k × d_v`` and is read as ``o = Sᵀq``.

>>> import numpy as np
>>> q = k = np.ones((1, 2, 1)); v = np.array([[[2.0], [4.0]]]); beta = np.ones((1, 2)); g = np.zeros((1, 2))
>>> o, u, states, final = recurrent(q, k, v, beta, g)
>>> o[0, :, 0].tolist(), u[0, :, 0].tolist(), final[0].tolist()
([2.0, 4.0], [2.0, 2.0], [[4.0]])
"""

from __future__ import annotations

import numpy as np

L2_EPS = 1e-6  # transformers' l2norm (and FLA's): x / √(Σx² + ε)


def l2norm(x: np.ndarray, eps: float = L2_EPS) -> np.ndarray:
    """Each row of the last axis divided by √(Σx² + ε)."""
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # σ(x) without overflow for large |x|


def silu(x: np.ndarray) -> np.ndarray:
    return x * sigmoid(x)


def softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)  # ln(1 + eˣ)


def causal_conv(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Depthwise causal conv1d: x (n × c), kernel (c × w) -> (n × c),
    out[t, c] = Σ_j kernel[c, j]·x[t − w + 1 + j, c]."""
    n, w = x.shape[0], kernel.shape[1]
    padded = np.concatenate([np.zeros((w - 1, x.shape[1])), x])  # (n + w − 1) × c: zeros before the first token
    out = np.zeros_like(x)
    for j in range(w):
        out += padded[j:j + n] * kernel[:, j]
    return out


def log_decay(a: np.ndarray, a_log: np.ndarray, dt_bias: np.ndarray) -> np.ndarray:
    """g = −e^{A_log}·softplus(a + dt_bias): a (h × n) or (h × n × d_k), A_log (h), dt_bias (h) or (h × d_k)."""
    rate = np.exp(a_log).reshape((-1,) + (1,) * (a.ndim - 1))  # (h, 1) or (h, 1, 1)
    return -rate * softplus(a + dt_bias[:, None])


def gated_rms_norm(o: np.ndarray, gate: np.ndarray | None, gamma: np.ndarray, eps: float) -> np.ndarray:
    """y = γ ⊙ o / √(mean(o²) + ε) ⊙ gate, per head: o (h × n × d_v), gate act(z) (h × n × d_v) or None."""
    y = gamma * o / np.sqrt(np.mean(o * o, axis=-1, keepdims=True) + eps)
    return y if gate is None else y * gate


def _per_channel(g: np.ndarray) -> np.ndarray:
    return g[..., None] if g.ndim == 2 else g  # (h, n, 1) or (h, n, d_k): the factor of each row of S


def recurrent(q: np.ndarray, k: np.ndarray, v: np.ndarray, beta: np.ndarray, g: np.ndarray,
              s0: np.ndarray | None = None, keep_state: bool = True):
    """Token by token: S ← e^{g_t}·S, u_t = β_t(v_t − Sᵀk_t), S ← S + k_t·u_tᵀ, o_t = Sᵀq_t.

    q, k (h × n × d_k; q already scaled), v (h × n × d_v), beta (h × n), g (h × n or h × n × d_k), s0 (h × d_k × d_v)
    -> o (h × n × d_v), u (h × n × d_v), the state after every token (h × n × d_k × d_v, or None), the last state.
    """
    h, n, d_k = k.shape
    d_v = v.shape[-1]
    decay = np.exp(_per_channel(g))  # (h, n, d_k or 1)
    s = np.zeros((h, d_k, d_v)) if s0 is None else np.array(s0, dtype=np.float64)
    o, u = np.zeros((h, n, d_v)), np.zeros((h, n, d_v))
    states = np.zeros((h, n, d_k, d_v)) if keep_state else None
    for t in range(n):
        s = s * decay[:, t, :, None]  # (h, d_k, d_v): row i of S times e^{g_t,i}
        u[:, t] = beta[:, t, None] * (v[:, t] - np.einsum("hkv,hk->hv", s, k[:, t]))
        s = s + k[:, t, :, None] * u[:, t, None, :]  # + k·uᵀ
        o[:, t] = np.einsum("hkv,hk->hv", s, q[:, t])
        if states is not None:
            states[:, t] = s
    return o, u, states, s


def decayed_products(a: np.ndarray, b: np.ndarray, big_g: np.ndarray) -> np.ndarray:
    """(a bᵀ ∘ Γ ∘ lower) within each chunk: a, b (... × C × d_k), G (... × C × d_k or 1) -> (... × C × C),
    entry (i, j) = Σ_c a_ic·b_jc·e^{G_ic − G_jc} for j ≤ i, else 0."""
    c = a.shape[-2]
    lower = np.tril(np.ones((c, c), dtype=bool))
    diff = big_g[..., :, None, :] - big_g[..., None, :, :]  # (..., C, C, d_k or 1): G_i − G_j
    gamma = np.exp(np.where(lower[:, :, None], diff, -np.inf))  # 0 above the diagonal
    if big_g.shape[-1] == 1:  # one decay per token: Γ ∘ (a bᵀ)
        return (a @ np.swapaxes(b, -1, -2)) * gamma[..., 0]
    return np.einsum("...ic,...jc,...ijc->...ij", a, b, gamma)


def _chunks(x: np.ndarray, c: int) -> np.ndarray:
    """(h × n × …) -> (h × N × C × …), the last chunk padded with zeros (tokens that change nothing)."""
    h, n = x.shape[:2]
    pad = -n % c
    x = np.concatenate([x, np.zeros((h, pad) + x.shape[2:])], axis=1)
    return x.reshape((h, (n + pad) // c, c) + x.shape[2:])


def chunk_transform(k: np.ndarray, beta: np.ndarray, big_g: np.ndarray) -> np.ndarray:
    """T = (I + strictly-lower(diag β·(KKᵀ ∘ Γ)))⁻¹·diag β: k (... × C × d_k), beta (... × C), G -> (... × C × C)."""
    c = k.shape[-2]
    a = np.tril(beta[..., :, None] * decayed_products(k, k, big_g), -1)
    return np.linalg.solve(np.eye(c) + a, beta[..., :, None] * np.eye(c))  # unit lower triangular: exact solve


GROUP_BYTES = 1 << 26  # the intra-chunk arrays of this many bytes at a time (KDA's Γ is C × C × d_k per chunk)


def chunked(q: np.ndarray, k: np.ndarray, v: np.ndarray, beta: np.ndarray, g: np.ndarray,
            s0: np.ndarray | None = None, chunk: int = 64, keep_chunks: bool = False):
    """The same numbers chunk by chunk, as kernels compute them (FLA's chunk_gated_delta_rule).

    Shapes as :func:`recurrent` -> o, u (h × n × d_v), the state after each chunk (h × N × d_k × d_v, with
    ``keep_chunks``, else None), the last state.
    """
    h, n, d_k = k.shape
    d_v = v.shape[-1]
    qc, kc, vc = _chunks(q, chunk), _chunks(k, chunk), _chunks(v, chunk)  # (h, N, C, d)
    bc, big_g = _chunks(beta, chunk), np.cumsum(_chunks(_per_channel(g), chunk), axis=2)  # G: (h, N, C, d_k or 1)
    count = qc.shape[1]
    o, u = np.zeros((h, count, chunk, d_v)), np.zeros((h, count, chunk, d_v))
    states = np.zeros((h, count, d_k, d_v)) if keep_chunks else None
    s = np.zeros((h, d_k, d_v)) if s0 is None else np.array(s0, dtype=np.float64)
    group = max(1, GROUP_BYTES // (8 * h * chunk * chunk * big_g.shape[-1]))
    for first in range(0, count, group):
        part = slice(first, first + group)  # chunks whose intra-chunk arrays are made at once: none needs S
        gs = big_g[:, part]
        t = chunk_transform(kc[:, part], bc[:, part], gs)  # (h, N′, C, C)
        w = t @ (kc[:, part] * np.exp(gs))  # (h, N′, C, d_k): T·(e^G ⊙ K), how U reads the state before the chunk
        u0 = t @ vc[:, part]  # (h, N′, C, d_v): T·V
        qk = decayed_products(qc[:, part], kc[:, part], gs)  # (h, N′, C, C): Q̂K̂ᵀ ∘ Γ ∘ lower
        q_in = qc[:, part] * np.exp(gs)  # (h, N′, C, d_k)
        last = gs[:, :, -1:, :]  # (h, N′, 1, d_k or 1)
        k_out = kc[:, part] * np.exp(last - gs)  # (h, N′, C, d_k): each key decayed to the chunk's end
        for j in range(t.shape[1]):
            i = first + j
            u[:, i] = u0[:, j] - w[:, j] @ s  # U = TV − T(e^G ⊙ K)S
            o[:, i] = q_in[:, j] @ s + qk[:, j] @ u[:, i]  # O = (Q ⊙ e^G)S + (QKᵀ∘Γ∘lower)U
            s = np.exp(last[:, j, 0])[:, :, None] * s + np.swapaxes(k_out[:, j], -1, -2) @ u[:, i]
            if states is not None:
                states[:, i] = s
    return o.reshape(h, -1, d_v)[:, :n], u.reshape(h, -1, d_v)[:, :n], states, s


def recurrent_backward(q: np.ndarray, k: np.ndarray, v: np.ndarray, beta: np.ndarray, g: np.ndarray,
                       s0: np.ndarray | None, states: np.ndarray, d_o: np.ndarray):
    """The gradients of L = Σ d_o ⊙ o through the recurrence, token by token from the last.

    Shapes as :func:`recurrent`; ``states`` its state after every token (h × n × d_k × d_v), d_o (h × n × d_v)
    -> dq, dk (h × n × d_k), dv (h × n × d_v), dβ (h × n), dg (as g), dS₀ (h × d_k × d_v).
    """
    h, n, d_k = k.shape
    per_channel = g.ndim == 3
    decay = np.exp(_per_channel(g))  # (h, n, d_k or 1)
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    dbeta, dg = np.zeros_like(beta), np.zeros_like(g)
    ds = np.zeros(states.shape[:1] + states.shape[2:])  # dL/dS_t, from the tokens after t
    for t in range(n - 1, -1, -1):
        before = states[:, t - 1] if t else (np.zeros_like(ds) if s0 is None else s0)
        a = before * decay[:, t, :, None]  # (h, d_k, d_v): the decayed state the token reads
        p = np.einsum("hkv,hk->hv", a, k[:, t])  # Sᵀk
        u = beta[:, t, None] * (v[:, t] - p)
        ds = ds + q[:, t, :, None] * d_o[:, t, None, :]  # o = Sᵀq
        dq[:, t] = np.einsum("hkv,hv->hk", states[:, t], d_o[:, t])
        du = np.einsum("hkv,hk->hv", ds, k[:, t])  # S = A + k·uᵀ
        dk[:, t] = np.einsum("hkv,hv->hk", ds, u)
        dbeta[:, t] = np.sum(du * (v[:, t] - p), axis=-1)  # u = β(v − p)
        dv[:, t] = beta[:, t, None] * du
        dp = -beta[:, t, None] * du
        da = ds + k[:, t, :, None] * dp[:, None, :]  # p = Aᵀk
        dk[:, t] += np.einsum("hkv,hv->hk", a, dp)
        da_a = np.sum(a * da, axis=-1)  # (h, d_k): dL/dg per key channel
        dg[:, t] = da_a if per_channel else np.sum(da_a, axis=-1)
        ds = da * decay[:, t, :, None]  # A = e^g·S_{t−1}
    return dq, dk, dv, dbeta, dg, ds


def l2norm_backward(x: np.ndarray, dy: np.ndarray, eps: float = L2_EPS) -> np.ndarray:
    """dL/dx of y = x / √(Σx² + ε): r·(dy − y·(y·dy)), r = 1/√(Σx² + ε)."""
    r = 1.0 / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)
    y = x * r
    return r * (dy - y * np.sum(y * dy, axis=-1, keepdims=True))
