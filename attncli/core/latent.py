"""Multi-head latent attention (DeepSeek V2/V3, Kimi K2): keys and values expanded from one small latent per token.

    c_Q = query_norm(X̂·W_DQ + b_DQ)                  (n, r_q)        without W_DQ: Q = X̂·W_Q
    Q_h = c_Q·W_UQ,h = [q_nope_h | q_r_h]              (h, n, d_nope + d_r)
    [c_raw | k_r] = C·W_DKV + b_DKV                    (m, r_kv + d_r)  C the context, or X̂
    c_KV = kv_norm(c_raw)                              (m, r_kv)
    [k_nope_h | v_h] = c_KV·W_UKV,h                    (h, m, d_nope + d_v)
    K_h = [k_nope_h | k_r]                             k_r: one rotary key shared by every head

A cache holds c_KV and the rotated k_r, r_kv + d_r numbers per token; inference engines fold W_UK,h (the key
columns of W_UKV for head h) into the query: S_h = [q_nope_h·W_UK,hᵀ | q_r′_h]·[c_KV | k_r′]ᵀ (:func:`absorbed`).
The stages on a Spec are in :mod:`attncli.core.latent_stage`.

>>> x = np.array([[1.0, 2.0]])
>>> c, k_r = latent_kv(x, np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]]), None, Norm("rms", np.ones(2), None, 0.0), 1)
>>> c.round(4).tolist(), k_r.tolist()
([[0.6325, 1.2649]], [[2.0]])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncli.core.norms import Norm, normalize_rows


@dataclass(frozen=True)
class Latent:
    """The document's ``latent`` with its down and up projections, as given (d_in × d_out, not per head)."""

    kv_down: np.ndarray  # W_DKV (d_ctx, r_kv + d_r): the latent, then the shared rotary key
    kv_up: np.ndarray  # W_UKV (r_kv, h·(d_nope + d_v)): per head, d_nope key columns, then d_v value columns
    kv_norm: Norm | None  # over the r_kv latent numbers (None only in check's slip: kv_norm forgotten)
    d_nope: int  # the unrotated part of each head's query and key
    d_rope: int  # d_r, rope.dims: the rotated part, last in each head
    kv_down_bias: np.ndarray | None = None  # b_DKV (r_kv + d_r,)
    query_down: np.ndarray | None = None  # W_DQ (d_model, r_q); None: weights.query (d_model × h·d_k)
    query_up: np.ndarray | None = None  # W_UQ (r_q, h·d_k)
    query_down_bias: np.ndarray | None = None  # b_DQ (r_q,)
    query_norm: Norm | None = None  # over the r_q numbers, with query_down

    @property
    def r_kv(self) -> int:
        return self.kv_down.shape[1] - self.d_rope

    @property
    def r_q(self) -> int | None:
        return None if self.query_down is None else self.query_down.shape[1]


def per_head(w: np.ndarray, heads: int, lo: int, hi: int) -> np.ndarray:
    """Columns lo … hi − 1 of each head's block of w (d_in, h·d) -> (h, d_in, hi − lo), a view."""
    d_in, width = w.shape
    return w.reshape(d_in, heads, width // heads)[:, :, lo:hi].transpose(1, 0, 2)


def latent_queries(x: np.ndarray, latent: Latent) -> np.ndarray | None:
    """c_Q = query_norm(X̂·W_DQ + b_DQ): x (n, d_model) -> (n, r_q); None without query_down."""
    if latent.query_down is None:
        return None
    c = x @ latent.query_down  # (n, r_q)
    if latent.query_down_bias is not None:
        c += latent.query_down_bias
    return normalize_rows(c, latent.query_norm)


def latent_kv(source: np.ndarray, kv_down: np.ndarray, bias: np.ndarray | None, kv_norm: Norm | None,
              d_rope: int) -> tuple[np.ndarray, np.ndarray]:
    """c_KV = kv_norm(c_raw) (m, r_kv) and k_r (m, d_r) from [c_raw | k_r] = C·W_DKV + b_DKV; no norm: c_raw."""
    both = source @ kv_down  # (m, r_kv + d_r)
    if bias is not None:
        both += bias
    r_kv = both.shape[1] - d_rope
    c_raw, k_r = both[:, :r_kv], both[:, r_kv:]
    return (c_raw if kv_norm is None else normalize_rows(c_raw, kv_norm)), k_r


def keys_of(k_nope: np.ndarray, k_r: np.ndarray) -> np.ndarray:
    """K_h = [k_nope_h | k_r]: k_nope (h, m, d_nope), k_r (m, d_r) shared by the heads -> (h, m, d_nope + d_r)."""
    h, m, d_nope = k_nope.shape
    k = np.empty((h, m, d_nope + k_r.shape[1]))
    k[:, :, :d_nope] = k_nope
    k[:, :, d_nope:] = k_r  # the same rotary key in every head
    return k


def absorbed(q: np.ndarray, w_uk: np.ndarray, d_nope: int) -> np.ndarray:
    """[q_nope_h·W_UK,hᵀ | q_r_h]: q (h, n, d_nope + d_r), w_uk (h, r_kv, d_nope) -> (h, n, r_kv + d_r).

    Its product with [c_KV | k_r′] (m, r_kv + d_r) is Q′_h·K′_hᵀ: the nope parts meet through W_UK,h.
    """
    h, n, d_k = q.shape
    r_kv = w_uk.shape[1]
    out = np.empty((h, n, r_kv + d_k - d_nope))
    np.matmul(q[:, :, :d_nope], w_uk.transpose(0, 2, 1), out=out[:, :, :r_kv])  # (h, n, r_kv)
    out[:, :, r_kv:] = q[:, :, d_nope:]  # the rotated part as it is
    return out
