"""The table of explain's sentences: which text key states which fact (``FACTS``), which state none (``PLAIN``),
with the checks of steps 6 and 7 and of the extra steps (those of steps 1 to 5 are in explain_facts_checks.py)."""

from __future__ import annotations

import math
from functools import partial as _

import numpy as np
from explain_facts_checks import (
    Row,
    _tokens,
    alibi,
    asymmetric,
    biases,
    chunk,
    counts,
    cross,
    d_k_d_v,
    default_query,
    given,
    gqa,
    heads,
    inputs,
    masked,
    omitted,
    positive,
    quoted,
    same_projection,
    scale_sqrt,
    shift,
    shown,
    sink,
    symmetric,
    symmetric_weights,
    temperature,
    underflow,
)

# ---------------------------------------------------------------- steps 6 and 7


def zero_weights(r: Row, w: dict, some: bool) -> None:
    zero = [j for j in range(r.spec.m) if r.a[j] == 0]
    assert bool(zero) == some
    if some:
        assert quoted(w["keys"]) == _tokens(r, zero)


def blend(r: Row, w: dict, case: str) -> None:
    used = [j for j in range(r.spec.m) if r.a[j] != 0]
    if case == "zero":
        assert not used and (r.trace.head_outputs[r.h, r.i] == 0).all()
        return
    if case in ("one", "one_scaled"):
        assert len(used) == 1 and (r.a[used[0]] == 1) == (case == "one")
        assert w["only"] == f"“{r.spec.context_tokens[used[0]]}”" and w["j"] == str(used[0] + 1).translate(
            str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))
        shown(w["w"], r.a[used[0]], "the one weight")
        return
    assert len(used) >= 2
    assert (r.a < 0).any() == (case == "signed")
    if case == "all":
        assert len(used) == r.spec.m
    if case == "some":
        assert w["count"] == len(used) and w["zero"] == r.spec.m - len(used) and quoted(w["keys"]) == _tokens(r, used)


# ---------------------------------------------------------------- the extra steps


def qk_bound(r: Row, w: dict) -> None:
    spec, t = r.spec, r.trace
    q_len, k_len = np.linalg.norm(t.queries[r.h], axis=-1).max(), np.linalg.norm(t.keys[r.kv], axis=-1).max()
    scale = abs(spec.scale)
    shown(w["q_len"], q_len, "‖q‖")
    shown(w["k_len"], k_len, "‖k‖")
    shown(w["before"], scale * q_len * k_len, "the bound before the norm")
    reached = np.abs(scale * t.scores[r.h])
    if spec.allowed is not None:
        reached = np.where(spec.allowed[r.h], reached, 0.0)
    shown(w["reached"], reached.max(), "the largest scaled score")
    widths = {"head": spec.d_k, "projection": None}
    for side, key in (("query", "q_hat"), ("key", "k_hat")):
        rows = t.normalized_queries[r.h] if side == "query" else t.normalized_keys[r.kv]
        assert np.linalg.norm(rows, axis=-1).max() <= float(w[key]) + 0.5 * 10.0 ** -r.p + 1e-9, (side, w[key])
    assert widths  # (the norm's width is the sentence's own: ‖q̂‖ is checked on the normalised rows)
    assert reached.max() <= float(w["after"]) + 0.5 * 10.0 ** -r.p + 1e-9, ("no score passes", w["after"])


def gamma_ones(r: Row, w: dict, where: str) -> None:
    if where == "pre_norm":
        assert np.all(np.asarray(r.spec.pre_norm.gamma) == 1)
    else:
        assert all(np.all(np.asarray(g) == 1) for g in (r.spec.qk_norm.gamma_query, r.spec.qk_norm.gamma_key))


