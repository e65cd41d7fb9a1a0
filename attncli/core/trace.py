"""The result: every intermediate of one attention computation, computed once and read by every view."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attncli.core.spec import Spec


@dataclass(frozen=True, kw_only=True)
class Trace:
    """Every intermediate of one attention computation (per-head arrays head-first).

    The array fields carry the names of the JSON keys (``queries``, ``weights`` …), and are given by name:
    ``Trace(spec=spec, queries=q, …)``; a stage that did not run leaves its array None.
    """

    spec: Spec
    queries: np.ndarray | None = None  # Q (h, n, d_k); None when only the document's arrays were asked for
    keys: np.ndarray | None = None  # K (g, m, d_k), g key/value heads (= h unless grouped-query)
    values: np.ndarray | None = None  # V (g, m, d_v)
    scores: np.ndarray | None = None  # S = Q·Kᵀ (h, n, m); None when streamed
    scaled_scores: np.ndarray | None = None  # scale·S (capped, + B) (h, n, m): the softmax's input; masked cells unused
    weights: np.ndarray | None = None  # A = softmax(scale·S) (h, n, m), masked cells 0
    head_outputs: np.ndarray | None = None  # H = A·V (h, n, d_v); None when only the stages before the scores ran
    output: np.ndarray | None = None  # Y (n, d_out); None then too
    empty_queries: tuple[int, ...] = field(default=())  # queries whose every key is masked
    residual: np.ndarray | None = None  # R = X₀ + Y (or + post_norm(Y)) (n, d_model), with add_norm or residual
    normalized: np.ndarray | None = None  # LayerNorm(residual) (n, d_model), with add_norm
    queries_rotated: np.ndarray | None = None  # Q′ = rope(Q) (h, n, d_k), with rope
    keys_rotated: np.ndarray | None = None  # K′ = rope(K) (g, m, d_k), with rope
    rope_frequencies: np.ndarray | None = None  # f (dims/2,): the rotation's frequencies, scaled or not, with rope
    rope_attention_factor: np.ndarray | None = None  # a (a 0-d array): cos and sin times a, with rope
    normalized_inputs: np.ndarray | None = None  # X̂ = pre_norm(X₀) (n, d_model), with pre_norm
    normalized_output: np.ndarray | None = None  # post_norm(Y) (n, d_out), with post_norm
    score_bias: np.ndarray | None = None  # B (h, n, m), −inf where masked; with score_bias, None when streamed
    query_temperature: np.ndarray | None = None  # τ (n,), with query_temperature
    gate: np.ndarray | None = None  # G = σ(X̂·W_G + b_G) (h, n, d_v), with weights.gate
    gated_head_outputs: np.ndarray | None = None  # H ⊙ G (h, n, d_v), with weights.gate
    kernel_queries: np.ndarray | None = None  # the Q whose product is S (h, n, d_k): the last query stage's array
    kernel_keys: np.ndarray | None = None  # the K whose product is S (g, m, d_k)
    sink_weights: np.ndarray | None = None  # the sink's share of each row (h, n), with sinks
    lse: np.ndarray | None = None  # ln Σ exp(z) over the allowed keys (+ exp(s_h)) (h, n); −inf for no key
    normalized_queries: np.ndarray | None = None  # Q̂ = qk_norm(Q) (or of Q′ after rope) (h, n, d_k), with qk_norm
    normalized_keys: np.ndarray | None = None  # K̂ = qk_norm(K) (or of K′) (g, m, d_k), with qk_norm
    latent_queries: np.ndarray | None = None  # c_Q = query_norm(X̂·W_DQ + b_DQ) (n, r_q), with latent and query_down
    latent_kv: np.ndarray | None = None  # c_KV = kv_norm of C·W_DKV's first r_kv columns (m, r_kv), with latent
    absorbed_queries: np.ndarray | None = None  # [Q′_nope,h·W_UK,hᵀ | Q′_r,h] (h, n, r_kv + d_r), with latent
    gradients: dict[str, np.ndarray] = field(default_factory=dict)  # with gradient: grad_* and delta, by JSON key
    emulated: str | None = None  # compute --emulate's dtype ('bf16'): the arrays are the eager computation's in it

    def __getattr__(self, name: str) -> np.ndarray | None:
        """A gradient by its JSON key (``trace.grad_queries``), None when not computed."""
        if name.startswith("grad_") or name == "delta":
            return self.__dict__.get("gradients", {}).get(name)
        raise AttributeError(name)

    @property
    def inputs(self) -> np.ndarray:
        """X (n, d_model), as the JSON key ``inputs``."""
        return self.spec.inputs

    @property
    def context(self) -> np.ndarray | None:
        """C (m, d_ctx), or None for self-attention."""
        return self.spec.context

    @property
    def positional(self) -> np.ndarray | None:
        """P (n, d_model), or None without ``positional``."""
        return self.spec.positional

    @property
    def concat(self) -> np.ndarray:
        """The heads side by side: (n, h·d_v)."""
        h, n, d_v = self.head_outputs.shape
        return self.head_outputs.transpose(1, 0, 2).reshape(n, h * d_v)
