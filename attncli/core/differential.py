"""Differential attention's maths (DiffLlama; Ye et al., "Differential Transformer", 2024): heads in pairs.

    pair p = 0 … h/2 − 1: head p gives the first softmax A₁, head p + h/2 the second A₂ (transformers' layout)
    λ_p  = e^(λ_q1·λ_k1) − e^(λ_q2·λ_k2) + λ_init             (p,)            one number per pair
    W_p  = A_p − λ_p·A_(p+h/2)                                 (p, n, m)       the combined weights
    V′_p = [V_kv(p) | V_kv(p+h/2)]                             (p, m, 2·d_v)   the pair's two values side by side
    O_p  = W_p·V′_p                                            (p, n, 2·d_v)
    Ô_p  = (1 − λ_init)·O_p / √(mean(O_p²) + ε)                (p, n, 2·d_v)   RMSNorm without γ, over 2·d_v
    H    = Ô, pair p's 2·d_v numbers as heads 2p and 2p + 1    (h, n, d_v)     what the output projection joins

λ_init = 0.8 − 0.6·e^(−0.3·layer), ``layer`` counted from 0 (transformers' ``lambda_init_fn(layer_idx)``).
The stage and its backward step are :mod:`attncli.core.differential_stage`'s.

>>> round(lambda_init_of(0), 12), round(lambda_init_of(2), 6)
(0.2, 0.470713)
>>> d = Differential(None, None, None, None, lambda_init=0.2)
>>> d.lambdas(3).tolist()
[0.2, 0.2, 0.2]
"""

from __future__ import annotations

import math

import numpy as np

from attncli.core.record import record

EPS = 1e-5  # DiffLlamaConfig's rms_norm_eps, which its groupnorm (nn.RMSNorm without γ) uses


def lambda_init_of(layer: int) -> float:
    """λ_init = 0.8 − 0.6·e^(−0.3·layer), layer counted from 0 (transformers' lambda_init_fn)."""
    return 0.8 - 0.6 * math.exp(-0.3 * layer)


@record
class Differential:
    """The ``differential`` key: the four λ vectors (each (d,) shared by the pairs, or (p, d) one per pair; None when
    the document gives none: then λ = λ_init)."""

    lambda_q1: np.ndarray | None
    lambda_k1: np.ndarray | None
    lambda_q2: np.ndarray | None
    lambda_k2: np.ndarray | None
    lambda_init: float
    eps: float = EPS
    layer: int | None = None  # the layer λ_init came from, when the document gave ``layer``

    def exponentials(self, pairs: int) -> tuple[np.ndarray, np.ndarray]:
        """(e^(λ_q1·λ_k1), e^(λ_q2·λ_k2)), each (p,)."""
        if self.lambda_q1 is None:
            return np.ones(pairs), np.ones(pairs)
        e1 = np.exp(np.sum(self.lambda_q1 * self.lambda_k1, axis=-1))
        e2 = np.exp(np.sum(self.lambda_q2 * self.lambda_k2, axis=-1))
        return np.broadcast_to(e1, (pairs,)).copy(), np.broadcast_to(e2, (pairs,)).copy()

    def lambdas(self, pairs: int) -> np.ndarray:
        """λ_p = e^(λ_q1·λ_k1) − e^(λ_q2·λ_k2) + λ_init (p,)."""
        e1, e2 = self.exponentials(pairs)
        return e1 - e2 + self.lambda_init


def pair_values(v: np.ndarray, heads: int) -> np.ndarray:
    """V′ (p, m, 2·d_v) from V (g, m, d_v): pair p's values [V_kv(p) | V_kv(p+h/2)], kv(i) = i // (h / g)."""
    g = v.shape[0]
    v_h = v if g == heads else np.repeat(v, heads // g, axis=0)  # (h, m, d_v), as repeat_kv
    p = heads // 2
    return np.concatenate((v_h[:p], v_h[p:]), axis=-1)


def combined(a: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """W = A₁ − λ·A₂ (p, n, m) from the weights a (h, n, m), pair p = heads p and p + h/2."""
    p = a.shape[0] // 2
    return a[:p] - lam[:, None, None] * a[p:]


def normalized(o: np.ndarray, lambda_init: float, eps: float) -> np.ndarray:
    """Ô = (1 − λ_init)·O / √(mean(O²) + ε) over each row's 2·d_v numbers (p, n, 2·d_v)."""
    return (1.0 - lambda_init) * o / np.sqrt(np.mean(o * o, axis=-1, keepdims=True) + eps)


def as_heads(o: np.ndarray) -> np.ndarray:
    """(p, n, 2·d_v) -> (h, n, d_v): pair p's numbers as heads 2p and 2p + 1 (the same concatenated rows)."""
    p, n, width = o.shape
    return o.transpose(1, 0, 2).reshape(n, 2 * p, width // 2).transpose(1, 0, 2)


def as_pairs(h: np.ndarray) -> np.ndarray:
    """The inverse of :func:`as_heads`: (h, n, d_v) -> (p, n, 2·d_v)."""
    heads, n, d_v = h.shape
    return h.transpose(1, 0, 2).reshape(n, heads // 2, 2 * d_v).transpose(1, 0, 2)


def forward(a: np.ndarray, v: np.ndarray, d: Differential) -> dict[str, np.ndarray]:
    """The stage's arrays from the weights a (h, n, m) and the values v (g, m, d_v)."""
    lam = d.lambdas(a.shape[0] // 2)  # (p,)
    w = combined(a, lam)  # (p, n, m)
    o = w @ pair_values(v, a.shape[0])  # (p, n, 2·d_v)
    o_hat = normalized(o, d.lambda_init, d.eps)
    return {"differential_lambda": lam, "differential_weights": w, "differential_head_outputs": o,
            "normalized_head_outputs": o_hat, "head_outputs": as_heads(o_hat)}
