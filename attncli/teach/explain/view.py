"""Steps -> Rich renderables (returned, never printed) and -> strict JSON.

Both read the same :class:`~attncli.teach.explain.walkthrough.Step` objects, so the tables and the
JSON always show the same numbers.
"""

from __future__ import annotations

import json
import math
import re

from rich.cells import cell_len
from rich.console import Group
from rich.text import Text

from attncli.core.errors import visible
from attncli.teach.explain.walkthrough import Numbers, Step
from attncli.views.tables import View, matrix_table

CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")
TOKEN = re.compile(r"\s+|[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]"
                   r"|[^\s\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]+")
NO_LINE_START = set("，。、；：！？）》」』”’")
NO_LINE_END = set("（《「『“‘")
VECTOR, GLUE = re.compile(r"\[[^\[\]]*\]"), "\ue000"  # a written-out vector, and a space no line breaks at
GROUP = re.compile(r"\[[^\[\]]*\]|\([^()]*\)")  # in a formula, a vector or a bracketed pair: (a·cos φ − b·sin φ, …)


def wrap_cjk(text: str, width: int) -> list[str]:
    """Break a paragraph mixing Chinese and Latin text into lines of at most ``width`` cells.

    Rich wraps at spaces only, so a run of Chinese (which has none) jumps to the next
    line whole; here a line may break between any two Chinese characters, never inside a
    Latin word, never before closing punctuation, never after opening punctuation that moves down with it.

    >>> wrap_cjk("这是一个很长的句子，x·y 是点积。", 10)
    ['这是一个很', '长的句子，', 'x·y 是点', '积。']
    >>> wrap_cjk("这就是注意力（GQA）：每个头", 16)
    ['这就是注意力', '（GQA）：每个头']
    """
    lines, line = [], []
    for token in TOKEN.findall(text):
        if cell_len("".join(line) + token) > width and line and not token.isspace():
            while token in NO_LINE_START and len(line) > 1 and line[-1].isspace():
                line.pop()
            carry = []  # what goes down with the punctuation: a character, or a word (0.4683]), and any closing
            while token in NO_LINE_START and len(line) > 1 and (not carry or carry[0] in NO_LINE_START):
                carry.insert(0, line.pop())  # punctuation before it: （GQA）：
            while len(line) > 1 and line[-1] in NO_LINE_END:
                carry.insert(0, line.pop())  # and an opening bracket stays with what it opens
            lines.append("".join(line).rstrip())
            line = carry
        if line or not token.isspace():
            line.append(token)
    if line:
        lines.append("".join(line).rstrip())
    return lines


class Paragraph:
    """A paragraph that wraps Chinese text between characters (Rich wraps only at spaces), English at spaces."""

    def __init__(self, text: str, style: str = "", groups: re.Pattern = VECTOR):
        self.text, self.style, self.groups = text, style, groups

    def __rich_console__(self, console, options):
        width = options.max_width  # English too: no trailing space
        for line in wrap_cjk(glued(self.text, width, self.groups), width):
            yield Text(visible(line.replace(GLUE, " ")), style=self.style)


def glued(text: str, width: int, groups: re.Pattern = VECTOR) -> str:
    """``text`` with the spaces inside each written-out vector (each of ``groups``) that fits a line glued: no line
    breaks inside it."""
    return groups.sub(lambda m: m.group().replace(" ", GLUE) if cell_len(m.group()) <= width else m.group(), text)


class Worked:
    """The arithmetic lines, indented; a line too long for the terminal continues further indented."""

    def __init__(self, lines: list[str], style: str = "green"):
        self.lines, self.style = lines, style

    def __rich_console__(self, console, options):
        width = max(options.max_width - 6, 20)
        for line in self.lines:
            for k, part in enumerate(wrap_cjk(glued(line, width), width)):  # a vector that fits is not broken
                yield Text(("  " if k == 0 else "      ") + visible(part.replace(GLUE, " ")), style=self.style)


def heading(step: Step, t: dict) -> str:
    """``Step 4 · Score the query against every key`` (an extra step: ``Step positional · …``)."""
    if isinstance(step.number, str) and step.number in ("positional", "pre_norm", "rope", "add_norm", "residual",
                                                                       "backward"):
        return t["extra_heading"].format(key=step.number, title=step.title)
    return f"{t['step']} {step.number} · {step.title}"


def step_renderable(step: Step, t: dict, view: View = View()) -> Group:
    """One step: heading, formula, paragraphs, the worked lines, notes and tables."""
    parts: list = [Text(visible(heading(step, t)), style="bold underline"),  # a title may name a token
                   Paragraph(t["formula_line"].format(formula=step.formula), "bold cyan", GROUP)]
    blocks: list = [Paragraph(paragraph) for paragraph in step.text]
    if step.lines:
        blocks.append(Worked(step.lines))
    blocks += [Paragraph(note, "bold red") for note in step.notes]
    blocks += [table(numbers, view) for numbers in step.numbers]
    for block in blocks:  # a blank line before each (an empty Text: Padding would pad it with spaces)
        parts += [Text(""), block]
    return Group(*parts)


def table(numbers: Numbers, view: View):
    return matrix_table(numbers.title, numbers.matrix, numbers.rows, numbers.columns, view, numbers.masked,
                        numbers.heat)


def renderables(steps: list[Step], t: dict, view: View = View()) -> list:
    return [step_renderable(step, t, view) for step in steps]


def numbers_dict(numbers: Numbers) -> dict:
    """A table as JSON: title, labels and the full-precision values (a masked cell is ``null``)."""
    values = numbers.matrix.astype(object)
    if numbers.masked is not None:
        values[numbers.masked] = None
    return {"title": numbers.title, "rows": list(numbers.rows), "columns": list(numbers.columns),
            "values": [[None if v is None else float(v) for v in row] for row in values.tolist()]}


def step_dict(step: Step) -> dict:
    return {
        "step": step.number,
        "title": step.title,
        "formula": step.formula,
        "text": list(step.text),
        "lines": list(step.lines),
        "notes": list(step.notes),
        "numbers": {numbers.key: numbers_dict(numbers) for numbers in step.numbers},
    }


def to_json(steps: list[Step], header: dict, one: bool) -> bytes:
    """One JSON object: a single step's fields next to ``header``, or every step under ``steps``."""
    body = dict(header, **step_dict(steps[0])) if one else dict(header, steps=[step_dict(s) for s in steps])
    _check_finite(body)
    from attncli.outputs.serialize import escape_controls

    return escape_controls((json.dumps(body, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"))


def _check_finite(value) -> None:
    """Strict JSON: a NaN or infinity here is a bug, never a silent ``NaN`` in the output."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("a number in the explanation is not finite")
    if isinstance(value, dict):
        for v in value.values():
            _check_finite(v)
    elif isinstance(value, list):
        for v in value:
            _check_finite(v)
