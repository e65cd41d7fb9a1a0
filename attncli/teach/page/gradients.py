"""The page's gradient cells: each one's arithmetic, term by term with the document's numbers (the backward pass of
``attncli explain --step backward`` written out for every cell of every ``grad_*`` table).

    dA_ij = dH_i·v_j     D_i = dH_i·H_i     dZ_ij = a_ij·(dA_ij − D_i)     dS_ij = scale·dZ_ij
    dQ_ic = Σ_j dS_ij·k_jc     dK_jc = Σ_i dS_ij·q_ic     dV_jc = Σ_i a_ij·dH_ic     (K, V: summed over the group)
    dW = Xᵀ·dP,  dX = Σ_P dP·W_Pᵀ   (P: Q, K, V, the heads side by side as the document writes W)

A cell is written only when its written sum gives back the table's own number (relative 1e-9): a gradient that
passes through a stage these formulas leave out (rope's turn back, qk_norm, clip, temperature, a gate, norms,
the residual) gets a note instead, never a wrong sum.  The words are the ``page_grads`` table of
:func:`attncli.teach.texts.texts`.
"""

from __future__ import annotations

import numpy as np

from attncli.core.gradients import last_key, seed_key
from attncli.core.trace import Trace
from attncli.outputs.numbers import number
from attncli.teach.page.sums import Work, scaled, sum_lines, wrap

QUERY_KEYS = ("grad_queries", "grad_queries_rotated", "grad_normalized_queries", "grad_kernel_queries")
KEY_KEYS = ("grad_keys", "grad_keys_rotated", "grad_normalized_keys", "grad_kernel_keys")
PRIME = {"rotated": "′", "normalized": "̂"}  # the symbol's mark: dQ′, dK̂


def _tok(trace: Trace, i: int, keys: bool = False) -> str:
    return (trace.spec.context_tokens if keys else trace.spec.tokens)[i]


def _allowed(trace: Trace, h: int, i: int) -> np.ndarray:
    allowed = trace.spec.allowed
    return np.ones(trace.spec.m, bool) if allowed is None else allowed[h, i]


def _group(trace: Trace, kv: int) -> range:
    size = trace.spec.heads // trace.spec.kv_heads
    return range(kv * size, (kv + 1) * size)


def _mark(key: str) -> str:
    return next((mark for word, mark in PRIME.items() if word in key), "")


