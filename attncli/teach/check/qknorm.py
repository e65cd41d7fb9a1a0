"""The slips of ``qk_norm``, for ``attncli check``'s hints (each the computation again with one change).

- the norm forgotten: Q and K used as projected;
- the norm applied after the rotation where the document applies it before (or the reverse, with after_rope);
- the queries normalised with the keys' γ (where the keys' γ has a shape the queries can take).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from attncli.core.formulas import norm_text
from attncli.core.norms import QkNorm
from attncli.core.trace import Trace
from attncli.teach.check.slips import by_spec


def qk_norm_slips(trace: Trace, add) -> None:
    """Add the slips of the document's ``qk_norm`` (none without it)."""
    spec = trace.spec
    norm = spec.qk_norm
    if norm is None:
        return
    add("qk_norm_left_out", by_spec(trace, qk_norm=None), norm=norm_text(norm.kind))
    if spec.rope is not None:
        moved = dataclasses.replace(norm, after_rope=not norm.after_rope)
        add("qk_norm_before_rope" if norm.after_rope else "qk_norm_after_rope", by_spec(trace, qk_norm=moved))
    gamma = _keys_gamma_for_queries(norm, spec.heads, spec.kv_heads)
    if gamma is not None:
        add("qk_norm_key_gamma", by_spec(trace, qk_norm=dataclasses.replace(norm, gamma_query=gamma)))


def _keys_gamma_for_queries(norm: QkNorm, heads: int, kv_heads: int) -> np.ndarray | None:
    """The keys' γ as the queries would take it (shared, or one row per head when h = g); None when it cannot be
    or changes nothing."""
    gamma = norm.gamma_key
    if heads != kv_heads and not (norm.scope == "head" and gamma.ndim == 1):
        return None  # g rows of γ (or g·d_k numbers) for h query heads
    if gamma.shape == norm.gamma_query.shape and np.array_equal(gamma, norm.gamma_query):
        return None
    return gamma


def regrouped(norm: QkNorm | None, turn: np.ndarray, kv_heads: int, d_k: int) -> QkNorm | None:
    """``norm`` whose keys' γ and β follow the key heads reordered by ``turn`` (one row per query head)."""
    if norm is None:
        return None

    def rows(v: np.ndarray | None) -> np.ndarray | None:
        if v is None or (norm.scope == "head" and v.ndim == 1):
            return v  # shared by the heads
        per_head = v.reshape(kv_heads, d_k)[turn]  # (h, d_k)
        return per_head.reshape(-1) if v.ndim == 1 else per_head
    return dataclasses.replace(norm, gamma_key=rows(norm.gamma_key), beta_key=rows(norm.beta_key))
