"""``attncli check``'s report: each answered quantity, right or where it first goes wrong, with a hint; as text or JSON."""

from __future__ import annotations

import json
import math

from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from attncli.core.errors import visible
from attncli.teach.check import shown
from attncli.teach.texts import texts


def check_report(findings: list, tokens: list[str], key_tokens: list[str], tol: float, lang: str = "en") -> Group:
    """``attncli check``: each answered quantity, right or where it first goes wrong, with a hint.

    Messages and hints too long for the terminal wrap under themselves, not under the marks.
    """
    t = texts(lang)
    words = t["check"]
    lines: list = [Text(words["title"].format(tol=f"{tol:g}"), style="bold")]
    for f in findings:
        if f.ok:
            message = Text(words["correct"], style="green")
        elif f.problem:
            message = Text(words["wrong"].format(problem=f.problem), style="red")
        else:
            where = cell_name(f.cell, f.key, tokens, key_tokens, words["cell"])
            message = Text(words["wrong_at"].format(cell=where, expected=shown(f.expected), given=shown(f.given)), style="red")
        row = Table.grid()
        row.add_column(no_wrap=True)
        row.add_column()
        row.add_row(Text.assemble(("  ✓ ", "green") if f.ok else ("  ✗ ", "bold red"), f"{t['step'].lower()} {f.step}  {f.key:<13} "),
                    message)
        lines.append(row)
        if f.hint and not f.ok:
            lines.append(Padding(Text(words["hint"].format(hint=f.hint), style="yellow"), (0, 0, 0, 6), expand=False))
    return Group(*lines)


def check_json(findings: list, tokens: list[str], key_tokens: list[str], tol: float, lang: str = "en") -> bytes:
    """``attncli check --format json``: one object, ``{"tolerance", "correct", "lang", "findings": [...]}``.

    Each finding has ``key``, ``step``, ``ok``, ``cell`` (the first wrong cell counting from 1, as the text
    counts: [column], [row, column] or [head, row, column]; null when right or when the shape is wrong),
    ``where`` (that cell in words), ``expected``, ``given`` (null: the cell was left null), ``problem`` (a
    wrong shape) and ``hint`` (null, or the known mistake the answer matches).
    """
    words = texts(lang)["check"]["cell"]
    items = []
    for f in findings:
        items.append({
            "key": f.key, "step": f.step, "ok": f.ok,
            "cell": None if f.cell is None else [i + 1 for i in f.cell],
            "where": None if f.cell is None else cell_name(f.cell, f.key, tokens, key_tokens, words),
            "expected": f.expected, "given": None if f.given is None or math.isnan(f.given) else f.given,
            "problem": f.problem, "hint": None if f.ok else f.hint,
        })
    body = {"tolerance": tol, "correct": all(f.ok for f in findings), "lang": lang, "findings": items}
    from attncli.outputs.serialize import escape_controls

    return escape_controls((json.dumps(body, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"))


def cell_name(cell: tuple[int, ...], key: str, tokens: list[str], key_tokens: list[str], words: dict | None = None) -> str:
    """Name a cell as people count: ``head 1, row 2 ('Input 2'), column 3`` (``words``: another language's)."""
    words = words or texts("en")["check"]["cell"]
    parts = []
    names = ("head", "row", "column")[3 - len(cell):] if len(cell) <= 3 else ("head", "row", "column")
    for name, i in zip(names, cell):
        token = ""
        if name == "row":
            labels = key_tokens if key in ("keys", "values", "keys_rotated") else tokens
            token = words["token"].format(token=visible(labels[i])) if i < len(labels) else ""
        parts.append(words[name].format(i=i + 1) + token)
    return words["sep"].join(parts)
