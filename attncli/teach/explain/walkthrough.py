"""The eight steps of the illustrated walkthrough, as data, for one query of one head.

Every number comes from the computed :class:`~attncli.core.attention.Trace`; the only
arithmetic here is for display (the products inside one dot product, one weight
times one value row).  A :class:`Step` holds a title, a formula, paragraphs, the
worked lines and the tables; :mod:`attncli.teach.explain.view` draws it with Rich and
writes it as JSON.  The words live in attncli/data/texts/ (one JSON file per language, read by
:mod:`attncli.teach.texts`).

Steps 1 to 8 keep their numbers; the extra steps appear where the document computes them
(the order of docs/format.md): ``positional`` after step 1, ``pre_norm`` between steps 2
and 3, ``rope`` between steps 3 and 4, and ``add_norm`` or ``residual`` after step 8.  The
extra steps of today's attention are made in :mod:`attncli.teach.explain.modern`.
"""

from __future__ import annotations

import numpy as np

from attncli.core import formulas
from attncli.core.stages import EXTRA_STEPS, QUANTITIES
from attncli.core.trace import Trace
from attncli.outputs.numbers import dims, number
from attncli.outputs.titles import formula as in_lang
from attncli.teach.explain import (
    backward,
    facts,
    gate_temperature,
    latent,
    max_logits,
    modern,
    notes,
    qknorm,
    step,
    values_norm,
)
from attncli.teach.explain.differential import differential_step
from attncli.teach.explain.indexer import indexer_step
from attncli.teach.explain.step import MAX_LINES, Focus, Numbers, Step, allowed_row, context, kv_head, paragraphs
from attncli.teach.lines import dot_line, factor, product_line, quotient_line, subscript, vector, weighted_line
from attncli.teach.texts import texts

__all__ = ["EXTRA_STEPS", "Focus", "Numbers", "Step", "context", "steps"]
# Step 5 writes exp(z) as it is while the row's largest score is in [0, SHIFT_ABOVE]: then the largest
# exponential is between 1 and e^30, so the written sum and quotients are true to the decimals shown.
# Outside that range it subtracts the row max first, as the code does: exp(1000) overflows, and
# exp(-1000) underflows to 0, which would read "a = 0 / 0 = 0.7311".
SHIFT_ABOVE = 30

NEEDS = {"positional": "positional:", "pre_norm": "pre_norm:", "qk_norm": "qk_norm:", "rope": "rope:",
         "latent": "latent:", "add_norm": "add_norm:", "residual": "residual: true", "backward": "gradient:",
         "differential": "differential:"}
NEEDS["indexer"] = "indexer:"


def steps(trace: Trace, focus: Focus) -> list[Step]:
    """Every step in order: 1, (positional), 2, (pre_norm), 3, (qk_norm), (rope), (qk_norm after rope), 4 … 8,
    (add_norm or residual)."""
    spec = trace.spec
    t, ctx = texts(focus.lang), context(trace, focus)
    makers = [inputs_step]
    makers += [positional_step] if spec.positional is not None else []
    makers += [weights_step] + ([modern.pre_norm_step] if trace.normalized_inputs is not None else [])
    rope = [modern.rope_step] if trace.queries_rotated is not None else []
    normed = [qknorm.qk_norm_step] if trace.normalized_queries is not None else []
    after = spec.qk_norm is not None and spec.qk_norm.after_rope
    makers += [projections_step] + (rope + normed if after else normed + rope)
    makers += [latent.latent_step] if spec.latent is not None else []  # after the rotation: the absorbed form uses it
    makers += [indexer_step] if trace.index_scores is not None else []  # which keys the attention below may see
    makers += [scores_step, softmax_step, weighted_step, sum_step]
    makers += [differential_step] if spec.differential is not None else []  # (the pair: after this head's own mix)
    makers += [matrix_step]
    if trace.normalized is not None:
        makers.append(add_norm_step)
    elif trace.residual is not None:
        makers.append(modern.residual_step)
    if trace.grad_scaled_scores is not None:  # with gradient: the backward pass through the softmax
        makers.append(backward.backward_step)
    return [make(trace, focus, t, ctx) for make in makers]


