"""Multi-head latent attention (DeepSeek V2/V3, Kimi K2): keys and values expanded from one small latent per token.

    c_Q = query_norm(X̂·W_DQ + b_DQ)                  (n, r_q)        without W_DQ: Q = X̂·W_Q
    Q_h = c_Q·W_UQ,h = [q_nope_h | q_r_h]              (h, n, d_nope + d_r)
    [c_raw | k_r] = C·W_DKV + b_DKV                    (m, r_kv + d_r)  C the context, or X̂
    c_KV = kv_norm(c_raw)                              (m, r_kv)
    [k_nope_h | v_h] = c_KV·W_UKV,h                    (h, m, d_nope + d_v)
    K_h = [k_nope_h | k_r]                             k_r: one rotary key shared by every head

The backward pass (:func:`latent_queries_back`, :func:`kv_up_back`, :func:`latent_kv_back`) runs these in reverse:
dc_KV = dK_nope·W_UKᵀ + dV·W_UVᵀ, d[c_raw | k_r] = [kv_norm's backward of dc_KV | Σ_h dk_r,h], then as a projection.

A cache holds c_KV and the rotated k_r, r_kv + d_r numbers per token; inference engines fold W_UK,h (the key
columns of W_UKV for head h) into the query: S_h = [q_nope_h·W_UK,hᵀ | q_r′_h]·[c_KV | k_r′]ᵀ (:func:`absorbed`).
The stages on a Spec are in :mod:`attncli.core.latent_stage`.

>>> x = np.array([[1.0, 2.0]])
>>> c, k_r = latent_kv(x, np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]]), None, Norm("rms", np.ones(2), None, 0.0), 1)
>>> c.round(4).tolist(), k_r.tolist()
([[0.6325, 1.2649]], [[2.0]])
"""

from __future__ import annotations

import numpy as np

from attncli.core.backward import norm_back
from attncli.core.norms import Norm, normalize_rows
from attncli.core.record import record


@record(eq=False)  # holds arrays: == and hash() by identity
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


# ---------------------------------------------------------------- the backward pass


def _down_back(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, norm: Norm | None, width: int,
               d_c: np.ndarray, d_rest: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """``norm(first width columns of x·W + b)`` (and the rest as they are) backwards: x (n, d_in), d_c (n, width),
    d_rest (n, d_out − width) -> (dx (n, d_in), dW (d_in, d_out), db (d_out,), dγ (width,) or None)."""
    raw = x @ w  # (n, d_out): the forward again (its arrays are let go when it ends)
    if bias is not None:
        raw += bias
    d_raw = np.empty_like(raw)
    d_gamma = None
    if norm is None:
        d_raw[:, :width] = d_c
    else:
        d_raw[:, :width], cells = norm_back(raw[:, :width], d_c, norm.gamma, norm.kind, norm.eps)  # (n, width)
        d_gamma = cells.sum(axis=0)
    if d_rest is not None:
        d_raw[:, width:] = d_rest
    return d_raw @ w.T, x.T @ d_raw, d_raw.sum(axis=0), d_gamma


def latent_queries_back(x: np.ndarray, latent: Latent, d_c: np.ndarray) -> tuple[np.ndarray, ...]:
    """c_Q = query_norm(X̂·W_DQ + b_DQ) backwards: x (n, d_model), dc_Q (n, r_q) ->
    (dX̂ (n, d_model), dW_DQ (d_model, r_q), db_DQ (r_q,), dγ (r_q,))."""
    return _down_back(x, latent.query_down, latent.query_down_bias, latent.query_norm, latent.r_q, d_c)


def latent_kv_back(source: np.ndarray, latent: Latent, d_c: np.ndarray, d_k_r: np.ndarray) -> tuple[np.ndarray, ...]:
    """[c_raw | k_r] = C·W_DKV + b_DKV, c_KV = kv_norm(c_raw) backwards: source (m, d_ctx), dc_KV (m, r_kv), dk_r
    (m, d_r) -> (dC (m, d_ctx), dW_DKV (d_ctx, r_kv + d_r), db_DKV (r_kv + d_r,), dγ (r_kv,) or None)."""
    return _down_back(source, latent.kv_down, latent.kv_down_bias, latent.kv_norm, latent.r_kv, d_c, d_k_r)


def kv_up_back(c_kv: np.ndarray, kv_up: np.ndarray, heads: int, d_nope: int, d_k_nope: np.ndarray | None,
               d_v: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """[k_nope_h | v_h] = c_KV·W_UKV,h backwards: c_kv (m, r_kv), kv_up (r_kv, h·(d_nope + d_v)), dK_nope
    (h, m, d_nope) and dV (h, m, d_v) (None: no gradient) -> (dc_KV (m, r_kv), dW_UKV laid out as kv_up)."""
    m, width = c_kv.shape[0], kv_up.shape[1]
    d_kv = np.zeros((m, heads, width // heads))  # per token and head [dk_nope | dv], as W_UKV's columns lie
    if d_k_nope is not None:
        d_kv[:, :, :d_nope] = d_k_nope.transpose(1, 0, 2)
    if d_v is not None:
        d_kv[:, :, d_nope:] = d_v.transpose(1, 0, 2)
    d_kv = d_kv.reshape(m, width)  # (m, h·(d_nope + d_v))
    return d_kv @ kv_up.T, c_kv.T @ d_kv
