"""Stage: DeepSeek-V3.2's lightning indexer (DeepSeek Sparse Attention), which keeps top_k keys for each query.

    q_s,h = rope(x_q,s·W_IQ,h)          (H, n, d)   x_q = c_Q with latent's query_down, else X̂
    k_t   = rope(key_norm(C_t·W_IK))    (m, d)      one key for every indexer head
    w_s,h = X̂_s·W_IW,h                  (n, H)
    I_s,t = Σ_h w_s,h·H^(−1/2)·ReLU(d^(−1/2)·q_s,h·k_t)      (n, m), −inf where the document's mask says no
    kept(s) = the top_k keys of row s: the larger I first, equal values the lower key index first

The selection is a mask: the builder folds it into ``Spec.mask`` (:func:`selection`), so that every path (full,
streamed, backward, check's reruns) attends to the kept keys only and the backward pass treats them as a fixed
mask, as the model does (no_grad, top-k).  The stage writes the table, the selection and, after the weights, how
much weight the dropped keys would have had under full attention (``index_dropped_weight``).

>>> I = np.array([[1.0, -np.inf, -np.inf], [0.0, 2.0, 0.0]])
>>> selected, kept, ties = select(I, 2)
>>> selected.tolist(), kept.astype(int).tolist(), ties.tolist()
([[0, -1], [1, 0]], [[1, 0, 0], [1, 1, 0]], [0, 1])
"""

from __future__ import annotations

import numpy as np

from attncli.core.masks import Mask
from attncli.core.norms import Norm, normalize_rows
from attncli.core.positions import Rope, rotate
from attncli.core.record import record


@record
class Indexer:
    """``indexer``: the lightning indexer's weights and the keys each query keeps (fixed when the Spec is built)."""

    top_k: int
    heads: int  # H
    w_q: np.ndarray  # (d_q, H·d): W_IQ (wq_b) from c_Q, or from X̂
    w_k: np.ndarray  # (d_ctx, d): W_IK (wk)
    w_w: np.ndarray | None  # (d_model, H): W_IW (weights_proj); None: every head weighs 1
    key_norm: Norm | None  # over the key's d numbers (k_norm, a LayerNorm); None: not normalised
    rope: Rope | None  # half style, on the first dims numbers; None: no rotation
    from_latent: bool  # the queries read c_Q (latent with query_down), not X̂
    base: Mask | None = None  # the document's own mask, before the selection (the full attention's)
    kept: np.ndarray | None = None  # (n, m) bool: the selection, once the builder has made it

    @property
    def d(self) -> int:
        return self.w_k.shape[1]


def index_queries(x_q: np.ndarray, w_q: np.ndarray, heads: int, rope: Rope | None,
                  positions: np.ndarray) -> np.ndarray:
    """q = rope(x_q·W_IQ) per indexer head: (n, d_q) -> (H, n, d)."""
    n = x_q.shape[0]
    q = (x_q @ w_q).reshape(n, heads, -1).transpose(1, 0, 2)  # (H, n, d)
    return q if rope is None else rotate(q, positions, rope)


def index_keys(c: np.ndarray, w_k: np.ndarray, norm: Norm | None, rope: Rope | None,
               positions: np.ndarray) -> np.ndarray:
    """k = rope(key_norm(C·W_IK)), one key per token shared by every head: (m, d_ctx) -> (m, d)."""
    k = c @ w_k  # (m, d)
    k = k if norm is None else normalize_rows(k, norm)
    return k if rope is None else rotate(k[None], positions, rope)[0]


def head_weights(x: np.ndarray, w_w: np.ndarray | None, heads: int) -> np.ndarray:
    """w = X̂·W_IW: (n, d_model) -> (n, H); ones without W_IW."""
    return np.ones((x.shape[0], heads)) if w_w is None else x @ w_w