def inputs_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec = trace.spec
    keys = ["body" if focus.layer is None else "stacked"] + (["cross"] if spec.context is not None else [])
    if focus.layer is not None:
        ctx = dict(ctx, layer=focus.layer[0], before=focus.layer[0] - 1, passed=t["inputs"][focus.layer[1]])
    numbers = [Numbers("inputs", t["label"]["inputs"], spec.inputs, spec.tokens, dims(spec.inputs.shape[1]))]
    if spec.context is not None:
        numbers.append(Numbers("context", t["label"]["context"], spec.context, spec.context_tokens,
                               dims(spec.context.shape[1])))
    formula = "X" + (", C" if spec.context is not None else "")
    return Step(1, t["inputs"]["title"], formula, paragraphs(t, "inputs", keys, ctx), numbers=numbers)


def positional_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec = trace.spec
    kind = "sinusoidal" if spec.positional_name == "sinusoidal" else "matrix"
    d = dims(spec.inputs.shape[1])
    numbers = [Numbers("positional", t["label"]["positional"], spec.positional, spec.tokens, d),
               Numbers("embedded", t["label"]["embedded"], spec.embedded, spec.tokens, d)]
    formula = "X + P" + ("   P[i, 2k] = sin(i / 10000^(2k/d)),  P[i, 2k+1] = cos(i / 10000^(2k/d))"
                         if kind == "sinusoidal" else "")
    ctx = dict(ctx, sees=t["positional"]["sees_normalised" if spec.pre_norm is not None else "sees"])
    return Step("positional", t["positional"]["title"], formula, paragraphs(t, "positional", ["body", kind], ctx),
                numbers=numbers)


def weights_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, h, j = trace.spec, focus.head, kv_head(trace.spec, focus.head)
    body, given = facts.given_key(spec, t)  # a matrix left out is the identity, not given
    shared = spec.shared_kv is not None  # kv_from: W_Q only, the keys and values are an earlier layer's
    # (V = K, k_eq_v: no W_V to speak of, nor show)
    keys = ["shared_kv"] if shared else ["body_k_eq_v" if spec.k_eq_v and body == "body" else body]
    keys += [] if not spec.identity else ["identity" if len(spec.identity) == 1 else "identity_many"]
    biases = [name for name, b in (("b_Q", spec.b_q), ("b_K", spec.b_k), ("b_V", spec.b_v)) if b is not None]
    keys += ["biases"] if biases else []
    if spec.kv_heads < spec.heads and not shared:  # grouped-query: which K/V head this query head shares, and why
        keys += ["mqa_share", "mqa"] if spec.kv_heads == 1 else ["gqa", "gqa_why"]
    elif spec.heads > 1:
        keys.append("heads")
    if spec.d_k != spec.d_v:
        keys.append("dk_dv")
    keys += ["latent"] if spec.latent is not None else []
    omitted = [f"W_{name[0].upper()}" for name in ("query", "key", "value") if name in spec.identity]
    ctx = dict(ctx, omitted=t["and"].join(omitted) if len(omitted) == 2 else t["list_sep"].join(omitted),
               biases=t["list_sep"].join(biases), r_kv=spec.latent.r_kv if spec.latent is not None else 0, **given)
    matrices = (("w_q", spec.w_q, h), ("w_k", spec.w_k, j), *((("w_v", spec.w_v, j),) if not spec.k_eq_v else ()))
    numbers = [Numbers(key, modern.gqa_label(t, key, spec, ctx), w[head], dims(w.shape[1]), dims(w.shape[2]))
               for key, w, head in matrices if not (shared and key != "w_q")]
    for key, b, head in (("b_q", spec.b_q, h), ("b_k", spec.b_k, j), ("b_v", spec.b_v, j)):
        if b is not None and not (shared and key != "b_q"):
            numbers.append(Numbers(key, modern.gqa_label(t, key, spec, ctx), b[head][None, :], [key], dims(b.shape[1])))
    formula = "W_Q" if shared else "W_Q, W_K (V = K)" if spec.k_eq_v else "W_Q, W_K, W_V"
    return Step(2, t["weights"]["title"], formula, paragraphs(t, "weights", keys, ctx), numbers=numbers)


