"""Only the stages before the scores, for results that need no attention (``--only inputs``, ``--only queries`` …).

The inputs, the positional encoding and the context are the document's; the normalised inputs need
the pre-norm; queries, keys and values the projections; the rotated ones the rotation. None of them
needs the scores, so for these keys attncli stops there: at n = 8192 the whole attention takes seconds,
these stages a fraction of that. The Trace holds None for everything after them.
"""

from __future__ import annotations

from attncli.core.attention import pre_norm, projections, rotations
from attncli.core.spec import Spec
from attncli.core.trace import Trace

# the JSON keys each stage gives; a key outside them needs the attention itself
DOCUMENT = ("inputs", "positional", "context")
NORMALIZED = ("normalized_inputs",)
PROJECTED = ("queries", "keys", "values")
ROTATED = ("queries_rotated", "keys_rotated")
BEFORE_SCORES = DOCUMENT + NORMALIZED + PROJECTED + ROTATED


def needs_no_attention(keys: list[str] | None) -> bool:
    """Whether ``keys`` (``--only``; None: everything) are all made before the scores."""
    return bool(keys) and all(key in BEFORE_SCORES for key in keys)


def partial_bytes(spec: Spec, keys: list[str]) -> int:
    """Memory the arrays :func:`attend_until` makes for ``keys`` take, with their temporaries (bytes)."""
    wanted = set(keys)
    n, m, h, g = spec.n, spec.m, spec.heads, spec.kv_heads
    numbers = 0
    if spec.pre_norm is not None and wanted - set(DOCUMENT):
        numbers += 2 * n * spec.inputs.shape[1]  # X̂ and a row's worth of temporaries per row
    if wanted & set(PROJECTED + ROTATED):
        numbers += 2 * (h * n * spec.d_k + g * m * (spec.d_k + spec.d_v))  # Q, K, V and each product's copy
    if wanted & set(ROTATED):
        numbers += 2 * (h * n + g * m) * spec.d_k  # Q′, K′ and the cos/sin they are turned with
    return 8 * numbers


def attend_until(spec: Spec, keys: list[str]) -> Trace:
    """The stages ``keys`` need, and no more: a Trace whose later fields (scores … output) are None."""
    wanted = set(keys)
    x_hat = pre_norm(spec) if wanted - set(DOCUMENT) else None
    q = k = v = q_rot = k_rot = None
    if wanted & set(PROJECTED + ROTATED):
        q, k, v = projections(spec, x_hat)
        if wanted & set(ROTATED):
            q_rot, k_rot = rotations(q, k, spec)
    return Trace(spec=spec, queries=q, keys=k, values=v, queries_rotated=q_rot, keys_rotated=k_rot, normalized_inputs=x_hat)
