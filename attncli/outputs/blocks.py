"""Every matrix a result shows, in the order a person computes them, with its name and formula.

Tables, Markdown, LaTeX and CSV all show this one list, so a new quantity appears in
every view when it is added here once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncli.core.stages import QUANTITIES
from attncli.core.trace import Trace
from attncli.outputs.formulas import (
    bias_text,
    norm_text,
    output_formula,
    output_latex,
    residual_formula,
    rope_text,
    scale_text,
    scaled_latex,
    score_formula,
    weights_formula,
    weights_latex,
)
from attncli.outputs.numbers import dims

PER_HEAD = tuple(key for key, q in QUANTITIES.items() if q.per_head)  # a matrix per head (head axis first)
KV_KEYS = tuple(key for key, q in QUANTITIES.items() if q.per_kv_head)  # one per key/value head


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
    """Every matrix of ``attncli compute``, in its order; ``head`` (0-based) keeps one query head.

    With grouped-query heads, each key/value head's K and V come once, before the first
    query head that uses it, titled with the query heads that share it.
    """
    from attncli.outputs.serialize import check_present

    check_present(trace, only)  # --only bias_query without a bias.query is an error, in every format
    spec = trace.spec
    x_text, x_tex = ("(X + P)", "(X + P)") if spec.positional is not None else ("X", "X")
    x_sum = "X + P" if spec.positional is not None else "X"
    found = [Block("inputs", "Inputs", "X", "X", spec.inputs, spec.tokens, dims(spec.inputs.shape[1]))]
    if spec.positional is not None:
        found.append(Block("positional", f"Positional encoding ({spec.positional_name})", "P", "P", spec.positional, spec.tokens,
                           dims(spec.positional.shape[1]), title=f"Positional encoding  P ({spec.positional_name})"))
        found.append(Block("positional", "Inputs with positions", "X + P", "X + P", spec.embedded, spec.tokens, dims(spec.embedded.shape[1])))
    if trace.normalized_inputs is not None:
        norm = norm_text(spec.pre_norm.kind)
        found.append(Block("normalized_inputs", "Normalised inputs", f"X̂ = {norm}({x_sum})",
                           rf"\hat X = \operatorname{{{norm}}}({x_sum})", trace.normalized_inputs, spec.tokens,
                           dims(trace.normalized_inputs.shape[1])))
        x_text, x_tex = "X̂", r"\hat X"
    if spec.context is not None:
        found.append(Block("context", "Context", "C", "C", spec.context, spec.context_tokens, dims(spec.context.shape[1])))
    c_text, c_tex = ("C", "C") if spec.context is not None else (x_text, x_tex)
    h_all, g = spec.heads, spec.kv_heads
    group = h_all // g
    wanted = set(only or ())  # the projections are shown only when asked for

    def projection(key: str, name: str, sym: str, tex: str, w: np.ndarray, b: np.ndarray | None, bias_key: str) -> list[Block]:
        """W and b of one projection (of one head), when ``--only`` names them."""
        shown = [Block(key, f"{name} projection", sym, tex, w, dims(w.shape[0]), dims(w.shape[1]))] if key in wanted else []
        if b is not None and bias_key in wanted:
            b_sym = "b" + sym[1:]
            shown.append(Block(bias_key, f"{name} bias", b_sym, "b" + tex[1:], b.reshape(1, -1), [b_sym], dims(b.size)))
        return shown
    for h in range(h_all) if head is None else [head]:
        prefix = f"Head {h + 1} · " if h_all > 1 else ""
        up = (lambda s: f"{s}^{{({h + 1})}}") if h_all > 1 else (lambda s: s)  # noqa: B023  (used in this pass)
        bias = lambda b, sym: (f" + {sym}", f" + {up(sym)}") if b is not None else ("", "")  # noqa: B023, E731
        q, k, v, s, a, hh = (up(sym) for sym in "QKVSAH")
        scaled_tex = scaled_latex(spec, s)
        found += projection("weight_query", f"{prefix}Query", "W_Q", up("W_Q"), spec.w_q[h], _row(spec.b_q, h), "bias_query")
        if trace.queries is not None:  # (None: only the document's arrays were computed, attncli.core.pipeline.attend_until)
            found.append(Block("queries", f"{prefix}Queries", f"Q = {x_text}·W_Q" + bias(spec.b_q, "b_Q")[0],
                               f"{q} = {x_tex} {up('W_Q')}" + bias(spec.b_q, "b_Q")[1], trace.queries[h], spec.tokens, dims(spec.d_k)))
        j = h // group  # the key/value head of query head h
        if g < h_all and (h % group == 0 or head is not None):
            first, last = j * group + 1, (j + 1) * group
            kv_prefix = f"K/V head {j + 1} (query heads {first}–{last}) · "
            kv_up = lambda s: f"{s}^{{[{j + 1}]}}"  # noqa: B023, E731
            bias_kv = lambda b, sym: (f" + {sym}", f" + {kv_up(sym)}") if b is not None else ("", "")  # noqa: B023, E731
            k_tex, v_tex = kv_up("K"), kv_up("V")
        else:
            kv_prefix, kv_up, bias_kv, k_tex, v_tex = (prefix, up, bias, k, v) if g == h_all else (None,) * 5
        if kv_prefix is not None:
            found += projection("weight_key", f"{kv_prefix}Key", "W_K", kv_up("W_K"), spec.w_k[j], _row(spec.b_k, j), "bias_key")
        if kv_prefix is not None and trace.keys is not None:
            found += [
                Block("keys", f"{kv_prefix}Keys", f"K = {c_text}·W_K" + bias_kv(spec.b_k, "b_K")[0],
                      f"{k_tex} = {c_tex} {kv_up('W_K')}" + bias_kv(spec.b_k, "b_K")[1], trace.keys[j], spec.context_tokens,
                      dims(spec.d_k)),
                *projection("weight_value", f"{kv_prefix}Value", "W_V", kv_up("W_V"), spec.w_v[j], _row(spec.b_v, j), "bias_value"),
                Block("values", f"{kv_prefix}Values", f"V = {c_text}·W_V" + bias_kv(spec.b_v, "b_V")[0],
                      f"{v_tex} = {c_tex} {kv_up('W_V')}" + bias_kv(spec.b_v, "b_V")[1], trace.values[j], spec.context_tokens,
                      dims(spec.d_v)),
            ]
        if trace.queries_rotated is not None:
            found.append(Block("queries_rotated", f"{prefix}Rotated queries", f"Q′ = rope(Q): {rope_text(spec)}",
                               rf"{{{q}}}' = \operatorname{{rope}}({q})", trace.queries_rotated[h], spec.tokens, dims(spec.d_k)))
            if kv_prefix is not None:
                found.append(Block("keys_rotated", f"{kv_prefix}Rotated keys", f"K′ = rope(K): {rope_text(spec)}",
                                   rf"{{{k_tex}}}' = \operatorname{{rope}}({k_tex})", trace.keys_rotated[j], spec.context_tokens,
                                   dims(spec.d_k)))
        if trace.scores is not None and trace.scaled_scores is not None and trace.weights is not None:
            qs, ks = (f"{{{q}}}'", f"{{{k}}}'") if spec.rope is not None else (q, f"{{{k}}}")
            score_tex = rf"{s} = {up('v')}^\top \tanh({qs} W_1 + {ks} W_2)" if spec.score == "additive" else rf"{s} = {qs} {ks}^\top"
            masked = None if spec.allowed is None else ~spec.allowed[h]
            found += [
                Block("scores", f"{prefix}Scores", score_formula(spec), score_tex, trace.scores[h], spec.tokens, spec.context_tokens),
                *([Block("score_bias", f"{prefix}Score bias", bias_text(spec), "B", trace.score_bias[h], spec.tokens,
                         spec.context_tokens, masked)] if trace.score_bias is not None else []),
                Block("scaled_scores", f"{prefix}Scaled scores", scale_text(spec), scaled_tex, trace.scaled_scores[h],
                      spec.tokens, spec.context_tokens, masked,
                      title=f"{prefix}Scaled scores  {scale_text(spec)}{' (scale: none)' if spec.scale_name == 'none' else ''}"),
                Block("weights", f"{prefix}Weights", weights_formula(spec), f"{a} = {weights_latex(spec, scaled_tex)}",
                      trace.weights[h], spec.tokens, spec.context_tokens),
            ]
        if trace.head_outputs is not None:  # (None: only the stages before the scores ran)
            found.append(Block("head_outputs", f"{prefix}Head output", "H = A·V", f"{hh} = {a} {v}", trace.head_outputs[h], spec.tokens, dims(spec.d_v)))
    if spec.w_o is not None:
        found += projection("weight_output", "Output", "W_O", "W_O", spec.w_o, spec.b_o, "bias_output")
    elif spec.b_o is not None and "bias_output" in wanted:
        found.append(Block("bias_output", "Output bias", "b_O", "b_O", spec.b_o.reshape(1, -1), ["b_O"], dims(spec.b_o.size)))
    if trace.output is not None:
        found.append(Block("output", "Output", output_formula(spec), output_latex(spec), trace.output, spec.tokens, dims(trace.output.shape[1])))
    if trace.normalized_output is not None:
        norm = norm_text(spec.post_norm.kind)
        found.append(Block("normalized_output", "Normalised output", f"{norm}(Y)", rf"\operatorname{{{norm}}}(Y)",
                           trace.normalized_output, spec.tokens, dims(trace.normalized_output.shape[1])))
    if trace.residual is not None:
        formula = residual_formula(spec)
        found.append(Block("residual", "Residual", formula, formula, trace.residual, spec.tokens, dims(trace.residual.shape[1])))
    if trace.normalized is not None:
        found.append(Block("normalized", "Add & Norm", "LayerNorm(R)", r"\operatorname{LayerNorm}(R)", trace.normalized, spec.tokens, dims(trace.normalized.shape[1])))
    return [b for b in found if only is None or b.key in only]


def _row(bias: np.ndarray | None, head: int) -> np.ndarray | None:
    return None if bias is None else bias[head]
