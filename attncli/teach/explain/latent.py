"""The extra step of ``latent`` (DeepSeek V2/V3, Kimi K2), as data: one token's latent, one head's key and value
expanded from it, the shared rotary key, the cache it saves, and the absorbed form checked on the numbers.

    (c_raw | k_r) = x̂·W_DKV + b_DKV      c = kv_norm(c_raw)      (k_nope | v) = c·W_UKV,h      k = (k_nope | k_r)
    a cache of r_kv + d_r numbers per token instead of h·(d_k + d_v)
    q_abs = (q′_nope·W_UK,hᵀ | q′_r):   q_abs·(c | k_r′) = q′·k′

(Concatenations are written with round brackets: Rich reads "[c" as the start of its markup.)
"""

from __future__ import annotations

import numpy as np

from attncli.core.latent import latent_kv
from attncli.core.norms import Norm
from attncli.core.trace import Trace
from attncli.outputs.numbers import dims, number
from attncli.teach.explain.modern import norm_lines
from attncli.teach.explain.step import Focus, Numbers, Step, paragraphs, source_rows
from attncli.teach.lines import subscript, vector

# DeepSeek V3's (and Kimi K2's) attention, from its config: heads, d_nope, d_r, d_v, r_kv
DEEPSEEK_V3 = {"heads": 128, "d_nope": 128, "d_r": 64, "d_v": 128, "r_kv": 512}


def cache_sizes(heads: int, d_nope: int, d_r: int, d_v: int, r_kv: int) -> tuple[int, int]:
    """Numbers cached per token and layer: the latent's r_kv + d_r, and the expanded keys and values' h·(d_k + d_v).

    >>> cache_sizes(**DEEPSEEK_V3)
    (576, 40960)
    """
    return r_kv + d_r, heads * (d_nope + d_r + d_v)


def _key_token(trace: Trace, focus: Focus) -> int:
    """The key row the step works out: the chosen query's own token (self-attention), else the first key."""
    return focus.query if trace.spec.context is None and focus.query < trace.spec.m else 0


def latent_lines(trace: Trace, focus: Focus) -> list[str]:
    """c, k and v of one token in the chosen head, from its row of X̂ (or C)."""
    spec, h, p, j = trace.spec, focus.head, focus.precision, _key_token(trace, focus)
    lat, token = spec.latent, spec.context_tokens[j]
    x = source_rows(trace)[j]
    both = x @ lat.kv_down + (0.0 if lat.kv_down_bias is None else lat.kv_down_bias)
    _, k_r = latent_kv(x[None], lat.kv_down, lat.kv_down_bias, None, lat.d_rope)
    bias = "" if lat.kv_down_bias is None else " + b_DKV"
    lines = [f"{token}: (c_raw | k_r) = {vector(x, p)} · W_DKV{bias} = ({vector(both[:lat.r_kv], p)[1:-1]} | "
             f"{vector(k_r[0], p)[1:-1]})"]
    lines += norm_lines(both[:lat.r_kv], Norm(lat.kv_norm.kind, lat.kv_norm.gamma, lat.kv_norm.beta,
                                              lat.kv_norm.eps), trace.latent_kv[j], "c", p)
    k_nope = trace.keys[h, j, :lat.d_nope]
    lines += [f"{token}: k_nope = c · W_UK,{h + 1} = {vector(k_nope, p)},   v = c · W_UV,{h + 1} = "
              f"{vector(trace.values[h, j], p)}",
              f"{token}: k = (k_nope | k_r) = {vector(trace.keys[h, j], p)}"]
    return lines


def cache_lines(trace: Trace) -> list[str]:
    """The numbers a cache keeps per token: this document's sizes, and DeepSeek V3's."""
    spec = trace.spec
    lat = spec.latent
    lines = []
    for name, sizes in (("", {"heads": spec.heads, "d_nope": lat.d_nope, "d_r": lat.d_rope, "d_v": spec.d_v,
                               "r_kv": lat.r_kv}), ("DeepSeek V3: ", DEEPSEEK_V3)):
        latent, full = cache_sizes(**sizes)
        d_k = sizes["d_nope"] + sizes["d_r"]
        lines.append(f"{name}r_kv + d_r = {sizes['r_kv']} + {sizes['d_r']} = {latent},   h·(d_k + d_v) = "
                     f"{sizes['heads']}·({d_k} + {sizes['d_v']}) = {full},   {full} / {latent} = {full / latent:.1f}")
    return lines


def absorbed_lines(trace: Trace, focus: Focus) -> list[str]:
    """The chosen query's absorbed row in its head, and one score both ways, to the digits shown."""
    spec, h, i, p = trace.spec, focus.head, focus.query, focus.precision
    lat = spec.latent
    j = _key_token(trace, focus)
    q_abs = trace.absorbed_queries[h, i]
    cached = np.concatenate([trace.latent_kv[j], trace.keys_rotated[h, j, lat.d_nope:]])  # (c | k_r′)
    return [f"{spec.tokens[i]}: q_abs = (q′_nope · W_UK,{h + 1}ᵀ | q′_r) = {vector(q_abs, p)}",
            f"q_abs · (c | k_r′){subscript(j + 1)} = {number(float(q_abs @ cached), p)},   "
            f"q′ · k′{subscript(j + 1)} = {number(float(trace.scores[h, i, j]), p)}"]


def latent_step(trace: Trace, focus: Focus, t: dict, ctx: dict) -> Step:
    spec, h = trace.spec, focus.head
    lat = spec.latent
    latent, full = cache_sizes(spec.heads, lat.d_nope, lat.d_rope, spec.d_v, lat.r_kv)
    v3_latent, v3_full = cache_sizes(**DEEPSEEK_V3)
    ctx = dict(ctx, r_kv=lat.r_kv, d_r=lat.d_rope, d_nope=lat.d_nope, latent_formula=f"r_kv + d_r = {latent}",
               full_formula=f"h·(d_k + d_v) = {full}", v3_latent=v3_latent,
               v3_full=v3_full, v3_times=f"{v3_full / v3_latent:.0f}")
    keys = ["body", "query_lora" if lat.query_down is not None else "query", "shared", "cache"]
    lines = latent_lines(trace, focus) + cache_lines(trace)
    numbers = [Numbers("latent_kv", t["label"]["latent_kv"], trace.latent_kv, spec.context_tokens, dims(lat.r_kv))]
    if trace.absorbed_queries is not None and trace.scores is not None:
        keys.append("absorbed")
        lines += absorbed_lines(trace, focus)
        numbers.append(Numbers("absorbed_queries", t["label"]["absorbed_queries"], trace.absorbed_queries[h],
                               spec.tokens, dims(lat.r_kv + lat.d_rope)))
    else:
        keys.append("not_absorbed")
    formula = "(c_raw | k_r) = X̂·W_DKV + b_DKV,   c = kv_norm(c_raw),   K_h = (c·W_UK,h | k_r),   V_h = c·W_UV,h"
    return Step("latent", t["latent"]["title"], formula, paragraphs(t, "latent", keys, ctx), lines, numbers)
