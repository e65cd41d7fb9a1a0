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