def index_scores(q: np.ndarray, k: np.ndarray, w: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
    """I = Σ_h w_h·H^(−1/2)·ReLU(d^(−1/2)·q_h·kᵀ): (H, n, d), (m, d), (n, H) -> (n, m); −inf where not ``allowed``.

    One head at a time, so that no H × n × m array is made (DeepSeek-V3.2 has H = 64).
    """
    heads, d = q.shape[0], q.shape[2]
    table = np.zeros((q.shape[1], k.shape[0]))  # (n, m)
    for h in range(heads):
        relu = np.maximum(q[h] @ k.T * d**-0.5, 0.0)  # (n, m)
        table += w[:, h : h + 1] * relu
    table *= heads**-0.5
    if allowed is not None:
        table[~allowed] = -np.inf
    return table


def select(table: np.ndarray, top_k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The top_k keys of each row of I (−inf: not allowed): larger first, equal values the lower index first.

    Returns the kept indices (n, min(top_k, m)) best first, −1 past a row's allowed keys; the kept cells (n, m)
    bool; and for each row how many allowed keys outside the selection tie the last kept one (n,).
    """
    n, m = table.shape
    k = min(top_k, m)
    order = np.argsort(-table, axis=1, kind="stable")[:, :k + 1]  # stable: equal values keep the index order
    ranked = np.take_along_axis(table, order, axis=1)  # (n, k + 1) or (n, k)
    allowed = np.isfinite(table).sum(axis=1)  # (n,) keys each query may see
    selected = order[:, :k].copy()
    selected[np.arange(k)[None, :] >= allowed[:, None]] = -1
    kept = np.zeros((n, m), dtype=bool)
    rows = np.repeat(np.arange(n), k)
    flat = selected.reshape(-1)
    kept[rows[flat >= 0], flat[flat >= 0]] = True
    ties = np.zeros(n, dtype=np.int64)
    for s in np.flatnonzero(allowed > k):  # a row that dropped some allowed key: does the cut split equal values?
        last = ranked[s, k - 1]
        dropped = table[s][~kept[s] & np.isfinite(table[s])]
        ties[s] = int(np.count_nonzero(dropped == last))
    return selected, kept, ties


def dropped_weight(z: np.ndarray, base: np.ndarray | None, kept: np.ndarray, sinks: np.ndarray | None) -> np.ndarray:
    """Σ over the keys the document allows and the indexer dropped of the full attention's weights: (h, b, m) -> (h, b).

    The full attention is the softmax of Z over the document's allowed keys ``base`` ((b, m), (h, b, m) or None:
    all), with the sink's term e^(s_h) in the denominator when ``sinks``; ``kept`` (b, m) the indexer's keys.
    """
    allowed = np.ones(z.shape, dtype=bool) if base is None else np.broadcast_to(base, z.shape)
    masked = np.where(allowed, z, -np.inf)
    top = masked.max(axis=-1, keepdims=True)  # (h, b, 1)
    if sinks is not None:
        top = np.maximum(top, sinks[:, None, None])
    top = np.where(np.isfinite(top), top, 0.0)  # a row with no key (and no sink): nothing to weigh
    e = np.exp(masked - top)  # 0 where not allowed
    total = e.sum(axis=-1)
    if sinks is not None:
        total = total + np.exp(sinks[:, None] - top[..., 0])
    dropped = np.where(kept[None] if kept.ndim == 2 else kept, 0.0, e).sum(axis=-1)
    return np.divide(dropped, total, out=np.zeros_like(total), where=total > 0)


def selection_mask(base: Mask | None, kept: np.ndarray, n: int, m: int) -> Mask:
    """The document's mask with the indexer's selection as one more part (a key must be kept, and allowed)."""
    if base is None:
        return Mask(n, m, matrix=kept)
    matrix = kept if base.matrix is None else base.matrix & kept  # (n, m), or (h, n, m) per head
    return Mask(base.n, base.m, base.causal, base.window, base.keys, matrix, base.chunk)