def _attention(trace: Trace, key: str, h: int, i: int, j: int, p: int) -> Work | None:
    """dH, dA, D, dZ, dS of head ``h`` at row ``i`` (a query), column ``j``."""
    g, spec = trace.gradients, trace.spec
    q, k = _tok(trace, i), _tok(trace, j, keys=True) if key != "grad_head_outputs" and key != "delta" else ""
    if key == "grad_weights":
        v = trace.mixed_values[h // (spec.heads // spec.kv_heads), j]
        terms = list(zip(g["grad_head_outputs"][h, i], v, strict=True))
        return Work("dA_ij = dH_i·v_j", [("grad_weights", {"q": q, "key": k})],
                    [(f"dA[{q}, {k}]", f"dH_{q}·v_{k}", terms)], sum(x * y for x, y in terms))
    if key == "delta":
        terms = list(zip(g["grad_head_outputs"][h, i], trace.head_outputs[h, i], strict=True))
        second = [(a, d) for a, d, ok in zip(trace.weights[h, i], g["grad_weights"][h, i], _allowed(trace, h, i),
                                             strict=True) if ok]
        return Work("D_i = rowsum(dH_i ⊙ H_i) = Σ_j a_ij·dA_ij", [("delta", {})],
                    [(f"D[{q}]", f"dH_{q}·H_{q}", terms), (f"D[{q}]", f"Σ_j a_{q},j·dA_{q},j", second)],
                    sum(x * y for x, y in terms))
    if key == "grad_scaled_scores":
        a, d_a, d = trace.weights[h, i, j], g["grad_weights"][h, i, j], g["delta"][h, i]
        masked = not _allowed(trace, h, i)[j]
        words = [("grad_scaled_scores", {"q": f"“{q}”", "key": f"“{k}”"})]
        words += [("masked", {"q": f"“{q}”", "key": f"“{k}”"})] if masked else []
        line = (f"dZ[{q}, {k}] = a·(dA − D) = {number(a, p)}·({number(d_a, p)} − {wrap(d, p)}) "
                f"= {number(a * (d_a - d), p)}")
        return Work("dZ_ij = a_ij·(dA_ij − D_i)", words, [], a * (d_a - d), [line])
    if key == "grad_scores":
        return _scores(trace, (h, i, j), q, k, p)
    return None


def _scores(trace: Trace, cell: tuple[int, int, int], q: str, k: str, p: int) -> Work:
    h, i, j = cell
    spec, d_z = trace.spec, trace.gradients["grad_scaled_scores"][h, i, j]
    if spec.softcap is None:
        value = spec.scale * d_z
        line = f"dS[{q}, {k}] = scale·dZ = {spec.scale:.6g}·{wrap(d_z, p)} = {number(value, p)}"
        return Work("dS_ij = scale·dZ_ij", [("grad_scores", {"scale": f"{spec.scale:.6g}"})], [], value, [line])
    t = float(np.tanh(spec.scale * trace.scores[h, i, j] / spec.softcap))
    value = spec.scale * d_z * (1.0 - t * t)
    line = (f"dS[{q}, {k}] = scale·dZ·(1 − tanh²) = {spec.scale:.6g}·{wrap(d_z, p)}·(1 − {wrap(t, p)}²) "
            f"= {number(value, p)}")
    words = [("grad_scores_cap", {"scale": f"{spec.scale:.6g}", "cap": f"{spec.softcap:g}"})]
    return Work("dS_ij = scale·dZ_ij·(1 − tanh²(scale·S_ij / c))", words, [], value, [line])


def _queries(trace: Trace, key: str, h: int, i: int, c: int, p: int) -> Work:
    """dQ (or dQ′, dQ̂, the kernel's) of query head ``h`` at row ``i``, column ``c``: Σ over the keys it sees."""
    g, spec, mark = trace.gradients, trace.spec, _mark(key)
    kk = trace.kernel_keys[h // (spec.heads // spec.kv_heads)]
    js = np.flatnonzero(_allowed(trace, h, i))
    terms = [(g["grad_scores"][h, i, j], kk[j, c]) for j in js]
    lhs, q = f"dQ{mark}[{_tok(trace, i)}, {c + 1}]", _tok(trace, i)
    sums = [(lhs, f"Σ_j dS_{q},j·k{mark}_j,{c + 1}", terms)]
    value, tail = sum(x * y for x, y in terms), None
    if spec.softcap is None:  # the scale's factor, taken out of the sum
        z_terms = [(g["grad_scaled_scores"][h, i, j], kk[j, c]) for j in js]
        sums.append((f"Σ_j dZ_{q},j·k{mark}_j,{c + 1}", "", z_terms))
        tail = [scaled(lhs, spec.scale, z_terms, value, p)]
    return Work(f"dQ{mark}_i = Σ_j dS_ij·k{mark}_j = scale·Σ_j dZ_ij·k{mark}_j",
                [("queries", {"q": f"“{q}”", "c": c + 1})], sums, value, tail=tail)


def _head_sums(trace: Trace, key: str, hh: int, i: int, c: int, suffix: str, p: int) -> tuple[list, list[str]]:
    """Query head ``hh``'s share of dK or dV at key ``i``, column ``c``: its sums, and dK's scale line."""
    g, spec, mark, k = trace.gradients, trace.spec, _mark(key), _tok(trace, i, keys=True)
    rows = [r for r in range(spec.n) if _allowed(trace, hh, r)[i]]
    if key not in KEY_KEYS:
        terms = [(trace.weights[hh, r, i], g["grad_head_outputs"][hh, r, c]) for r in rows]
        return [(f"dV{suffix}[{k}, {c + 1}]", f"Σ_i a_i,{k}·dH_i,{c + 1}", terms)], []
    terms = [(g["grad_scores"][hh, r, i], trace.kernel_queries[hh, r, c]) for r in rows]
    lhs = f"dK{mark}{suffix}[{k}, {c + 1}]"
    sums = [(lhs, f"Σ_i dS_i,{k}·q{mark}_i,{c + 1}", terms)]
    if spec.softcap is not None:
        return sums, []
    z_terms = [(g["grad_scaled_scores"][hh, r, i], trace.kernel_queries[hh, r, c]) for r in rows]
    sums.append((f"Σ_i dZ_i,{k}·q{mark}_i,{c + 1}", "", z_terms))  # the scale's factor, taken out of the sum
    return sums, [scaled(lhs, spec.scale, z_terms, sum(x * y for x, y in terms), p)]


def _keys_values(trace: Trace, key: str, kv: int, i: int, c: int, p: int) -> Work:
    """dK (or dK′, dK̂, the kernel's) or dV of key/value head ``kv`` at key ``i``, column ``c``: Σ over the queries
    that see it, in every query head of its group."""
    heads, mark, k = _group(trace, kv), _mark(key), _tok(trace, i, keys=True)
    words = [("keys" if key in KEY_KEYS else "values", {"key": f"“{k}”", "c": c + 1})]
    if len(heads) > 1:
        words.append(("group_two" if len(heads) == 2 else "group", {"first": heads[0] + 1, "last": heads[-1] + 1}))
    sums, tail = [], []
    for hh in heads:
        made, scale_lines = _head_sums(trace, key, hh, i, c, f"_h{hh + 1}" if len(heads) > 1 else "", p)
        sums += made
        tail += scale_lines
    parts = [sum(x * y for x, y in s[2]) for s in sums if s[1]]  # each head's sum (not the dZ ones)
    if len(heads) > 1:
        letter = "K" + mark if key in KEY_KEYS else "V"
        tail += sum_lines(f"d{letter}[{k}, {c + 1}]", f"Σ_h d{letter}_h[{k}, {c + 1}]", parts, p, "en", len(parts))
    formula = (f"dK{mark}_j = Σ_i dS_ij·q{mark}_i = scale·Σ_i dZ_ij·q{mark}_i" if key in KEY_KEYS
               else "dV_j = Σ_i a_ij·dH_i")
    return Work(formula, words, sums, sum(parts), tail=tail or None)


def _side_by_side(x: np.ndarray) -> np.ndarray:
    """(h, n, d) -> (n, h·d): the heads side by side, as the document writes W."""
    return x.transpose(1, 0, 2).reshape(x.shape[1], -1)


def _weights(trace: Trace, key: str, r: int, col: int) -> Work | None:
    """dW_Q, dW_K, dW_V, dW_O at (r, col): Σ over the tokens of the projection's input times its gradient."""
    g, spec = trace.gradients, trace.spec
    x = trace.normalized_inputs if trace.normalized_inputs is not None else spec.embedded
    if key == "grad_weight_output":
        heads = trace.gated_head_outputs if trace.gated_head_outputs is not None else trace.head_outputs
        source, dp, sym, d = _side_by_side(heads), g["grad_output"], "concat(H)", heads.shape[-1]
    else:
        name = {"grad_weight_query": "queries", "grad_weight_key": "keys", "grad_weight_value": "values"}[key]
        dp, sym = _side_by_side(g[f"grad_{name}"]), "X"
        source, d = (x if name == "queries" or spec.context is None else spec.context), g[f"grad_{name}"].shape[-1]
    terms = list(zip(source[:, r], dp[:, col], strict=True))
    symbol = {"grad_weight_query": "Q", "grad_weight_key": "K", "grad_weight_value": "V", "grad_weight_output": "O"}
    letter = symbol[key]
    dsym = "dY" if letter == "O" else f"d{letter}"
    words = {"r": r + 1, "col": col + 1, "head": col // d + 1, "c": col % d + 1}
    return Work(f"dW_{letter} = {sym}ᵀ·{dsym}", [(key, words)],
                [(f"dW_{letter}[{r + 1}, {col + 1}]", f"Σ_i {sym}_i,{r + 1}·{dsym}_i,{col + 1}", terms)],
                sum(a * b for a, b in terms))


def _inputs(trace: Trace, i: int, r: int) -> Work:
    """dX (i, r) = Σ over the paths (Q; K and V in self-attention) of dP_i·(row r of W_P), heads side by side."""
    g, spec = trace.gradients, trace.spec
    paths = [("Q", "queries", spec.w_q)] + ([("K", "keys", spec.w_k), ("V", "values", spec.w_v)]
                                            if spec.context is None else [])
    sums = []
    for letter, name, w in paths:
        dp, w2 = _side_by_side(g[f"grad_{name}"])[i], w.transpose(1, 0, 2).reshape(w.shape[1], -1)[r]
        sums.append((f"(d{letter}·W_{letter}ᵀ)[{_tok(trace, i)}, {r + 1}]",
                     f"Σ_c d{letter}_{_tok(trace, i)},c·W_{letter}[{r + 1}, c]", list(zip(dp, w2, strict=True))))
    parts = [sum(a * b for a, b in s[2]) for s in sums]
    if len(parts) > 1:
        sums.append((f"dX[{_tok(trace, i)}, {r + 1}]", " + ".join(f"(d{p[0]}·W_{p[0]}ᵀ)" for p in paths), parts))
    words = [("grad_inputs" if len(paths) > 1 else "grad_inputs_queries", {"q": f"“{_tok(trace, i)}”", "r": r + 1})]
    return Work("dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ" if len(paths) > 1 else "dX = dQ·W_Qᵀ", words, sums, sum(parts))


def _output(trace: Trace, key: str, h: int, i: int, c: int, p: int) -> Work | None:
    """dY (the document's gradient) and dH (its head's columns of dY, or dY·W_Oᵀ)."""
    spec, g, q = trace.spec, trace.gradients, _tok(trace, i)
    if key == "grad_output":
        value = g["grad_output"][i, c]
        return Work("dY = gradient", [("grad_output", {})], [], value,
                    [f"dY[{q}, {c + 1}] = gradient[{q}, {c + 1}] = {number(value, p)}"])
    d_v = trace.head_outputs.shape[-1]
    col = h * d_v + c
    words = {"head": h + 1, "c": c + 1, "col": col + 1, "q": f"“{q}”"}
    if spec.w_o is None:
        value = g["grad_output"][i, col]
        return Work(f"dH_h = dY[:, (h − 1)·{d_v} + 1 … h·{d_v}]", [("grad_head_outputs", words)], [], value,
                    [f"dH[{q}, {c + 1}] = dY[{q}, {col + 1}] = {number(value, p)}"])
    terms = list(zip(g["grad_output"][i], spec.w_o[col], strict=True))
    return Work("dH = dY·W_Oᵀ", [("grad_head_outputs_wo", words)],
                [(f"dH[{q}, {c + 1}]", f"Σ_k dY_{q},k·W_O[{col + 1}, k]", terms)], sum(a * b for a, b in terms))


def written(trace: Trace, key: str) -> bool:
    """Do this module's formulas hold for every cell of ``key`` in this document (no stage between them)?"""
    spec = trace.spec
    if spec.differential is not None and key in ("grad_weights", "delta", "grad_values"):
        return False  # (dA = dH·Vᵀ and D = dH·H assume H = A·V: the head pairs come between)
    if spec.latent is not None and (key == "grad_inputs" or key.startswith("grad_weight_")):
        return key == "grad_weight_output"  # (X reaches Q, K and V through the latent projections)
    if key in QUERY_KEYS:
        return key == "grad_kernel_queries" or key == f"grad_{last_key(spec, 'queries')}" and \
            spec.query_temperature is None
    if key in KEY_KEYS:
        return key in ("grad_kernel_keys", f"grad_{last_key(spec, 'keys')}")
    if key in ("grad_weight_query", "grad_weight_key", "grad_weight_value", "grad_weight_output"):
        per_head = key.removeprefix("grad_weight_") in spec.per_head  # (its tables are a head each: not written yet)
        return spec.clip_qkv is None and not per_head
    if key == "grad_inputs":
        return (spec.clip_qkv is None and spec.w_g is None and spec.pre_norm is None and not spec.residual
                and spec.add_norm is None)
    if key in ("grad_output", "grad_head_outputs"):
        return spec.w_g is None and spec.post_norm is None and seed_key(spec) == "output"
    return key in ("grad_weights", "delta", "grad_scaled_scores", "grad_scores", "grad_values")


def cell_work(trace: Trace, key: str, head: int | None, i: int, j: int, p: int = 4) -> Work | None:
    """The arithmetic of cell (i, j) of gradient table ``key`` (``head``: its query head), or None: not written."""
    spec = trace.spec
    if not written(trace, key):
        return None
    if key in ("grad_weights", "delta", "grad_scaled_scores", "grad_scores"):
        return _attention(trace, key, head, i, j, p)
    if key in QUERY_KEYS:
        return _queries(trace, key, head, i, j, p)
    if key in KEY_KEYS or key == "grad_values":
        return _keys_values(trace, key, head // (spec.heads // spec.kv_heads), i, j, p)
    if key in ("grad_weight_query", "grad_weight_key", "grad_weight_value", "grad_weight_output"):
        return _weights(trace, key, i, j)
    if key == "grad_inputs" and spec.given_qkv is None:
        return _inputs(trace, i, j)
    if key in ("grad_output", "grad_head_outputs"):
        return _output(trace, key, head or 0, i, j, p)
    return None


def needs(trace: Trace) -> bool:
    return bool(trace.gradients) and trace.weights is not None and trace.kernel_keys is not None
