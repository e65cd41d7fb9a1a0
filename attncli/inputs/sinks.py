"""The document key ``sinks`` (Part 3): one logit per query head, gpt-oss's learned attention sinks.

    sinks: [0.5, -1.2]      # h numbers (a list, a file, or a random initialiser); false or left out: none

Each becomes one more term of its head's softmax denominator (:mod:`attncli.core.sinks`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncli.core.errors import AttnError, shape_str
from attncli.inputs.source import MatrixSource


def read_sinks(builder: MatrixSource, value: Any, h: int) -> np.ndarray | None:
    """``sinks:`` as an (h,) float64 array, or None; one number per query head, with ``normalize: softmax``."""
    if value is None or value is False:
        return None
    normalize = builder.data.get("normalize", "softmax")
    if normalize != "softmax":
        raise AttnError("sinks.adds_term_softmax_s_denominator", "sinks", normalize=normalize)
    sinks = builder.read("sinks", value, (h,))
    sinks = sinks.reshape(-1) if sinks.ndim == 2 and 1 in sinks.shape else sinks
    if sinks.shape != (h,):
        heads = "is one query head" if h == 1 else f"are {h} query heads"  # (phrases: said whole in each language)
        raise AttnError("sinks.wrong_length", "sinks", sinks_shape=shape_str(sinks.shape), heads=heads)
    return np.ascontiguousarray(sinks, dtype=np.float64)
