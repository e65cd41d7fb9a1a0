"""The document key ``qk_norm`` (Part 3), read and checked against the heads' sizes.

    qk_norm:
      kind: rms                 # required: rms or layer
      scope: head               # head (default): over each head's d_k numbers; projection: over a token's h·d_k
      gamma: {query, key}       # head: d_k (shared) or heads × d_k; projection: h·d_k and g·d_k; default ones
      beta: {query, key}        # kind layer only; the same shapes; default zeros
      eps: 1e-6                 # default 1e-6 (rms), 1e-5 (layer)
      after_rope: false         # true: the rotated queries and keys are normalised instead (Llama 4)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe, shape_str
from attncli.core.norms import NORM_KINDS, QkNorm
from attncli.inputs.source import MatrixSource
from attncli.inputs.values import mapping_of

QK_NORM_KEYS = ("kind", "scope", "gamma", "beta", "eps", "after_rope")
SCOPES = ("head", "projection")
EPS = {"rms": 1e-6, "layer": 1e-5}  # Qwen3's RMSNorm and torch.nn.LayerNorm


def read_qk_norm(builder: MatrixSource, value: Any, heads: int, kv_heads: int, d_k: int) -> QkNorm | None:
    """``qk_norm:`` as a :class:`QkNorm`, or None when left out or ``false``."""
    if value is None or value is False:
        return None
    value = mapping_of(value, "qk_norm", QK_NORM_KEYS,
                       "a mapping with kind (rms or layer) and any of scope, gamma, beta, eps, after_rope")
    kind = value.get("kind")
    if kind is None:
        raise AttnError("modern.required_rms_layer", "qk_norm.kind")
    if kind not in NORM_KINDS:
        raise AttnError("modern.not_one_rms_layer", "qk_norm.kind", kind=describe(kind))
    scope = value.get("scope", "head")
    if scope not in SCOPES:
        raise AttnError("qknorm.not_one_head_over_each", "qk_norm.scope", scope=describe(scope))
    if kind == "rms" and value.get("beta") is not None:
        raise AttnError("modern.only_used_kind_layer_rmsnorm", "qk_norm.beta")
    sizes = _Sizes(scope, heads, kv_heads, d_k)
    gamma = _pair(builder, "qk_norm.gamma", value.get("gamma"), sizes, 1.0)
    beta = _pair(builder, "qk_norm.beta", value.get("beta"), sizes, 0.0) if kind == "layer" else (None, None)
    after_rope = value.get("after_rope", False)
    if not isinstance(after_rope, bool):
        raise AttnError("gemma.not_true_false", "qk_norm.after_rope", flag=describe(after_rope))
    return QkNorm(kind, scope, *gamma, *beta, _eps(value.get("eps", EPS[kind])), after_rope)


def _eps(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AttnError("qknorm.not_number", "qk_norm.eps", value=describe(value))
    eps = float(value)
    if not math.isfinite(eps) or eps <= 0:
        raise AttnError("qknorm.not_positive_finite_number", "qk_norm.eps", value=describe(value))
    return eps


class _Sizes:
    """The shapes γ and β may have for the queries (h heads) and the keys (g key/value heads)."""

    def __init__(self, scope: str, heads: int, kv_heads: int, d_k: int):
        self.scope, self.heads, self.kv_heads, self.d_k = scope, heads, kv_heads, d_k

    def allowed(self, side: str) -> list[tuple[int, ...]]:
        count = self.heads if side == "query" else self.kv_heads
        if self.scope == "projection":
            return [(count * self.d_k,)]
        return [(self.d_k,), (count, self.d_k)]

    def expected(self, side: str) -> str:
        """``d_k = 4 (shared by the heads) or heads × d_k = 2 × 4``, as the error of a wrong γ says it."""
        d_k = self.d_k
        count, name = (self.heads, "heads") if side == "query" else (self.kv_heads, "kv_heads")
        if self.scope == "projection":
            return (f"{name}·d_k = {count}·{d_k} = {count * d_k} (scope projection: one per number of a token's "
                    f"{'queries' if side == 'query' else 'keys'}; a γ per head needs scope: head)")
        if count == 1:
            return f"d_k = {d_k}"
        shared = f"d_k = {d_k} (shared by the {'heads' if side == 'query' else 'key/value heads'})"
        return f"{shared} or {name} × d_k = {count} × {d_k}"

    def meant(self, side: str, shape: tuple[int, ...]) -> str:
        """What a γ (or β) of the wrong ``shape`` was meant to be, told from its shape: the queries' size given for
        the keys, one row per head (a matrix, or a flat vector of whole rows), or the d_k numbers the heads share."""
        count, name = (self.heads, "heads") if side == "query" else (self.kv_heads, "kv_heads")
        d_k, size = self.d_k, int(np.prod(shape))
        if side == "key" and self.kv_heads != self.heads and shape in ((self.heads * d_k,), (self.heads, d_k)):
            return f"that is the queries' size; the keys take {self.expected(side)}"
        if self.scope == "projection" or count == 1 or size % d_k or (len(shape) == 1 and size < 2 * d_k):
            return f"expected {self.expected(side)}"
        per_head = f"{name} × d_k = {count} × {d_k} (a row per {'query' if side == 'query' else 'key/value'} head"
        if len(shape) == 2:
            return f"expected {per_head}; or d_k = {d_k} numbers shared by them)"
        if size == count * d_k:
            return (f"that is {name}·d_k in one row: one γ per head is written {per_head}), and one γ over a token's "
                    "whole projection needs scope: projection")
        return f"that is {size // d_k} × d_k: one γ per head is {per_head}; or d_k = {d_k} shared by them)"


def _pair(builder: MatrixSource, key: str, value: Any, sizes: _Sizes, default: float
          ) -> tuple[np.ndarray, np.ndarray]:
    """γ (or β) of the queries and of the keys, each checked against the shapes its scope allows."""
    if value is None:
        return tuple(np.full(sizes.allowed(side)[0], default) for side in ("query", "key"))
    value = mapping_of(value, key, ("query", "key"), "a mapping with query and key (one vector for each)")
    return tuple(_vector(builder, f"{key}.{side}", value.get(side), sizes, side, default) for side in ("query", "key"))


def _vector(builder: MatrixSource, key: str, value: Any, sizes: _Sizes, side: str, default: float) -> np.ndarray:
    allowed = sizes.allowed(side)
    if value is None:
        return np.full(allowed[0], default)
    v = builder.read(key, value, allowed[0])
    if v.ndim == 2 and 1 in v.shape:  # one row or one column: a vector
        v = v.reshape(-1)
    if v.shape not in allowed:
        given = f"has {v.size} numbers" if v.ndim == 1 else f"is {shape_str(v.shape)}"
        raise AttnError("qknorm.given_and_meant", key, given=given, meant=sizes.meant(side, v.shape))
    return np.ascontiguousarray(v, dtype=np.float64)
