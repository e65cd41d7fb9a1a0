"""What a document says about itself before any matrix is read: its optional parts, its heads and its tokens.

The commands check their options against this (``--head 13`` of 12 heads, ``--query`` by label, ``--step rope``
or ``--only queries_rotated`` without ``rope``) before a matrix file is read or attention computed, so that a
large document does not pay for an option error. What the document does not say plainly here (heads from a
weight's file, tokens left to the inputs' file) is None, and is checked on the built Spec instead, still before
the attention. Nothing here raises: a malformed key is the builder's to name (:mod:`attncli.inputs.builder`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from attncli.core.record import record
from attncli.inputs.values import split_tokens

PARTS = ("context", "positional", "pre_norm", "rope", "score_bias", "post_norm", "add_norm", "residual",
         "query_temperature", "qk_norm", "gradient", "latent",
         "differential")
PARTS += ("indexer",)  # DeepSeek-V3.2's lightning indexer
PROJECTIONS = ("query", "key", "value", "output", "gate")


@record
class Outline:
    """What a document says of itself before its matrices are read: its parts, heads and tokens."""

    parts: frozenset[str]  # PARTS the document has, and "weights.output", "bias.query" … that it gives
    heads: int | None  # query heads, when the document (or --heads) says how many without a file
    tokens: Sequence[str] | None  # the query rows' labels, when the document says them without a file


def outline(data: Any, overrides: dict | None = None) -> Outline:
    """The :class:`Outline` of a document's parsed ``data`` with the command line's ``overrides`` (``heads``)."""
    if not isinstance(data, dict):
        return Outline(frozenset(), None, None)
    parts = {key for key in PARTS if data.get(key) not in (None, False)}
    for section in ("weights", "bias"):
        given = data.get(section)
        if isinstance(given, dict):
            parts |= {f"{section}.{name}" for name in PROJECTIONS if given.get(name) is not None}
    try:
        heads, tokens = (overrides or {}).get("heads") or _heads(data), _tokens(data)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError):  # malformed beyond what is foreseen here:
        heads, tokens = (overrides or {}).get("heads"), None  # the options are checked on the built Spec instead
    return Outline(frozenset(parts), heads, tokens)


def _heads(data: dict) -> int | None:
    given = data.get("heads")
    if given is not None:
        return given if isinstance(given, int) and not isinstance(given, bool) and given >= 1 else None
    weights = data.get("weights") or {}
    if not isinstance(weights, dict):
        return None
    names = ("query",) if data.get("kv_heads") is not None else ("query", "key", "value")
    found = [_leading(weights.get(name)) for name in names if weights.get(name) is not None]
    if any(shape is None for shape in found):  # a file, an archive, something malformed: its shape is not known here
        return None
    three = [shape[0] for shape in found if len(shape) == 3]
    return three[0] if three else 1


def _leading(value: Any) -> tuple[int, ...] | None:
    """The shape of an inline matrix or a random one's ``shape:`` as far as it tells the heads (rank, first axis)."""
    if isinstance(value, list):
        depth, item = 1, value
        while item and isinstance(item[0], list):
            depth, item = depth + 1, item[0]
        return (len(value),) * depth
    if isinstance(value, dict) and "random" in value and isinstance(value.get("shape"), list):
        shape = value["shape"]
        if shape and all(isinstance(size, int) and not isinstance(size, bool) and size >= 1 for size in shape):
            return tuple(shape)
    return None


def _tokens(data: dict) -> list[str] | None:
    given = data.get("tokens")
    if isinstance(given, str):
        return split_tokens(given)
    if isinstance(given, list):
        if any(isinstance(label, (list, dict)) or label is None for label in given):
            return None
        return [str(label).lower() if isinstance(label, bool) else str(label) for label in given]
    if given is not None:
        return None
    rows = _leading(data.get("inputs"))
    return None if rows is None or rows[0] < 1 else Numbered(rows[0])


class Numbered(Sequence):
    """The labels ``x1 … xn`` of a document without tokens, never made all at once (n may be a forged 10^12)."""

    def __init__(self, count: int):
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.count))]
        if not -self.count <= i < self.count:
            raise IndexError(i)
        return f"x{i % self.count + 1}"

    def __contains__(self, label: object) -> bool:
        return isinstance(label, str) and self._number(label) is not None

    def index(self, label, start: int = 0, stop: int | None = None) -> int:
        number = self._number(label) if isinstance(label, str) else None
        if number is None:
            raise ValueError(label)
        return number - 1

    def _number(self, label: str) -> int | None:
        match = re.fullmatch(r"x([1-9][0-9]{0,17})", label)
        return int(match.group(1)) if match and int(match.group(1)) <= self.count else None
