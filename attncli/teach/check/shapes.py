"""Answers of the wrong shape that are still recognisable, for ``attncli check``'s hints (issue 31).

An output made of the right heads combined wrongly: one head's output alone, the heads added up or averaged instead
of put side by side, or stacked one under another. Each is compared with the numbers it would have, made from the
trace's own head outputs. (The heads side by side without W_O are the slip ``w_o_left_out``, whatever the shape.)
"""

from __future__ import annotations

import numpy as np

from attncli.core.trace import Trace
from attncli.teach.check.answer import Answer, select


def _close(given: np.ndarray, wanted: np.ndarray, tol: float) -> bool:
    return given.shape == wanted.shape and bool(np.allclose(given, wanted, atol=max(tol, 0.05), rtol=0))


def heads_hint(trace: Trace, key: str, given: np.ndarray, answer: Answer | None, tol: float,
               words: dict) -> str | None:
    """The hint for an output (key ``output``) whose shape shows the heads combined wrongly, or None."""
    spec = trace.spec
    if key != "output" or spec.heads == 1:
        return None
    heads = trace.head_outputs if trace.gated_head_outputs is None else trace.gated_head_outputs  # (h, n, d_v)
    projected = words["projected"] if spec.w_o is not None else ""
    pick = (lambda a: a) if answer is None else (lambda a: select(a, key, answer, spec))
    for h in range(spec.heads):
        if _close(given, pick(heads[h]), tol):
            return words["one_head"].format(head=h + 1, h=spec.heads, projected=projected)
    for how, combined in (("added", heads.sum(axis=0)), ("averaged", heads.mean(axis=0))):
        if _close(given, pick(combined), tol):
            return words["heads_summed"].format(how=words[how], h=spec.heads, width=spec.heads * spec.d_v,
                                                projected=projected)
    if answer is None or answer.query is None:
        stacked = heads.reshape(-1, heads.shape[-1])  # (h·n, d_v)
        if _close(given, stacked, tol):
            return words["heads_stacked"].format(rows=stacked.shape[0], h=spec.heads, projected=projected)
    return None  # (the heads side by side without W_O: the slip w_o_left_out, whatever the shape)
