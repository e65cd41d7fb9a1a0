"""``attncli check``'s report: each answered quantity, right or where it first goes wrong, with a hint;
as text or JSON."""

from __future__ import annotations

import json
import math
import re

from rich.cells import cell_len
from rich.console import Group
from rich.text import Text

from attncli.core.errors import visible
from attncli.teach.check.compare import cell_name, shown
from attncli.teach.explain.view import GLUE, glued, wrap_cjk
from attncli.teach.texts import texts


def check_report(report, tokens: list[str], key_tokens: list[str], tol: float, lang: str = "en") -> Group:
    """``attncli check``: each answered quantity, right or where it first goes wrong, with a hint; then the notes.

    A hint already given for an earlier quantity is not repeated: "the same slip as weights above".
    Messages and hints too long for the terminal wrap under themselves, not under the marks.
    """
    t = texts(lang)
    words = t["check"]
    lines: list = [Text(words["title"].format(tol=f"{tol:g}"), style="bold")]
    first_with: dict[str, str] = {}  # hint -> the key it was first given for
    for f in report.findings:
        if f.ok:
            message = Text(words["correct"], style="green")
        elif f.problem:
            message = Text(words["wrong"].format(problem=f.problem), style="red")
        else:
            where = place(f, tokens, key_tokens, words["cell"])
            given = "nan" if getattr(f, "nan", False) else shown(f.given)  # a NaN written, not a null
            message = Text(words["wrong_at"].format(cell=where, expected=shown(f.expected), given=given),
                           style="red")
        lines.append(Marked(Text.assemble(("  ✓ ", "green") if f.ok else ("  ✗ ", "bold red"),
                                          f"{t['step'].lower()} {t['step_names'].get(f.step, f.step)}  {f.key:<13} "),
                            message))
        if f.hint and not f.ok:
            hint = f.hint if f.hint not in first_with else words["same_slip"].format(key=first_with[f.hint])
            first_with.setdefault(f.hint, f.key)
            lines.append(Indented(words["hint"].format(hint=hint), 6, "yellow"))
    lines += [Indented(note, 2) for note in report.notes]
    return Group(*lines)


COMMAND = re.compile(r"attncli \S.*\Z")  # a command the sentence ends with, to copy and run
VALUE = re.compile(r"\S+ (?:-?\d[\d.e+-]*|null|-inf)(?=[\s,，]|\Z)")  # a value with its word: "yours 1.2"


class Marked:
    """A finding's line: the mark, step and key, then the message wrapped under itself (no padding at the lines'
    ends), a value never split from the word before it."""

    def __init__(self, prefix: Text, message: Text):
        self.prefix, self.message = prefix, message

    def __rich_console__(self, console, options):
        indent = cell_len(self.prefix.plain)
        width = max(options.max_width - indent, 20)
        parts = wrap_cjk(glued(self.message.plain, width, VALUE), width)
        for k, part in enumerate(parts):
            text = Text(visible(part.replace(GLUE, " ")), style=self.message.style)
            yield Text.assemble(self.prefix if k == 0 else " " * indent, text)


class Indented:
    """A sentence wrapped under itself, ``indent`` cells in, between Chinese characters as between English words; a
    command it ends with is never broken: when the sentence does not fit one line, the command gets its own."""

    def __init__(self, text: str, indent: int, style: str = ""):
        self.text, self.indent, self.style = text, indent, style

    def __rich_console__(self, console, options):
        width = max(options.max_width - self.indent, 20)
        command = COMMAND.search(self.text)
        if command is None or cell_len(self.text) <= width:
            lines = wrap_cjk(self.text, width)
        else:
            lines = wrap_cjk(self.text[:command.start()].rstrip(), width) + shell_lines(command.group(), width)
        for line in lines:
            yield Text(" " * self.indent + visible(line), style=self.style)


def shell_lines(command: str, width: int) -> list[str]:
    r"""A command on lines of its own, two cells in: broken where it must be between its words, each broken line
    ending in a backslash, so that the lines copied together still run as one command.

    >>> shell_lines("attncli explain /a/long/path/homework.yaml --step 7", 44)
    ['  attncli explain \\', '    /a/long/path/homework.yaml --step 7']
    """
    lines, line = [], "  "
    for word in command.split(" "):
        if line.strip() and cell_len(f"{line} {word} \\") > width:
            lines.append(line + " \\")
            line = "    " + word
        else:
            line = f"{line} {word}" if line.strip() else line + word
    return [*lines, line]


def check_json(report, tokens: list[str], key_tokens: list[str], tol: float, lang: str = "en") -> bytes:
    """``attncli check --format json``: one object, ``{"tolerance", "correct", "lang", "findings": [...], "notes",
    "slips"}``.

    Each finding has ``key``, ``step``, ``ok``, ``cell`` (the first wrong cell counting from 1, as the text
    counts: [column], [row, column] or [head, row, column] of the answer as given; null when right or when the
    shape is wrong), ``where`` (that cell in words; for one row given without ``query:``, with the row it was
    compared with), ``expected``, ``given`` (null: the cell was left null), ``problem`` (a wrong shape) and
    ``hint`` (null, or the slip the answer shows).  ``notes`` are the report's closing sentences; ``slips`` the
    slips named, each ``{"name", "hint", "keys"}``.  Every sentence is in ``lang``.
    """
    words = texts(lang)["check"]["cell"]
    items = []
    for f in report.findings:
        items.append({
            "key": f.key, "step": f.step, "ok": f.ok,
            "cell": None if f.cell is None else [i + 1 for i in f.cell],
            "where": None if f.cell is None else place(f, tokens, key_tokens, words),
            "expected": number_or_null(f.expected), "given": number_or_null(f.given),
            "problem": f.problem, "hint": None if f.ok else f.hint,
        })
    body = {"tolerance": tol, "correct": all(f.ok for f in report.findings), "lang": lang, "findings": items,
            "notes": list(report.notes),
            "slips": [{key: value for key, value in slip.items() if not key.startswith("_")} for slip in report.slips]}
    from attncli.outputs.serialize import escape_controls

    return escape_controls((json.dumps(body, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"))


def number_or_null(value: float | None) -> float | None:
    """A value as strict JSON has it: a blank (null, or −inf written for a masked score) or a −inf bias is null."""
    return None if value is None or not math.isfinite(value) else value


def place(f, tokens: list[str], key_tokens: list[str], words: dict) -> str:
    """A finding's first wrong cell in words; for one row given without query:, in the row it was compared with."""
    if getattr(f, "where", None) is not None:
        return f.where
    return cell_name(((*f.row, *f.cell) if f.row is not None else f.cell), f.key, tokens, key_tokens, words)
