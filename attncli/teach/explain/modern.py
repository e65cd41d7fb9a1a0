"""The extra steps of today's attention, as data: ``pre_norm``, ``rope`` and ``residual``.

Each is made only when the document computes it (``pre_norm:``, ``rope:``, ``residual: true``)
and writes out the arithmetic of the chosen query with the document's own numbers:

    pre_norm   x̂ = γ ⊙ x / √(mean(x²) + ε)      (RMSNorm; LayerNorm with its mean and variance)
    rope       (a, b) → (a·cos φ − b·sin φ, b·cos φ + a·sin φ),  φ = p·f   for q at p and k at p′
    residual   r = x + y  (or x + post_norm(y))

Also the small pieces the eight steps need for these keys: the label of a shared
key/value head, and a scaled score followed by its soft cap.
"""

from __future__ import annotations

import numpy as np

from attncli.core.bias import relative_bucket
from attncli.core.formulas import norm_text, residual_formula
from attncli.core.norms import Norm
from attncli.core.spec import Spec
from attncli.core.trace import Trace
from attncli.outputs.numbers import dims, number
from attncli.teach.explain.facts import apart, e_notation
from attncli.teach.explain.rope_scaling import scaling_paragraphs
from attncli.teach.explain.step import Focus, Numbers, Step, allowed_row, kv_head, paragraphs
from attncli.teach.lines import factor, scaled_line, squares_line, subscript, vector

MAX_FREQUENCIES = 6  # frequencies named in a sentence; the rest are "…"


def gqa_label(t: dict, key: str, spec: Spec, ctx: dict) -> str:
    """A table's label; a key or value table of a shared head says which K/V head it is."""
    label = t["label"][key]
    if spec.kv_heads < spec.heads and key in ("w_k", "w_v", "b_k", "b_v", "keys", "values", "keys_rotated",
                                                 "normalized_keys"):
        label += "  · " + t["label"]["kv_head"].format(**ctx)
    return label


def scaled_lines(s: float, spec: Spec, z: float, precision: int) -> str:
    """What follows one score in step 4: ``   →   4 / √3 = 2.3094`` and, with a soft cap,
    ``   →   5·tanh(2.3094 / 5) = 2.1``."""
    text = ""
    scaled = spec.scale * s
    if spec.scale_name != "none":
        text += f"   →   {scaled_line(s, spec, z if spec.softcap is None else scaled, precision)}"
    if spec.softcap is not None:
        c = number(spec.softcap, precision)
        text += f"   →   {c}·tanh({number(scaled, precision)} / {c}) = {number(z, precision)}"
    return text


def bias_keys(spec: Spec) -> list[str]:
    """Step 4's paragraphs on the score bias: one per term, and why a bias on distance can stand for positions."""
    bias = spec.score_bias
    if bias is None:
        return []
    keys = [key for key, present in (("bias_matrix", bias.matrix is not None), ("bias_alibi", bias.slopes is not None),
                                     ("bias_relative", bias.relative is not None)) if present]
    return keys + (["bias_why"] if bias.slopes is not None or bias.relative is not None else [])


def bias_line(trace: Trace, head: int, i: int, j: int, precision: int) -> str:
    """What the score bias adds to one scaled score: ``   →   1.2 + 0.25·(0 − 2) = 0.7``
    ('' without a bias or when masked)."""
    spec, num = trace.spec, lambda v: number(v, precision)
    bias = spec.score_bias
    if bias is None:
        return ""
    parts, total = [], 0.0
    p_q, p_k = spec.query_positions[i], spec.key_positions[j]
    if bias.matrix is not None:
        b = float(bias.matrix[head, i, j] if bias.matrix.ndim == 3 else bias.matrix[i, j])
        if np.isneginf(b):
            return "   →   + (−inf)"
        parts.append(num(b))
        total += b
    if bias.slopes is not None:
        slope = float(bias.slopes[head])
        parts.append(f"{num(slope)}·({num(p_k)} − {num(p_q)})")
        total += slope * (p_k - p_q)
    if bias.relative is not None:
        r = bias.relative
        distance = int(p_k - p_q)
        bucket = int(relative_bucket(np.array(distance), r.bidirectional, r.buckets, r.max_distance))
        b = float(r.table[bucket, head])
        parts.append(f"({num(b)}: bucket {bucket} of distance {distance:+d})")
        total += b
    z = float(trace.scaled_scores[head, i, j])
    return f"   →   {num(z - total)} + {' + '.join(parts)} = {num(z)}"


