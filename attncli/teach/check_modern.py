"""The classic slips of today's attention, for ``attncli check``'s hints.

Each slip is the computation done again with one change, as :mod:`attncli.teach.check`
models the classic mistakes:

- rope: the pairs taken interleaved instead of as halves (or the reverse); the positions
  counted from 1 instead of 0; the rotation forgotten; the values rotated too;
- softcap: the cap left out;
- pre_norm: the projections made from X instead of the normalised X̂;
- score_bias: the bias left out;
- mask: its convention inverted (1 read as "masked" where it means "may attend", or the reverse).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from attncli.core.attention import Trace, add_residual, attend, output_projection
from attncli.core.positions import Rope, rotate
from attncli.core.scores import shared
from attncli.outputs.serialize import array_of

Mistakes = dict[str, list[tuple[str, Callable[[], np.ndarray]]]]

AFTER_ROPE = ("queries_rotated", "keys_rotated", "scores", "scaled_scores", "weights", "head_outputs", "output",
              "normalized_output", "residual", "normalized")
AFTER_SCORES = AFTER_ROPE[3:]  # what the soft cap changes
AFTER_VALUES = AFTER_ROPE[5:]  # what the values change
AFTER_NORM = ("queries", "keys", "values") + AFTER_ROPE


def downstream(trace: Trace, heads: np.ndarray, key: str) -> np.ndarray | None:
    """``key`` computed from the head outputs ``heads`` (h, n, d_v) on: head_outputs, output, residual …"""
    if key == "head_outputs":
        return heads
    y = output_projection(heads, trace.spec)
    if key == "output":
        return y
    residual, normalized, normalized_output = add_residual(y, trace.spec)
    return {"residual": residual, "normalized": normalized, "normalized_output": normalized_output}[key]


def modern_mistakes(trace: Trace) -> Mistakes:
    """For each key, (hint, how that slip computes the key), for the Part 2 keys the document uses."""
    spec = trace.spec
    mistakes: Mistakes = {}

    def add(keys: tuple[str, ...], hint: str, make: Callable[[str], np.ndarray | None]) -> None:
        for key in keys:
            mistakes.setdefault(key, []).append((hint, lambda key=key: make(key)))

    def redo(**changes) -> Callable[[str], np.ndarray | None]:
        cache: list[Trace] = []  # computed once, when a hint is first looked for

        def make(key: str) -> np.ndarray | None:
            if not cache:
                cache.append(attend(dataclasses.replace(spec, **changes)))
            return array_of(cache[0], key)
        return make

    if spec.rope is not None:
        _rope_slips(trace, add, redo)
    if spec.softcap is not None:
        add(AFTER_SCORES, f"the soft cap was left out: each scaled score z becomes {spec.softcap:g}·tanh(z / {spec.softcap:g})",
            redo(softcap=None))
    if spec.pre_norm is not None:
        keys = AFTER_NORM if spec.context is None else ("queries", *AFTER_NORM[3:])
        add(keys, "the inputs were not normalised first: with pre_norm the projections multiply X̂ = norm(X), not X",
            redo(pre_norm=None))
    if spec.score_bias is not None:
        add(AFTER_SCORES, "the score bias was left out: it is added to every scaled score before softmax",
            redo(score_bias=None))
    inverted = None if spec.mask is None else spec.mask.inverted()
    if inverted is not None:
        add(AFTER_SCORES, "the mask was read the other way round: under this document's "
            "convention the keys you weighted are the masked ones (convention: allow means 1 = may attend; "
            "block, as nn.MultiheadAttention, means 1 = masked)", redo(mask=inverted))
    return mistakes


def _rope_slips(trace: Trace, add, redo) -> None:
    spec = trace.spec
    rope = spec.rope
    if rope.dims > 2:  # with one pair both styles pair the same two dimensions
        other = "interleaved" if rope.style == "half" else "half"
        hint = ("the pairs were taken interleaved (2i, 2i + 1); this document pairs the halves, i with i + dims/2 "
                "(style: half, rotate_half)") if rope.style == "half" else (
                "the pairs were taken as halves (i, i + dims/2); this document pairs neighbours, 2i with 2i + 1 "
                "(style: interleaved)")
        add(AFTER_ROPE, hint, redo(rope=Rope(rope.frequencies, other, rope.base)))
    if all(np.array_equal(p, np.arange(len(p))) for p in (spec.query_positions, spec.key_positions)):  # 0 … n − 1
        add(("queries_rotated", "keys_rotated"), "the positions were counted from 1; they count from 0 (the first token "
            "is at position 0 and is not turned at all)",
            redo(positions=spec.query_positions + 1, context_positions=spec.key_positions + 1))
    unrotated = {"queries_rotated": trace.queries, "keys_rotated": trace.keys}
    forgotten = redo(rope=None)
    add(AFTER_ROPE, "the rotation was forgotten: with rope the scores are Q′·K′ᵀ, the queries and keys turned by their "
        "positions", lambda key: unrotated[key] if key in unrotated else forgotten(key))
    if spec.d_v >= rope.dims:  # values wide enough to be (wrongly) turned
        v_turned = rotate(trace.values, spec.key_positions, rope)  # (g, m, d_v)
        heads = trace.weights @ shared(v_turned, spec.heads)
        add(("values", *AFTER_VALUES), "the values were rotated too: rope turns only the queries and the keys; V stays "
            "as projected", lambda key: v_turned if key == "values" else downstream(trace, heads, key))
