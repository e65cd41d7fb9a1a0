"""Where a number of the page comes from: the steps of ``attncli explain`` for its query and head, and the lines
of those steps that hold its arithmetic.

Nothing here writes a sentence: the steps are explain's own (:func:`attncli.teach.explain.walkthrough.steps`, in
English and Chinese); this module only says which step and which of its lines belong to a cell.
"""

from __future__ import annotations

import re

from attncli.core.stages import QUANTITIES
from attncli.core.trace import Trace
from attncli.teach.explain import step as explain_step
from attncli.teach.explain.step import MAX_LINES, Focus, Step
from attncli.teach.explain.view import heading
from attncli.teach.explain.walkthrough import steps
from attncli.teach.lines import subscript
from attncli.teach.page.tables import Shown, masked_at
from attncli.teach.texts import texts

MAX_FOCUSES = 160  # (query, head) pairs written out per language; beyond, the panel names explain's command
# explain's step 4 reads a head's whole n × m scores (is Q·Kᵀ symmetric?): the pairs written out are fewer as
# n·m grows, so that a large document's page is made in seconds (n = m = 4096: 1 pair; 1024: 28; 512: 114)
WORK_CELLS = 30_000_000  # (query, head) pairs × n × m, at most (about 10 s of explain on a 2-core machine)
STEPS_OF = {key: q.steps for key, q in QUANTITIES.items() if q.steps}  # the explain steps of its cells (stage list)
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


def explained(trace: Trace, queries: list[int]) -> list[tuple[int, int]]:
    """The (head, query) pairs whose steps the page writes out: head by head, every query shown, at most
    :data:`MAX_FOCUSES` of them, and fewer for a large n × m (:data:`WORK_CELLS`)."""
    spec = trace.spec
    count = min(MAX_FOCUSES, max(1, WORK_CELLS // (spec.n * spec.m)))
    return [(h, i) for h in range(spec.heads) for i in queries][:count]


def focus_steps(trace: Trace, pairs: list[tuple[int, int]], strings: Strings) -> tuple[dict, list, dict]:
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
        for h, i in pairs:
            made = steps(trace, Focus(i, h, lang))
            english.update({(h, i): made} if lang == "en" else {})
            out[lang][f"{h},{i}"] = [_entry(s, t, strings, table, seen) for s in made]
    return out, table, english


def _entry(s: Step, t: dict, strings: Strings, table: list, seen: dict) -> int:
    """The step's index in ``table``: [number, heading, formula, paragraphs, lines, notes, the keys of its tables]."""
    item = (str(s.number), strings(heading(s, t)), strings(s.formula), tuple(map(strings, s.text)),
            tuple(map(strings, s.lines)), tuple(map(strings, s.notes)), tuple(n.key for n in s.numbers))
    if item not in seen:
        seen[item] = len(table)
        table.append([item[0], item[1], item[2], *map(list, item[3:])])
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
    if number == "5" and key in ("max_logits", "qk_clip_gamma", "qk_clip_max_logits"):  # the head's S_max, γ lines
        return _find(lines, "^S_max = " if key == "max_logits" else "^γ = ")
    if number == "7":
        return list(range(len(lines)))
    if number == "indexer" and key in ("index_scores", "index_mask"):  # one line per key, in order
        return None if j >= MAX_LINES else [j]
    if number == "rope" and key == "queries_rotated":  # the query's pair that explain turns, if it holds column j
        d = re.escape(subscript(j + 1))
        return _find(lines, f"\\(q{d}, |, q{d}\\)")
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


def per_query(trace: Trace, shown: Shown) -> bool:
    """Is a row of this table a query (Q, S, A, H …: its own query's steps), not a key (K, V: the first query's)?"""
    return shown.block.rows is trace.spec.tokens and QUANTITIES[shown.block.key].shape.split()[-2:][0] != "m"


def cell_steps(trace: Trace, shown: Shown, focus_query: int, english: dict) -> dict | None:
    """For every shown cell of a table: its steps (numbers) and, for each, the highlighted lines, as
    ``{"s": [[step numbers per shown column] per shown row], "hl": [[[lines…] per step] …]}``; None where rows or
    columns are left out or the page does not write out the row's steps (and for the whole table, when none)."""
    head = shown.head or 0
    key, by_row = shown.block.key, per_query(trace, shown)
    numbers_s, lines_s = [], []
    for i in shown.rows:
        query = i if by_row and i is not None else focus_query
        made = english.get((head, query))
        if i is None or made is None:
            numbers_s.append([None] * len(shown.columns))
            lines_s.append([None] * len(shown.columns))
            continue
        numbers_of = {str(s.number): [n.key for n in s.numbers] for s in made}
        lines_of = {str(s.number): s.lines for s in made}
        row_steps, row_hl = [], []
        for j in shown.columns:
            masked = j is not None and masked_at(trace, shown, i, j)
            numbers = None if j is None else step_numbers(key, numbers_of, masked)
            row_steps.append(numbers)
            row_hl.append(None if j is None else
                          [highlight(trace, n, key, lines_of.get(n, []), (head, i, j), masked) for n in numbers])
        numbers_s.append(row_steps)
        lines_s.append(row_hl)
    return None if all(x is None for row in numbers_s for x in row) else {"s": numbers_s, "hl": lines_s}
