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


AXES_ZH = {"head": "头", "query": "查询", "column": "列", "key/value head": "键值头", "key": "键"}
WORDS = {  # the text report's words (the JSON's are a contract: English)
    "en": {"title": "Against the float64 truth, in {dtype} (budget: 2 × the eager {dtype} error + 2 ulp)",
           "columns": ("array", "largest\nerror", "RMS\nerror", "eager\n{dtype}", "budget", "verdict"),
           "within": "within", "outside": "OUTSIDE",
           "worst": "{key}: worst at {cell}:\n  {got} where the truth is {truth}"},
    "zh": {"title": "与 float64 真值比较，精度 {dtype}（允许误差：eager {dtype} 误差的 2 倍 + 2 ulp）",
           "columns": ("数组", "最大\n误差", "RMS\n误差", "eager\n{dtype}", "允许误差", "结论"),
           "within": "在范围内", "outside": "超出",
           "worst": "{key}：误差最大处在 {cell}：\n  得到 {got}，真值是 {truth}"},
}


def cell(f: Finding, tokens: list[str], context_tokens: list[str], lang: str = "en") -> str:
    """``head 2, query 5 ('x5'), key 3 ('c3')``: the worst cell, counting from 1 (in ``lang``)."""
    parts = []
    for axis, index in zip(AXES[f.key], f.worst, strict=True):
        label = {"query": tokens, "key": context_tokens}.get(axis)
        name = AXES_ZH[axis] if lang == "zh" else axis
        parts.append(f"{name} {index + 1}" + (f" ({quoted(label[index])})" if label else ""))
    return ("，" if lang == "zh" else ", ").join(parts)


def report(findings: list[Finding], dtype: str, tokens: list[str], context_tokens: list[str], lang: str = "en") -> list:
    """A title line, then a table (array, largest and RMS error, the eager computation's, the budget, the verdict)
    within 80 columns; then the worst cell of each array outside its budget; in ``lang``."""
    w = WORDS.get(lang, WORDS["en"])
    title = Text(w["title"].format(dtype=dtype), style="bold")
    table = Table(header_style="bold")  # the title a line of its own: not wrapped at the table's width, nor padded
    for k, column in enumerate(w["columns"]):
        table.add_column(column.format(dtype=dtype), justify="left" if k in (0, 5) else "right", no_wrap=True)
    for f in findings:
        verdict = Text(w["within"], style="green") if f.within else Text(w["outside"], style="bold red")
        table.add_row(f.key, f"{f.largest:.2e}", f"{f.rms:.2e}", f"{f.eager:.2e}", f"{f.budget:.2e}", verdict)
    lines = [Group(title, table)]
    for f in findings:
        if not f.within:  # (its error: the table's row)
            lines.append(Text(w["worst"].format(key=f.key, cell=cell(f, tokens, context_tokens, lang), got=repr(f.got),
                                                truth=repr(f.truth))))
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

