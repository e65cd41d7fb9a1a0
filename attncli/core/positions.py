"""Stage: where each token is, added to (or, later, rotated into) what the projections see.

    P[pos, 2i] = sin(pos / 10000^(2i/d))     P[pos, 2i+1] = cos(pos / 10000^(2i/d))

>>> sinusoidal(2, 4).round(4).tolist()
[[0.0, 1.0, 0.0, 1.0], [0.8415, 0.5403, 0.01, 1.0]]
"""

from __future__ import annotations

import numpy as np


def sinusoidal(n: int, d: int) -> np.ndarray:
    """The fixed positional encoding of "Attention Is All You Need": (n, d)."""
    position = np.arange(n, dtype=np.float64)[:, None]  # (n, 1)
    pair = np.arange(0, d, 2, dtype=np.float64)  # 2i for i = 0 … ⌈d/2⌉ − 1
    angle = position / np.power(10000.0, pair / d)  # (n, ⌈d/2⌉)
    p = np.empty((n, d))
    p[:, 0::2] = np.sin(angle)
    p[:, 1::2] = np.cos(angle[:, : d // 2])
    return p