def plus(bias, name: str) -> str:
    """`` + b_Q`` when the document has that bias, else nothing."""
    return "" if bias is None else f" + {name}"


def clamped(text: str, spec) -> str:
    """``clamp(text, −c, c)`` with ``clip_qkv: c``, else ``text``."""
    return text if spec.clip_qkv is None else f"clamp({text}, −{spec.clip_qkv:g}, {spec.clip_qkv:g})"


def cells(spec, name: str, row: np.ndarray, head: int, p: int) -> str:
    """`` = [1·1 + 0·1 + …, …]``: each cell of a projection written out as step 4 writes a score (not for a
    left-out matrix, a clamp, or a row too long to work by hand)."""
    if name in spec.identity or spec.clip_qkv is not None:
        return ""
    letter = name[0]
    w, b = getattr(spec, f"w_{letter}")[head], getattr(spec, f"b_{letter}")
    written = product_line(row, w, None if b is None else b[head], p)
    return "" if written is None else f" = {written}"


def projections_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, h, p, kv = trace.spec, focus.head, focus.precision, kv_head(trace.spec, focus.head)
    rows, source = step.projected_rows(trace), step.source_rows(trace)
    i = focus.query
    b_q, b_k, b_v = plus(spec.b_q, "b_Q"), plus(spec.b_k, "b_K"), plus(spec.b_v, "b_V")
    if trace.latent_queries is not None:  # q = c_Q·W_UQ, from the token's query latent (W_Q here is W_UQ)
        c_q = trace.latent_queries[i]
        query = clamped(f"c_Q{subscript(i + 1)} · W_UQ", spec) + f" = {vector(c_q, p)} · W_UQ" + cells(
            spec, "query", c_q, h, p)
    else:
        query = clamped(f"{vector(rows[i], p)} · W_Q{b_q}", spec) + cells(spec, "query", rows[i], h, p)
    lines = [f"{spec.tokens[i]}: q{subscript(i + 1)} = {query} = {vector(trace.queries[h, i], p)}"]
    for j in range(min(spec.m, MAX_LINES)):
        row, token, k = vector(source[j], p), spec.context_tokens[j], subscript(j + 1)
        if spec.shared_kv is not None:  # kv_from: the earlier layer's, as its scores saw them and its weights mixed
            key, value = (t["projections"]["shared_label"].format(name=f"{c}{k}", **ctx) for c in "kv")
        elif spec.latent is not None:  # from the token's latent c (the latent step works one out)
            key, value = clamped(f"(c{k} · W_UK | k_r{k})", spec), clamped(f"c{k} · W_UV", spec)
        else:
            key = clamped(f"{row} · W_K{b_k}", spec) + cells(spec, "key", source[j], kv, p)
            value = clamped(f"{row} · W_V{b_v}", spec) + cells(spec, "value", source[j], kv, p)
            value = f"k{k}" if spec.k_eq_v else value  # (Gemma 4's V = K: the key before qk_norm and rope)
        lines.append(f"{token}: k{k} = {key} = {vector(trace.keys[kv, j], p)}")
        lines.append(f"{token}: v{k} = {value} = {vector(trace.values[kv, j], p)}")
    if spec.m > MAX_LINES:
        lines.append("…")
    numbers = [Numbers("queries", t["label"]["queries"], trace.queries[h], spec.tokens, dims(spec.d_k)),
               Numbers("keys", modern.gqa_label(t, "keys", spec, ctx), trace.keys[kv], spec.context_tokens,
                       dims(spec.d_k)),
               Numbers("values", modern.gqa_label(t, "values", spec, ctx), trace.values[kv], spec.context_tokens,
                       dims(spec.d_v))]
    cross = spec.context is not None
    same = not cross and notes.same_projection(spec, h) is not None  # every query is its key
    why = "why_qk" if not same else "why_qk_same" if spec.score == "dot" else "why_qk_same_additive"
    keys = ["body_cross", "why_qk_cross"] if cross else ["body", why]
    if spec.shared_kv is not None:  # kv_from: only the queries are made here
        keys = ["body_shared"]
    elif spec.pre_norm is not None:
        keys.append("pre_norm_cross" if cross else "pre_norm")
    elif spec.positional is not None:
        keys.append("positional_cross" if cross else "positional")
    keys += ["gqa"] if spec.kv_heads < spec.heads else []
    keys += ["clip"] if spec.clip_qkv is not None else []
    lines, numbers, keys = values_norm.lines(trace, focus, t, kv, lines, numbers, keys)  # Gemma 4: k_eq_v, v_norm
    # as the tables write them
    formula = in_lang("   ".join(QUANTITIES[key].text(spec) for key in ("queries", "keys", "values")), focus.lang)
    return Step(3, t["projections"]["title"], formula,
                paragraphs(t, "projections", keys, dict(ctx, clip=spec.clip_qkv)), lines, numbers)


