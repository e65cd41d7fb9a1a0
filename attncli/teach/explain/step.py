"""What a step of ``attncli explain`` is made of, and the values its sentences may name.

A :class:`Step` holds a title, a formula, paragraphs, the worked lines and the tables;
:mod:`attncli.teach.explain.walkthrough` and :mod:`attncli.teach.explain.modern` make them from a
:class:`~attncli.core.trace.Trace`, :mod:`attncli.teach.explain.view` draws them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attncli.core.spec import Spec
from attncli.core.trace import Trace
from attncli.teach.texts import texts

MAX_LINES = 12  # worked lines per list; the rest are in the tables


@dataclass(frozen=True)
class Numbers:
    """One table of a step: a matrix with its row and column labels (masked cells: True)."""

    key: str
    title: str
    matrix: np.ndarray  # 2-D
    rows: list[str]
    columns: list[str]
    masked: np.ndarray | None = None
    heat: bool = False


@dataclass(frozen=True)
class Step:
    number: int | str  # 1 … 8, or an extra step's name
    title: str
    formula: str
    text: list[str]
    lines: list[str] = field(default_factory=list)  # the arithmetic written out
    numbers: list[Numbers] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # remarks that stand out (the learner's mistake)


@dataclass(frozen=True)
class Focus:
    """What the steps look at: one query (0-based) of one head (0-based), in one language."""

    query: int
    head: int
    lang: str = "en"
    precision: int = 4
    builtin: bool = False  # the built-in illustrated example: say how the walkthrough rounds
    defaulted: bool = False  # no --query, and the first query sees fewer than two keys: say why this one
    asked: bool = True  # --query given: followed even where it sees one key alone
    layer: tuple[int, str] | None = None  # a stack's layer after the first: its number (from 1), the key passed on


def kv_head(spec: Spec, head: int) -> int:
    """The key/value head (0-based) that query head ``head`` uses: head // (h / g)."""
    return head // (spec.heads // spec.kv_heads)


def projected_rows(trace: Trace) -> np.ndarray:
    """The rows the query projection multiplies: X̂ with pre_norm, else X (+ P)."""
    return trace.spec.embedded if trace.normalized_inputs is None else trace.normalized_inputs


def source_rows(trace: Trace) -> np.ndarray:
    """The rows the key and value projections multiply: the context, or the rows of :func:`projected_rows`."""
    return projected_rows(trace) if trace.spec.context is None else trace.spec.context


def inputs_symbol(spec: Spec) -> str:
    """What the projections multiply, as the formulas write it: ``X``, ``(X + P)`` or ``X̂``."""
    if spec.pre_norm is not None:
        return "X̂"
    return "X" if spec.positional is None else "(X + P)"


def context(trace: Trace, focus: Focus) -> dict:
    """The values a text may name: ``{q}`` the query's label (quoted: a token may be any word), ``{d_k}``,
    ``{scale}`` …"""
    spec = trace.spec
    group, kv = spec.heads // spec.kv_heads, kv_head(spec, focus.head)
    return {
        "q": f"“{spec.tokens[focus.query]}”", "i": focus.query + 1, "n": spec.n, "m": spec.m,
        "d_model": spec.inputs.shape[1], "d_ctx": spec.source.shape[1], "d_k": spec.d_k, "d_v": spec.d_v,
        "h": spec.heads, "head": focus.head + 1, "scale": f"{spec.scale:.{focus.precision}g}",
        "d_out": trace.output.shape[1],
        # grouped-query attention: g key/value heads, each shared by `group` query heads
        "g": spec.kv_heads, "group": group, "head0": focus.head, "kv0": kv, "kv": kv + 1,
        "first": kv * group + 1, "last": (kv + 1) * group,
        "shared": texts(focus.lang)["span"]["two" if group == 2 else "many"].format(first=kv * group + 1,
                                                                                  last=(kv + 1) * group),
        "kv_weights": "W_K" if spec.k_eq_v else texts(focus.lang)["kv_weights"],  # (V = K: no W_V)
        "qk": "S" if spec.score == "additive" else scored_symbols(spec),
        "softcap": f"{spec.softcap:g}" if spec.softcap is not None else "",
        # kv_from: the earlier layer whose keys and values this one attends with (kv_from counts from 0, --layer from 1)
        "kv_from": spec.shared_from, "kv_layer": None if spec.shared_from is None else spec.shared_from + 1,
    }


def scored_symbols(spec: Spec) -> str:
    """What the scores multiply, as the formulas write it: ``Q·Kᵀ``, ``Q′·K′ᵀ``, or ``Q̂·K̂ᵀ`` with qk_norm last."""
    if spec.qk_norm is not None and (spec.qk_norm.after_rope or spec.rope is None):
        return "Q̂·K̂ᵀ"
    return "Q′·K′ᵀ" if spec.rope is not None else "Q·Kᵀ"


def scored(trace: Trace) -> tuple[np.ndarray, np.ndarray, str]:
    """The queries (h, n, d_k) and keys (g, m, d_k) the scores multiply, and their mark: '' (Q, K), '′' (rotated)
    or the combining hat (normalised after the rotation, or with no rotation)."""
    symbols = scored_symbols(trace.spec)
    if symbols == "Q̂·K̂ᵀ":
        return trace.normalized_queries, trace.normalized_keys, "\u0302"
    if symbols == "Q′·K′ᵀ":  # (kv_from: the earlier layer's keys, turned there)
        return trace.queries_rotated, trace.keys if trace.spec.shared_kv is not None else trace.keys_rotated, "′"
    return trace.queries, trace.keys, ""


class Said(str):
    """A paragraph as written, which also knows what it was written from: its text key (``"softmax.shift_large"``)
    and the words filled in, so that a test can check the fact it states against the numbers."""

    key: str
    words: dict

    def __new__(cls, text: str, key: str, words: dict):
        said = super().__new__(cls, text)
        said.key, said.words = key, words
        return said


def paragraphs(t: dict, step: str, keys: list[str], ctx: dict) -> list[str]:
    """The step's paragraphs named by ``keys``, filled in with ``ctx`` (each a :class:`Said`)."""
    return [Said(t[step][key].format(**ctx), f"{step}.{key}", ctx) for key in keys]


def allowed_row(trace: Trace, i: int, head: int = 0) -> np.ndarray:
    """Which keys query ``i`` may attend to in ``head`` (m,)."""
    allowed = trace.spec.allowed
    return np.ones(trace.spec.m, dtype=bool) if allowed is None else allowed[head, i]
