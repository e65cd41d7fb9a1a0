"""What ``explain --why`` tells next to its numbers, each sentence true of the document's own numbers.

- stage c: whether the relevance reads the same both ways (q_i·k_j against q_j·k_i), and when it
  does — by coincidence, or because every query is its key — that the weights still differ, each row
  being divided by its own sum (seed 002's asymmetry, made visible on the built-in example); and the
  dictionary: the query looks up, the keys are the headwords, the values the entries (seed 004);
- stage d: the fruit market: the weights share the buyer's money out among the stalls (seed 004);
- stage e: why the scale (seed 003): with and without it, for each query, the largest weight and the
  largest entry of the softmax's Jacobian ∂a_i/∂z_j = a_i·(δ_ij − a_j).

>>> import numpy as np
>>> jacobian_peak(np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])).tolist()
[0.25, 0.0]
>>> divide_rows(np.array([[1.0, 3.0], [2.0, -2.0]]))[0].tolist()
[[0.25, 0.75], [0.0, 0.0]]
>>> divide_rows(np.array([[1e-14, 3e-14]]))[0].tolist()
[[0.25, 0.75]]
"""

from __future__ import annotations

import numpy as np

from attncli.core.attention import softmax
from attncli.core.trace import Trace
from attncli.outputs.numbers import number
from attncli.teach.explain.facts import quoted, symmetric_weights
from attncli.teach.explain.notes import same_projection
from attncli.teach.explain.step import Focus, Numbers, Step, allowed_row
from attncli.teach.lines import subscript, vector


