"""The validated attention problem: every matrix per head, every size known.

:mod:`attncli.inputs.builder` makes a :class:`Spec` from a document; the maths in
:mod:`attncli.core` reads it and never sees an inconsistent shape.  Shapes follow
the contract: row vectors, ``Q = X·W_Q + b_Q``, weights ``d_in × d_out``, per-head
arrays head-first.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

import numpy as np

from attncli.core.bias import ScoreBias
from attncli.core.differential import Differential
from attncli.core.indexer import Indexer
from attncli.core.latent import Latent
from attncli.core.masks import Mask
from attncli.core.norms import Norm, QkNorm
from attncli.core.positions import Rope
from attncli.core.record import record


@record(eq=False)  # holds arrays: == and hash() by identity
class Spec:
    """The validated attention problem: every matrix per head and every size known (see the module)."""

    tokens: list[str]  # n labels
    context_tokens: list[str]  # m labels
    inputs: np.ndarray  # X (n, d_model)
    context: np.ndarray | None  # (m, d_ctx), None for self-attention
    w_q: np.ndarray  # (h, d_model, d_k)
    w_k: np.ndarray  # (g, d_ctx, d_k), g = kv_heads (= h unless grouped-query)
    w_v: np.ndarray  # (g, d_ctx, d_v)
    b_q: np.ndarray | None  # (h, d_k)
    b_k: np.ndarray | None  # (g, d_k)
    b_v: np.ndarray | None  # (g, d_v)
    w_o: np.ndarray | None  # (h·d_v, d_out)
    b_o: np.ndarray | None  # (d_out,)
    scale: float
    scale_name: str  # 'sqrt', 'none' or 'number'
    mask: Mask | None  # which keys each query may attend to (with score_bias's −inf cells); None = every key
    mask_name: str  # 'none', 'causal', 'matrix' or 'parts' (a mapping), as the document gave it
    identity: frozenset[str]  # which of query/key/value were omitted (the identity)
    files: frozenset[Path] = frozenset()  # the matrix files this document read
    positional: np.ndarray | None = None  # P (n, d_model), added to X before the projections
    positional_name: str = "none"  # 'none', 'sinusoidal' or 'matrix'
    score: str = "dot"  # 'dot': Q·Kᵀ; 'additive': vᵀ·tanh(Q·W₁ + K·W₂)
    w_1: np.ndarray | None = None  # (h, d_k, d_a), additive only
    w_2: np.ndarray | None = None  # (h, d_k, d_a)
    v_a: np.ndarray | None = None  # (h, d_a)
    normalize: str = "softmax"  # 'softmax', 'sum' or 'none'
    add_norm: tuple[np.ndarray, np.ndarray, float] | None = None  # (γ (d_model,), β (d_model,), ε)
    rope: Rope | None = None  # rotary position embedding of Q and K
    positions: np.ndarray | None = None  # (n,) the queries' positions; None: 0 … n − 1
    context_positions: np.ndarray | None = None  # (m,) the keys' positions; None: as the contract says
    pre_norm: Norm | None = None  # X̂ = pre_norm(X₀) before the projections
    post_norm: Norm | None = None  # R = X₀ + post_norm(Y)
    residual: bool = False  # R = X₀ + Y (pre-norm blocks)
    softcap: float | None = None  # z → c·tanh(z / c) on the scaled scores
    clip_qkv: float | None = None  # Q, K, V = clamp(·, −c, c) after the projections
    qk_norm: QkNorm | None = None  # Q̂, K̂ = norm(Q), norm(K), before the rotation or after it
    score_bias: ScoreBias | None = None  # Z + B after the cap
    query_temperature: tuple[float, float] | None = None  # (floor_scale, attn_scale): Q′ row i times τ_i (Llama 4)
    w_g: np.ndarray | None = None  # (h, d_model, d_v) the output gate's weight: G = σ(X̂·W_G + b_G) (Qwen3-Next)
    b_g: np.ndarray | None = None  # (h, d_v)
    residual_scale: float = 1.0  # α: R = X₀ + α·Y (Granite's residual_multiplier), with residual or add_norm
    sinks: np.ndarray | None = None  # (h,) one logit per query head: a term of the softmax's denominator (gpt-oss)
    latent: Latent | None = None  # multi-head latent attention: w_q, w_k, w_v are W_Q (or W_UQ), W_UK, W_UV per head
    gradient: np.ndarray | None = None  # dL/d(the block's last quantity): the backward pass's seed (Part 3)
    given_qkv: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # Q, K, V given directly (X is then n × 0)
    per_head: frozenset[str] = frozenset()  # the weights given per head (h × d_in × d): so are their gradients
    differential: Differential | None = None  # DiffLlama's head pairs: H from (A₁ − λ·A₂)·[V₁ | V₂], normalised
    indexer: Indexer | None = None  # DeepSeek-V3.2's lightning indexer: its kept keys are a part of ``mask``
    max_logits: bool = False  # each head's largest scaled score and its cell (core/max_logits.py)
    qk_clip: float | None = None  # τ of Kimi K2's QK-Clip: γ_h = min(1, τ/S_max^h), W_Q and W_K rescaled
    v_norm: float | None = None  # ε of Gemma 4's v_norm: V̂ = V / √(mean(V²) + ε), no γ (core/vnorm.py)
    k_eq_v: bool = False  # V = C·W_K + b_K (Gemma 4's attention_k_eq_v): w_v is w_k, b_v is b_k
    shared_kv: tuple[np.ndarray, np.ndarray] | None = None  # kv_from (a stack's layer): an earlier layer's K as its
    #   scores saw them (g, m, d_k) and V as its weights mixed them (g, m, d_v); w_k, w_v are then zeros of their shape
    shared_from: int | None = None  # kv_from's layer (counting from 0, as layers: does)

    @property
    def heads(self) -> int:
        return self.w_q.shape[0]

    @property
    def kv_heads(self) -> int:
        return self.w_k.shape[0]

    @property
    def d_k(self) -> int:
        return self.w_q.shape[2]

    @property
    def d_v(self) -> int:
        return self.w_v.shape[2]

    @property
    def n(self) -> int:
        return self.inputs.shape[0]

    @property
    def m(self) -> int:
        return (self.inputs if self.context is None else self.context).shape[0]  # source's rows, without X + P

    def given(self, source: str) -> np.ndarray | None:
        """The document's array a parameter names: a field (``w_q``), or one of ``latent`` (``latent.kv_up``)."""
        owner, _, name = source.rpartition(".")
        holder = getattr(self, owner) if owner else self
        return None if holder is None else getattr(holder, name)

    @cached_property
    def allowed(self) -> np.ndarray | None:
        """(h, n, m) bool, True = may attend (a read-only view when the mask is the same for every head);
        None when every key is allowed.  The full computation and the views use it; streaming never does."""
        if self.mask is None:
            return None
        full = self.mask.full()
        return full if full.ndim == 3 else np.broadcast_to(full, (self.heads, self.n, self.m))

    @property
    def embedded(self) -> np.ndarray:
        """What the projections see: X, plus P when there is a positional encoding."""
        return self.inputs if self.positional is None else self.inputs + self.positional

    @property
    def source(self) -> np.ndarray:
        """Where keys and values come from: the context, or the (embedded) inputs themselves (before pre_norm)."""
        return self.embedded if self.context is None else self.context

    @property
    def query_positions(self) -> np.ndarray:
        """p of each query (n,): ``positions``, else 0 … n − 1."""
        return positions_of(self.n, self.m, self.positions, self.context_positions, self.context is not None)[0]

    @property
    def key_positions(self) -> np.ndarray:
        """p of each key (m,): ``context_positions``, else the queries' positions without a context, else 0 … m − 1."""
        return positions_of(self.n, self.m, self.positions, self.context_positions, self.context is not None)[1]


def positions_of(n: int, m: int, positions: np.ndarray | None, context_positions: np.ndarray | None,
                 has_context: bool) -> tuple[np.ndarray, np.ndarray]:
    """The queries' (n,) and keys' (m,) positions, as the contract's defaults give them."""
    p_q = positions if positions is not None else np.arange(n, dtype=np.float64)
    if context_positions is not None:
        return p_q, context_positions
    return p_q, p_q if not has_context else np.arange(m, dtype=np.float64)
