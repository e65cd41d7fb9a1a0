"""Multi-head latent attention's wrong versions (:mod:`attncli.core.latent_stage`), on the stage each belongs to:

    latent_rope_first          (rope) the rotated part taken at the wrong end of each head: the first d_r numbers
    latent_rope_key_left_out   each head's key (k_nope | 0): the shared rotary key k_r left out
    latent_kv_norm_left_out    c_KV = the first r_kv columns of C·W_DKV, not normalised
    norm_*                     kv_norm or query_norm done wrong (:func:`~attncli.core.variants.norms.norm_variants`)
    yarn_mscale_once           (scale) DeepSeek V3's YaRN mscale put on the scale once, m instead of m²
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from attncli.core.attention import project
from attncli.core.latent import keys_of, latent_kv
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, rows_in
from attncli.core.variants import Variant
from attncli.core.variants.norms import NORM_SLIPS, norm_variants, words


def yarn_mscale(spec: Spec) -> float:
    """m = 0.1·mscale_all_dim·ln(factor) + 1, the factor DeepSeek's scale carries squared (1 without one)."""
    s = None if spec.rope is None else spec.rope.scaling
    if s is None or s.type != "yarn" or not s.mscale_all_dim or s.factor <= 1:
        return 1.0
    return 0.1 * s.mscale_all_dim * math.log(s.factor) + 1.0


def _latent(test, **more):
    """``cases``: one instance with latent when ``test(spec)`` holds; ``more`` fills the sentence."""
    return lambda spec: ({k: fn(spec) for k, fn in more.items()},) if spec.latent is not None and test(spec) else ()


def _with_latent(change):
    """The latent stage with ``change(latent) -> {Latent field: value}``."""
    return lambda spec, a, p, run: run(replace(spec, latent=replace(spec.latent, **change(spec.latent))), a)


def _no_rope_key(lat) -> dict:
    """W_DKV with its last d_r columns zero (and b_DKV): every head's key is its k_nope and zeros."""
    without = lat.kv_down.copy()
    without[:, lat.r_kv:] = 0.0
    bias = None if lat.kv_down_bias is None else np.concatenate([lat.kv_down_bias[:lat.r_kv], np.zeros(lat.d_rope)])
    return {"kv_down": without, "kv_down_bias": bias}


def _source(spec: Spec, a: Arrays) -> np.ndarray:
    return rows_in(spec, a) if spec.context is None else spec.context  # C (m, d_ctx), or X̂


def _kv_norm_variant(name: str) -> Variant:
    """kv_norm done wrong: c_KV, and the keys and values expanded from it."""
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        lat, kv = spec.latent, spec.latent.kv_norm
        c_raw, k_r = latent_kv(_source(spec, a), lat.kv_down, lat.kv_down_bias, None, lat.d_rope)  # (m, r_kv)
        wrong = norm_variants(c_raw, kv.kind, kv.gamma, kv.beta, kv.eps, only=name)[name]
        return {**run(spec, a), "latent_kv": wrong, "keys": keys_of(project(wrong, spec.w_k, spec.b_k), k_r),
                "values": project(wrong, spec.w_v, spec.b_v)}

    def cases(spec: Spec) -> tuple:
        kv = None if spec.latent is None else spec.latent.kv_norm
        if kv is None or name not in norm_variants(np.ones((min(spec.m, 2), spec.latent.r_kv)), kv.kind, kv.gamma,
                                                   kv.beta, kv.eps):
            return ()
        return (words(kv.kind, "latent.kv_norm", spec.latent.r_kv, kv.eps),)
    return Variant(name, apply, cases)


def _query_norm_variant(name: str) -> Variant:
    """query_norm done wrong: c_Q, and the queries expanded from it."""
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        lat, qn = spec.latent, spec.latent.query_norm
        c_q = rows_in(spec, a) @ lat.query_down + (0.0 if lat.query_down_bias is None else lat.query_down_bias)
        wrong = norm_variants(c_q, qn.kind, qn.gamma, qn.beta, qn.eps, only=name)[name]  # (n, r_q)
        return {**run(spec, a), "latent_queries": wrong, "queries": project(wrong, spec.w_q, spec.b_q)}

    def cases(spec: Spec) -> tuple:
        lat = spec.latent
        if lat is None or lat.query_down is None or lat.query_norm is None:
            return ()
        qn, r_q = lat.query_norm, lat.query_down.shape[1]
        if name not in norm_variants(np.ones((min(spec.n, 2), r_q)), qn.kind, qn.gamma, qn.beta, qn.eps):
            return ()
        return (words(qn.kind, "latent.query_norm", r_q, qn.eps),)
    return Variant(name, apply, cases)


LATENT_VARIANTS = (
    Variant("latent_rope_key_left_out", _with_latent(_no_rope_key),
            _latent(lambda spec: True, d_r=lambda spec: spec.latent.d_rope)),
    Variant("latent_kv_norm_left_out", _with_latent(lambda lat: {"kv_norm": None}),
            _latent(lambda spec: spec.latent.kv_norm is not None)),
    *(_kv_norm_variant(name) for name in NORM_SLIPS),
    *(_query_norm_variant(name) for name in NORM_SLIPS),
)
ROPE_LATENT_VARIANTS = (  # on the rope stage
    Variant("latent_rope_first",
            lambda spec, a, p, run: run(replace(spec, rope=replace(spec.rope, part="first")), a),
            _latent(lambda spec: spec.rope is not None and spec.rope.part != "first",
                    d_r=lambda spec: spec.latent.d_rope)),
)
SCALE_LATENT_VARIANTS = (  # on the scale stage
    Variant("yarn_mscale_once", lambda spec, a, p, run: run(replace(spec, scale=spec.scale / yarn_mscale(spec)), a),
            _latent(lambda spec: yarn_mscale(spec) != 1.0, m=lambda spec: f"{yarn_mscale(spec):.6g}",
                    m2=lambda spec: f"{yarn_mscale(spec) ** 2:.6g}")),
)
