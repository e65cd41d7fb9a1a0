"""The conventions card's data: what a kernel must be told about a document (see :mod:`attncli.outputs.card`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attncli.core.emulate import softmax_of_dots
from attncli.core.masks import empty_queries
from attncli.core.spec import Spec


@dataclass(frozen=True)
class Entry:
    key: str  # sdpa, flex, flash, jax, flashinfer, hf
    library: str  # the name users know it by
    code: list[str]  # the call, after the setup; [] when the library cannot express the document
    arguments: dict  # the arguments that carry the conventions, as JSON values
    lse: str | None  # 'e', '2', or None when the call returns no log-sum-exp
    lse_shape: str | None
    missing: list[tuple[str, dict]] = field(default_factory=list)  # (sentence id, fields): no equivalent
    notes: list[tuple[str, dict]] = field(default_factory=list)  # (sentence id, fields)


@dataclass(frozen=True)
class Card:
    export: list[str]  # the --only keys that `attncli compute FILE -o kernel.npz` needs for the setup
    setup: list[str]  # torch lines: q, k, v (and the mask pieces) from kernel.npz, with a batch axis of 1
    entries: list[Entry]
    facts: dict  # the document's attention in kernel terms (heads, sizes, scale, mask parts …)


@dataclass(frozen=True)
class Facts:
    h: int
    g: int
    n: int
    m: int
    scale: float
    causal: str | None
    offset: int  # i′ − i
    window: int | None
    chunk: int | None
    keys: list[bool] | None
    matrix: bool  # a mask matrix, or −inf cells of a bias matrix: the mask comes from kernel.npz
    per_head_matrix: bool
    softcap: float | None
    slopes: list[float] | None  # ALiBi with the default positions (slope_h · (j − i))
    bias_from_file: bool  # a bias matrix, T5's relative bias, or ALiBi with positions given
    sinks: list[float] | None
    empty: tuple[int, ...]

    @property
    def bias(self) -> bool:
        return self.slopes is not None or self.bias_from_file


def facts_of(spec: Spec) -> Facts:
    """What a kernel must be told about ``spec``, refused in one line when no kernel library computes it."""
    softmax_of_dots(spec, "attncli card")  # score: additive and normalize: sum have no kernel
    mask, bias = spec.mask, spec.score_bias
    default_positions = spec.positions is None and spec.context_positions is None
    matrix = mask is not None and mask.matrix is not None
    if bias is not None and bias.matrix is not None and np.isneginf(bias.matrix).any():
        matrix = True
    slopes = None if bias is None or bias.slopes is None or not default_positions else bias.slopes
    from_file = bias is not None and (bias.matrix is not None or bias.relative is not None or
                                      (bias.slopes is not None and not default_positions))
    keys = None if mask is None or mask.keys is None else [bool(x) for x in mask.keys]
    return Facts(spec.heads, spec.kv_heads, spec.n, spec.m, float(spec.scale),
                 None if mask is None else mask.causal, 0 if mask is None else mask.offset,
                 None if mask is None else mask.window, None if mask is None else mask.chunk, keys, matrix,
                 matrix and (mask is not None and mask.per_head or bias is not None and bias.matrix is not None and
                             bias.matrix.ndim == 3),
                 spec.softcap, None if slopes is None else [float(s) for s in slopes], from_file,
                 None if spec.sinks is None else [float(s) for s in spec.sinks], empty_queries(spec.allowed))


def number(x: float) -> str:
    """A float as Python source that reads back to the same float64."""
    return repr(float(x))


def keys_literal(keys: list[bool]) -> str:
    """``[True] * 5 + [False] * 3``: the key flags as short Python source (runs of equal flags)."""
    runs: list[tuple[bool, int]] = []
    for k in keys:
        if runs and runs[-1][0] == k:
            runs[-1] = (k, runs[-1][1] + 1)
        else:
            runs.append((k, 1))
    return " + ".join(f"[{k}] * {c}" for k, c in runs)