def scores_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, h, i, p, kv = trace.spec, focus.head, focus.query, focus.precision, kv_head(trace.spec, focus.head)
    s, z, allowed = trace.scores[h, i], trace.scaled_scores[h, i], allowed_row(trace, i, h)
    q, k, prime = step.scored(trace)  # Q′ with rope, Q̂ when normalised last
    q = gate_temperature.scored_queries(trace)  # times τ with a temperature
    unbiased = (z if trace.score_bias is None
                else z - np.where(np.isneginf(trace.score_bias[h, i]), 0.0, trace.score_bias[h, i]))
    hidden, lines, numbers = notes.additive(trace, focus, t) if spec.score == "additive" else (None, [], [])
    tau_lines, tau_keys, tau_words = gate_temperature.temperature_lines(trace, focus)
    lines = tau_lines + lines
    for j in range(min(spec.m, MAX_LINES)):
        qi, kj = f"{'τ·' if tau_lines else ''}q{prime}{subscript(i + 1)}", f"k{prime}{subscript(j + 1)}"
        if hidden is not None:  # vᵀ·tanh(q·W₁ + k·W₂), the sum inside the tanh and the products with v written out
            inside, th, v = hidden[0][j], hidden[1][j], spec.v_a[h]
            lines.append(f"{spec.context_tokens[j]}: vᵀ·tanh({qi}·W₁ + {kj}·W₂) = vᵀ·tanh({vector(inside, p)}) = "
                         f"{dot_line(v, th, s[j], p)}")
        else:
            lines.append(f"{spec.context_tokens[j]}: {qi} · {kj} = {dot_line(q[h, i], k[kv, j], s[j], p)}")
        lines[-1] += modern.scaled_lines(s[j], spec, unbiased[j], p) + modern.bias_line(trace, h, i, j, p)
        if not allowed[j]:
            lines[-1] += f"   →   {t['label']['masked']}"
    if spec.m > MAX_LINES:
        lines.append("…")
    keys = ["additive" if spec.score == "additive" else "dot"]
    if prime == "\u0302":  # the normalised Q̂ and K̂ (after the rotation, if any) are multiplied
        keys.append("qk_norm_after" if spec.rope else "qk_norm")
    elif spec.rope is not None:
        keys.append("rope_additive" if spec.score == "additive" else "rope")
    scale, scale_words = facts.scale_why(trace, focus, facts.scale_keys(spec, notes.scale_keys(spec)))
    keys += tau_keys + scale + ["z"]
    keys += [] if spec.softcap is None else ["softcap"]
    keys += facts.bias_keys(trace, focus, modern.bias_keys(spec))
    if spec.mask is not None:
        keys.append("mask_score_bias" if spec.mask_name == "none" else f"mask_{spec.mask_name}")
    chunk_keys, chunk_words = gate_temperature.chunk_words(trace, focus)
    symmetry, words = notes.symmetry(trace, focus, t)  # is the score of i for j that of j for i?
    keys += chunk_keys + ([] if tau_keys else symmetry)  # (with τ a score is τ·q′·k: no longer a plain dot product)
    chosen, chosen_words = facts.default_words(trace, focus, t)  # why this query, when --query is left out
    count, counts = facts.count_keys(spec)  # seed 003: the operations each kind of score needs here
    keys += count
    ctx = dict(ctx, z=notes.z_formula(spec), **words, **tau_words, **chunk_words, **chosen_words, **counts,
               **scale_words)
    masked = None if spec.mask is None else ~allowed[None, :]
    numbers.append(Numbers("scores", t["label"]["scores"], s[None, :], [spec.tokens[i]], spec.context_tokens))
    if trace.score_bias is not None:
        numbers.append(Numbers("score_bias", t["label"]["score_bias"], trace.score_bias[h, i][None, :],
                               [spec.tokens[i]], spec.context_tokens, masked))
    if spec.scale_name != "none" or spec.mask is not None or spec.softcap is not None or spec.score_bias is not None:
        numbers.append(Numbers("scaled_scores", t["label"]["scaled_scores"], z[None, :], [spec.tokens[i]],
                               spec.context_tokens, masked))
    formula = f"{QUANTITIES['scores'].text(spec)}   z = {formulas.scale_text(spec)}"
    return Step(4, t["scores"]["title"], formula, paragraphs(t, "scores", chosen + keys, ctx), lines, numbers)


