"""Every matrix a result shows, in the order a person computes them, with its name and formula.

Tables, Markdown, LaTeX and CSV all show this one list, so a new quantity appears in
every view when it is added here once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncli.core.trace import Trace
from attncli.outputs.formulas import (
    output_formula,
    output_latex,
    scale_text,
    scaled_latex,
    score_formula,
    weights_formula,
    weights_latex,
)
from attncli.outputs.numbers import dims

PER_HEAD = ("queries", "keys", "values", "scores", "scaled_scores", "weights", "head_outputs")


@dataclass(frozen=True)
class Block:
    """One matrix to show: its name, its formula as text and as LaTeX, and its labels."""

    key: str  # the JSON key
    name: str  # "Head 2 · Queries"
    text: str  # "Q = X·W_Q + b_Q"
    latex: str  # "Q^{(2)} = X W_Q^{(2)} + b_Q^{(2)}"
    matrix: np.ndarray
    rows: list[str]
    columns: list[str]
    masked: np.ndarray | None = None  # True = masked (scaled scores only)
    title: str = ""  # the table's title, when it is not "name  text"

    @property
    def heading(self) -> str:
        """The title of the table: ``Head 2 · Queries  Q = X·W_Q + b_Q``."""
        return self.title or f"{self.name}  {self.text}"


def blocks(trace: Trace, head: int | None = None, only: list[str] | None = None) -> list[Block]:
    """Every matrix of ``attncli compute``, in its order; ``head`` (0-based) keeps one head."""
    spec = trace.spec
    x_text, x_tex = ("(X + P)", "(X + P)") if spec.positional is not None else ("X", "X")
    x_sum = "X + P" if spec.positional is not None else "X"
    found = [Block("inputs", "Inputs", "X", "X", spec.inputs, spec.tokens, dims(spec.inputs.shape[1]))]
    if spec.positional is not None:
        found.append(Block("positional", f"Positional encoding ({spec.positional_name})", "P", "P", spec.positional, spec.tokens,
                           dims(spec.positional.shape[1]), title=f"Positional encoding  P ({spec.positional_name})"))
        found.append(Block("positional", "Inputs with positions", "X + P", "X + P", spec.embedded, spec.tokens, dims(spec.embedded.shape[1])))
    if spec.context is not None:
        found.append(Block("context", "Context", "C", "C", spec.context, spec.context_tokens, dims(spec.context.shape[1])))
    c_text, c_tex = ("C", "C") if spec.context is not None else (x_text, x_tex)
    for h in range(spec.heads) if head is None else [head]:
        prefix = f"Head {h + 1} · " if spec.heads > 1 else ""
        up = (lambda s: f"{s}^{{({h + 1})}}") if spec.heads > 1 else (lambda s: s)  # noqa: B023  (used in this pass)
        bias = lambda b, sym: (f" + {sym}", f" + {up(sym)}") if b is not None else ("", "")  # noqa: B023, E731
        q, k, v, s, a, hh = (up(sym) for sym in "QKVSAH")
        scaled_tex = scaled_latex(spec, s)
        found += [
            Block("queries", f"{prefix}Queries", f"Q = {x_text}·W_Q" + bias(spec.b_q, "b_Q")[0],
                  f"{q} = {x_tex} {up('W_Q')}" + bias(spec.b_q, "b_Q")[1], trace.queries[h], spec.tokens, dims(spec.d_k)),
            Block("keys", f"{prefix}Keys", f"K = {c_text}·W_K" + bias(spec.b_k, "b_K")[0],
                  f"{k} = {c_tex} {up('W_K')}" + bias(spec.b_k, "b_K")[1], trace.keys[h], spec.context_tokens, dims(spec.d_k)),
            Block("values", f"{prefix}Values", f"V = {c_text}·W_V" + bias(spec.b_v, "b_V")[0],
                  f"{v} = {c_tex} {up('W_V')}" + bias(spec.b_v, "b_V")[1], trace.values[h], spec.context_tokens, dims(spec.d_v)),
        ]
        if trace.scores is not None and trace.scaled_scores is not None and trace.weights is not None:
            score_tex = rf"{s} = {up('v')}^\top \tanh({q} W_1 + {k} W_2)" if spec.score == "additive" else rf"{s} = {q} {{{k}}}^\top"
            masked = None if spec.mask is None else ~spec.mask
            found += [
                Block("scores", f"{prefix}Scores", score_formula(spec), score_tex, trace.scores[h], spec.tokens, spec.context_tokens),
                Block("scaled_scores", f"{prefix}Scaled scores", scale_text(spec), scaled_tex, trace.scaled_scores[h],
                      spec.tokens, spec.context_tokens, masked,
                      title=f"{prefix}Scaled scores  {scale_text(spec)}{' (scale: none)' if spec.scale_name == 'none' else ''}"),
                Block("weights", f"{prefix}Weights", weights_formula(spec), f"{a} = {weights_latex(spec, scaled_tex)}",
                      trace.weights[h], spec.tokens, spec.context_tokens),
            ]
        found.append(Block("head_outputs", f"{prefix}Head output", "H = A·V", f"{hh} = {a} {v}", trace.head_outputs[h], spec.tokens, dims(spec.d_v)))
    found.append(Block("output", "Output", output_formula(spec), output_latex(spec), trace.output, spec.tokens, dims(trace.output.shape[1])))
    if trace.residual is not None and trace.normalized is not None:
        found.append(Block("residual", "Residual", f"R = {x_sum} + Y", f"R = {x_sum} + Y", trace.residual, spec.tokens, dims(trace.residual.shape[1])))
        found.append(Block("normalized", "Add & Norm", "LayerNorm(R)", r"\operatorname{LayerNorm}(R)", trace.normalized, spec.tokens, dims(trace.normalized.shape[1])))
    return [b for b in found if only is None or b.key in only]
