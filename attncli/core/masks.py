"""Stage: which keys each query may attend to, as an (n, m) boolean matrix (True = may attend).

>>> causal(3).astype(int).tolist()
[[1, 0, 0], [1, 1, 0], [1, 1, 1]]
>>> empty_queries(np.array([[True, False], [False, False]]))
(1,)
"""

from __future__ import annotations

import numpy as np


def causal(n: int) -> np.ndarray:
    """Query i may attend to keys 0 … i: (n, n)."""
    return np.tril(np.ones((n, n), dtype=bool))


def empty_queries(allowed: np.ndarray | None) -> tuple[int, ...]:
    """Indices of the queries that may attend to no key at all."""
    if allowed is None:
        return ()
    return tuple(int(i) for i in np.flatnonzero(~allowed.any(axis=1)))
