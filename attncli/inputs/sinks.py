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
        raise AttnError(f"adds a term to the softmax's denominator, but this document has normalize: {normalize} "
                        "(sinks need normalize: softmax)", "sinks")
    sinks = builder.read("sinks", value, (h,))
    sinks = sinks.reshape(-1) if sinks.ndim == 2 and 1 in sinks.shape else sinks
    if sinks.shape != (h,):
        per = "one" if h == 1 else f"{h} query heads"
        raise AttnError(f"is {shape_str(sinks.shape)} but there {'is ' if h == 1 else 'are '}{per}"
                        f"{' query head' if h == 1 else ''}: one sink logit each", "sinks")
    return np.ascontiguousarray(sinks, dtype=np.float64)