def rope_numbers(r: Row, w: dict, case: str) -> None:
    rope = r.spec.rope
    f = np.asarray(rope.frequencies)
    if case == "base":
        f = float(w["base"]) ** (-2 * np.arange(rope.dims // 2) / rope.dims)
    written = [x for x in w["freqs"].strip("[]").split(", ") if x != "…"]
    for text, value in zip(written, f, strict=False):
        assert math.isclose(float(text), value, rel_tol=10.0 ** (1 - r.p)), (text, value)
    assert w["dims"] == rope.dims and w["rest"] == r.spec.d_k - rope.dims


def rope_still(r: Row, w: dict) -> None:
    """Every frequency 0: the rotated queries are the queries (nothing turns)."""
    assert not np.any(r.spec.rope.frequencies)
    turned, before = r.trace.queries_rotated[r.h], r.trace.queries[r.h]
    assert r.trace.spec.qk_norm is not None or np.array_equal(turned, before)


def rope_positions(r: Row, w: dict) -> None:
    shown(w["p"], r.spec.query_positions[r.i], "p")
    j = [t for t in r.spec.context_tokens].index(w["k"][1:-1]) if w["k"][1:-1] in r.spec.context_tokens else None
    assert j is not None


def rope_factor(r: Row, w: dict) -> None:
    a = r.spec.rope.attention_factor
    assert math.isclose(float(w["rope_a"]), a, rel_tol=10.0 ** (1 - r.p)) and a != 1
    assert math.isclose(float(w["rope_a2"]), a * a, rel_tol=10.0 ** (1 - r.p))


def cache(r: Row, w: dict) -> None:
    lat, h = r.spec.latent, r.spec.heads
    assert w["latent_formula"] == f"r_kv + d_r = {lat.r_kv + lat.d_rope}"
    assert w["full_formula"] == f"h·(d_k + d_v) = {h * (lat.d_nope + lat.d_rope + r.spec.d_v)}"
    assert (w["v3_latent"], w["v3_full"], w["v3_times"]) == (576, 128 * (128 + 64 + 128), "71")


def residual_scale(r: Row, w: dict) -> None:
    assert float(w["alpha"]) == r.spec.residual_scale != 1


def matrix_heads(r: Row, w: dict, gqa_: bool, mqa_: bool = False) -> None:
    spec = r.spec
    assert w["h"] == spec.heads > 1 and (spec.kv_heads < spec.heads) == (gqa_ or mqa_) and (spec.kv_heads == 1) >= mqa_
    if gqa_:
        assert (w["g"], w["group"]) == (spec.kv_heads, spec.heads // spec.kv_heads) and spec.kv_heads > 1
    assert w["kv_weights"] in ("W_K", "W_K and W_V", "W_K 和 W_V") and (w["kv_weights"] == "W_K") == spec.k_eq_v


def projection(r: Row, w: dict) -> None:
    assert w["d_out"] == r.trace.output.shape[1] and r.spec.w_o is not None


def pairs_in(text: str) -> list[int]:
    """``0–3, 7`` → [0, 1, 2, 3, 7]; ``—`` → []."""
    out = []
    for part in text.split(", "):
        if "–" in part:
            lo, hi = part.split("–")
            out += list(range(int(lo), int(hi) + 1))
        elif part != "—":
            out.append(int(part))
    return out


def rope_scaling(r: Row, w: dict, kind: str) -> None:
    """Which pairs the scaling stretched, kept or blended, and its numbers, from the format's formulas."""
    rope, s = r.spec.rope, r.spec.rope.scaling
    half = rope.dims // 2
    plain = rope.base ** (-2 * np.arange(half) / rope.dims)
    top = max(float(np.max(r.spec.query_positions, initial=0)), float(np.max(r.spec.key_positions, initial=0))) + 1
    assert s.type == kind.split("_")[0] and w["rope_factor"] == f"{s.factor:g}"
    if kind == "linear":
        assert np.allclose(rope.frequencies, plain / s.factor)
        return
    assert w["rope_P"] == f"{top:g}" and w["rope_L"] == f"{s.original:g}"
    if kind.startswith("dynamic"):
        assert (kind == "dynamic_short") == (top <= s.original)
        if kind == "dynamic":
            grown = rope.base * (s.factor * top / s.original - (s.factor - 1)) ** (rope.dims / (rope.dims - 2))
            assert math.isclose(float(w["rope_grown"]), grown, rel_tol=10.0 ** (1 - r.p))
        return
    if kind.startswith("longrope"):
        assert (kind == "longrope_long") == (top > s.original)
        e = s.long_factor if top > s.original else s.short_factor
        assert [float(x) for x in w["rope_e"].strip("[]").split(", ") if x != "…"] == pytest_approx(e[:6], r.p)
        return
    turns = s.original * plain / (2 * np.pi)  # how often each pair turns over the L positions trained on
    if kind == "llama3":
        wave = 2 * np.pi / plain
        long, short = wave > s.original / s.low_freq_factor, wave < s.original / s.high_freq_factor
        stretched, kept = np.flatnonzero(long).tolist(), np.flatnonzero(short).tolist()
    else:  # yarn: the pairs that turn more than β_fast times kept, fewer than β_slow times divided
        kept, stretched = np.flatnonzero(turns > s.beta_fast).tolist(), np.flatnonzero(turns < s.beta_slow).tolist()
    assert pairs_in(w["rope_stretched"]) == stretched and pairs_in(w["rope_kept"]) == kept, (turns, w)
    blended = sorted(set(range(half)) - set(stretched) - set(kept))
    assert pairs_in(w["rope_blended"]) == blended, (turns, w)


def pytest_approx(values, p: int) -> list:
    import pytest

    return [pytest.approx(float(x), rel=10.0 ** (1 - p)) for x in values]


def base_scaled(r: Row, w: dict) -> None:
    """The frequencies without the scaling, θ^(−2i/dims), and with it (the Trace's)."""
    rope = r.spec.rope
    plain = rope.base ** (-2 * np.arange(rope.dims // 2) / rope.dims)
    for text, values in ((w["rope_plain"], plain), (w["freqs"], np.asarray(rope.frequencies))):
        written = [float(x) for x in text.strip("[]").split(", ") if x != "…"]
        assert written == pytest_approx(values[:len(written)], r.p), (text, values)


def pair_dims(r: Row, w: dict) -> None:
    """The first pair turned, counted from 1: i and i + dims/2 (half), 2i and 2i + 1 (the neighbours)."""
    rope = r.spec.rope
    lo = 0 if rope.part == "first" else r.spec.d_k - rope.dims
    assert (w["a"], w["b"]) == ((lo + 1, lo + 1 + rope.dims // 2) if rope.style == "half" else (lo + 1, lo + 2))
    assert w["half"] == rope.dims // 2


def sizes(r: Row, w: dict, what: str) -> None:
    spec = r.spec
    if what == "latent":
        lat = spec.latent
        assert (w["r_kv"], w["d_r"], w["d_nope"]) == (lat.r_kv, lat.d_rope, spec.d_k - lat.d_rope)
    elif what == "projection":
        assert (w["hd"], w["gd"]) == (spec.heads * spec.d_k, spec.kv_heads * spec.d_k)
    elif what == "clip":
        assert w["clip"] == spec.clip_qkv and (np.abs(r.trace.queries) <= spec.clip_qkv).all()
    elif what == "softcap":
        z = r.trace.scaled_scores[r.h, r.i] - (0 if r.trace.score_bias is None else r.trace.score_bias[r.h, r.i])
        assert float(w["softcap"]) == spec.softcap and (np.abs(z[np.isfinite(z)]) <= spec.softcap * (1 + 1e-12)).all()


def _same(r: Row, w: dict, same: bool) -> None:
    assert same_projection(r) == same


def _normalize(r: Row, w: dict, kind: str) -> None:
    assert r.spec.normalize == kind


def _scale(r: Row, w: dict, kind: str) -> None:
    assert r.spec.scale_name == kind


FACTS = {
    "inputs.body": inputs, "inputs.cross": cross,
    "weights.body": _(given, which="all"), "weights.body_cross": _(given, which="all"),
    "weights.body_some": _(given, which="some"), "weights.body_cross_some": _(given, which="some"),
    "weights.body_none": _(given, which="none"), "weights.body_cross_none": _(given, which="none"),
    "weights.identity": omitted, "weights.identity_many": omitted, "weights.biases": biases, "weights.heads": heads,
    "weights.gqa": gqa, "weights.mqa_share": gqa, "weights.dk_dv": d_k_d_v,
    "projections.why_qk": _(_same, same=False), "projections.why_qk_same": _(_same, same=True),
    "projections.why_qk_same_additive": _(_same, same=True), "projections.gqa": gqa,
    "scores.default_query": default_query, "scores.alibi_behind": _(alibi, case="behind"),
    "scores.alibi_ahead": _(alibi, case="ahead"), "scores.alibi_self": _(alibi, case="self"),
    "scores.asymmetric": _(asymmetric, own_row=True), "scores.row_column": _(asymmetric, own_row=False),
    "scores.symmetric": _(symmetric, forced=False), "scores.forced": _(symmetric, forced=True),
    "scores.symmetric_weights": symmetric_weights, "scores.count_dot": counts, "scores.count_additive": counts,
    "scores.mask_chunk": chunk, "scores.temperature": temperature,
    "scores.scale_sqrt_why": _(scale_sqrt, changes=True), "scores.scale_sqrt_little": _(scale_sqrt, changes=False),
    "scores.scale_sqrt": _(_scale, kind="sqrt"), "scores.scale_none": _(_scale, kind="none"),
    "scores.scale_number": _(_scale, kind="number"),
    "softmax.softmax": _(positive, zeros=False), "softmax.softmax_zeros": _(positive, zeros=True),
    "softmax.softmax_sink": _(positive, zeros=False), "softmax.softmax_sink_zeros": _(positive, zeros=True),
    "softmax.underflow": underflow, "softmax.shift_small": _(shift, case="small"),
    "softmax.shift_underflow": _(shift, case="underflow"), "softmax.shift_large": _(shift, case="large"),
    "softmax.shift_overflow": _(shift, case="overflow"), "softmax.masked": _(masked, every=False),
    "softmax.all_masked": _(masked, every=True), "softmax.all_masked_sink": _(masked, every=True),
    "softmax.sink": sink, "softmax.sum": _(_normalize, kind="sum"), "softmax.none": _(_normalize, kind="none"),
    "weighted.body": _(zero_weights, some=False), "weighted.body_zero": _(zero_weights, some=True),
    "sum.body": _(blend, case="all"), "sum.body_some": _(blend, case="some"),
    "sum.body_some_one": _(blend, case="some"), "sum.body_one": _(blend, case="one"),
    "sum.body_one_scaled": _(blend, case="one_scaled"), "sum.body_zero": _(blend, case="zero"),
    "sum.body_signed": _(blend, case="signed"),
    "matrix.heads": _(matrix_heads, gqa_=False), "matrix.heads_gqa": _(matrix_heads, gqa_=True),
    "matrix.heads_mqa": _(matrix_heads, gqa_=False, mqa_=True),
    "matrix.projection": projection,
    "pre_norm.gamma_ones": _(gamma_ones, where="pre_norm"), "qk_norm.gamma_ones": _(gamma_ones, where="qk_norm"),
    "qk_norm.bound": qk_bound, "rope.base": _(rope_numbers, case="base"), "rope.given": _(rope_numbers, case="given"),
    "rope.still": rope_still,
    "rope.partial": _(rope_numbers, case="given"), "rope.partial_last": _(rope_numbers, case="given"),
    "rope.positions_default": rope_positions, "rope.positions_given": rope_positions,
    "rope.factor_given": rope_factor, "rope.factor_yarn": rope_factor, "rope.factor_longrope": rope_factor,
    "rope.scaling_linear": _(rope_scaling, kind="linear"), "rope.scaling_dynamic": _(rope_scaling, kind="dynamic"),
    "rope.scaling_dynamic_short": _(rope_scaling, kind="dynamic_short"),
    "rope.scaling_llama3": _(rope_scaling, kind="llama3"), "rope.scaling_yarn": _(rope_scaling, kind="yarn"),
    "rope.scaling_longrope_long": _(rope_scaling, kind="longrope_long"),
    "rope.scaling_longrope_short": _(rope_scaling, kind="longrope_short"),
    "rope.base_scaled": base_scaled, "rope.half": pair_dims, "rope.interleaved": pair_dims,
    "rope.interleaved_halves": pair_dims, "latent.body": _(sizes, what="latent"),
    "qk_norm.projection": _(sizes, what="projection"), "projections.clip": _(sizes, what="clip"),
    "scores.softcap": _(sizes, what="softcap"),
    "latent.cache": cache, "residual.scale": residual_scale,
}
# what a stage does and why models do it: no fact about this document's numbers
PLAIN = {f"{step}.{key}" for step, keys in {
    "inputs": "stacked", "positional": "body sinusoidal matrix",
    "weights": "latent gqa_why mqa",
    "projections": "body body_cross why_qk_cross positional positional_cross pre_norm pre_norm_cross",
    "scores": "dot additive rope rope_additive qk_norm qk_norm_after scale_none_softcap scale_none_t5 "
              "additive_none additive_sqrt additive_number z mask_causal mask_matrix mask_parts mask_score_bias "
              "bias_matrix bias_alibi bias_relative bias_why",
    "weighted": "builtin_first builtin", "sum": "heads builtin", "matrix": "body mask gate",
    "add_norm": "body post_norm", "backward": "no_storage latent",
    "pre_norm": "body rms layer gamma cross residual",
    "qk_norm": "body rms layer head before_rope after_rope no_rope gamma gamma_per_head beta why",
    "rope": "body spread worked why",
    "residual": "body post_norm sandwich pre_norm no_norm",
    "latent": "query query_lora shared absorbed not_absorbed",
}.items() for key in keys.split()}