def softmax_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, h, i, p = trace.spec, focus.head, focus.query, focus.precision
    z, a, allowed = trace.scaled_scores[h, i], trace.weights[h, i], allowed_row(trace, i, h)
    tokens, row = spec.context_tokens, [spec.tokens[i]]
    numbers, lines = [], []
    if not allowed.any():  # nothing to normalise: weights and output 0, as PyTorch's SDPA gives
        keys = ["all_masked"]
    elif spec.normalize == "softmax":
        top = max([float(z[allowed].max()), *([] if spec.sinks is None else [float(spec.sinks[h])])])  # the sink too
        shift = top if top > SHIFT_ABOVE or top < 0 else 0.0  # the row max subtracted, as the code does
        e = np.where(allowed, np.exp(np.where(allowed, z - shift, 0.0)), 0.0)  # the largest is 1 after a shift
        num = lambda x: number(x, p)  # noqa: E731
        shifted = "" if shift == 0 else f" − {factor(shift, p)}"
        shown = [j for j in range(min(spec.m, MAX_LINES)) if allowed[j]]
        lines = [f"{tokens[j]}: exp({num(z[j])}{shifted}) = {num(e[j])}" for j in shown]
        sink = [] if spec.sinks is None else [float(np.exp(spec.sinks[h] - shift))]  # e^(s − shift): no value
        lines += [f"sink: exp({num(spec.sinks[h])}{shifted}) = {num(sink[0])}"] if sink else []
        total = e.sum() + sum(sink)
        lines.append(facts.sum_line([num(x) for x in [*e[shown], *sink]], spec.m > MAX_LINES, num(total)))
        lines += [f"{tokens[j]}: a = {num(e[j])} / {num(total)} = {num(a[j])}" for j in shown]
        label = t["label"]["exponentials" if shift == 0 else "exponentials_shifted"]
        numbers.append(Numbers("exponentials", label, e[None, :], row, tokens,
                               None if allowed.all() else ~allowed[None, :]))
        keys, shift_words = facts.softmax_keys(trace, focus, top, shift, t)  # true of these numbers
        ctx = dict(ctx, **shift_words)
    elif spec.normalize == "sum":
        total = float(np.where(allowed, z, 0.0).sum())
        lines = [f"{tokens[j]}: a = {quotient_line(z[j], total, a[j], p)}"
                 for j in range(min(spec.m, MAX_LINES)) if allowed[j]]
        keys = ["sum"]
    else:
        keys = ["none"]
    if allowed.any() and not allowed.all():
        keys.append("masked")
    if spec.sinks is not None:
        keys, lines, ctx = modern.sink_sentence(trace, focus, keys, lines, ctx)
    keys, lines, ctx = max_logits.max_logit_sentences(trace, focus, t, keys, lines, ctx)  # with max_logits
    numbers.append(Numbers("weights", t["label"]["weights"], a[None, :], row, tokens, heat=True))
    return Step(5, t["softmax"]["title"], formulas.weights_formula(spec), paragraphs(t, "softmax", keys, ctx), lines,
                numbers)


