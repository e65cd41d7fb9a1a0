"""The backward pass's overflow check: a gradient that is not finite is an error naming it and where, as the forward's
overflow is (:func:`attncli.core.attention.overflow_error`), never Infinity or NaN in a table, a file or the JSON.

:func:`attncli.core.pipeline.backward` checks each gradient as a step makes it, on every path (the full one, the
streamed one, ``--only``), so the first non-finite quantity in the backward order is the one named.
"""

from __future__ import annotations

import numpy as np

from attncli.core.errors import AttnError
from attncli.core.gradient_keys import gradient_key


def check_gradient(name: str, value: np.ndarray) -> None:
    """Raise if ``value`` (the gradient of ``name``, as the backward steps name it) holds inf or NaN: the error
    names its JSON key and its first such cell (1-based, as tables number them)."""
    if np.isfinite(value).all():
        return
    index = [int(i) + 1 for i in np.argwhere(~np.isfinite(value))[0]]
    where = {2: "row {}, column {}", 3: "head {}, row {}, column {}"}.get(len(index), "entry {}")
    if len(index) not in (2, 3):
        index = [int(np.flatnonzero(~np.isfinite(value))[0]) + 1]
    raise AttnError("gradient_overflow.gradient_overflows_float64_backward_pass", gradient_key=gradient_key(name),
                    value=where.format(*index))
