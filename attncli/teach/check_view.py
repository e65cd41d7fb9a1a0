"""``attncli check``'s report: each answered quantity, right or where it first goes wrong, with a hint."""

from __future__ import annotations

from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from attncli.core.errors import visible
from attncli.teach.check import shown


def check_report(findings: list, tokens: list[str], key_tokens: list[str], tol: float) -> Group:
    """``attncli check``: each answered quantity, right or where it first goes wrong, with a hint.

    Messages and hints too long for the terminal wrap under themselves, not under the marks.
    """
    lines: list = [Text(f"Your answer, step by step (tolerance {tol:g})", style="bold")]
    for f in findings:
        if f.ok:
            message = Text("correct", style="green")
        elif f.problem:
            message = Text(f"wrong: {f.problem}", style="red")
        else:
            where = cell_name(f.cell, f.key, tokens, key_tokens)
            message = Text(f"wrong at {where}: expected {shown(f.expected)}, yours {shown(f.given)}", style="red")
        row = Table.grid()
        row.add_column(no_wrap=True)
        row.add_column()
        row.add_row(Text.assemble(("  ✓ ", "green") if f.ok else ("  ✗ ", "bold red"), f"step {f.step}  {f.key:<13} "), message)
        lines.append(row)
        if f.hint and not f.ok:
            lines.append(Padding(Text(f"hint: {f.hint}", style="yellow"), (0, 0, 0, 6), expand=False))
    return Group(*lines)


def cell_name(cell: tuple[int, ...], key: str, tokens: list[str], key_tokens: list[str]) -> str:
    """Name a cell as people count: ``head 1, row 2 ('Input 2'), column 3``."""
    parts = []
    names = ("head", "row", "column")[3 - len(cell):] if len(cell) <= 3 else ("head", "row", "column")
    for name, i in zip(names, cell):
        token = ""
        if name == "row":
            labels = key_tokens if key in ("keys", "values", "keys_rotated") else tokens
            token = f" ('{visible(labels[i])}')" if i < len(labels) else ""
        parts.append(f"{name} {i + 1}{token}")
    return ", ".join(parts)
