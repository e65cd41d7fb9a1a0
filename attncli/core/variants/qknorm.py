"""qk_norm's wrong versions (:mod:`attncli.core.qknorm`), on the stage that normalises (before the rotation, or
after it with ``after_rope``); the same slip on the queries and the keys.

    qk_norm_left_out          Q̂ = Q, K̂ = K: the norm forgotten
    qk_norm_after_rope        the document normalises before rope: Q̂ = norm(rope(Q)) instead (scores of Q̂, K̂)
    qk_norm_before_rope       the document normalises after rope (on the rope stage): Q′ = rope(norm(Q)), scores of Q′
    qk_norm_key_gamma         the queries normalised with the keys' γ
    norm_*                    the norm itself done wrong (:func:`~attncli.core.variants.norms.norm_variants`)
    norm_scope_projection / norm_scope_head   over a token's every head instead of each head, or the reverse

qk_norm after the rotation reads Q′ and K′, which the rotation wrote; a slip that changes the order of the two
makes its own scores (the scores read the document's last query stage), :func:`_scores_of`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attncli.core import attention as maths
from attncli.core.formulas import norm_text
from attncli.core.norms import QkNorm
from attncli.core.qknorm import normalize
from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.temperature import tempered
from attncli.core.variants import Variant
from attncli.core.variants.norms import NAMES, NORM_SLIPS, norm_variants, words

QK = ("normalized_queries", "normalized_keys")


def _sources(after: bool):
    """What the stage normalises: Q and K (before the rotation), or Q′ and K′ (after it, when there is one)."""
    def sources(a: Arrays) -> tuple[np.ndarray, np.ndarray]:
        if after and a.get("queries_rotated") is not None:
            return a["queries_rotated"], a["keys_rotated"] if a.get("keys_rotated") is not None else a["keys"]
        return a["queries"], a["keys"]
    return sources


def _both(spec: Spec, q: np.ndarray, k: np.ndarray, norm: QkNorm) -> Arrays:
    """Q̂ and K̂ of ``norm`` (K̂ None with kv_from: an earlier layer's keys)."""
    return {"normalized_queries": normalize(q, norm.gamma_query, norm.beta_query, norm.kind, norm.scope, norm.eps),
            "normalized_keys": None if spec.shared_kv is not None else
            normalize(k, norm.gamma_key, norm.beta_key, norm.kind, norm.scope, norm.eps)}


def _scores_of(q_key: str, k_key: str):
    """The scores stage reading Q and K from ``q_key``, ``k_key`` (τ ⊙ Q with the query temperature)."""
    def step(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        q = a[q_key] if a.get("query_temperature") is None else tempered(a[q_key], a["query_temperature"])
        s = maths.scores(q, a[k_key], spec)  # (h, n, m)
        maths.check_finite(s, "scores", spec.tokens)
        return {"scores": s}
    return step


# ---------------------------------------------------------------- left out, moved, the keys' γ


def _left_out(after: bool):
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        q, k = _sources(after)(a)
        return {"normalized_queries": q, "normalized_keys": None if spec.shared_kv is not None else k}
    return apply


def _after_rope(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    """Q̂, K̂ = norm(rope(Q)), norm(rope(K)) where the document normalises first (rope then turns Q and K)."""
    q_rot, k_rot = maths.rotations(a["queries"], a["keys"], spec)
    return _both(spec, q_rot, k_rot, spec.qk_norm)


def _rope_unnormalised(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    """The rotation of Q and K as projected (the slip normalised after it): Q′ = rope(Q), K′ = rope(K)."""
    return run(replace(spec, qk_norm=None), a)


def _before_rope(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    """On the rope stage, where the document normalises after it: Q̂ = norm(Q), Q′ = rope(Q̂)."""
    normed = _both(spec, a["queries"], a["keys"], spec.qk_norm)
    q_rot, k_rot = maths.rotations(normed["normalized_queries"], normed["normalized_keys"], spec)
    return {**run(spec, a), "queries_rotated": q_rot, "keys_rotated": k_rot}


def _normalized_again(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    """qk_norm_after_rope's stage where the slip normalised before the rotation: Q̂ = norm(Q), K̂ = norm(K)."""
    return _both(spec, a["queries"], a["keys"], spec.qk_norm)


def keys_gamma_for_queries(norm: QkNorm, heads: int, kv_heads: int) -> np.ndarray | None:
    """The keys' γ as the queries would take it (shared, or one row per head when h = g); None when it cannot be
    or changes nothing."""
    gamma = norm.gamma_key
    if heads != kv_heads and not (norm.scope == "head" and gamma.ndim == 1):
        return None  # g rows of γ (or g·d_k numbers) for h query heads
    if gamma.shape == norm.gamma_query.shape and np.array_equal(gamma, norm.gamma_query):
        return None
    return gamma


def _key_gamma(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    norm = spec.qk_norm
    return run(replace(spec, qk_norm=replace(norm, gamma_query=keys_gamma_for_queries(norm, spec.heads,
                                                                                      spec.kv_heads))), a)


def _moved(spec: Spec) -> bool:
    return spec.rope is not None and spec.shared_kv is None


# ---------------------------------------------------------------- the norm itself done wrong, its scope


def _norm_variant(name: str, after: bool) -> Variant:
    def gamma_beta(spec: Spec, which: str) -> tuple[np.ndarray, np.ndarray | None]:
        norm = spec.qk_norm
        gamma, beta = getattr(norm, f"gamma_{which}"), getattr(norm, f"beta_{which}")
        return gamma.reshape(-1, 1, spec.d_k), None if beta is None else beta.reshape(-1, 1, spec.d_k)

    def wrong(spec: Spec, q: np.ndarray, k: np.ndarray, only: str | None = None) -> tuple[dict, dict]:
        norm = spec.qk_norm
        features = (-1,) if norm.scope == "head" else (0, -1)
        return tuple(norm_variants(x, norm.kind, *gamma_beta(spec, which), norm.eps, features, tokens=-2, only=only)
                     for x, which in ((q, "query"), (k, "key")))

    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        right = run(spec, a)
        done_q, done_k = wrong(spec, *_sources(after)(a), only=name)
        return {"normalized_queries": done_q.get(name, right["normalized_queries"]),
                "normalized_keys": right["normalized_keys"] if spec.shared_kv is not None else
                done_k.get(name, right["normalized_keys"])}

    def cases(spec: Spec) -> tuple:
        norm = spec.qk_norm
        probe = [np.ones((heads, min(rows, 2), spec.d_k)) for heads, rows in ((spec.heads, spec.n),
                                                                              (spec.kv_heads, spec.m))]
        if not any(name in found for found in wrong(spec, *probe)):
            return ()  # (which slips this norm can show: n or m > 1, ε > 0, γ ≠ 1, β …)
        d = spec.d_k if norm.scope == "head" else spec.heads * spec.d_k
        return (words(norm.kind, "qk_norm", d, norm.eps),)
    return Variant(name, apply, cases)


def _scope_swapped(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    norm = spec.qk_norm
    return run(replace(spec, qk_norm=replace(norm, scope=_other_scope(norm))), a)


def _other_scope(norm: QkNorm) -> str:
    return "projection" if norm.scope == "head" else "head"


def _scope_cases(scope: str):
    """``cases`` of the norm taken over the other scope, for a document whose scope is ``scope``."""
    def cases(spec: Spec) -> tuple:
        norm = spec.qk_norm
        if norm.scope != scope or (spec.heads == 1 and spec.kv_heads == 1):
            return ()
        return ({"norm": NAMES[norm.kind], "d_k": spec.d_k, "d": spec.heads * spec.d_k},)
    return cases


def _variants(after: bool) -> tuple[Variant, ...]:
    """qk_norm's variants on its stage before the rotation (``after`` False) or after it."""
    left_out = Variant("qk_norm_left_out", _left_out(after),
                       lambda spec: ({"norm": norm_text(spec.qk_norm.kind)},))
    moved = () if after else (
        Variant("qk_norm_after_rope", _after_rope, lambda spec: ({},) if _moved(spec) else (),
                later=(("rope", _rope_unnormalised), ("scores", _scores_of(*QK)))),)
    key_gamma = Variant("qk_norm_key_gamma", _key_gamma,
                        lambda spec: ({},) if keys_gamma_for_queries(spec.qk_norm, spec.heads, spec.kv_heads)
                        is not None else ())
    norms = tuple(_norm_variant(name, after) for name in NORM_SLIPS)
    return (left_out, *moved, key_gamma, *norms, Variant("norm_scope_projection", _scope_swapped, _scope_cases("head")),
            Variant("norm_scope_head", _scope_swapped, _scope_cases("projection")))


QK_NORM_VARIANTS = _variants(after=False)
QK_NORM_AFTER_ROPE_VARIANTS = _variants(after=True)
ROPE_QK_NORM_VARIANTS = (  # on the rope stage: the norm moved before the rotation, where the document has it after
    Variant("qk_norm_before_rope", _before_rope,
            lambda spec: ({},) if _moved(spec) and spec.qk_norm is not None and spec.qk_norm.after_rope else (),
            later=(("qk_norm_after_rope", _normalized_again), ("scores", _scores_of("queries_rotated",
                                                                                      "keys_rotated")))),
)
