"""Trace -> Rich tables, in the order a person computes them.

Render functions return renderables and never print; the CLI chooses the
console.  Numbers are shown with ``precision`` decimals (whole numbers without
any), large matrices are summarised with an ellipsis unless ``full``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.table import Table
from rich.text import Text

from attncli.core.attention import Trace
from attncli.core.errors import visible
from attncli.outputs.formulas import output_formula, scale_text, score_formula, weights_formula
from attncli.outputs.numbers import EDGE_COLS, EDGE_ROWS, MAX_COLS, MAX_ROWS, all_whole, dims, format_number, pick

MASKED = "masked"


@dataclass(frozen=True)
class View:
    precision: int = 4
    full: bool = False


def label(text: str) -> Text:
    """A token for a table: plain text (``[unused1]`` is not Rich markup), control characters visible."""
    return Text(visible(text))


def matrix_table(
    title: str,
    matrix: np.ndarray,
    rows: list[str],
    columns: list[str] | None = None,
    view: View = View(),
    masked: np.ndarray | None = None,
    heat: bool = False,
) -> Table:
    """One matrix as a table: row labels down the side, column labels across the top.

    ``masked`` (same shape, True = masked) shows those cells as ``masked``;
    ``heat`` shades each cell by its value in [0, 1] (attention weights).
    """
    n, d = matrix.shape
    columns = columns if columns is not None else [str(j) for j in range(1, d + 1)]
    row_index = pick(n, MAX_ROWS, EDGE_ROWS, view.full)
    col_index = pick(d, MAX_COLS, EDGE_COLS, view.full)
    title = f"{title}   {n} × {d}"
    table = Table(title=title, title_justify="left", title_style="bold", header_style="bold", min_width=len(title) + 1)
    table.add_column("", style="bold", no_wrap=True)
    for j in col_index:
        table.add_column("…" if j is None else label(columns[j]), justify="right", no_wrap=True)
    whole = all_whole(matrix)
    for i in row_index:
        if i is None:
            table.add_row("⋮", *["⋮" for _ in col_index])
            continue
        cells: list[Text | str] = []
        for j in col_index:
            if j is None:
                cells.append("…")
            elif masked is not None and masked[i, j]:
                cells.append(Text(MASKED, style="dim italic"))
            else:
                text = format_number(matrix[i, j], view.precision, whole)
                cells.append(Text(text, style=_heat_style(matrix[i, j])) if heat else text)
        table.add_row(label(rows[i]), *cells)
    return table


def _heat_style(weight: float) -> str:
    """Stronger colour for more weight: a blue that deepens with the weight, under black or white text.

    The text colour is the one with more contrast against the cell (WCAG relative luminance):
    black up to a weight of about 0.8, white on the deepest blues.
    """
    w = float(min(max(weight, 0.0), 1.0))
    rgb = [int(round(255 + (t - 255) * w)) for t in (30, 80, 200)]
    linear = [c / 3294.6 if c <= 10.31 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    white_wins = 1.05 / (luminance + 0.05) > (luminance + 0.05) / 0.05
    return f"{'white' if white_wins else 'black'} on rgb({rgb[0]},{rgb[1]},{rgb[2]})"


def head_tables(trace: Trace, head: int, view: View = View()) -> list[tuple[str, Table]]:
    """(key, table) for Q, K, V, scores, scaled scores, weights and the output of one head (0-based)."""
    spec = trace.spec
    prefix = f"Head {head + 1} · " if spec.heads > 1 else ""
    x, c = "X", ("C" if spec.context is not None else "X")
    plus = lambda b, name: f" + {name}" if b is not None else ""  # noqa: E731
    q_rows, k_rows = spec.tokens, spec.context_tokens
    masked = None if spec.mask is None else ~spec.mask
    tables = [
        ("queries", matrix_table(f"{prefix}Queries  Q = {x}·W_Q{plus(spec.b_q, 'b_Q')}", trace.queries[head], q_rows, dims(spec.d_k), view)),
        ("keys", matrix_table(f"{prefix}Keys  K = {c}·W_K{plus(spec.b_k, 'b_K')}", trace.keys[head], k_rows, dims(spec.d_k), view)),
        ("values", matrix_table(f"{prefix}Values  V = {c}·W_V{plus(spec.b_v, 'b_V')}", trace.values[head], k_rows, dims(spec.d_v), view)),
    ]
    if trace.scores is not None and trace.scaled_scores is not None and trace.weights is not None:
        scaled = scale_text(spec)
        tables += [
            ("scores", matrix_table(f"{prefix}Scores  {score_formula(spec)}", trace.scores[head], q_rows, k_rows, view)),
            ("scaled_scores", matrix_table(f"{prefix}Scaled scores  {scaled}{' (scale: none)' if spec.scale_name == 'none' else ''}", trace.scaled_scores[head], q_rows, k_rows, view, masked)),
            ("weights", matrix_table(f"{prefix}Weights  {weights_formula(spec)}", trace.weights[head], q_rows, k_rows, view, heat=True)),
        ]
    tables.append(("head_outputs", matrix_table(f"{prefix}Head output  H = A·V", trace.head_outputs[head], q_rows, dims(spec.d_v), view)))
    return tables


def compute_tables(trace: Trace, view: View = View(), head: int | None = None, only: list[str] | None = None) -> list[Table]:
    """Every table of ``attncli compute``: inputs, context, each head, the output.

    ``head`` (0-based) keeps one head; ``only`` keeps the tables of those JSON keys.
    """
    spec = trace.spec
    tables = [("inputs", matrix_table("Inputs  X", spec.inputs, spec.tokens, None, view))]
    if spec.positional is not None:
        tables.append(("positional", matrix_table(f"Positional encoding  P ({spec.positional_name})", spec.positional, spec.tokens, None, view)))
        tables.append(("positional", matrix_table("Inputs with positions  X + P", spec.embedded, spec.tokens, None, view)))
    if spec.context is not None:
        tables.append(("context", matrix_table("Context  C", spec.context, spec.context_tokens, None, view)))
    for h in range(spec.heads) if head is None else [head]:
        tables += head_tables(trace, h, view)
    tables.append(("output", matrix_table(f"Output  {output_formula(spec)}", trace.output, spec.tokens, None, view)))
    if trace.residual is not None and trace.normalized is not None:
        x = "X + P" if spec.positional is not None else "X"
        tables.append(("residual", matrix_table(f"Residual  R = {x} + Y", trace.residual, spec.tokens, None, view)))
        tables.append(("normalized", matrix_table("Add & Norm  LayerNorm(R)", trace.normalized, spec.tokens, None, view)))
    return [table for key, table in tables if only is None or key in only]
