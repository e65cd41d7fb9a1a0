"""The explorable page of a ``linear:`` document (docs/format.md Part 4): compute's tables and, for each token and
value head shown, explain's step (the delta rule, or lightning attention's sum) with the states it writes out.

The data has the shape of :func:`attncli.teach.page.page_data`'s, so the same view draws it
(:mod:`attncli.views.page`); a step's line may carry a matrix (``M[steps[k][7][line]]``), the state it
talks about.
"""

from __future__ import annotations

import json

import numpy as np

from attncli.core.linear import LinearTrace
from attncli.outputs.blocks import Block
from attncli.outputs.numbers import all_whole, dims, format_number, pick
from attncli.teach.explain.delta import delta_step
from attncli.teach.explain.lightning import lightning_step
from attncli.teach.page.sums import words
from attncli.teach.page.tables import PAGE_EDGE, PAGE_MAX, Shown, cells
from attncli.teach.page.worked import MAX_FOCUSES, Strings
from attncli.teach.texts import texts
from attncli.views.colours import NEGATIVE, POSITIVE, RAMP, UNCOLOURED
from attncli.views.linear import VALUE_HEADED, linear_matrices

__all__ = ["linear_page_data", "linear_page_html"]

FORMULA = {"Δ": "S ← e^g·S + k̂·uᵀ,  u = β·(v − Sᵀk̂),  o = Sᵀq̂",
           "Σ": "o_t = Σ_{i≤t} (q_t·k_i)·e^(−s(t−i))·v_i = S_tᵀq_t,  S_t = e^(−s)·S_(t−1) + k_t·v_tᵀ"}
# the lines of the step that hold a cell of these tables (counted from the end: the step's first lines vary)
MARKS = {"Δ": {"u": (-5,), "final_state": (-2,), "head_outputs": (-1,)},
         "Σ": {"final_state": (-1,), "head_outputs": (-2, -1)}}
# each (head, token) pair's step runs the recurrence up to its token again: the pairs written out are fewer as n
# grows, so that a long document's page is made in seconds (n = 1024: every pair shown, up to 160; 16384: 12)
WORK_TOKENS = 200_000  # the tokens stepped through, over all pairs


