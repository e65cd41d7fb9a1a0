"""A :class:`~attncli.core.linear.LinearTrace` -> the tables of ``attncli compute`` for a ``linear:`` document.

Each array per head (the value head j, and the query/key head j reads): a token's row per token, a state's row per
key channel. The state after every token is shown only when ``--only state`` asks for it (n tables a head).
"""

from __future__ import annotations

import numpy as np

from attncli.core.linear import LinearTrace
from attncli.outputs.numbers import dims
from attncli.views.tables import View, matrix_table

TITLES = {  # key -> (English, Chinese): the quantity and its formula
    "inputs": ("X (inputs)", "X（输入）"),
    "projected_queries": ("q = X·W_Q, before the conv", "q = X·W_Q（卷积前）"),
    "projected_keys": ("k = X·W_K, before the conv", "k = X·W_K（卷积前）"),
    "projected_values": ("v = X·W_V, before the conv", "v = X·W_V（卷积前）"),
    "queries": ("q (queries)", "q（查询）"),
    "keys": ("k (keys)", "k（键）"),
    "values": ("v (values)", "v（值）"),
    "normalized_queries": ("q̂ = q / √(Σq² + ε)", "q̂ = q / √(Σq² + ε)"),
    "normalized_keys": ("k̂ = k / √(Σk² + ε)", "k̂ = k / √(Σk² + ε)"),
    "beta": ("β = σ(b), one column per value head", "β = σ(b)，每个值头一列"),
    "g": ("g = −e^A_log·softplus(a + dt_bias)", "g = −e^A_log·softplus(a + dt_bias)"),
    "initial_state": ("S₀ (initial_state)", "S₀（初始状态）"),
    "u": ("u = β(v − Sᵀk̂)", "u = β(v − Sᵀk̂)"),
    "state": ("S after token", "S，在此词元之后"),
    "final_state": ("S after the last token (final_state)", "最后一个词元之后的 S（final_state）"),
    "head_outputs": ("o = Sᵀq̂ (head_outputs)", "o = Sᵀq̂（head_outputs）"),
    "gate": ("act(z), z = X·W_z", "act(z)，z = X·W_z"),
    "gated_head_outputs": ("y = γ ⊙ o/√(mean(o²) + ε) ⊙ act(z)", "y = γ ⊙ o/√(mean(o²) + ε) ⊙ act(z)"),
    "output": ("Y (output)", "Y（输出）"),
    "chunk_states": ("S after chunk", "S，在此块之后"),
    "slopes": ("s, the slope of each head (S ← e^−s·S + k·vᵀ)", "s，每个头的斜率（S ← e^−s·S + k·vᵀ）"),
    "intra": ("intra = ((QKᵀ) ∘ D)·V, the block's own keys", "intra = ((QKᵀ) ∘ D)·V，块内的键"),
    "inter": ("inter = (Q ⊙ e^−s(i+1))·S, the keys before the block", "inter = (Q ⊙ e^−s(i+1))·S，块之前的键"),
    "decayed_scores": ("(q_i·k_j)·e^−s(i−j), j ≤ i", "(q_i·k_j)·e^−s(i−j)，j ≤ i"),
    "grad_head_outputs": ("dL/do (grad_head_outputs)", "dL/do（grad_head_outputs）"),
    "grad_queries": ("dL/dq", "dL/dq"), "grad_keys": ("dL/dk", "dL/dk"), "grad_values": ("dL/dv", "dL/dv"),
    "grad_beta": ("dL/dβ", "dL/dβ"), "grad_g": ("dL/dg", "dL/dg"), "grad_slopes": ("dL/ds", "dL/ds"),
    "grad_initial_state": ("dL/dS₀", "dL/dS₀"),
}
LIGHTNING_TITLES = {  # lightning attention's own formulas (docs/format.md Part 4, kind: lightning)
    "projected_queries": ("q = X·W_Q, before the activation", "q = X·W_Q（激活前）"),
    "projected_keys": ("k = X·W_K, before the activation", "k = X·W_K（激活前）"),
    "projected_values": ("v = X·W_V, before the activation", "v = X·W_V（激活前）"),
    "head_outputs": ("o = Sᵀq (head_outputs)", "o = Sᵀq（head_outputs）"),
    "gate": ("σ(X·W_G), the output gate", "σ(X·W_G)，输出门"),
    "gated_head_outputs": ("y = σ(X·W_G) ⊙ γ ⊙ o/√(mean(o²) + ε), the mean over all heads",
                           "y = σ(X·W_G) ⊙ γ ⊙ o/√(mean(o²) + ε)，对所有头取平均"),
}
HEAD = {"en": "Head {j}", "zh": "头 {j}"}
VALUE_HEADED = ("projected_values", "values", "beta", "g", "initial_state", "u", "state", "final_state",
                "head_outputs", "gate", "gated_head_outputs", "chunk_states", "intra", "inter", "decayed_scores",
                "grad_head_outputs", "grad_values", "grad_beta", "grad_g", "grad_initial_state")


