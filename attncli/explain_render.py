"""Steps -> Rich renderables (returned, never printed) and -> strict JSON.

Both read the same :class:`~attncli.explain.Step` objects, so the tables and the
JSON always show the same numbers.
"""

from __future__ import annotations

import json
import math

from rich.console import Group
from rich.padding import Padding
from rich.text import Text

from attncli.explain import Numbers, Step
from attncli.render import View, matrix_table


def heading(step: Step, t: dict) -> str:
    """``Step 4 · Score the query against every key`` (an extra step: ``Step positional · …``)."""
    return f"{t['step']} {step.number} · {step.title}"


def step_renderable(step: Step, t: dict, view: View = View()) -> Group:
    """One step: heading, formula, paragraphs, the worked lines, notes and tables."""
    parts: list = [Text(heading(step, t), style="bold underline"), Text(f"{t['formula']}: {step.formula}", style="bold cyan")]
    parts += [Padding(Text(paragraph), (1, 0, 0, 0), expand=False) for paragraph in step.text]
    if step.lines:
        parts.append(Padding(Text("\n".join(step.lines), style="green"), (1, 0, 0, 2), expand=False))
    parts += [Padding(Text(note, style="bold red"), (1, 0, 0, 0), expand=False) for note in step.notes]
    for numbers in step.numbers:
        parts.append(Padding(table(numbers, view), (1, 0, 0, 0), expand=False))
    return Group(*parts)


def table(numbers: Numbers, view: View):
    return matrix_table(numbers.title, numbers.matrix, numbers.rows, numbers.columns, view, numbers.masked, numbers.heat)


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
    return (json.dumps(body, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


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
