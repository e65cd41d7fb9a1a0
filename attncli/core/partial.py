"""The memory of computing only the stages before the scores (``--only inputs``, ``--only queries`` …).

:func:`attncli.core.pipeline.attend_until` runs just the stages the keys need; at n = 8192 the whole
attention takes seconds, these stages a fraction of that.
"""

from __future__ import annotations

from attncli.core.pipeline import needed
from attncli.core.spec import Spec


def partial_bytes(spec: Spec, keys: list[str]) -> int:
    """Memory the arrays :func:`attend_until` makes for ``keys`` take, with their temporaries (bytes)."""
    n, m, h, g = spec.n, spec.m, spec.heads, spec.kv_heads
    numbers = 0
    for stage in needed(keys):
        if stage.name == "pre_norm" and stage.present(spec):
            numbers += 2 * n * spec.inputs.shape[1]  # X̂ and a row's worth of temporaries per row
        elif stage.name == "projections":
            numbers += 2 * (h * n * spec.d_k + g * m * (spec.d_k + spec.d_v))  # Q, K, V and each product's copy
        elif stage.name == "rope" and stage.present(spec):
            numbers += 2 * (h * n + g * m) * spec.d_k  # Q′, K′ and the cos/sin they are turned with
    return 8 * numbers
