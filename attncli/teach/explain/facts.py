"""Which of a step's sentences is true of the document's own numbers, where the answer depends on them.

Each function looks at the computed numbers and names the text key (and its placeholders) that holds for them:

- step 2: which weight matrices the document gives (a left-out one is the identity, not "given");
- step 4: the query followed when ``--query`` is left out (the first that sees two keys or more), ALiBi's
  penalty behind and ahead of the query, T5's missing scale, a symmetric W_Q·W_Kᵀ, whether the √d_k division
  changes the weights the table shows (against :func:`unscaled_weights`, the row with scale 1);
- everywhere: two numbers said to differ are printed so that they do (:func:`apart`);
- step 5: weights that are exactly 0 (masked, or e^z rounded to 0), and why the largest score is subtracted
  (an overflow, an underflow, or only because attention code always does it);
- step 7: what the output blends: every value, some of them, one alone, or none;
- step 8: the tables of one head among several.

>>> import numpy as np
>>> nonzero_keys(np.array([0.0, 1.0, 0.0]))
[1]
>>> e_notation(np.exp(-800.0), 4), e_notation(0.5, 4)
('0', '0.5000')
>>> apart(0.12344, 0.12336, 4), apart(1.0, 2.0, 4)
(('0.12344', '0.12336'), ('1', '2'))
"""

from __future__ import annotations

import numpy as np

from attncli.core.trace import Trace
from attncli.outputs.numbers import number
from attncli.teach.explain.step import Focus, allowed_row, kv_head
from attncli.teach.lines import subscript

OVERFLOW = float(np.log(np.finfo(np.float64).max))  # 709.78: e^z above it is infinite in float64


def e_notation(x: float, precision: int) -> str:
    """``x`` as the tables write it, or in e-notation when its decimals would hide it (tiny or huge)."""
    x = float(x)
    if x != 0 and (abs(x) >= 1e6 or float(number(x, precision)) == 0):
        return f"{x:.{precision}e}"
    return number(x, precision)


def apart(x: float, y: float, precision: int) -> tuple[str, str]:
    """``x`` and ``y`` as printed, with as many more decimals as it takes to tell them apart: a sentence that says
    two numbers differ never prints them alike (``0.0000, but 0.0000``)."""
    for p in range(precision, 18):
        a, b = number(x, p), number(y, p)
        if float(a) != float(b):  # (``1`` and ``1.0000`` are printed alike)
            return a, b
    return repr(float(x)), repr(float(y))


def nonzero_keys(a: np.ndarray) -> list[int]:
    """The keys (0-based) whose weight is not exactly 0."""
    return [int(j) for j in np.flatnonzero(a != 0)]


def quoted(tokens: list[str], keys: list[int], t: dict) -> str:
    """``“a”, “b” and “c”`` (at most 6 named, then …)."""
    names = [f"“{tokens[j]}”" for j in keys[:6]] + (["…"] if len(keys) > 6 else [])
    return names[0] if len(names) == 1 else t["list_sep"].join(names[:-1]) + t["and"] + names[-1]


# ---------------------------------------------------------------- step 2


def given_key(spec, t: dict) -> tuple[str, dict]:
    """Step 2's first paragraph: every matrix given, some, or none (the left-out ones are the identity)."""
    cross = spec.context is not None
    given = [f"W_{name[0].upper()}" for name in ("query", "key", "value") if name not in spec.identity]
    if len(given) == 3:
        return ("body_cross" if cross else "body"), {}
    if not given:
        return ("body_cross_none" if cross else "body_none"), {}
    return ("body_cross_some" if cross else "body_some"), {"given": quoted_names(given, t)}


def quoted_names(names: list[str], t: dict) -> str:
    return names[0] if len(names) == 1 else t["list_sep"].join(names[:-1]) + t["and"] + names[-1]


# ---------------------------------------------------------------- step 4


def default_query(trace: Trace, head: int) -> int:
    """The query to follow when none is asked for (0-based): the first that may see two keys or more
    (a causal document's first query sees only itself, and its walkthrough would have nothing to share out)."""
    allowed = trace.spec.allowed
    if allowed is None:
        return 0
    seen = allowed[head].sum(axis=-1)  # (n,): keys each query may see
    wide = np.flatnonzero(seen >= 2)
    return int(wide[0]) if seen[0] < 2 and wide.size else 0


def default_words(trace: Trace, focus: Focus, t: dict) -> tuple[list[str], dict]:
    """Step 4's sentence saying why the steps follow another query than the first (``--query`` left out)."""
    if not focus.defaulted:
        return [], {}
    seen = int(allowed_row(trace, 0, focus.head).sum())
    return ["default_query"], {"first_query": f"“{trace.spec.tokens[0]}”",
                               "seen": t["scores"]["seen_none" if seen == 0 else "seen_one"]}


