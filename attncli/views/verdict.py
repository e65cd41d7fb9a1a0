"""``attncli check --against``'s report: each array's errors against the float64 truth, its budget and verdict."""

from __future__ import annotations

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
    """A table (array, largest and RMS error, the eager computation's, the budget, the verdict), then the worst
    cell of each array outside its budget."""
    table = Table(title=f"Against the float64 truth, in {dtype} (budget: 2 × the eager {dtype} error + 2 ulp)",
                  title_justify="left", header_style="bold")
    for column in ("array", "largest error", "RMS error", f"eager {dtype}", "budget", "verdict"):
        table.add_column(column, justify="left" if column in ("array", "verdict") else "right", no_wrap=True)
    for f in findings:
        verdict = Text("within", style="green") if f.within else Text("OUTSIDE", style="bold red")
        table.add_row(f.key, f"{f.largest:.3e}", f"{f.rms:.3e}", f"{f.eager:.3e}", f"{f.budget:.3e}", verdict)
    lines = [table]
    for f in findings:
        if not f.within:
            lines.append(Text(f"{f.key}: worst at {cell(f, tokens, context_tokens)}: {f.got!r} where the truth is "
                              f"{f.truth!r} (error {f.largest:.3e}, budget {f.budget:.3e})"))
    return lines
