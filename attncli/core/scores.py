"""Stage: how well each query matches each key, before the softmax.

    dot       S = Q·Kᵀ                              (h, n, m)
    additive  S_ij = vᵀ·tanh(q_i·W₁ + k_j·W₂)       (Bahdanau)

Later score variants (soft-capping, score biases) belong here too.

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
