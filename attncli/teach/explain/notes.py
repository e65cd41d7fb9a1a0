"""The sentences of ``attncli explain`` that depend on the document's numbers, chosen so that each is true of it.

- step 4, symmetry: is the score of i for j (q_i·k_j) the score of j for i (q_j·k_i)?  A dot product
  commutes, so the question is whose query meets whose key.  With W_Q = W_K (or both left out, Q = K = X)
  every query is its key and the scores are symmetric by construction; otherwise an asymmetric pair is
  named with its numbers, or the symmetry is called a coincidence of these inputs and weights;
- step 4, scale: what the document's scale does, for a dot product or an additive score, and what z is;
- step 4 of an additive score: its hidden terms, q·W₁, k·W₂ and the tanh vector;
- steps 6 and 7 on the built-in example: the illustrated walkthrough's own rounded figures for each query.
"""

from __future__ import annotations

import numpy as np

from attncli.core import formulas
from attncli.core.trace import Trace
from attncli.outputs.numbers import dims
from attncli.teach.explain import facts
from attncli.teach.explain.gate_temperature import scored_queries
from attncli.teach.explain.step import Focus, Numbers, inputs_symbol, kv_head, scored
from attncli.teach.lines import fixed, subscript, vector

# The walkthrough's figures round each query's weights (query 1 to halves, queries 2 and 3 to one decimal)
# and show the output of those rounded weights: [2.0, 7.0, 1.5], [2.0, 8.0, 0.0], [2.0, 7.8, 0.3].
ARTICLE_WEIGHTS = ([0.0, 0.5, 0.5], [0.0, 1.0, 0.0], [0.0, 0.9, 0.1])


def symmetry(trace: Trace, focus: Focus, t: dict) -> tuple[list[str], dict]:
    """Step 4's paragraph on whether the scores read the same both ways (self-attention with dot scores only)."""
    spec, h, i = trace.spec, focus.head, focus.query
    if spec.score != "dot" or spec.context is not None or spec.n < 2:
        return [], {}
    s = trace.scores[h]
    close = 1e-9 * max(1.0, float(np.abs(s).max()))
    differ = np.abs(s - s.T)
    if differ.max() <= close:
        same = same_projection(spec, h)
        if same is None:  # W_Q·W_Kᵀ symmetric makes it so for any inputs (not with rope or qk_norm in between)
            plain = spec.rope is None and spec.qk_norm is None and facts.symmetric_weights(spec, h)
            return (["symmetric_weights"], facts.symmetric_words(spec, h, t)) if plain else (["symmetric"], {})
        return ["forced"], {"why": t["scores"][same].format(x=inputs_symbol(spec))}
    if differ[i].max() > close:  # a key the query may see, if one of them shows it
        seen = differ[i] * (1.0 if spec.allowed is None else np.where(spec.allowed[h, i], 1.0, 1e-300))
        a, b = i, int(np.argmax(seen))
        key = "asymmetric"
    else:
        a, b = (int(x) for x in np.unravel_index(int(np.argmax(differ)), differ.shape))
        key = "row_column"
    prime = scored(trace)[2]  # ′ with rope, the hat with qk_norm last
    qk = lambda x, y: f"q{prime}{subscript(x + 1)}·k{prime}{subscript(y + 1)}"  # noqa: E731
    ab, ba = facts.apart(s[a, b], s[b, a], focus.precision)  # said to differ: printed so that they do
    words = {"other": f"“{spec.tokens[b]}”", "first": f"“{spec.tokens[a]}”", "qab": qk(a, b), "qba": qk(b, a),
             "ab": ab, "ba": ba}
    return [key], words


def same_projection(spec, h: int) -> str | None:
    """Why every query equals its key here, as a text key: the same matrix (and bias), both left out; or None."""
    kv = kv_head(spec, h)
    if "query" in spec.identity and "key" in spec.identity and spec.b_q is None and spec.b_k is None:
        return "why_identity"
    if spec.w_q[h].shape != spec.w_k[kv].shape or not np.array_equal(spec.w_q[h], spec.w_k[kv]):
        return None
    if ((spec.b_q is None) != (spec.b_k is None)
            or (spec.b_q is not None and not np.array_equal(spec.b_q[h], spec.b_k[kv]))):
        return None
    return "why_same" if spec.b_q is None else "why_same_bias"


def scale_keys(spec) -> list[str]:
    """Step 4's paragraph on the scale: for a dot product why √d_k, for an additive score only what it does."""
    if spec.score == "additive":
        return [f"additive_{spec.scale_name}"]
    return [f"scale_{spec.scale_name}" + ("_softcap" if spec.softcap is not None and spec.scale_name == "none" else "")]


def z_formula(spec) -> str:
    """What z is, in the letters of step 4's lines: ``s``, ``s / √3``, ``5·tanh(s / √3 / 5) + b`` …"""
    return formulas.scale_text(spec).replace("S", "s").replace("B", "b")


def article(trace: Trace, focus: Focus) -> dict:
    """The walkthrough's rounded figures for the chosen query: its weights, weighted values and output."""
    spec = trace.spec
    weights = np.array(ARTICLE_WEIGHTS[focus.query])
    v = trace.mixed_values[kv_head(spec, focus.head)]
    rows = weights[:, None] * v
    return {"rounded_weights": fixed(weights, 1), "rounded_rows": ", ".join(fixed(row, 1) for row in rows),
            "rounded": fixed(weights @ v, 1), "exact": fixed(trace.head_outputs[focus.head, focus.query], 4),
            "exact_weights": fixed(trace.weights[focus.head, focus.query], 4)}


def additive(trace: Trace, focus: Focus, t: dict) -> tuple[tuple[np.ndarray, np.ndarray], list[str], list[Numbers]]:
    """The hidden terms of e_j = vᵀ·tanh(q·W₁ + k_j·W₂) for the chosen query: (q·W₁ + k_j·W₂, its tanh) per key,
    the line that writes q·W₁ out, and the tables q·W₁, K·W₂ and tanh(q·W₁ + K·W₂)."""
    spec, h, i, p = trace.spec, focus.head, focus.query, focus.precision
    _, k, prime = scored(trace)
    q, k = scored_queries(trace)[h, i], k[kv_head(spec, h)]  # the query times τ with a temperature
    qw, kw = q @ spec.w_1[h], k @ spec.w_2[h]  # (d_a,), (m, d_a)
    inside = qw[None, :] + kw
    th = np.tanh(inside)
    line = f"q{prime}{subscript(i + 1)}·W₁ = {vector(qw, p)}"
    d_a, label = dims(qw.shape[0]), t["label"]
    numbers = [Numbers("query_w1", label["query_w1"], qw[None, :], [spec.tokens[i]], d_a),
               Numbers("keys_w2", label["keys_w2"], kw, spec.context_tokens, d_a),
               Numbers("tanh", label["tanh"], th, spec.context_tokens, d_a)]
    return (inside, th), [line], numbers
