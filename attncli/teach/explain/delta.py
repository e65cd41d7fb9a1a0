"""The delta rule as one explained step: the state S written out for one token and one value head
(docs/format.md Part 4), from a :class:`~attncli.core.linear.LinearTrace`.

Each item is ``(text, matrix or None)``: a sentence with its numbers, and the d_k × d_v state it talks about.
"""

from __future__ import annotations

import numpy as np

from attncli.core import delta
from attncli.core.linear import LinearTrace
from attncli.outputs.numbers import format_number
from attncli.teach.texts import texts


def _vector(x: np.ndarray, precision: int) -> str:
    return "[" + ", ".join(format_number(float(v), precision) for v in np.atleast_1d(x)) + "]"


def _head_arrays(trace: LinearTrace, j: int, upto: int):
    """Value head j's q̂ (before the scale), k̂, v, β, g for tokens 0 … upto, as the rule receives them."""
    spec = trace.spec
    i = j // (spec.value_heads // spec.heads)  # the query/key head it reads
    q = trace["normalized_queries" if spec.l2 else "queries"][i, :upto + 1]
    k = trace["normalized_keys" if spec.l2 else "keys"][i, :upto + 1]
    return q, k, trace["values"][j, :upto + 1], trace["beta"][j, :upto + 1], trace["g"][j, :upto + 1]


def delta_step(trace: LinearTrace, t: int, j: int, lang: str, precision: int) -> list[tuple[str, np.ndarray | None]]:
    """Token t's update of value head j's state, step by step (t, j counted from 0)."""
    spec, words = trace.spec, texts(lang)["delta"]
    q, k, v, beta, g = _head_arrays(trace, j, t)
    s0 = None if spec.initial_state is None else spec.initial_state[j:j + 1]
    if t:
        rule = (spec.scale * q[None, :t], k[None, :t], v[None, :t], beta[None, :t], g[None, :t])
        before = delta.recurrent(*rule, s0, keep_state=False)[3][0]  # the state token t − 1 left
    else:
        before = np.zeros((spec.d_k, spec.d_v)) if s0 is None else s0[0]
    f = lambda x: _vector(x, precision)  # noqa: E731
    decay = np.exp(g[t])
    decayed = (decay[:, None] if decay.ndim else decay) * before  # d_k × d_v
    read = decayed.T @ k[t]  # d_v
    u = beta[t] * (v[t] - read)
    outer = np.outer(k[t], u)
    after = decayed + outer
    o = after.T @ (spec.scale * q[t])
    items = [(words["title"].format(t=t + 1, token=spec.tokens[t], j=j + 1, d_k=spec.d_k, d_v=spec.d_v), None),
             (words["before"].format(t=t + 1, p=t) if t else words["first"], before)]
    if decay.ndim:
        items.append((words["decay_kda"].format(e=f(decay)), decayed))
    else:
        e = format_number(float(decay), precision)
        items.append((words["decay"].format(g=format_number(float(g[t]), precision), e=e), decayed))
    items += [(words["read"].format(read=f(read)), None),
              (words["correct"].format(beta=format_number(float(beta[t]), precision), v=f(v[t]), read=f(read),
                                       u=f(u)), None),
              (words["write"].format(k=f(k[t])), None),
              (words["outer"].format(t=t + 1), outer),
              (words["after"].format(t=t + 1, h=j, i=t), after),
              (words["out"].format(o=f(o), q=f(q[t]),
                                   scale=format_number(spec.scale, precision), t=t + 1), None)]
    return items
