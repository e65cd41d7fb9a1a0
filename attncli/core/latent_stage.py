"""Stages of multi-head latent attention (:mod:`attncli.core.latent`) on a Spec: ``latent`` and ``absorb``.

``latent`` takes the place of ``projections`` when the document has ``latent``: it makes c_Q and c_KV
(``latent_queries``, ``latent_kv``) and from them the per-head Q, K and V every later stage reads, with the
Spec's per-head matrices (``w_q`` is W_Q or W_UQ, ``w_k`` W_UK, ``w_v`` W_UV), so that a slip of
``attncli check`` that changes them changes the latent path too.  ``absorb`` writes the queries with W_UK
folded in (``absorbed_queries``), from the queries the scores see, so that absorbed_queries·[c_KV | k_r′]ᵀ is S;
without ``clip_qkv`` and ``qk_norm``, which the folding does not commute with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from attncli.core import backward as b
from attncli.core.attention import check_finite, project
from attncli.core.formulas import symbol
from attncli.core.latent import (
    absorbed,
    keys_of,
    kv_up_back,
    latent_kv,
    latent_kv_back,
    latent_queries,
    latent_queries_back,
)
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, Quantity, Stage, added, rows_in, rows_key

LATENT_READS = ("inputs", "positional", "normalized_inputs", "context")
QUERY_ROWS = ("latent_queries", "queries")


def latent_forward(spec: Spec, a: Arrays) -> Arrays:
    """c_Q, c_KV and the Q, K and V expanded from them (before a clamp)."""
    lat = spec.latent
    x = rows_in(spec, a)  # X̂ (n, d_model)
    source = x if spec.context is None else spec.context  # C (m, d_ctx)
    c_q = latent_queries(x, lat)  # (n, r_q), or None
    c_kv, k_r = latent_kv(source, lat.kv_down, lat.kv_down_bias, lat.kv_norm, lat.d_rope)  # (m, r_kv), (m, d_r)
    q = project(x if c_q is None else c_q, spec.w_q, spec.b_q)  # (h, n, d_nope + d_r)
    k = keys_of(project(c_kv, spec.w_k, spec.b_k), k_r)  # (h, m, d_nope + d_r)
    v = project(c_kv, spec.w_v, spec.b_v)  # (h, m, d_v)
    made = {"latent_queries": c_q, "latent_kv": c_kv, "queries": q, "keys": k, "values": v}
    for name, array in made.items():
        if array is not None:  # rows: the queries' tokens for c_Q and Q, the keys' for the rest
            check_finite(array, name.replace("_", " "), spec.tokens if name in QUERY_ROWS else spec.context_tokens)
    return made


def _absorb(spec: Spec, a: Arrays, kernel_queries: Callable[[Arrays, Spec], np.ndarray]) -> Arrays:
    return {"absorbed_queries": absorbed(kernel_queries(a, spec), spec.w_k, spec.latent.d_nope)}  # (h, n, r_kv + d_r)


def _x(spec: Spec) -> str:
    return "X̂" if spec.pre_norm is not None else "(X + P)" if spec.positional is not None else "X"


def _c_q_text(spec: Spec) -> str:
    bias = " + b_DQ" if spec.latent.query_down_bias is not None else ""
    return f"c_Q = {spec.latent.query_norm.kind}_norm({_x(spec)}·W_DQ{bias})"


def _c_kv_text(spec: Spec) -> str:
    bias = " + b_DKV" if spec.latent.kv_down_bias is not None else ""
    source = "C" if spec.context is not None else _x(spec)
    return f"c_KV = {spec.latent.kv_norm.kind}_norm(first r_kv of {source}·W_DKV{bias})"


def _latex(text: Callable[[Spec], str]) -> Callable[[Spec, Callable[[str], str]], str]:
    """The plain formula as LaTeX (c_Q, W_DQ as subscripts): these arrays have no head."""
    def latex(spec: Spec, up: Callable[[str], str]) -> str:
        out = text(spec).replace("X̂", r"\hat X").replace("·", " ").replace("_norm", r"\_norm")
        out = out.replace("first r_kv of", r"\text{first } r_{kv} \text{ of }")
        for name in ("c_KV", "c_Q", "W_DKV", "W_DQ", "b_DKV", "b_DQ", "k_r"):
            out = out.replace(name, f"{name[0]}_{{{name[2:]}}}")
        return out
    return latex


_LATENT_TEXTS = {  # the latent forms of Q, K and V (the projection's text is kept without latent)
    "Q": lambda spec: f"Q_h = {'c_Q·W_UQ,h' if spec.latent.query_down is not None else f'{_x(spec)}·W_Q,h'}"
                      + (" + b_Q" if spec.b_q is not None else ""),
    "K": lambda spec: "K_h = (c_KV·W_UK,h | k_r)",
    "V": lambda spec: "V_h = c_KV·W_UV,h",
}


def latent_aware(q: Quantity) -> Quantity:
    """Q, K or V as the latent stage makes them when the document has ``latent``, else as ``q`` says."""
    latent_text = _LATENT_TEXTS[q.symbol]

    def text(spec: Spec) -> str:
        return latent_text(spec) if spec.latent is not None else q.text(spec)

    def latex(spec: Spec, up: Callable[[str], str]) -> str:
        if spec.latent is None:
            return q.latex(spec, up)
        lhs, rhs = latent_text(spec).split(" = ", 1)
        rhs = rhs.replace("·", " ").replace("X̂", r"\hat X").replace(",h", "")
        for name in ("c_KV", "c_Q", "W_UQ", "W_UK", "W_UV", "W_Q", "b_Q", "k_r"):
            rhs = rhs.replace(name, up(f"{name[0]}_{{{name[2:]}}}") if name[0] == "W" else f"{name[0]}_{{{name[2:]}}}")
        return f"{up(lhs[0])} = {rhs}"
    return replace(q, text=text, latex=latex)


# ---------------------------------------------------------------- the stage backwards (core.pipeline.backward runs it)


def _latent_back(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """The latent projections (core.latent): Q, K and V to c_Q and c_KV, to X̂ (or X₀) and C, and every latent weight.

    dc_Q = dQ·W_UQᵀ;  dc_KV = dK_nope·W_UKᵀ + dV·W_UVᵀ;  dk_r = Σ_h dK_r,h (the rotary key every head shares)."""
    out = _queries_back(spec, a, d["queries"]) if d.get("queries") is not None else {}
    lat, d_k, d_v = spec.latent, d.get("keys"), d.get("values")
    if d_k is None and d_v is None:
        return out
    source, to = (rows_in(spec, a), rows_key(spec)) if spec.context is None else (spec.context, "context")
    c_kv = a.get("latent_kv")
    if c_kv is None:  # let go by the streamed path: made again
        c_kv = latent_kv(source, lat.kv_down, lat.kv_down_bias, lat.kv_norm, lat.d_rope)[0]
    d_k_r = np.zeros((c_kv.shape[0], lat.d_rope)) if d_k is None else d_k[:, :, lat.d_nope:].sum(axis=0)  # (m, d_r)
    d_c, d_w_up = kv_up_back(c_kv, lat.kv_up, spec.heads, lat.d_nope,
                             None if d_k is None else d_k[:, :, :lat.d_nope], d_v)
    d_source, d_w, d_b, d_gamma = latent_kv_back(source, lat, d_c, d_k_r)
    added(out, to, d_source)
    out.update(latent_kv=d_c, weight_kv_up=d_w_up, weight_kv_down=d_w, latent_kv_norm_gamma=d_gamma)
    if lat.kv_down_bias is not None:
        out["bias_kv_down"] = d_b
    return out


def _queries_back(spec: Spec, a: Arrays, d_q: np.ndarray) -> Arrays:
    """Q = X̂·W_Q (+ b_Q), or c_Q·W_UQ with c_Q = query_norm(X̂·W_DQ + b_DQ), backwards."""
    lat, x = spec.latent, rows_in(spec, a)
    if lat.query_down is None:
        dx, dw, db = b.project_back(x, spec.w_q, d_q)
        return {rows_key(spec): dx, "weight_query": dw} | ({} if spec.b_q is None else {"bias_query": db})
    c_q = a.get("latent_queries")
    c_q = latent_queries(x, lat) if c_q is None else c_q  # let go by the streamed path: made again
    d_c, d_w_up, _ = b.project_back(c_q, spec.w_q, d_q)
    dx, d_w_down, d_b, d_gamma = latent_queries_back(x, lat, d_c)
    out = {rows_key(spec): dx, "latent_queries": d_c, "weight_query_up": d_w_up, "weight_query_down": d_w_down,
           "latent_query_norm_gamma": d_gamma}
    if lat.query_down_bias is not None:
        out["bias_query_down"] = d_b
    return out


def _p(key: str, sym: str, title: str, shape: str, needs: str, source: str) -> Quantity:
    return Quantity(key, sym, title, shape, needs, source, True, *symbol(sym))


def latent_stage(queries: Quantity, keys: Quantity, values: Quantity) -> Stage:
    """The ``latent`` stage, writing c_Q, c_KV and the ``queries``, ``keys`` and ``values`` Quantities given."""
    writes = (
        _p("weight_query_down", "W_DQ", "Query down-projection", "d_model r_q", "weights.query_down:",
           "latent.query_down"),
        _p("bias_query_down", "b_DQ", "Query down-projection bias", "r_q", "bias.query_down:",
           "latent.query_down_bias"),
        Quantity("latent_queries", "c_Q", "Latent queries", "n r_q", "weights.query_down:", text=_c_q_text,
                 latex=_latex(_c_q_text), checkable=True, steps=("latent",)),
        _p("weight_query_up", "W_UQ", "Query up-projection", "r_q h·d_k", "weights.query_up:", "latent.query_up"),
        _p("weight_kv_down", "W_DKV", "Key/value down-projection", "d_ctx r_kv+d_r", "latent:", "latent.kv_down"),
        _p("bias_kv_down", "b_DKV", "Key/value down-projection bias", "r_kv+d_r", "bias.kv_down:",
           "latent.kv_down_bias"),
        Quantity("latent_kv", "c_KV", "Latent keys and values", "m r_kv", "latent:", text=_c_kv_text,
                 latex=_latex(_c_kv_text), checkable=True, steps=("latent",)),
        _p("weight_kv_up", "W_UKV", "Key/value up-projection", "r_kv h·(d_nope+d_v)", "latent:", "latent.kv_up"),
        queries, keys, values)
    return Stage("latent", "c_Q = query_norm(X̂·W_DQ + b_DQ)   c_KV = kv_norm(C·W_DKV + b_DKV)   "
                 "K_h = (c_KV·W_UK,h | k_r)   V_h = c_KV·W_UV,h", LATENT_READS, writes, latent_forward,
                 lambda spec: spec.latent is not None, backward=_latent_back, explained=("latent",))


def _absorbed_text(spec: Spec) -> str:
    return "Q_abs,h = (Q′_nope,h·W_UK,hᵀ | Q′_r,h)"


def absorb_stage(kernel_queries: Callable[[Arrays, Spec], np.ndarray], reads: tuple[str, ...]) -> Stage:
    """The ``absorb`` stage: W_UK folded into ``kernel_queries(a, spec)``, the queries the scores see."""
    absorbed_queries = Quantity(
        "absorbed_queries", "Q_abs", "Absorbed queries", "h n r_kv+d_r", "latent: (without clip_qkv and qk_norm)",
        text=_absorbed_text,
        latex=lambda spec, up: up("Q_{abs}") + r" = \left(Q'_{nope} W_{UK}^\top \mid Q'_{r}\right)")
    return Stage("absorb", "Q_abs,h = (Q′_nope,h·W_UK,hᵀ | Q′_r,h)", reads, (absorbed_queries,),
                 lambda spec, a: _absorb(spec, a, kernel_queries),
                 lambda spec: spec.latent is not None and spec.clip_qkv is None and spec.qk_norm is None,
                 explained=("latent",))  # (explain's latent step shows Q_abs: it comes after the rotation)
