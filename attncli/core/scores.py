"""Stage: how well each query matches each key, before the softmax.

    dot       S = Q·Kᵀ                              (h, n, m)
    additive  S_ij = vᵀ·tanh(q_i·W₁ + k_j·W₂)       (Bahdanau)
    softcap   z → c·tanh(z / c)                     (Gemma 2, on the scaled scores)

Grouped-query attention shares one key/value head among h / g query heads:
query head i uses key/value head i // (h / g) (:func:`kv_head_of`).

>>> dot_scores(np.ones((1, 2, 3)), np.ones((1, 1, 3))).tolist()
[[[3.0], [3.0]]]
"""

from __future__ import annotations

import numpy as np


def dot_scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """S = Q·Kᵀ: q (h, n, d_k), k (h, m, d_k) -> (h, n, m)."""
    return q @ k.transpose(0, 2, 1)


def additive_scores(q: np.ndarray, k: np.ndarray, w_1: np.ndarray, w_2: np.ndarray, v: np.ndarray) -> np.ndarray:
    """e = vᵀ·tanh(q·W₁ + k·W₂): q (h, n, d_k), k (h, m, d_k), W (h, d_k, d_a), v (h, d_a) -> (h, n, m)."""
    hidden = np.tanh((q @ w_1)[:, :, None, :] + (k @ w_2)[:, None, :, :])  # (h, n, m, d_a)
    return np.einsum("hnma,ha->hnm", hidden, v)


def softcap(z: np.ndarray, c: float) -> np.ndarray:
    """c·tanh(z / c): the scaled scores squashed into (−c, c), same shape.

    >>> softcap(np.array([0.0, 100.0]), 5.0).round(6).tolist()
    [0.0, 5.0]
    """
    return c * np.tanh(z / c)


def kv_head_of(heads: int, kv_heads: int) -> np.ndarray:
    """For each query head, the key/value head it uses: (h,).

    >>> kv_head_of(8, 2).tolist()
    [0, 0, 0, 0, 1, 1, 1, 1]
    """
    return np.arange(heads) // (heads // kv_heads)


def shared(x: np.ndarray, heads: int) -> np.ndarray:
    """Key/value heads (g, m, d) repeated for the query heads that use them: (h, m, d); x itself when g = h."""
    return x if x.shape[0] == heads else np.repeat(x, heads // x.shape[0], axis=0)