def linear_tables(trace: LinearTrace, view: View = View(), head: int | None = None,
                  keys: list[str] | None = None) -> list:
    """Every table of the result (or of ``keys``); ``head`` (0-based, a value head) keeps that head and the
    query/key head it reads."""
    lang = "zh" if view.lang == "zh" else "en"
    return [matrix_table(title, array, rows, columns, view)
            for _, _, title, array, rows, columns in linear_matrices(trace, lang, head, keys)]


def linear_matrices(trace: LinearTrace, lang: str = "en", head: int | None = None,
                    keys: list[str] | None = None) -> list[tuple[str, int | None, str, np.ndarray, list[str],
                                                                 list[str] | None]]:
    """The tables of :func:`linear_tables` as (key, head, title, matrix, row labels, column labels or None: the
    dimensions); ``head``: the value head of a per-head table, the query/key head of q's and k's, None for the rest."""
    spec = trace.spec
    group = spec.value_heads // spec.heads
    found = []
    for key, array in trace.items():
        if key == "chunk_states" and (keys is None or key not in keys) or key == "state" and keys is None:
            continue  # (one table per token or chunk: only when asked for)
        if keys is not None and key not in keys:
            continue
        titles = LIGHTNING_TITLES if spec.kind == "lightning" and key in LIGHTNING_TITLES else TITLES
        title = titles[key][0 if lang == "en" else 1]
        if array.ndim == 2 and key in ("inputs", "output"):
            found.append((key, None, title, array, spec.tokens, None))
            continue
        if key in ("slopes", "grad_slopes"):  # one number per head
            found.append((key, None, title, array[:, None], [HEAD[lang].format(j=j + 1)
                                                              for j in range(array.shape[0])], [key]))
            continue
        if key in ("beta", "grad_beta") or (key in ("g", "grad_g") and array.ndim == 2):  # h_v × n: heads as columns
            found.append((key, None, title, array.T, spec.tokens, [HEAD[lang].format(j=j + 1)
                                                                    for j in range(array.shape[0])]))
            continue
        count = spec.value_heads if key in VALUE_HEADED else spec.heads
        chosen = range(count) if head is None else [head if key in VALUE_HEADED else head // group]
        for j in chosen:
            found += [(key, j, *table) for table in
                      _head_tables(key, array[j], f"{HEAD[lang].format(j=j + 1)} · {title}", spec.tokens)]
    return found


def _head_tables(key: str, array: np.ndarray, title: str, tokens: list[str]) -> list:
    """One head's array: a token's row each (n × d), a state (d_k × d_v), or a state per token or chunk."""
    rows = [f"k{i}" for i in range(1, array.shape[-2] + 1)]
    if key in ("state", "chunk_states"):
        names = tokens if key == "state" else [str(c) for c in range(1, array.shape[0] + 1)]
        return [(f"{title} {name}", s, rows, dims(s.shape[1])) for name, s in zip(names, array)]
    if key == "decayed_scores":
        return [(title, array, tokens, tokens)]
    if key in ("initial_state", "final_state", "grad_initial_state"):
        return [(title, array, rows, dims(array.shape[1]))]
    return [(title, array, tokens, None)]
