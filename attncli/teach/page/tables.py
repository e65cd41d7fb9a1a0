"""The tables of ``attncli compute`` as the page's data: shown rows and columns, cell texts, titles in both languages.

Each table is made from one :class:`~attncli.outputs.blocks.Block` (the list every view shows), with the query
head it belongs to, so that a click on a cell can find the explain step of that head and row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncli.core.trace import Trace
from attncli.outputs import titles
from attncli.outputs.blocks import KV_KEYS, PER_HEAD, Block, blocks
from attncli.outputs.numbers import all_whole, format_number, pick
from attncli.teach.texts import texts

MASKABLE = ("scores", "weights", "grad_scaled_scores", "grad_scores")  # shown as numbers (a weight 0), hatched
HEAT = ("scores", "scaled_scores", "score_bias")  # shaded too, as attncli heatmap --of draws them
PAGE_MAX, PAGE_EDGE = 32, 12  # beyond 32 rows or columns, the first and last 12 (a phone still scrolls them)


@dataclass(frozen=True)
class Shown:
    """One table of the page: its block, its query head (None: no head), and the rows and columns kept."""

    block: Block
    head: int | None
    rows: list[int | None]  # None: the ⋮ row of the rows left out
    columns: list[int | None]


def with_heads(trace: Trace) -> list[tuple[Block, int | None]]:
    """Every block of compute, in compute's order, with its query head (0-based; None: no head). With grouped-query
    heads a K/V head's blocks come once, with the first query head that shares it, as compute shows them."""
    spec = trace.spec
    group = spec.heads // spec.kv_heads
    first = blocks(trace, 0)
    at = [k for k, b in enumerate(first) if b.key in PER_HEAD]
    found: list[tuple[Block, int | None]] = [(b, None) for b in first[: at[0] if at else len(first)]]
    for h in range(spec.heads):
        found += [(b, h) for b in blocks(trace, h) if b.key in PER_HEAD and not (b.key in KV_KEYS and h % group)]
    found += [(b, None) for b in first[at[-1] + 1:]] if at else []
    return found


def shown_tables(trace: Trace) -> list[Shown]:
    return [Shown(b, h, pick(b.matrix.shape[0], PAGE_MAX, PAGE_EDGE, False),
                  pick(b.matrix.shape[1], PAGE_MAX, PAGE_EDGE, False)) for b, h in with_heads(trace)]


def axis(labels: list[str], trace: Trace) -> str:
    """``n`` for the query tokens, ``m`` for the keys' tokens, ``d`` for dimensions (as the tables label them)."""
    if labels is trace.spec.tokens:
        return "n"
    return "m" if labels is trace.spec.context_tokens else "d"


def title(shown: Shown, trace: Trace, lang: str) -> str:
    """The table's title: compute's own in English; in Chinese explain's name for the quantity and the formula."""
    block = shown.block
    if lang == "en":
        return block.heading
    t = texts(lang)
    key = "embedded" if block.key == "positional" and block.text == "X + P" else block.key  # P, then X + P
    name = t["label"].get(key) or t["page"]["names"].get(key) or titles.title(key, block.name, lang)
    name = name.split("  ")[0]
    formula = titles.formula(block.text, lang)
    spec = trace.spec
    if shown.head is None or spec.heads == 1:
        return f"{name}  {formula}"
    if block.key in KV_KEYS and spec.kv_heads < spec.heads:
        group = spec.heads // spec.kv_heads
        kv = shown.head // group
        prefix = t["label"]["kv_head"].format(kv=kv + 1, first=kv * group + 1, last=(kv + 1) * group)
    else:
        prefix = t["of_head"].format(title="", head=shown.head + 1).strip("（）() ")
    return f"{prefix} · {name}  {formula}"


def cells(shown: Shown, precision: int) -> list[list[str | None]]:
    """The shown cells as compute writes them; None for a masked cell, ``…``/``⋮`` where rows or columns are
    left out."""
    block = shown.block
    whole = all_whole(block.matrix)
    out = []
    for i in shown.rows:
        if i is None:
            out.append(["⋮" for _ in shown.columns])
            continue
        row = []
        for j in shown.columns:
            if j is None:
                row.append("…")
            elif block.masked is not None and block.masked[i, j]:
                row.append(None)
            else:
                row.append(format_number(float(block.matrix[i, j]), precision, whole))
        out.append(row)
    return out


def table_data(shown: Shown, trace: Trace, precision: int) -> dict:
    block = shown.block
    rows = [None if i is None else block.rows[i] for i in shown.rows]
    columns = [None if j is None else block.columns[j] for j in shown.columns]
    return {
        "key": block.key, "head": shown.head,
        "title": {lang: title(shown, trace, lang) for lang in ("en", "zh")},
        "rowAxis": axis(block.rows, trace), "colAxis": axis(block.columns, trace),
        "r": shown.rows, "c": shown.columns, "rl": rows, "cl": columns,
        "n": int(block.matrix.shape[0]), "m": int(block.matrix.shape[1]),
        "v": cells(shown, precision), "heat": heat_scale(shown, trace),
        "mk": [f"{r},{c}" for r, i in enumerate(shown.rows) for c, j in enumerate(shown.columns)
               if i is not None and j is not None and masked_at(trace, shown, i, j)],  # hatched, number or not
    }


def heat_scale(shown: Shown, trace: Trace) -> list[float] | None:
    """The colour scale of a queries × keys table, as ``attncli heatmap`` draws one head: a weight is its own t
    (as compute's tables shade it: [0, 1]); scores, scaled scores and a score bias run from their smallest to their
    largest unmasked finite value in the table.  None: no colour (every other table, as in compute)."""
    key, matrix = shown.block.key, shown.block.matrix
    if key == "weights":
        return [0.0, 1.0]
    if key not in HEAT or shown.head is None:
        return None
    allowed = trace.spec.allowed
    use = np.isfinite(matrix) & (True if allowed is None else allowed[shown.head])
    if not use.any():
        return None
    return [float(matrix.min(where=use, initial=np.inf)), float(matrix.max(where=use, initial=-np.inf))]


def masked_at(trace: Trace, shown: Shown, i: int, j: int) -> bool:
    """Is cell (i, j) masked: blank in its table, or a score or weight of a key its query may not attend to?"""
    if shown.block.masked is not None:
        return bool(shown.block.masked[i, j])
    allowed = trace.spec.allowed
    return (shown.block.key in MASKABLE and shown.head is not None and allowed is not None
            and not bool(allowed[shown.head, i, j]))