def bias_keys(trace: Trace, focus: Focus, keys: list[str]) -> list[str]:
    """Step 4's bias paragraphs (``keys``), with what ALiBi does in this query's row after ``bias_alibi``."""
    if "bias_alibi" not in keys:
        return keys
    spec, i = trace.spec, focus.query
    seen = allowed_row(trace, i, focus.head)
    p_k, p_q = np.asarray(spec.key_positions), spec.query_positions[i]
    behind, ahead = bool((seen & (p_k < p_q)).any()), bool((seen & (p_k > p_q)).any())
    cases = (["alibi_behind"] if behind else []) + (["alibi_ahead"] if ahead else [])
    k = keys.index("bias_alibi") + 1
    return keys[:k] + (cases or ["alibi_self"]) + keys[k:]


def scale_keys(spec, keys: list[str]) -> list[str]:
    """T5 leaves the scale out because it folds it into W_Q's initialisation (not as the walkthrough does)."""
    relative = spec.score_bias is not None and spec.score_bias.relative is not None
    return ["scale_none_t5" if key == "scale_none" and relative else key for key in keys]


def symmetric_weights(spec, head: int) -> bool:
    """Is q_i·k_j = q_j·k_i for any inputs: W_Q·W_Kᵀ symmetric and W_Q·b_Kᵀ = W_K·b_Qᵀ (no clamp between)?"""
    kv = kv_head(spec, head)
    w_q, w_k = spec.w_q[head], spec.w_k[kv]  # (d, d_k) each
    if w_q.shape != w_k.shape or spec.clip_qkv is not None or spec.context is not None:
        return False
    m = w_q @ w_k.T  # (d, d)
    b_q = np.zeros(w_q.shape[1]) if spec.b_q is None else spec.b_q[head]
    b_k = np.zeros(w_k.shape[1]) if spec.b_k is None else spec.b_k[kv]
    u, w = w_q @ b_k, w_k @ b_q  # (d,) each: the two linear terms must be the same
    close = lambda x, y: np.abs(x - y).max() <= 1e-9 * max(1.0, float(np.abs(x).max()))  # noqa: E731
    return bool(close(m, m.T) and close(u, w))


def symmetric_words(spec, head: int, t: dict) -> dict:
    """The placeholders of ``symmetric_weights``: the bias condition and terms when there are biases."""
    biased = spec.b_q is not None or spec.b_k is not None
    words = t["scores"]
    return {"bias": words["symmetric_bias"] if biased else "", "terms": words["symmetric_terms"] if biased else ""}


def operation_counts(spec) -> dict:
    """Seed 003's speed argument, counted on the document's sizes for one head: the operations of the n·m dot
    products of d_k numbers, and of additive scores vᵀ·tanh(q·W₁ + k·W₂) with a hidden layer of d_a (the
    document's, or d_k: the usual choice)."""
    n, m, d = spec.n, spec.m, spec.d_k
    d_a = spec.w_1.shape[-1] if spec.score == "additive" else d
    return {"dot_mul": n * m * d, "dot_add": n * m * (d - 1),
            "add_mul": (n + m) * d * d_a + n * m * d_a,  # q·W₁ and k·W₂ once per row, then v·tanh per pair
            "add_add": (n + m) * d_a * (d - 1) + n * m * (2 * d_a - 1), "add_tanh": n * m * d_a, "d_a": d_a}


def unscaled_weights(trace: Trace, head: int, i: int) -> np.ndarray:
    """Query ``i``'s weights in ``head`` with scale 1 and every other stage kept (m,): the soft cap on the raw
    scores, the score bias, the same keys, the document's normalisation (a sink joining softmax's sum)."""
    spec = trace.spec
    s = trace.scores[head, i]
    z = s if spec.softcap is None else spec.softcap * np.tanh(s / spec.softcap)
    if trace.score_bias is not None:
        bias = trace.score_bias[head, i]
        z = z + np.where(np.isneginf(bias), 0.0, bias)  # (a −inf cell is a masked key: allowed_row says so)
    allowed = allowed_row(trace, i, head)
    if not allowed.any():
        return np.zeros_like(z)
    if spec.normalize == "none":
        return np.where(allowed, z, 0.0)
    if spec.normalize == "sum":
        return np.where(allowed, z, 0.0) / float(np.where(allowed, z, 0.0).sum())
    sink = [] if spec.sinks is None else [float(spec.sinks[head])]
    top = max([float(z[allowed].max()), *sink])
    e = np.where(allowed, np.exp(np.where(allowed, z, top) - top), 0.0)
    return e / (e.sum() + sum(np.exp(x - top) for x in sink))


