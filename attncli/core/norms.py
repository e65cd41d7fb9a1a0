"""Stage: normalisation around attention, per row.

    LayerNorm(x) = γ ⊙ (x − mean(x)) / √(var(x) + ε) + β      (biased variance, as torch.nn.LayerNorm)
    RMSNorm(x)   = γ ⊙ x / √(mean(x²) + ε)                     (Llama, T5, Mistral)
    Add & Norm   R = X + Y, then LayerNorm(R)

>>> layer_norm(np.array([[1.0, 3.0]]), np.ones(2), np.zeros(2), 0.0).tolist()
[[-1.0, 1.0]]
>>> rms_norm(np.array([[3.0, 4.0]]), np.ones(2), 0.0).round(6).tolist()
[[0.848528, 1.131371]]
"""

from __future__ import annotations

import numpy as np

from attncli.core.record import record

NORM_KINDS = ("rms", "layer")


@record(eq=False)  # holds arrays: == and hash() by identity
class Norm:
    """A normalisation of each row: ``kind`` rms or layer, γ and β (d,), ε."""

    kind: str
    gamma: np.ndarray
    beta: np.ndarray | None
    eps: float


def layer_norm(r: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over each row (biased variance, as torch.nn.LayerNorm): (n, d) -> (n, d)."""
    mean = r.mean(axis=-1, keepdims=True)
    var = r.var(axis=-1, keepdims=True)
    return gamma * (r - mean) / np.sqrt(var + eps) + beta


def rms_norm(x: np.ndarray, gamma: np.ndarray, eps: float) -> np.ndarray:
    """RMSNorm over each row, in float64: (n, d) -> (n, d)."""
    return gamma * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def normalize_rows(x: np.ndarray, norm: Norm) -> np.ndarray:
    """``norm`` applied to each row of x (n, d)."""
    if norm.kind == "rms":
        return rms_norm(x, norm.gamma, norm.eps)
    beta = norm.beta if norm.beta is not None else np.zeros_like(norm.gamma)
    return layer_norm(x, norm.gamma, beta, norm.eps)


def add_norm(x: np.ndarray, y: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
             eps: float) -> tuple[np.ndarray, np.ndarray]:
    """The residual R = X + Y (n, d_model) and LayerNorm(R) (n, d_model)."""
    residual = x + y
    return residual, layer_norm(residual, gamma, beta, eps)


@record(eq=False)  # holds arrays: == and hash() by identity
class QkNorm:
    """``qk_norm``: the queries and keys normalised (Qwen3, Gemma 3, OLMo 2, Llama 4 …); see :mod:`attncli.core.qknorm`.

    γ and β as the document gave them: scope head, (d_k,) shared by the heads or (heads, d_k) one per head;
    scope projection, (h·d_k,) for the queries and (g·d_k,) for the keys.
    """

    kind: str  # rms or layer
    scope: str  # head: over each head's d_k numbers; projection: over a token's h·d_k (g·d_k) numbers
    gamma_query: np.ndarray
    gamma_key: np.ndarray
    beta_query: np.ndarray | None  # kind layer only
    beta_key: np.ndarray | None
    eps: float
    after_rope: bool = False  # True: the rotated Q′, K′ are normalised instead (Llama 4)
