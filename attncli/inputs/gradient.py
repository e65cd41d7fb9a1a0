"""The document key ``gradient`` (Part 3): dL/d(the block's last quantity), the seed of the backward pass.

    gradient: [[…], …]                # a matrix, a file, or {random: normal, seed: 0}

The block's last quantity is ``normalized`` with ``add_norm``, else ``residual`` with ``residual``, else
``output``; the gradient has its shape (n × d_model, or n × d_out).  Only a softmax of dot-product scores has
a backward pass here (FlashAttention's: through the log-sum-exp), so ``score: additive`` and
``normalize: sum | none`` are refused with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncli.core.errors import AttnError, shape_str
from attncli.inputs.source import MatrixSource


def read_gradient(builder: MatrixSource, value: Any, shape: tuple[int, int], last: str,
                  per_head: tuple[int, int, int] | None = None) -> np.ndarray | None:
    """``gradient:`` as an array of ``shape`` (that of ``last``, the block's last quantity), or None; ``per_head``
    (h, n, d_v): the shape of a kernel's dO that is taken too, its heads then concatenated (Q, K, V given)."""
    if value is None:
        return None
    data = builder.data
    if data.get("score", "dot") != "dot":
        raise AttnError("gradient.needs_dot_product_scores_this", "gradient", data=data['score'])
    if data.get("normalize", "softmax") != "softmax":
        raise AttnError("gradient.needs_normalize_softmax_this_document", "gradient", data=data['normalize'])
    gradient = builder.read("gradient", value, shape)
    if per_head is not None and gradient.shape == per_head:
        gradient = gradient.transpose(1, 0, 2).reshape(shape)  # dO per head -> the heads side by side
    if gradient.shape != shape:
        per = "" if per_head is None else f", or {shape_str(per_head)} per head (h × n × d_v, a kernel's dO)"
        raise AttnError("gradient.but_block_s_last_quantity", "gradient", gradient_shape=shape_str(gradient.shape),
                        last=last, shape=shape_str(shape), last_2=last, per=per)
    return np.ascontiguousarray(gradient, dtype=np.float64)