def scale_why(trace: Trace, focus: Focus, keys: list[str]) -> tuple[list[str], dict]:
    """After ``scale_sqrt``, why the division matters, on this query's weights: ``scale_sqrt_why`` when some weight
    the table shows (at the decimals printed) is another without it, else ``scale_sqrt_little``."""
    h, i, p = focus.head, focus.query, focus.precision
    allowed = allowed_row(trace, i, h)
    if "scale_sqrt" not in keys or not allowed.any() or trace.scores is None:
        return keys, {}
    a, plain = trace.weights[h, i], unscaled_weights(trace, h, i)
    seen = lambda row: [number(x, p) for x in row[allowed]]  # noqa: E731
    words = {"with_max": number(float(a[allowed].max()), p), "without_max": number(float(plain[allowed].max()), p)}
    k = keys.index("scale_sqrt") + 1
    return keys[:k] + ["scale_sqrt_little" if seen(a) == seen(plain) else "scale_sqrt_why"] + keys[k:], words


def count_keys(spec) -> tuple[list[str], dict]:
    """Step 4's paragraph counting the operations of dot-product and additive scores here (not with a temperature
    or qk_norm, whose extra work is not scoring)."""
    return ["count_additive" if spec.score == "additive" else "count_dot"], operation_counts(spec)


# ---------------------------------------------------------------- step 5


def softmax_keys(trace: Trace, focus: Focus, top: float, shift: float, t: dict) -> tuple[list[str], dict]:
    """Step 5's paragraphs for softmax: positive weights or some exactly 0, and why the row max is subtracted."""
    h, i, p = focus.head, focus.query, focus.precision
    a, allowed = trace.weights[h, i], allowed_row(trace, i, h)
    if trace.spec.sinks is not None:  # the sink takes a share: the keys' weights do not add up to 1
        keys = ["softmax_sink" if (a > 0).all() else "softmax_sink_zeros"]
    else:
        keys = ["softmax" if (a > 0).all() else "softmax_zeros"]
    with np.errstate(over="ignore", under="ignore"):
        e_top = float(np.exp(top))
    if shift > 0:
        keys.append("shift_overflow" if not np.isfinite(e_top) else "shift_large")
    elif shift < 0:
        keys.append("shift_underflow" if e_top == 0 else "shift_small")
    # "negative, so below 1": printed so that it shows (−0.0000 would read 0, and e^−0.0000 would read 1.0000)
    e_text = apart(e_top, 1.0, p)[0] if 0 < e_top < 1 else e_notation(e_top, p) if np.isfinite(e_top) else ""
    words = {"top": e_notation(top, p), "e_top": e_text}
    underflow = [int(j) for j in np.flatnonzero(allowed & (a == 0))]
    if underflow and trace.spec.normalize == "softmax":
        keys.append("underflow")
        words.update(count=len(underflow), keys=quoted(trace.spec.context_tokens, underflow, t))
    return keys, words


def sum_line(terms: list[str], more: bool, total: str) -> str:
    """``Σ = a + b = s``; one term alone is its own sum: ``Σ = s``."""
    if len(terms) == 1 and not more:
        return f"Σ = {total}"
    return f"Σ = {' + '.join(terms)}{' + …' if more else ''} = {total}"


# ---------------------------------------------------------------- step 7


def sum_key(trace: Trace, focus: Focus, t: dict) -> tuple[str, dict]:
    """Step 7's first paragraph: the output blends every value, some, one alone (v_j itself or times its
    weight), none; or weights of both signs add and subtract values."""
    spec, h, i, p = trace.spec, focus.head, focus.query, focus.precision
    a = trace.weights[h, i]
    used = nonzero_keys(a)
    if not used:
        return "body_zero", {}
    if len(used) == 1:
        j = used[0]
        words = {"only": f"“{spec.context_tokens[j]}”", "j": subscript(j + 1), "w": number(a[j], p)}
        return ("body_one" if a[j] == 1 else "body_one_scaled"), words
    if (a < 0).any():
        return "body_signed", {}
    if len(used) == spec.m:
        return "body", {}
    zero = spec.m - len(used)  # (one: "the one other key", not "the other 1 keys")
    words = {"count": len(used), "keys": quoted(spec.context_tokens, used, t), "zero": zero}
    return ("body_some_one" if zero == 1 else "body_some"), words


# ---------------------------------------------------------------- step 8


def all_label(t: dict, key: str, spec, head: int) -> str:
    """``All weights  A``, or with several heads ``Weights of head 2, every query  A``."""
    if spec.heads == 1:
        return t["label"][key]
    return t["label"][f"{key}_head"].format(head=head + 1)
