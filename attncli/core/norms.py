"""Stage: normalisation around attention.

    Add & Norm   R = X + Y,  LayerNorm(R) = γ ⊙ (R − mean(R)) / √(var(R) + ε) + β   (per row)

>>> layer_norm(np.array([[1.0, 3.0]]), np.ones(2), np.zeros(2), 0.0).tolist()
[[-1.0, 1.0]]
"""

from __future__ import annotations

import numpy as np


def layer_norm(r: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over each row (biased variance, as torch.nn.LayerNorm): (n, d) -> (n, d)."""
    mean = r.mean(axis=-1, keepdims=True)
    var = r.var(axis=-1, keepdims=True)
    return gamma * (r - mean) / np.sqrt(var + eps) + beta


def add_norm(x: np.ndarray, y: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """The residual R = X + Y (n, d_model) and LayerNorm(R) (n, d_model)."""
    residual = x + y
    return residual, layer_norm(residual, gamma, beta, eps)