# ---------------------------------------------------------------- pre_norm


def norm_lines(x: np.ndarray, norm: Norm, result: np.ndarray, name: str, precision: int) -> list[str]:
    """The arithmetic of one row's RMSNorm or LayerNorm; ``name`` the row's symbol (x or y),
    ``result`` the computed row."""
    p, d = precision, x.shape[0]
    num = lambda v: number(v, p)  # noqa: E731
    ones, zeros = bool(np.all(norm.gamma == 1.0)), norm.beta is None or bool(np.all(norm.beta == 0.0))
    gamma = "" if ones else "γ ⊙ "
    if norm.kind == "rms":
        ms = float(np.mean(x * x))
        root = float(np.sqrt(ms + norm.eps))
        lines = [f"mean({name}²) = ({squares_line(x, p)}) / {d} = {num(ms)}",
                 f"√(mean({name}²) + ε) = √({num(ms)} + {norm.eps:g}) = {num(root)}"]
        divided, expr = x / root, f"{gamma}{name} / {num(root)}"
    else:
        mean, var = float(x.mean()), float(x.var())
        root = float(np.sqrt(var + norm.eps))
        lines = [f"mean = {num(mean)}   var = mean(({name} − mean)²) = {num(var)}",
                 f"√(var + ε) = √({num(var)} + {norm.eps:g}) = {num(root)}"]
        divided, expr = (x - mean) / root, f"{gamma}({name} − {factor(mean, p)}) / {num(root)}{'' if zeros else ' + β'}"
    last = f"{name}\u0302 = {expr} = "
    if not ones or not zeros:  # γ and β with their numbers
        last += ("" if ones else f"{vector(norm.gamma, p)} ⊙ ") + vector(divided, p)
        last += ("" if zeros else f" + {vector(norm.beta, p)}") + " = "
    return lines + [last + vector(result, p)]


def pre_norm_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, i, p = trace.spec, focus.query, focus.precision
    norm, x = spec.pre_norm, spec.embedded
    x0 = "X + P" if spec.positional is not None else "X"
    x0_ = "(X + P)" if spec.positional is not None else "X"
    lines = [f"{spec.tokens[i]}: x = {vector(x[i], p)}"]
    lines += norm_lines(x[i], norm, trace.normalized_inputs[i], "x", p)
    if norm.kind == "rms":
        formula = f"X̂ = {'' if np.all(norm.gamma == 1.0) else 'γ ⊙ '}{x0_} / √(mean({x0_}²) + ε)"
    else:
        formula = f"X̂ = γ ⊙ ({x0} − mean) / √(var + ε) + β"
    keys = ["body", norm.kind, "gamma" if not np.all(norm.gamma == 1.0) else "gamma_ones"]
    keys += ["cross"] if spec.context is not None else []
    keys += ["residual"] if trace.residual is not None else []
    ctx = dict(ctx, eps=f"{norm.eps:g}", x0=x0, res_step="add_norm" if trace.normalized is not None else "residual")
    d = dims(x.shape[1])
    numbers = [Numbers("normalized_inputs", t["label"]["normalized_inputs"], trace.normalized_inputs, spec.tokens, d)]
    title = t["pre_norm"]["title_" + norm.kind]
    return Step("pre_norm", title, formula, paragraphs(t, "pre_norm", keys, ctx), lines, numbers)