def linear_page_data(trace: LinearTrace, title: str = "attncli", precision: int = 4, lang: str = "en") -> dict:
    """Everything the page shows for a linear: document, as JSON-ready values (strings in ``S``, by index)."""
    spec = trace.spec
    number = "Σ" if spec.kind == "lightning" else "Δ"  # (the step's button: a short name, as 1 … 8 are)
    queries = [t for t in pick(spec.n, PAGE_MAX, PAGE_EDGE, False) if t is not None]
    pairs = [(j, t) for j in range(spec.value_heads) for t in queries][:min(MAX_FOCUSES,
                                                                             max(1, WORK_TOKENS // spec.n))]
    strings = Strings()
    focus, steps, count, states = _steps(trace, pairs, number, precision, strings)
    tables = [_table(trace, shown, number, count, precision) for shown in _shown(trace)]
    ui = {lang: {**texts(lang)["page"], **texts(lang)["page_linear"]} for lang in ("en", "zh")}
    return {
        "title": title, "lang": lang, "heads": spec.value_heads, "explained": len(pairs), "queries": queries,
        "pathHeads": sorted({j for j, _ in pairs}), "pathQueries": sorted({t for _, t in pairs}),
        "tokens": list(spec.tokens), "cross": False,
        "masked": {lang: texts(lang)["label"]["masked"] for lang in ("en", "zh")},
        "ui": ui, "ramp": RAMP, "low": UNCOLOURED, "signed": [NEGATIVE, POSITIVE],
        "grads": {lang: {k: words(lang)[k] for k in ("not_worked", "spent", "legend")} for lang in ("en", "zh")},
        "tables": tables, "focus": focus, "steps": steps, "S": strings.items, "M": states, "decode": None,
    }


def linear_page_html(trace: LinearTrace, title: str = "attncli", precision: int = 4, lang: str = "en") -> str:
    """The page as one HTML document: no request leaves it (its styles, script and data are inside)."""
    from attncli.views.page import render

    return render(linear_page_data(trace, title, precision, lang))


def _steps(trace: LinearTrace, pairs: list[tuple[int, int]], number: str, precision: int,
           strings: Strings) -> tuple[dict, list, dict, list]:
    """For each language and ``"head,token"``: the index of its step, each step as [number, heading, formula,
    paragraphs, lines, notes, the keys of its tables, the index in ``states`` of each line's matrix (None: none)];
    how many lines each (head, token)'s step has; and the states, each once (both languages show the same)."""
    step_of = lightning_step if number == "Σ" else delta_step
    keys = list(MARKS[number])
    focus: dict[str, dict[str, list[int]]] = {}
    steps: list = []
    count: dict[tuple[int, int], int] = {}
    states, seen = [], {}
    for lang in ("en", "zh"):
        focus[lang] = {}
        for j, t in pairs:
            (heading, _), *items = step_of(trace, t, j, lang, precision)
            lines = [strings(text) for text, _ in items]
            at = []
            for _, m in items:
                shown = None if m is None else _matrix(m, precision)
                key = json.dumps(shown)
                if shown is not None and key not in seen:
                    seen[key] = len(states)
                    states.append(shown)
                at.append(None if shown is None else seen[key])
            focus[lang][f"{j},{t}"] = [len(steps)]
            count[j, t] = len(lines)  # (the same in both languages)
            steps.append([number, strings(heading), strings(FORMULA[number]), [], lines, [], keys, at])
    return focus, steps, count, states


def _matrix(m: np.ndarray, precision: int) -> dict:
    """A d_k × d_v state as the step's table: rows k1 …, columns 1 …, the numbers as compute writes them; beyond 32
    rows or columns the first and last 12, as the page's tables (⋮ and … between)."""
    whole = all_whole(m)
    rows, columns = pick(m.shape[0], PAGE_MAX, PAGE_EDGE, False), pick(m.shape[1], PAGE_MAX, PAGE_EDGE, False)
    return {"rl": ["⋮" if i is None else f"k{i + 1}" for i in rows],
            "cl": ["…" if c is None else str(c + 1) for c in columns],
            "v": [["⋮" if i is None else "…" if c is None else format_number(float(m[i, c]), precision, whole)
                   for c in columns] for i in rows]}


def _shown(trace: LinearTrace) -> list[tuple[Shown, int | None, dict]]:
    """compute's tables, each with its value head (q's and k's: the first value head that reads them) and its
    titles and its row and column labels in both languages."""
    spec = trace.spec
    group = spec.value_heads // spec.heads
    found = []
    for key, j, _, m, rows, columns in linear_matrices(trace, "en"):
        block = Block(key, "", "", "", m, rows, columns or dims(m.shape[1]))
        found.append([Shown(block, j, pick(m.shape[0], PAGE_MAX, PAGE_EDGE, False),
                            pick(m.shape[1], PAGE_MAX, PAGE_EDGE, False)), {}, {}, {}])
    for lang in ("en", "zh"):
        for entry, (_, _, title, _, rows, columns) in zip(found, linear_matrices(trace, lang)):
            entry[1][lang] = title
            entry[2][lang], entry[3][lang] = rows, columns or entry[0].block.columns
    return [(shown, shown.head if shown.head is None or shown.block.key in VALUE_HEADED else shown.head * group,
             *labels) for shown, *labels in found]


def _table(trace: LinearTrace, entry: tuple, number: str, count: dict, precision: int) -> dict:
    """One table's data, its cells linked to the step of their (value head, token): ``x`` as worked.py's."""
    shown, head, title, row_labels, column_labels = entry
    block, spec = shown.block, trace.spec
    token_rows = block.rows is spec.tokens
    rows = [None if i is None else block.rows[i] for i in shown.rows]
    columns = [None if c is None else block.columns[c] for c in shown.columns]
    marks = MARKS[number].get(block.key) if head is not None else None
    last = spec.n - 1
    s, hl = [], []
    for i in shown.rows:
        t = i if token_rows else last
        lines = count.get((head, t)) if marks is not None and i is not None else None
        s.append([[number] if lines and c is not None else None if marks else [] for c in shown.columns])
        hl.append([[[lines + k for k in marks]] if lines and c is not None else None for c in shown.columns])
    return {
        "key": block.key, "head": head, "title": title,
        "rowAxis": "n" if token_rows else "d", "colAxis": "d",
        "r": shown.rows, "c": shown.columns, "rl": rows, "cl": columns,
        "n": int(block.matrix.shape[0]), "m": int(block.matrix.shape[1]),
        "v": cells(shown, precision), "heat": None, "mk": [], "gx": None, "signed": None,
        "x": {"s": s, "hl": hl},  # (no marks: [] for every cell, the page's "not in the step")
        "perQuery": token_rows, "query": None if token_rows else last,
        "rls": _by_language(row_labels, shown.rows), "cls": _by_language(column_labels, shown.columns),
    }


def _by_language(labels: dict[str, list[str]], shown: list[int | None]) -> dict | None:
    """The shown labels in each language when they differ ("Head 1", "头 1"); None: the same in both."""
    if labels["en"] == labels["zh"]:
        return None
    return {lang: [None if i is None else labels[lang][i] for i in shown] for lang in ("en", "zh")}