def divide_rows(r: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Each row divided by its own sum, (n, m) -> (n, m); a row summing to 0 stays 0 and is listed.

    (Seed 002 writes ``r / r.sum(axis=1)``, which broadcasts the sums along the
    columns instead of the rows; here ``keepdims`` divides each row by its own sum.)
    "Adds up to 0" is relative to the row: relevances of 1e-14 are small, not zero.
    """
    total = r.sum(axis=1, keepdims=True)  # (n, 1)
    zero = np.abs(total[:, 0]) <= 1e-12 * np.abs(r).sum(axis=1)  # cancelled out, relative to the row's size
    w = np.divide(r, total, out=np.zeros_like(r, dtype=float), where=~zero[:, None])
    return w, [int(i) for i in np.flatnonzero(zero)]


def jacobian_peak(a: np.ndarray) -> np.ndarray:
    """The largest |∂a_i/∂z_j| of each row's softmax (n, m) -> (n,): max of a_i·(1 − a_i) and of a_i·a_j (i ≠ j)."""
    diagonal = (a * (1 - a)).max(axis=-1)
    top = np.sort(a, axis=-1)[..., ::-1]
    across = top[..., 0] * top[..., 1] if a.shape[-1] > 1 else np.zeros(a.shape[:-1])
    return np.maximum(diagonal, across)


def _pair(matrix: np.ndarray, i: int) -> tuple[int, int]:
    """The pair (a, b) where matrix and its transpose differ most, in row i if they differ there."""
    differ = np.abs(matrix - matrix.T)
    if differ[i].max() > 0:
        return i, int(np.argmax(differ[i]))
    a, b = np.unravel_index(int(np.argmax(differ)), differ.shape)
    return int(a), int(b)


def query_key(trace: Trace, focus: Focus, w: dict, ctx: dict, qk: np.ndarray) -> list[str]:
    """Stage c: the relevance both ways, and the dictionary."""
    spec, i, p = trace.spec, focus.query, focus.precision
    token = lambda k: f"“{spec.tokens[k]}”"  # noqa: E731
    out = []
    if spec.context is None and spec.n > 1:
        close = 1e-9 * max(1.0, float(np.abs(qk).max()))
        if np.abs(qk - qk.T).max() > close:
            a, b = _pair(np.where(np.abs(qk - qk.T) > close, qk, qk.T), i)
            out.append(w["query_key"]["asymmetric"].format(
                first=token(a), other=token(b), qab=f"q{subscript(a + 1)}·k{subscript(b + 1)}", ab=number(qk[a, b], p),
                qba=f"q{subscript(b + 1)}·k{subscript(a + 1)}", ba=number(qk[b, a], p)))
        else:
            weights, _ = divide_rows(qk)
            if np.abs(weights - weights.T).max() > 1e-9:
                a, b = _pair(weights, i)
                key = ("forced" if same_projection(spec, focus.head)
                       else "symmetric_weights" if symmetric_weights(spec, focus.head) else "symmetric")
                bias = "" if spec.b_q is None and spec.b_k is None else t_bias(w)
                out.append(w["query_key"][key].format(first=token(a), other=token(b), wab=number(weights[a, b], p),
                                                      wba=number(weights[b, a], p), bias=bias))
    kind, best, here = best_keys(trace, focus, qk[i])
    words = w["query_key"]
    match = words[f"match_{kind}"].format(**dict(ctx, here=words[here], r=number(qk[i, best[0]], p),
                                                 best=quoted(spec.context_tokens, best, joins(w))))
    out.append(words["dictionary"].format(**dict(ctx, match=match)))
    return out


def t_bias(w: dict) -> str:
    """The bias condition of a symmetric W_Q·W_Kᵀ."""
    return w["query_key"]["symmetric_bias"]


def joins(w: dict) -> dict:
    """How a list of tokens is joined in this language: ``“a”, “b” and “c”``."""
    return {"list_sep": w["parts"]["sep"], "and": w["parts"]["and"]}


def best_keys(trace: Trace, focus: Focus, row: np.ndarray) -> tuple[str, list[int], str]:
    """The keys with the row's largest number, among those the mask lets the query see: ('one' | 'tie' | 'all',
    the keys, 'here' or 'here_masked' when the mask rules out a key the unmasked row would pick)."""
    seen = allowed_row(trace, focus.query, focus.head)
    if not seen.any():
        seen = np.ones_like(seen)
    top = float(row[seen].max())
    tied = np.flatnonzero(seen & (np.abs(row - top) <= 1e-9 * max(1.0, abs(top))))
    if tied.size == 0:  # numbers that overflowed (NaN): why_steps names the stage that overflows
        return "one", [int(np.flatnonzero(seen)[0])], "here"
    masked = not seen.all() and bool((row[~seen] >= top - 1e-9 * max(1.0, abs(top))).any())
    kind = "one" if tied.size == 1 else "all" if tied.size == seen.sum() else "tie"
    return kind, [int(j) for j in tied], "here_masked" if masked else "here"


def fixed_mix(trace: Trace, focus: Focus, w: dict, ctx: dict) -> list[str]:
    """Stage a, seed 002's first try on the document's numbers: y = 0.75·v_i + 0.25·v_j, a share fixed for every
    pair, beside the weights attention gives the same two tokens (self-attention only: v_i is the query's own)."""
    spec, h, i, p = trace.spec, focus.head, focus.query, focus.precision
    if spec.context is not None or spec.n < 2:
        return []
    a = trace.weights[h, i]  # the attention's own weights for this query
    others = [j for j in np.argsort(-a, kind="stable") if j != i]
    j = int(others[0])  # the other token attention weighs most
    v = trace.mixed_values[h // (spec.heads // spec.kv_heads)]
    y = 0.75 * v[i] + 0.25 * v[j]
    return [w["average"]["fixed"].format(**dict(ctx, other=f"“{spec.tokens[j]}”", v_i=vector(v[i], p),
                                                v_j=vector(v[j], p), y=vector(y, p), a=number(a[j], p),
                                                a_self=number(a[i], p)))]


def market(trace: Trace, focus: Focus, w: dict, ctx: dict, a: np.ndarray) -> str:
    """Stage d: the fruit market, with the query's largest weight."""
    kind, best, here = best_keys(trace, focus, a[focus.query])
    row = a[focus.query]
    if here == "here_masked":  # "among the keys its mask lets it see": its share of what those keys get
        row = row / row[allowed_row(trace, focus.query, focus.head)].sum()
    share = f"{row[best[0]]:.0%}"
    words = w["softmax"]
    spend = words["spend_one" if kind == "one" else "spend_tie"].format(
        **dict(ctx, here=w["query_key"][here], share=share, best=quoted(trace.spec.context_tokens, best, joins(w))))
    return words["market"].format(**dict(ctx, spend=spend))


def scale_stage(trace: Trace, focus: Focus, t: dict, ctx: dict, qk: np.ndarray) -> list[Step]:
    """Stage e: the largest weight and Jacobian entry of each query's softmax, with the scale and without it.

    With ``scale: none`` the scale compared is the usual 1/√d_k; none at all when that is 1, or for an additive score
    (the argument is about dot products growing with d_k)."""
    spec, i, p, w = trace.spec, focus.query, focus.precision, t["why"]["scale"]
    c = spec.scale if spec.scale != 1.0 else 1 / np.sqrt(spec.d_k)
    if spec.score != "dot" or c == 1.0:
        return []
    scaled, plain = softmax(c * qk), softmax(qk)
    a2, j2, a1, j1 = scaled.max(axis=-1), jacobian_peak(scaled), plain.max(axis=-1), jacobian_peak(plain)
    cs = number(c, p)
    text = [w["body"].format(c=cs)] + ([w["usual"].format(d_k=spec.d_k)] if spec.scale == 1.0 else [])
    text.append(w["numbers"].format(**dict(ctx, a1=number(a1[i], p), j1=number(j1[i], p), a2=number(a2[i], p),
                                           j2=number(j2[i], p), c=cs)))
    text.append(w["helps"] if j2[i] > j1[i] + 1e-4 else w["no_help"] if j2[i] < j1[i] - 1e-4 else w["same"])
    other = int(np.argmax(j2 - j1))
    if j2[i] <= j1[i] + 1e-4 and j2[other] > j1[other] + 1e-4:  # the query followed is not helped, another one is
        text.append(w["elsewhere"].format(other=f"“{spec.tokens[other]}”", j1=number(j1[other], p),
                                          j2=number(j2[other], p)))
    columns = [f"{w['weight']} {w['with'].format(c=cs)}", f"{w['jacobian']} {w['with'].format(c=cs)}",
               f"{w['weight']} {w['without']}", f"{w['jacobian']} {w['without']}"]
    table = np.stack([a2, j2, a1, j1], axis=-1)
    formula = "∂a_i/∂z_j = a_i·(δ_ij − a_j)   a = softmax(c · Q·Kᵀ)"
    return [Step("e", w["title"], formula, text, numbers=[Numbers("saturation", t["label"]["saturation"], table,
                                                                    spec.tokens, columns)])]
