"""The extra step of ``qk_norm``, as data: the chosen query's norm written out, and why the logits stay bounded.

    q̂ = γ ⊙ q / √(mean(q²) + ε)            (RMSNorm; LayerNorm with its mean and variance, + β)

A score is a dot product, so |z| = scale·|q·k| ≤ scale·‖q‖·‖k‖ (Cauchy–Schwarz).  Before the norm the longest
query and key of the head bound it, and that bound grows with the inputs; after it every row's length is at most
max|γ|·√w (+ ‖β‖), w the norm's width (d_k, or h·d_k over the projection), whatever the inputs:

    ‖γ ⊙ u‖ ≤ max|γ|·‖u‖,   ‖u‖² = w·mean(x²)/(mean(x²) + ε) < w      (u = x / √(mean(x²) + ε))

and a rotation keeps lengths, so the bound holds for the scores whether the norm comes before rope or after it.
"""

from __future__ import annotations

import math

import numpy as np

from attncli.core.norms import Norm
from attncli.core.spec import Spec
from attncli.core.trace import Trace
from attncli.outputs.numbers import dims, number
from attncli.teach.explain.modern import gqa_label, norm_lines
from attncli.teach.explain.step import Focus, Numbers, Step, kv_head, paragraphs
from attncli.teach.lines import vector


def _row(v: np.ndarray | None, head: int) -> np.ndarray | None:
    """γ or β of one head: the shared vector, or the head's row of a per-head table."""
    return v if v is None or v.ndim == 1 else v[head]


def _side(spec: Spec, side: str, head: int) -> tuple[np.ndarray, np.ndarray | None, int]:
    """γ, β (None for RMSNorm) of one head of one side, and the width its norm divides by."""
    norm = spec.qk_norm
    gamma, beta = (norm.gamma_query, norm.beta_query) if side == "query" else (norm.gamma_key, norm.beta_key)
    if norm.scope == "projection":
        count = spec.heads if side == "query" else spec.kv_heads
        gamma, beta = gamma.reshape(count, -1), None if beta is None else beta.reshape(count, -1)
        return gamma[head], _row(beta, head), count * spec.d_k
    return _row(gamma, head), _row(beta, head), spec.d_k


def largest_length(spec: Spec, side: str, head: int) -> float:
    """The longest a normalised row of this head can be: max|γ|·√w + ‖β‖."""
    gamma, beta, width = _side(spec, side, head)
    return float(np.abs(gamma).max() * math.sqrt(width) + (0.0 if beta is None else np.linalg.norm(beta)))


def bounds(trace: Trace, head: int) -> dict:
    """The largest |scaled score| of ``head`` possible before the norm (on this document's Q and K), after it (for
    any inputs), and the largest reached."""
    spec, kv = trace.spec, kv_head(trace.spec, head)
    q_len, k_len = np.linalg.norm(trace.queries[head], axis=-1), np.linalg.norm(trace.keys[kv], axis=-1)  # (n,), (m,)
    q_hat, k_hat = largest_length(spec, "query", head), largest_length(spec, "key", kv)
    scale = abs(spec.scale)
    reached = np.abs(scale * trace.scores[head]) if trace.scores is not None else np.zeros((spec.n, spec.m))
    reached = np.where(trace.spec.allowed[head] if trace.spec.allowed is not None else True, reached, 0.0)
    i, j = np.unravel_index(int(np.argmax(reached)), reached.shape)
    return {"q_len": float(q_len.max()), "q_at": spec.tokens[int(np.argmax(q_len))], "k_len": float(k_len.max()),
            "k_at": spec.context_tokens[int(np.argmax(k_len))], "q_hat": q_hat, "k_hat": k_hat,
            "before": scale * float(q_len.max() * k_len.max()), "after": scale * q_hat * k_hat,
            "reached": float(reached[i, j]), "pair": (spec.tokens[int(i)], spec.context_tokens[int(j)])}


def _length_formula(spec: Spec, side: str, head: int, p: int) -> str:
    """``max|γ|·√4 + ‖β‖ = 1.2 × 2 + 0.3 = 2.7``."""
    gamma, beta, width = _side(spec, side, head)
    num = lambda v: number(v, p)  # noqa: E731
    text = f"max|γ|·√{width}" + ("" if beta is None else " + ‖β‖")
    values = f"{num(np.abs(gamma).max())} × {num(math.sqrt(width))}" + ("" if beta is None else
                                                                     f" + {num(np.linalg.norm(beta))}")
    return f"{text} = {values} = {num(largest_length(spec, side, head))}"


