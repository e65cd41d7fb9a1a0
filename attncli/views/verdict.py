"""``attncli check --against``'s report: each array's errors against the float64 truth, its budget and verdict."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from attncli.core.errors import quoted
from attncli.core.verdict import Finding

AXES = {"head_outputs": ("head", "query", "column"), "lse": ("head", "query"), "weights": ("head", "query", "key"),
        "grad_kernel_queries": ("head", "query", "column"), "grad_kernel_keys": ("key/value head", "key", "column"),
        "grad_values": ("key/value head", "key", "column")}


def cell(f: Finding, tokens: list[str], context_tokens: list[str]) -> str:
    """``head 2, query 5 ('x5'), key 3 ('c3')``: the worst cell, counting from 1."""
    parts = []
    for axis, index in zip(AXES[f.key], f.worst, strict=True):
        label = {"query": tokens, "key": context_tokens}.get(axis)
        parts.append(f"{axis} {index + 1}" + (f" ({quoted(label[index])})" if label else ""))
    return ", ".join(parts)


def report(findings: list[Finding], dtype: str, tokens: list[str], context_tokens: list[str]) -> list:
    """A title line, then a table (array, largest and RMS error, the eager computation's, the budget, the verdict)
    within 80 columns; then the worst cell of each array outside its budget."""
    title = Text(f"Against the float64 truth, in {dtype} (budget: 2 × the eager {dtype} error + 2 ulp)", style="bold")
    table = Table(header_style="bold")  # the title a line of its own: not wrapped at the table's width, nor padded
    for column in ("array", "largest\nerror", "RMS\nerror", f"eager\n{dtype}", "budget", "verdict"):
        table.add_column(column, justify="left" if column in ("array", "verdict") else "right", no_wrap=True)
    for f in findings:
        verdict = Text("within", style="green") if f.within else Text("OUTSIDE", style="bold red")
        table.add_row(f.key, f"{f.largest:.2e}", f"{f.rms:.2e}", f"{f.eager:.2e}", f"{f.budget:.2e}", verdict)
    lines = [Group(title, table)]
    for f in findings:
        if not f.within:
            lines.append(Text(f"{f.key}: worst at {cell(f, tokens, context_tokens)}:\n"
                              f"  {f.got!r} where the truth is {f.truth!r}"))  # (its error: the table's row)
    return lines


def report_json(findings: list[Finding], dtype: str, tokens: list[str], context_tokens: list[str]) -> bytes:
    """The same verdict as one JSON object: ``dtype``, ``within`` (every array), and per array its errors, budget,
    verdict and worst cell (``worst``: indices counting from 1, ``where``: the same in words; non-finite numbers as
    null)."""
    import json
    import math

    from attncli.outputs.serialize import escape_controls

    def number(x: float) -> float | None:
        return x if math.isfinite(x) else None

    rows = [{"key": f.key, "largest": number(f.largest), "rms": number(f.rms), "eager": number(f.eager),
             "budget": number(f.budget), "within": f.within, "worst": [i + 1 for i in f.worst],
             "where": cell(f, tokens, context_tokens), "truth": number(f.truth), "got": number(f.got)}
            for f in findings]
    body = {"dtype": dtype, "within": all(f.within for f in findings), "findings": rows}
    return escape_controls((json.dumps(body, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"))

