"""The slips inside one stage's arithmetic that are not a stage's declared variant, for ``attncli check``'s hints.

Softmax's own arithmetic (the maximum down the columns, the whole matrix's sum, the scale on the weights or the
output), the scores used as weights, softmax twice, a bias's sign and place, and pre_norm's, post_norm's and
add_norm's norms done wrong are the stages' declared variants (:mod:`attncli.core.variants`), as are qk_norm's and
latent's norms.  Left here: the weights written as the scores (a slip of the answer's writing).
"""

from __future__ import annotations

import numpy as np

from attncli.core.trace import Trace
from attncli.teach.check.slips import Slip, arrays_of


def arithmetic_slips(trace: Trace) -> list[Slip]:
    """The slips of this kind not declared as a stage's variant: the weights written as the scores."""
    found: list[Slip] = []
    add = lambda name, make, **words: found.append(Slip(name, make, words))  # noqa: E731
    if trace.spec.normalize == "softmax":
        add("weights_as_scores", lambda rounding: dict(arrays_of(trace), scores=trace.weights,
                                                       scaled_scores=trace.weights))
    return found


def masked_softmax(z: np.ndarray, allowed, shift: np.ndarray, total_axes: tuple[int, ...] = (-1,)) -> np.ndarray:
    """e^(z − shift) over the allowed cells, divided by their sum over ``total_axes``: (h, n, m) -> (h, n, m)."""
    ok = np.ones(z.shape, dtype=bool) if allowed is None else np.broadcast_to(allowed, z.shape)
    e = np.where(ok, np.exp(np.where(ok, z - shift, 0.0)), 0.0)
    return e / e.sum(axis=total_axes, keepdims=True)