def bound_lines(trace: Trace, focus: Focus, b: dict) -> list[str]:
    spec, h, p = trace.spec, focus.head, focus.precision
    num, s = (lambda v: number(v, p)), number(abs(spec.scale), p)
    hat = "\u0302"
    return [f"‖q‖ ≤ {num(b['q_len'])} (“{b['q_at']}”),  ‖k‖ ≤ {num(b['k_len'])} (“{b['k_at']}”):   "
            f"|z| ≤ {s} × {num(b['q_len'])} × {num(b['k_len'])} = {num(b['before'])}",
            f"‖q{hat}‖ ≤ {_length_formula(spec, 'query', h, p)},   "
            f"‖k{hat}‖ ≤ {_length_formula(spec, 'key', kv_head(spec, h), p)}",
            f"|z| ≤ {s} × {num(b['q_hat'])} × {num(b['k_hat'])} = {num(b['after'])};   largest here: "
            f"{num(b['reached'])} (“{b['pair'][0]}” → “{b['pair'][1]}”)"]


def qk_norm_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, h, i, p = trace.spec, focus.head, focus.query, focus.precision
    norm, kv = spec.qk_norm, kv_head(spec, focus.head)
    rotated = norm.after_rope and trace.queries_rotated is not None
    seen = trace.queries_rotated if rotated else trace.queries  # what the norm normalises
    gamma, beta, width = _side(spec, "query", h)
    if norm.scope == "projection":  # the token's numbers of every head, as one row
        x, result = seen[:, i].reshape(-1), trace.normalized_queries[:, i].reshape(-1)
        gamma, beta = norm.gamma_query, norm.beta_query
    else:
        x, result = seen[h, i], trace.normalized_queries[h, i]
    lines = [f"{spec.tokens[i]}: q = {'q′ = ' if rotated else ''}{vector(x, p)}"]
    lines += norm_lines(x, Norm(norm.kind, gamma, beta, norm.eps), result, "q", p)
    shared = spec.shared_kv is not None  # kv_from: the keys were normalised in their own layer, with its γ
    b = bounds(trace, h)
    lines += [] if shared else bound_lines(trace, focus, b)
    num = lambda v: number(v, p)  # noqa: E731
    ctx = dict(ctx, eps=f"{norm.eps:g}", width=width, hd=spec.heads * spec.d_k, gd=spec.kv_heads * spec.d_k,
               q_len=num(b["q_len"]), k_len=num(b["k_len"]), before=num(b["before"]), q_hat=num(b["q_hat"]),
               k_hat=num(b["k_hat"]), after=num(b["after"]), reached=num(b["reached"]), s=num(abs(spec.scale)))
    ones = all(np.all(g == 1.0) for g in (norm.gamma_query, norm.gamma_key))
    per_head = norm.scope == "head" and (norm.gamma_query.ndim == 2 or norm.gamma_key.ndim == 2)
    keys = ["body", norm.kind, norm.scope, "after_rope" if rotated else "before_rope" if spec.rope else "no_rope",
            "gamma_ones" if ones else "gamma_per_head" if per_head else "gamma"]
    keys += ["beta"] if norm.beta_query is not None and not all(
        np.all(v == 0.0) for v in (norm.beta_query, norm.beta_key)) else []
    keys += ["shared_kv", "why"] if shared else ["bound", "why"]
    src = "Q′" if rotated else "Q"
    formula = (f"Q̂ = {'γ ⊙ ' if not ones else ''}{src} / √(mean({src}²) + ε)" if norm.kind == "rms"
               else f"Q̂ = γ ⊙ ({src} − mean) / √(var + ε) + β")
    formula += f"   ({t['qk_norm']['formula_' + norm.scope]})"
    numbers = [Numbers("normalized_queries", t["label"]["normalized_queries"], trace.normalized_queries[h],
                       spec.tokens, dims(spec.d_k))]
    numbers += [] if shared else [Numbers("normalized_keys", gqa_label(t, "normalized_keys", spec, ctx),
                                          trace.normalized_keys[kv], spec.context_tokens, dims(spec.d_k))]
    title = t["qk_norm"]["title_" + norm.kind]
    return Step("qk_norm", title, formula, paragraphs(t, "qk_norm", keys, ctx), lines, numbers)