def weighted_values(trace: Trace, focus: Focus) -> np.ndarray:
    """a_j · v_j for every key j: (m, d_v) — one weight times one value row, for display."""
    return trace.weights[focus.head, focus.query][:, None] * trace.mixed_values[kv_head(trace.spec, focus.head)]


def weighted_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, h, i, p = trace.spec, focus.head, focus.query, focus.precision
    a, v, wv = trace.weights[h, i], trace.mixed_values[kv_head(spec, h)], weighted_values(trace, focus)
    lines = [f"{spec.context_tokens[j]}: {weighted_line(a[j], v[j], wv[j], p)}" for j in range(min(spec.m, MAX_LINES))]
    numbers = [Numbers("weighted_values", t["label"]["weighted_values"], wv, spec.context_tokens, dims(spec.d_v))]
    zeros = [int(j) for j in np.flatnonzero(a == 0)]
    keys = ["body_zero" if zeros else "body"]
    if zeros:
        ctx = dict(ctx, keys=facts.quoted(spec.context_tokens, zeros, t))
    if focus.builtin:  # the walkthrough's weighted values come from its rounded weights
        ctx = dict(ctx, **notes.article(trace, focus))
        keys.append("builtin_first" if i == 0 else "builtin")
    return Step(6, t["weighted"]["title"], "a_j · v_j", paragraphs(t, "weighted", keys, ctx),
                lines + (["…"] if spec.m > MAX_LINES else []), numbers)


def sum_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, h, i, p = trace.spec, focus.head, focus.query, focus.precision
    y = trace.head_outputs[h, i] if spec.differential is None else weighted_values(trace, focus).sum(axis=0)
    body, blend = facts.sum_key(trace, focus, t)  # every value, some, one alone or none
    ctx = dict(ctx, **blend)
    keys = [body] + (["heads"] if spec.heads > 1 or spec.w_o is not None or spec.b_o is not None else [])
    lines = [" + ".join(vector(row, p) for row in weighted_values(trace, focus)[:MAX_LINES])
             + (" + …" if spec.m > MAX_LINES else "") + f" = {vector(y, p)}"]
    if focus.builtin:  # the walkthrough's own rounded figures for this query
        ctx = dict(ctx, **notes.article(trace, focus))
        keys.append("builtin")
    numbers = [Numbers("head_output", t["label"]["head_output"], y[None, :], [spec.tokens[i]], dims(spec.d_v))]
    text = paragraphs(t, "sum", keys, ctx) + ([] if spec.differential is None else  # not yet the head's output
                                              [t["differential"]["sum_note"].format(**ctx)])
    return Step(7, t["sum"]["title"].format(**ctx), "y = Σ_j a_j · v_j", text, lines, numbers)


