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
from attncli.teach.check.slips import by_stage, rerun

NAMES = {"rms": "RMSNorm", "layer": "LayerNorm"}


def norm_stage_slips(trace: Trace, add) -> None:
    """Add the slips of the document's post_norm, qk_norm and latent norms (none without them)."""
    post_norm_slips(trace, add)
    qk_norm_slips(trace, add)
    latent_norm_slips(trace, add)


def norm_variants(x: np.ndarray, kind: str, gamma: np.ndarray, beta: np.ndarray | None,
                  eps: float, features: tuple[int, ...] = (-1,), tokens: int = 0) -> dict[str, np.ndarray]:
    """A normalisation of x over its ``features`` axes (a row of (n, d); qk_norm's (h, n, d_k): each head's row,
    or a token's every head) done wrong in one way each, by the slip's name; ``tokens``: the axis of the rows."""
    beta = np.zeros_like(gamma) if beta is None else beta
    d = int(np.prod([x.shape[axis] for axis in features]))

    def norm(x, kind=kind, axis=features, ddof=0, eps=eps, outside=False, root=True, gamma=gamma, beta=beta):
        count = int(np.prod([x.shape[a] for a in axis]))
        if kind == "rms":
            spread, centred = np.mean(x * x, axis=axis, keepdims=True), x
            spread = spread * count / (count - ddof)
        else:
            centred = x - x.mean(axis=axis, keepdims=True)
            spread = x.var(axis=axis, keepdims=True, ddof=ddof)
        scale = np.sqrt(spread) + eps if outside else np.sqrt(spread + eps) if root else spread + eps
        return gamma * centred / scale + (beta if kind == "layer" else 0.0)

    out = {"norm_other": norm(x, kind="layer" if kind == "rms" else "rms")}
    if x.shape[tokens] > 1:
        out["norm_axis"] = norm(x, axis=(tokens,))
    if d > 1:
        out["norm_ddof"] = norm(x, ddof=1)
    if eps > 0:
        out["norm_eps_left_out"], out["norm_eps_outside"] = norm(x, eps=0.0), norm(x, outside=True)
    out["norm_no_root"] = norm(x, root=False)
    if not np.all(gamma == 1):
        out["norm_gamma_left_out"] = norm(x, gamma=np.ones_like(gamma))
    if kind == "layer" and np.any(beta != 0):
        out["norm_beta_left_out"] = norm(x, beta=np.zeros_like(beta))
        if gamma.shape == beta.shape and not np.array_equal(gamma, beta):  # γ ⊙ x̂ + β written β ⊙ x̂ + γ
            out["norm_gamma_beta_swapped"] = norm(x, gamma=beta, beta=gamma)
    return out


def _words(kind: str, where: str, d: int, eps: float, **more) -> dict:
    other = "layer" if kind == "rms" else "rms"
    return dict(where=where, norm=NAMES[kind], other=NAMES[other], d=d, eps=f"{eps:g}", **more)


def post_norm_slips(trace: Trace, add) -> None:
    """post_norm(Y) done wrong: the residual (and LayerNorm of it) from the wrong normalised output."""
    norm = trace.spec.post_norm
    if norm is None or trace.normalized_output is None:
        return
    y = trace.output  # (n, d_out)
    for name, wrong in norm_variants(y, norm.kind, norm.gamma, norm.beta, norm.eps).items():
        add(name, by_stage(trace, lambda wrong=wrong: {"normalized_output": wrong}),
            **_words(norm.kind, "post_norm", y.shape[1], norm.eps))


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
