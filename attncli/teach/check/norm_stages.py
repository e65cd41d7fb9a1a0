"""The normalisations done wrong in the norm stages beyond pre_norm and add_norm (:func:`attncli.teach.check.arith.
norm_slips`), for ``attncli check``'s hints: post_norm, qk_norm (RMSNorm or LayerNorm, over each head or over the
whole projection) and latent's kv_norm and query_norm. Each is the computation done again with one change, the
stage's norm computed by :func:`norm_variants` (over the tokens instead of the features,
d − 1, ε left out or outside the root, no root, the other norm, γ or β left out, γ and β swapped), and for qk_norm
its scope swapped (over the whole projection instead of each head, or the reverse); the same slip on the queries and
the keys.
"""

from __future__ import annotations

import numpy as np

from attncli.core.attention import project
from attncli.core.latent import keys_of, latent_kv
from attncli.core.qknorm import normalize
from attncli.core.trace import Trace
from attncli.core.variants.norms import norm_variants
from attncli.teach.check.slips import rerun

NAMES = {"rms": "RMSNorm", "layer": "LayerNorm"}


def norm_stage_slips(trace: Trace, add) -> None:
    """Add the slips of the document's post_norm, qk_norm and latent norms (none without them)."""
    qk_norm_slips(trace, add)  # (post_norm's: the stage's declared variants)
    latent_norm_slips(trace, add)


def _words(kind: str, where: str, d: int, eps: float, **more) -> dict:
    other = "layer" if kind == "rms" else "rms"
    return dict(where=where, norm=NAMES[kind], other=NAMES[other], d=d, eps=f"{eps:g}", **more)


def qk_norm_slips(trace: Trace, add) -> None:
    """qk_norm done wrong in one way, on the queries and on the keys alike; everything after it computed again."""
    spec = trace.spec
    norm = spec.qk_norm
    if norm is None or trace.normalized_queries is None:
        return
    stage = "qk_norm_after_rope" if norm.after_rope and spec.rope is not None else "qk_norm"
    features = (-1,) if norm.scope == "head" else (0, -1)
    d = spec.d_k if norm.scope == "head" else spec.heads * spec.d_k

    def gamma_beta(which: str) -> tuple[np.ndarray, np.ndarray | None]:
        gamma, beta = getattr(norm, f"gamma_{which}"), getattr(norm, f"beta_{which}")
        return gamma.reshape(-1, 1, spec.d_k), None if beta is None else beta.reshape(-1, 1, spec.d_k)

    def sources(a) -> tuple[np.ndarray, np.ndarray]:  # what the stage normalises: Q, K, or the rotated Q′, K′
        if stage == "qk_norm_after_rope":
            return a["queries_rotated"], a["keys_rotated"]
        return a["queries"], a["keys"]

    def variants(a) -> tuple[dict, dict]:
        q, k = sources(a)
        return tuple(norm_variants(x, norm.kind, *gamma_beta(which), norm.eps, features, tokens=-2)
                     for x, which in ((q, "query"), (k, "key")))

    wrong_q, wrong_k = variants({key: getattr(trace, key) for key in ("queries", "keys", "queries_rotated",
                                                                       "keys_rotated")})
    for name in dict.fromkeys([*wrong_q, *wrong_k]):  # (in norm_variants' order: the order they are preferred)
        def step(spec, a, name=name):
            done_q, done_k = variants(a)
            return {"normalized_queries": done_q.get(name, a.get("normalized_queries")),
                    "normalized_keys": done_k.get(name, a.get("normalized_keys"))}
        add(name, _redone(trace, stage, step), **_words(norm.kind, "qk_norm", d, norm.eps))
    other = "projection" if norm.scope == "head" else "head"

    def swapped(spec, a):
        q, k = sources(a)
        return {"normalized_queries": normalize(q, norm.gamma_query, norm.beta_query, norm.kind, other, norm.eps),
                "normalized_keys": normalize(k, norm.gamma_key, norm.beta_key, norm.kind, other, norm.eps)}
    if spec.heads > 1 or spec.kv_heads > 1:
        name = "norm_scope_projection" if other == "projection" else "norm_scope_head"
        add(name, _redone(trace, stage, swapped), norm=NAMES[norm.kind], d_k=spec.d_k, d=spec.heads * spec.d_k)


def _redone(trace: Trace, stage: str, step):
    """The slip of stage ``stage`` done by ``step(spec, arrays)``: every later stage computed again."""
    return lambda rounding: rerun(trace, {}, rounding, steps={stage: step})


def latent_norm_slips(trace: Trace, add) -> None:
    """latent's kv_norm (and query_norm) done wrong: the keys and values (queries) from the wrong latent."""
    spec = trace.spec
    lat = spec.latent
    if lat is None or trace.latent_kv is None:
        return
    x = spec.embedded if trace.normalized_inputs is None else trace.normalized_inputs  # X̂ (n, d_model)
    source = x if spec.context is None else spec.context
    c_raw, k_r = latent_kv(source, lat.kv_down, lat.kv_down_bias, None, lat.d_rope)  # (m, r_kv), (m, d_r)
    kv = lat.kv_norm
    for name, wrong in norm_variants(c_raw, kv.kind, kv.gamma, kv.beta, kv.eps).items():
        def step(spec, a, wrong=wrong):
            return {**{key: a.get(key) for key in ("latent_queries", "queries")}, "latent_kv": wrong,
                    "keys": keys_of(project(wrong, spec.w_k, spec.b_k), k_r), "values": project(wrong, spec.w_v,
                                                                                                  spec.b_v)}
        add(name, _redone(trace, "latent", step), **_words(kv.kind, "latent.kv_norm", c_raw.shape[1], kv.eps))
    if lat.query_down is None or trace.latent_queries is None:
        return
    qn = lat.query_norm
    c_q = x @ lat.query_down + (0.0 if lat.query_down_bias is None else lat.query_down_bias)  # (n, r_q)
    for name, wrong in norm_variants(c_q, qn.kind, qn.gamma, qn.beta, qn.eps).items():
        def step_q(spec, a, wrong=wrong):
            return {**{key: a.get(key) for key in ("latent_kv", "keys", "values")}, "latent_queries": wrong,
                    "queries": project(wrong, spec.w_q, spec.b_q)}
        add(name, _redone(trace, "latent", step_q), **_words(qn.kind, "latent.query_norm", c_q.shape[1], qn.eps))
