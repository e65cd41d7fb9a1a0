"""Lightning attention as one explained step: the direct sum of one token and one head written out term by term,
and the same output read from the state (docs/format.md Part 4, ``kind: lightning``).

Each item is ``(text, matrix or None)``, as :mod:`attncli.teach.explain.delta`'s.
"""

from __future__ import annotations

import numpy as np

from attncli.core import lightning
from attncli.core.linear import LinearTrace
from attncli.outputs.numbers import format_number
from attncli.teach.texts import texts

SHOWN = 12  # the latest tokens' terms written out; the earlier ones are summed in one line


def _vector(x: np.ndarray, precision: int) -> str:
    return "[" + ", ".join(format_number(float(v), precision) for v in np.atleast_1d(x)) + "]"


def lightning_step(trace: LinearTrace, t: int, j: int, lang: str,
                   precision: int) -> list[tuple[str, np.ndarray | None]]:
    """Token t's output of head j as the direct sum, then through the state (t, j counted from 0)."""
    spec, words = trace.spec, texts(lang)["lightning"]
    f = lambda x: _vector(x, precision)  # noqa: E731
    n = lambda x: format_number(float(x), precision)  # noqa: E731
    s = float(trace["slopes"][j])
    q = spec.scale * trace["queries"][j, t]
    k, v = trace["keys"][j, :t + 1], trace["values"][j, :t + 1]
    items = [(words["title"].format(t=t + 1, token=spec.tokens[t], j=j + 1, s=n(s), e=n(np.exp(-s))), None)]
    scores = k @ q  # q_t·k_i, i ≤ t
    decays = np.exp(-s * (t - np.arange(t + 1)))
    terms = (scores * decays)[:, None] * v  # (t + 1, d_v)
    first = max(0, t + 1 - SHOWN)
    if first:
        earlier = {1: "earlier_one", 2: "earlier_two"}.get(first, "earlier")  # (a range of one, of two, of more)
        items.append((words[earlier].format(count=first, last=first, sum=f(terms[:first].sum(axis=0))), None))
    for i in range(first, t + 1):
        items.append((words["term"].format(i=i + 1, token=spec.tokens[i], qk=n(scores[i]), dist=t - i,
                                           decay=n(decays[i]), w=n(scores[i] * decays[i]), v=f(v[i]),
                                           term=f(terms[i])), None))
    o = terms.sum(axis=0)
    if spec.initial_state is not None:
        start = np.exp(-s * (t + 1)) * (spec.initial_state[j].T @ q)
        items.append((words["initial"].format(t=t + 1, e=n(np.exp(-s * (t + 1))), term=f(start)), None))
        o = o + start
    items.append((words["sum"].format(t=t + 1, o=f(o)), None))
    keys, values = trace["keys"][j:j + 1, :t + 1], trace["values"][j:j + 1, :t + 1]
    s0 = None if spec.initial_state is None else spec.initial_state[j:j + 1]
    state = lightning.recurrent(keys, keys, values, trace["slopes"][j:j + 1], s0, keep_state=False)[2][0]  # S_t
    items.append((words["state"].format(t=t + 1, h=j, i=t, e=n(np.exp(-s)), o=f(state.T @ q)), state))
    return items