def matrix_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, h = trace.spec, focus.head
    scaled = "" if spec.scale_name == "none" else ("1/√d_k · " if spec.scale_name == "sqrt" else f"{spec.scale:g} · ")
    qk = ctx["qk"]  # S with additive scores (τ is inside them then)
    if spec.query_temperature is not None and "·" in qk:
        qk = f"(τ ⊙ {qk.split('·')[0]})·{qk.split('·')[1]}"
    inner = f"{scaled}S" if spec.score == "additive" else f"{scaled}{qk}"
    if spec.softcap is not None:
        inner = f"{spec.softcap:g}·tanh({inner} / {spec.softcap:g})"
    inner += "" if spec.score_bias is None else " + B"
    softmax = f"softmax({inner})" if spec.sinks is None else f"softmax([{inner}, s])[:-1]"  # the sink: one more term
    norm = {"softmax": softmax, "sum": f"rownorm({inner})", "none": inner}[spec.normalize]
    formula = f"H = {norm}·V" if spec.differential is None else QUANTITIES["head_outputs"].text(spec)  # (H = Ô)
    keys = ["body"] + ([] if spec.mask is None else ["mask"])
    masked = None if spec.allowed is None else ~spec.allowed[h]
    numbers = [Numbers("weights", facts.all_label(t, "all_weights", spec, h), trace.weights[h], spec.tokens,
                       spec.context_tokens, masked, heat=True),
               Numbers("head_outputs", facts.all_label(t, "head_outputs", spec, h), trace.head_outputs[h], spec.tokens,
                       dims(spec.d_v))]
    if spec.heads > 1 or spec.w_o is not None or spec.b_o is not None or spec.w_g is not None:
        formula += f"   {formulas.output_formula(spec)}"
        heads = "heads" if spec.kv_heads == spec.heads else "heads_mqa" if spec.kv_heads == 1 else "heads_gqa"
        keys += ([heads] if spec.heads > 1 else []) + (["projection"] if spec.w_o is not None else [])
        if spec.heads > 1:
            numbers.append(Numbers("concat", t["label"]["concat"], trace.concat, spec.tokens,
                                   dims(trace.concat.shape[1])))
        numbers.append(Numbers("output", t["label"]["output"], trace.output, spec.tokens, dims(trace.output.shape[1])))
    lines, gated, gate_keys = gate_temperature.gate_lines(trace, focus, t)
    text = paragraphs(t, "matrix", keys + gate_keys, ctx) + ([] if spec.differential is None else  # H is not A·V
                                                            [t["differential"]["matrix_note"]])
    return Step(8, t["matrix"]["title"], in_lang(formula, focus.lang), text, lines, numbers[:2] + gated + numbers[2:])


def add_norm_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, i, p = trace.spec, focus.query, focus.precision
    r = trace.residual[i]
    eps = spec.add_norm[2]  # (gamma, beta, eps)
    mean, var = float(r.mean()), float(r.var())  # the two numbers LayerNorm uses for this row
    lines = modern.post_norm_lines(trace, focus) if spec.post_norm is not None else []  # R = X₀ + post_norm(Y)
    lines += [f"{spec.tokens[i]}: r = {vector(r, p)}",
              f"mean = {number(mean, p)}   var = {number(var, p)}   ε = {eps:g}",
              f"LayerNorm(r) = {vector(trace.normalized[i], p)}"]
    d = dims(spec.inputs.shape[1])
    numbers = [] if spec.post_norm is None else modern.residual_step(trace, focus, t, ctx).numbers[:1]  # post_norm(Y)
    numbers += [Numbers("residual", t["label"]["residual"], trace.residual, spec.tokens, d),
                Numbers("normalized", t["label"]["normalized"], trace.normalized, spec.tokens, d)]
    formula = f"{formulas.residual_formula(spec)}   LayerNorm(R) = γ · (R − mean) / √(var + ε) + β"
    keys = ["body"] + ([] if spec.post_norm is None else ["post_norm"])
    ctx = dict(ctx, x0="X + P" if spec.positional is not None else "X",
               norm=formulas.norm_text(spec.post_norm.kind) if spec.post_norm is not None else "")
    return Step("add_norm", t["add_norm"]["title"], formula, paragraphs(t, "add_norm", keys, ctx), lines, numbers)
