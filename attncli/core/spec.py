"""The validated attention problem: every matrix per head, every size known.

:mod:`attncli.inputs.builder` makes a :class:`Spec` from a document; the maths in
:mod:`attncli.core` reads it and never sees an inconsistent shape.  Shapes follow
the contract: row vectors, ``Q = X·W_Q + b_Q``, weights ``d_in × d_out``, per-head
arrays head-first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attncli.core.norms import Norm
from attncli.core.positions import Rope


@dataclass(frozen=True)
class Spec:
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
    mask: np.ndarray | None  # (n, m) bool, True = may attend; None = attend everywhere
    mask_name: str  # 'none', 'causal' or 'matrix'
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
        return (self.inputs if self.context is None else self.context).shape[0]  # source's rows, without computing X + P

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
        return self.positions if self.positions is not None else np.arange(self.n, dtype=np.float64)

    @property
    def key_positions(self) -> np.ndarray:
        """p of each key (m,): ``context_positions``, else the queries' positions without a context, else 0 … m − 1."""
        if self.context_positions is not None:
            return self.context_positions
        return self.query_positions if self.context is None else np.arange(self.m, dtype=np.float64)
