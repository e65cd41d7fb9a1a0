"""The pieces around the attention core, as small pure numpy functions.

    P[pos, 2i] = sin(pos / 10000^(2i/d))     P[pos, 2i+1] = cos(pos / 10000^(2i/d))
    additive score  e_ij = vᵀ·tanh(q_i·W₁ + k_j·W₂)      (Bahdanau)
    sum-normalised  a_ij = e_ij / Σ_j e_ij               (seed 002's first attempt)
    Add & Norm      LayerNorm(X + Y) = γ ⊙ (r − mean(r)) / √(var(r) + ε) + β

>>> sinusoidal(2, 4).round(4).tolist()
[[0.0, 1.0, 0.0, 1.0], [0.8415, 0.5403, 0.01, 1.0]]
"""

from __future__ import annotations

import numpy as np

from attncli.core.errors import AttnError


def sinusoidal(n: int, d: int) -> np.ndarray:
    """The fixed positional encoding of "Attention Is All You Need": (n, d)."""
    position = np.arange(n, dtype=np.float64)[:, None]  # (n, 1)
    pair = np.arange(0, d, 2, dtype=np.float64)  # 2i for i = 0 … ⌈d/2⌉ − 1
    angle = position / np.power(10000.0, pair / d)  # (n, ⌈d/2⌉)
    p = np.empty((n, d))
    p[:, 0::2] = np.sin(angle)
    p[:, 1::2] = np.cos(angle[:, : d // 2])
    return p


def additive_scores(q: np.ndarray, k: np.ndarray, w_1: np.ndarray, w_2: np.ndarray, v: np.ndarray) -> np.ndarray:
    """e = vᵀ·tanh(q·W₁ + k·W₂): q (h, n, d_k), k (h, m, d_k), W (h, d_k, d_a), v (h, d_a) -> (h, n, m)."""
    hidden = np.tanh((q @ w_1)[:, :, None, :] + (k @ w_2)[:, None, :, :])  # (h, n, m, d_a)
    return np.einsum("hnma,ha->hnm", hidden, v)


def sum_normalize(z: np.ndarray, allowed: np.ndarray | None, labels: list[str]) -> np.ndarray:
    """Each row divided by its own sum (masked entries 0 and left out); a zero sum is an error."""
    if allowed is not None:
        z = np.where(allowed, z, 0.0)
    total = z.sum(axis=-1, keepdims=True)  # (h, n, 1)
    empty = np.zeros(z.shape[-2], dtype=bool) if allowed is None else ~allowed.any(axis=-1)
    zero = (total[..., 0] == 0) & ~empty  # (h, n); fully masked rows stay 0
    if zero.any():
        head, row = (int(i) for i in np.argwhere(zero)[0])
        raise AttnError(
            f"normalize: sum: the scores of query {row + 1} ('{labels[row]}') in head {head + 1} sum to 0, "
            "so they cannot be divided by their sum (use normalize: softmax)"
        )
    return np.divide(z, total, out=np.zeros_like(z), where=total != 0)


def layer_norm(r: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over each row (biased variance, as torch.nn.LayerNorm): (n, d) -> (n, d)."""
    mean = r.mean(axis=-1, keepdims=True)
    var = r.var(axis=-1, keepdims=True)
    return gamma * (r - mean) / np.sqrt(var + eps) + beta
