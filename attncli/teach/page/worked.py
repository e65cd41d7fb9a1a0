"""Where a number of the page comes from: the steps of ``attncli explain`` for its query and head, and the lines
of those steps that hold its arithmetic.

Nothing here writes a sentence: the steps are explain's own (:func:`attncli.teach.explain.walkthrough.steps`, in
English and Chinese); this module only says which step and which of its lines belong to a cell.
"""

from __future__ import annotations

import re

from attncli.core.trace import Trace
from attncli.teach.explain import step as explain_step
from attncli.teach.explain.step import MAX_LINES, Focus, Step
from attncli.teach.explain.view import heading
from attncli.teach.explain.walkthrough import steps
from attncli.teach.lines import subscript
from attncli.teach.page.tables import Shown, masked_at
from attncli.teach.texts import texts

MAX_FOCUSES = 160  # (query, head) pairs written out per language; beyond, the later heads name explain's command
STEPS_OF = {"scores": (4,), "scaled_scores": (4,), "score_bias": (4,), "weights": (5,), "head_outputs": (6, 7)}
MASKED_STEPS = (4, 5)  # a masked cell: the step that names the mask, then softmax's "masked keys get weight 0"


class Strings:
    """Every text once: the page refers to a string by its index (most paragraphs repeat for every query)."""

    def __init__(self):
        self.items: list[str] = []
        self.index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        if text not in self.index:
            self.index[text] = len(self.items)
            self.items.append(text)
        return self.index[text]


def explained(trace: Trace, queries: list[int]) -> list[int]:
    """The heads whose steps the page writes out: all, unless queries × heads passes :data:`MAX_FOCUSES`."""
    return list(range(min(trace.spec.heads, max(1, MAX_FOCUSES // max(len(queries), 1)))))


def focus_steps(trace: Trace, queries: list[int], heads: list[int], strings: Strings) -> tuple[dict, list, dict]:
    """For each language and ``"head,query"``: the indices of its steps in the returned list; each step as
    [number, heading, formula, paragraphs, lines, notes] of string indices (a step written once when repeated);
    and the English steps themselves by (head, query), for :func:`cell_steps`."""
    table: list = []
    seen: dict[tuple, int] = {}
    out: dict[str, dict[str, list[int]]] = {}
    english: dict[tuple[int, int], list[Step]] = {}
    for lang in ("en", "zh"):
        t = texts(lang)
        out[lang] = {}
        for h in heads:
            for i in queries:
                made = steps(trace, Focus(i, h, lang))
                english.update({(h, i): made} if lang == "en" else {})
                out[lang][f"{h},{i}"] = [_entry(s, t, strings, table, seen) for s in made]
    return out, table, english


def _entry(s: Step, t: dict, strings: Strings, table: list, seen: dict) -> int:
    item = (str(s.number), strings(heading(s, t)), strings(s.formula),
            tuple(map(strings, s.text)), tuple(map(strings, s.lines)), tuple(map(strings, s.notes)))
    if item not in seen:
        seen[item] = len(table)
        table.append([item[0], item[1], item[2], list(item[3]), list(item[4]), list(item[5])])
    return seen[item]


def step_numbers(key: str, numbers_of: dict[str, list[str]], masked: bool) -> list[str]:
    """The explain steps of a cell of ``key``: the steps named for it, else the first that shows ``key``."""
    if masked:
        return [str(n) for n in MASKED_STEPS]
    if key in STEPS_OF:
        return [str(n) for n in STEPS_OF[key]]
    return [number for number, keys in numbers_of.items() if key in keys][:1]


def _find(lines: list[str], pattern: str) -> list[int]:
    found = re.compile(pattern)
    return [k for k, line in enumerate(lines) if found.search(line)]


def highlight(trace: Trace, number: str, key: str, lines: list[str], cell: tuple[int, int, int],
              masked: bool) -> list[int] | None:
    """Which of a step's lines hold the cell (i, j) of ``key`` in ``head`` (``cell``: head, row, column; 0-based);
    None when the cell's line is past the keys explain writes out (:data:`MAX_LINES`)."""
    head, i, j = cell
    not_sub = "(?![₀-₉])"
    if number == "3" and key in ("queries", "keys", "values"):
        if key != "queries" and i >= MAX_LINES:
            return None
        return _find(lines, f"[: ]{key[0]}{re.escape(subscript(i + 1))}{not_sub} =")
    if number == "4":
        if j >= MAX_LINES:
            return None
        prime = explain_step.scored(trace)[2]
        return _find(lines, f"k{re.escape(prime)}{re.escape(subscript(j + 1))}{not_sub}[ ·]")
    if number == "5" and key == "weights" and not masked:
        return _softmax_lines(trace, lines, head, i, j)
    if number == "7":
        return list(range(len(lines)))
    return []


def _softmax_lines(trace: Trace, lines: list[str], head: int, i: int, j: int) -> list[int] | None:
    """Step 5's lines of weight (i, j): its exponential, its quotient, and the row's sum."""
    if j >= MAX_LINES:
        return None
    allowed = explain_step.allowed_row(trace, i, head)
    shown = [k for k in range(min(trace.spec.m, MAX_LINES)) if allowed[k]]
    if j not in shown:
        return []
    rank = shown.index(j)
    exps = [k for k, line in enumerate(lines) if ": exp(" in line and not line.startswith("sink: ")]
    quotients = [k for k, line in enumerate(lines) if ": a = " in line]
    total = [k for k, line in enumerate(lines) if line.startswith("Σ = ")]
    return [x[rank] for x in (exps, quotients) if rank < len(x)] + total


def cell_steps(trace: Trace, shown: Shown, focus_query: int, english: dict) -> dict | None:
    """For every shown cell of a table: its steps (numbers) and, for each, the highlighted lines, as
    ``{"s": [[step numbers per shown column] per shown row], "hl": [[[lines…] per step] …]}`` (None where rows or
    columns are left out); None for a table of a head whose steps the page does not write out."""
    head = shown.head or 0
    if (head, focus_query) not in english:
        return None
    first = english[(head, focus_query)]
    numbers_of = {str(s.number): [n.key for n in s.numbers] for s in first}
    key, per_query = shown.block.key, shown.block.rows is trace.spec.tokens
    numbers_s, lines_s = [], []
    for i in shown.rows:
        query = i if per_query and i is not None else focus_query
        lines_of = {str(s.number): s.lines for s in english.get((head, query), first)}
        row_steps, row_hl = [], []
        for j in shown.columns:
            if i is None or j is None:
                row_steps.append(None)
                row_hl.append(None)
                continue
            masked = masked_at(trace, shown, i, j)
            numbers = step_numbers(key, numbers_of, masked)
            row_steps.append(numbers)
            row_hl.append([highlight(trace, n, key, lines_of.get(n, []), (head, i, j), masked) for n in numbers])
        numbers_s.append(row_steps)
        lines_s.append(row_hl)
    return {"s": numbers_s, "hl": lines_s}