# ---------------------------------------------------------------- rope


def rope_key(trace: Trace, focus: Focus) -> int:
    """The key whose rotation is written out: the first allowed key at another position than the query, if any."""
    spec, i = trace.spec, focus.query
    other = spec.key_positions != spec.query_positions[i]
    # a key at 0 is not turned: a dull example
    allowed, moved = allowed_row(trace, i, focus.head), spec.key_positions != 0
    for candidates in (other & allowed & moved, other & allowed, other):
        if candidates.any():
            return int(np.argmax(candidates))
    return 0


def turn(a: float, b: float, angle: float) -> tuple[float, float]:
    """The pair (a, b) turned by ``angle``: (a·cos − b·sin, b·cos + a·sin)."""
    c, s = np.cos(angle), np.sin(angle)
    return a * c - b * s, b * c + a * s


def rope_pair(rope, d_k: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where the first pair is read and where it is written (0-based dimensions of a head)."""
    lo = 0 if rope.part == "first" else d_k - rope.dims
    halves, neighbours = (lo, lo + rope.dims // 2), (lo, lo + 1)
    read = halves if rope.style == "half" else neighbours
    return read, neighbours if rope.style == "interleaved" else halves


def rope_lines(trace: Trace, focus: Focus, j: int) -> list[str]:
    """One rotation of the first pair for the query and for key j, and the dot product from p − p′ alone."""
    spec, h, i, p = trace.spec, focus.head, focus.query, focus.precision
    rope, kv = spec.rope, kv_head(spec, focus.head)
    num = lambda v: number(v, p)  # noqa: E731
    (a, b), (wa, wb) = rope_pair(rope, spec.d_k)  # the first pair's two dimensions, read and written
    f, scale = float(rope.frequencies[0]), rope.attention_factor
    times = "" if scale == 1 else f"{factor(scale, p)}·"
    lines = []
    pairs = []
    normed = spec.qk_norm is not None and not spec.qk_norm.after_rope  # then rope turns Q̂ and K̂
    shared = spec.shared_kv is not None  # kv_from: only the query is turned here
    queries, keys = (trace.normalized_queries, trace.normalized_keys) if normed else (trace.queries, trace.keys)
    turned = [("q", "", spec.query_positions[i], queries[h, i], trace.queries_rotated[h, i])]
    turned += [] if shared else [("k", "′", spec.key_positions[j], keys[kv, j], trace.keys_rotated[kv, j])]
    for name, prime, pos, row, rotated in turned:
        token = spec.tokens[i] if name == "q" else spec.context_tokens[j]
        angle = float(pos) * f
        c, s = np.cos(angle), np.sin(angle)
        x, y = float(row[a]), float(row[b])
        lines.append(f"{token}: {name} at p{prime} = {num(pos)}:   φ = {num(pos)} × {num(f)} = {num(angle)}   "
                     f"cos φ = {num(c)}   sin φ = {num(s)}")
        lines.append(f"({name}{subscript(a + 1)}, {name}{subscript(b + 1)}) = ({num(x)}, {num(y)})  →  {times}"
                     f"({factor(x, p)}·{factor(c, p)} − {factor(y, p)}·{factor(s, p)}, "
                     f"{factor(y, p)}·{factor(c, p)} + {factor(x, p)}·{factor(s, p)}) = "
                     f"({num(rotated[wa])}, {num(rotated[wb])})")
        pairs.append(((x, y), (float(rotated[wa]), float(rotated[wb])), float(pos)))
    if shared:
        return lines
    (qa, qb), (qa2, qb2), pq = pairs[0]
    (ka, kb), (ka2, kb2), pk = pairs[1]
    both = qa2 * ka2 + qb2 * kb2
    sa, sb = subscript(wa + 1), subscript(wb + 1)
    lines.append(f"(q′{sa}, q′{sb})·(k′{sa}, k′{sb}) = {factor(qa2, p)}·{factor(ka2, p)} + "
                 f"{factor(qb2, p)}·{factor(kb2, p)} = {num(both)}")
    delta = (pq - pk) * f
    ta, tb = turn(qa, qb, delta)
    sa, sb = subscript(a + 1), subscript(b + 1)
    product = f"{factor(ta, p)}·{factor(ka, p)} + {factor(tb, p)}·{factor(kb, p)}"
    if scale != 1:  # a on q and on k: a² on their product
        product = f"{factor(scale * scale, p)}·({product})"
    lines.append(f"(p − p′)·f = ({num(pq)} − {num(pk)}) × {num(f)} = {num(delta)}:   "
                 f"rot({num(delta)})·(q{sa}, q{sb}) = ({num(ta)}, {num(tb)}),   "
                 f"({num(ta)}, {num(tb)})·(k{sa}, k{sb}) = {product} = {num(scale * scale * (ta * ka + tb * kb))}")
    return lines


def rope_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, h, i, p = trace.spec, focus.head, focus.query, focus.precision
    rope, kv, j = spec.rope, kv_head(spec, focus.head), rope_key(trace, focus)
    freqs = ([f"{x:.{p}g}" for x in rope.frequencies[:MAX_FREQUENCIES]]
             + (["…"] if rope.dims // 2 > MAX_FREQUENCIES else []))
    pq, pk = spec.query_positions[i], spec.key_positions[j]
    first = tuple(d + 1 for d in rope_pair(rope, spec.d_k)[0])
    extra, more = scaling_paragraphs(spec, p)
    ctx = dict(ctx, dims=rope.dims, half=rope.dims // 2,
               i_range="0" if rope.dims == 2 else f"0 … {rope.dims // 2 - 1}", rest=spec.d_k - rope.dims,
               freqs="[" + ", ".join(freqs) + "]",
               base=f"{rope.base:g}" if rope.base is not None else "", k=f"“{spec.context_tokens[j]}”",
               p=number(pq, p), pk=number(pk, p), a=first[0], b=first[1], f0=f"{rope.frequencies[0]:.{p}g}",
               **{f"rope_{key}": value for key, value in more.items()})
    plain = "base" if rope.scaling is None else None
    still = not np.any(rope.frequencies)  # every f = 0: no pair turns (Kimi Linear's layers without a rotation)
    keys = ["still" if still else "body", rope.style]
    if rope.base is not None:
        keys += [plain] if plain else []
    elif not still:
        keys.append("given")
    keys += ["spread"] if rope.base is not None and rope.dims > 2 and not still else []  # each pair slower
    keys += extra
    keys += ["partial" if rope.part == "first" else "partial_last"] if rope.dims < spec.d_k else []
    given = spec.positions is not None or spec.context_positions is not None
    shared = spec.shared_kv is not None  # kv_from: the keys were turned in their own layer
    keys.append("positions_given" if given else "positions_default")
    keys += ["shared_kv", "why_shared"] if shared else ["worked"] if still else ["worked", "why"]
    pairs = "(a, b) = (x_i, x_{i+dims/2})" if rope.style == "half" else "(a, b) = (x_2i, x_2i+1)"
    turned = "(a·cos φ − b·sin φ, b·cos φ + a·sin φ)"
    turned = turned if rope.attention_factor == 1 else f"{number(rope.attention_factor, p)}·{turned}"
    turning = "Q′ = rope(Q)" if shared else "Q′, K′ = rope(Q), rope(K)"
    formula = f"{turning}:   (a, b) → {turned},   φ = p·f_i,   {pairs}"
    formula += "  → (x′_i, x′_{i+dims/2})" if rope.style == "interleaved_halves" else ""
    angles = np.stack([pq * rope.frequencies, pk * rope.frequencies])  # (2, dims/2)
    rows = [f"q ({spec.tokens[i]})", f"k ({spec.context_tokens[j]})"]
    numbers = [Numbers("angles", t["label"]["angles"], angles, rows, dims(rope.dims // 2)),
               Numbers("queries_rotated", t["label"]["queries_rotated"], trace.queries_rotated[h], spec.tokens,
                       dims(spec.d_k))]
    numbers += [] if shared else [Numbers("keys_rotated", gqa_label(t, "keys_rotated", spec, ctx),
                                          trace.keys_rotated[kv], spec.context_tokens, dims(spec.d_k))]
    return Step("rope", t["rope"]["title"], formula, paragraphs(t, "rope", keys, ctx), rope_lines(trace, focus, j),
                numbers)


# ---------------------------------------------------------------- residual and post_norm


def post_norm_lines(trace: Trace, focus: Focus) -> list[str]:
    """``y = …`` and the arithmetic of post_norm(y) for the chosen row."""
    spec, i, p = trace.spec, focus.query, focus.precision
    y = trace.output[i]
    return [f"{spec.tokens[i]}: y = {vector(y, p)}", *norm_lines(y, spec.post_norm, trace.normalized_output[i], "y", p)]


def residual_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, i, p = trace.spec, focus.query, focus.precision
    x, y = spec.embedded[i], trace.output[i] if trace.normalized_output is None else trace.normalized_output[i]
    lines = post_norm_lines(trace, focus) if spec.post_norm is not None else []
    added = "y" if spec.post_norm is None else "y\u0302"  # ŷ, written as x̂ and X̂ are
    alpha = "" if spec.residual_scale == 1.0 else f"{spec.residual_scale:g}·"  # R = X₀ + α·Y (Granite)
    lines.append(f"{spec.tokens[i]}: r = x + {alpha}{added} = {vector(x, p)} + {alpha}{vector(y, p)} = "
                 f"{vector(trace.residual[i], p)}")
    d = dims(spec.inputs.shape[1])
    numbers = []
    if trace.normalized_output is not None:
        numbers.append(Numbers("normalized_output",
                               t["label"]["normalized_output"].format(norm=norm_text(spec.post_norm.kind)),
                               trace.normalized_output, spec.tokens, d))
    numbers.append(Numbers("residual", t["label"]["residual"], trace.residual, spec.tokens, d))
    keys = ["body"] + ([] if spec.post_norm is None else ["post_norm"])
    keys += ["sandwich"] if spec.post_norm is not None and spec.pre_norm is not None else []
    keys += ["pre_norm"] if spec.pre_norm is not None else ["no_norm"]
    keys += ["scale"] if alpha else []
    ctx = dict(ctx, r_formula=residual_formula(spec), alpha=f"{spec.residual_scale:g}",
               norm=norm_text(spec.post_norm.kind) if spec.post_norm is not None else "")
    return Step("residual", t["residual"]["title"], residual_formula(spec), paragraphs(t, "residual", keys, ctx), lines,
                numbers)


def sink_sentence(trace: Trace, focus: Focus, keys: list[str], lines: list[str], ctx: dict
                  ) -> tuple[list[str], list[str], dict]:
    """The softmax step with a sink (gpt-oss): its share σ of the row, and the weights summing to 1 − σ."""
    h, i, p = focus.head, focus.query, focus.precision
    share = float(trace.sink_weights[h, i])
    rest = float(trace.weights[h, i].sum())
    keys = ["all_masked_sink" if key == "all_masked" else key for key in keys]
    keys += [] if "all_masked_sink" in keys else ["sink"]
    share_text = e_notation(share, p)  # "1 − σ, not 1": printed so that it shows (1 − 1e-21 is 1.0 in float64)
    rest_text = apart(rest, 1.0, p)[0] if rest != 1.0 else f"1 − {share_text}"
    lines = [*lines, f"sink: σ = {share_text}   Σ a = {rest_text} = 1 − σ"]
    return keys, lines, dict(ctx, s=number(float(trace.spec.sinks[h]), p), share=share_text, rest=rest_text)
