"""Each stage's backward step, and the gradients the result gains (FORMAT.md Part 3, "The backward pass").

A backward step ``step(spec, a, d)`` gets the forward arrays ``a`` and ``d``: the gradient of L with respect to
each quantity the stage wrote (complete: every later stage has given its share), and returns the gradients of
what the stage read (summed by :func:`attncli.core.pipeline.backward` where several stages read one quantity),
of the document's matrices it applies (``weight_query`` …) and of what else it made on the way (``delta``).
:data:`BACKWARD` gives each stage of :data:`attncli.core.stages.STAGES` its step, by the stage's name; the
maths is :mod:`attncli.core.backward`'s.  Everything is float64.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attncli.core import backward as b
from attncli.core import qknorm
from attncli.core.attention import projections
from attncli.core.latent import kv_up_back, latent_kv, latent_kv_back, latent_queries, latent_queries_back
from attncli.core.latent_stage import latent_forward
from attncli.core.norms import Norm
from attncli.core.spec import Spec
from attncli.core.stage import Arrays

Backward = Callable[[Spec, Arrays, Arrays], Arrays]


def seed_key(spec: Spec) -> str:
    """The block's last quantity, whose gradient the document gives: normalized, residual or output."""
    return "normalized" if spec.add_norm is not None else "residual" if spec.residual else "output"


def last_key(spec: Spec, what: str) -> str:
    """The last query (``what`` = queries) or key stage before the temperature: what the kernel's view is."""
    if qknorm.normalized_last(spec):
        return f"normalized_{what}"
    return f"{what}_rotated" if spec.rope is not None else what


def _x_key(spec: Spec) -> str:
    return "normalized_inputs" if spec.pre_norm is not None else "inputs"


def _x(spec: Spec, a: Arrays) -> np.ndarray:
    return spec.embedded if a.get("normalized_inputs") is None else a["normalized_inputs"]


def _added(out: Arrays, key: str, value: np.ndarray) -> None:
    """``out[key]`` += ``value``, in place: ``out``'s arrays are the step's own (no third n × d_model array)."""
    if key in out:
        out[key] += value
    else:
        out[key] = value


def _norm(x: np.ndarray, dy: np.ndarray, norm: Norm, name: str, to: str) -> Arrays:
    """A row norm's gradients: to ``to`` and to its γ and β, named ``<name>_gamma``, ``<name>_beta``."""
    dx, d_gamma = b.norm_back(x, dy, norm.gamma, norm.kind, norm.eps)
    out = {to: dx, f"{name}_gamma": d_gamma.sum(axis=0)}
    if norm.kind == "layer":
        out[f"{name}_beta"] = dy.sum(axis=0)
    return out


# ---------------------------------------------------------------- the steps, in the order of the stage list


def _pre_norm(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    return _norm(spec.embedded, d["normalized_inputs"], spec.pre_norm, "pre_norm", "inputs")


def _latent(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """The latent projections (core.latent): Q, K and V to c_Q and c_KV, to X̂ (or X₀) and C, and every latent weight.

    dc_Q = dQ·W_UQᵀ;  dc_KV = dK_nope·W_UKᵀ + dV·W_UVᵀ;  dk_r = Σ_h dK_r,h (the rotary key every head shares)."""
    out = _latent_queries(spec, a, d["queries"]) if d.get("queries") is not None else {}
    lat, d_k, d_v = spec.latent, d.get("keys"), d.get("values")
    if d_k is None and d_v is None:
        return out
    source, to = (_x(spec, a), _x_key(spec)) if spec.context is None else (spec.context, "context")
    c_kv = a.get("latent_kv")
    if c_kv is None:  # let go by the streamed path: made again
        c_kv = latent_kv(source, lat.kv_down, lat.kv_down_bias, lat.kv_norm, lat.d_rope)[0]
    d_k_r = np.zeros((c_kv.shape[0], lat.d_rope)) if d_k is None else d_k[:, :, lat.d_nope:].sum(axis=0)  # (m, d_r)
    d_c, d_w_up = kv_up_back(c_kv, lat.kv_up, spec.heads, lat.d_nope,
                             None if d_k is None else d_k[:, :, :lat.d_nope], d_v)
    d_source, d_w, d_b, d_gamma = latent_kv_back(source, lat, d_c, d_k_r)
    _added(out, to, d_source)
    out.update(latent_kv=d_c, weight_kv_up=d_w_up, weight_kv_down=d_w, latent_kv_norm_gamma=d_gamma)
    if lat.kv_down_bias is not None:
        out["bias_kv_down"] = d_b
    return out


def _latent_queries(spec: Spec, a: Arrays, d_q: np.ndarray) -> Arrays:
    """Q = X̂·W_Q (+ b_Q), or c_Q·W_UQ with c_Q = query_norm(X̂·W_DQ + b_DQ), backwards."""
    lat, x = spec.latent, _x(spec, a)
    if lat.query_down is None:
        dx, dw, db = b.project_back(x, spec.w_q, d_q)
        return {_x_key(spec): dx, "weight_query": dw} | ({} if spec.b_q is None else {"bias_query": db})
    c_q = a.get("latent_queries")
    c_q = latent_queries(x, lat) if c_q is None else c_q  # let go by the streamed path: made again
    d_c, d_w_up, _ = b.project_back(c_q, spec.w_q, d_q)
    dx, d_w_down, d_b, d_gamma = latent_queries_back(x, lat, d_c)
    out = {_x_key(spec): dx, "latent_queries": d_c, "weight_query_up": d_w_up, "weight_query_down": d_w_down,
           "latent_query_norm_gamma": d_gamma}
    if lat.query_down_bias is not None:
        out["bias_query_down"] = d_b
    return out


def _projections(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """Q = X̂·W_Q + b_Q, K = C·W_K + b_K, V = C·W_V + b_V: to X̂ (or X₀), C, and the weights the document gives."""
    if spec.given_qkv is not None:
        return {}  # Q, K and V given: the gradients end at them
    x = _x(spec, a)
    out: Arrays = {}
    for key, name, w, bias in (("queries", "query", spec.w_q, spec.b_q), ("keys", "key", spec.w_k, spec.b_k),
                               ("values", "value", spec.w_v, spec.b_v)):
        if d.get(key) is None:
            continue
        source, to = (x, _x_key(spec)) if key == "queries" or spec.context is None else (spec.context, "context")
        dx, dw, db = b.project_back(source, w, d[key])
        _added(out, to, dx)
        if name not in spec.identity:
            out[f"weight_{name}"] = dw
        if bias is not None:
            out[f"bias_{name}"] = db
    return out


def _clip(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """clamp(·, −c, c): the gradient passes where the projection was within [−c, c] (closed, as torch.clamp)."""
    if spec.latent is not None:  # the assembled Q, K and V
        unclipped = latent_forward(spec, a)
    else:
        unclipped = dict(zip(("queries", "keys", "values"), projections(spec, a.get("normalized_inputs")), strict=True))
    return {key: d[key] * (np.abs(unclipped[key]) <= spec.clip_qkv) for key in d}


def _qk(spec: Spec, a: Arrays, d: Arrays, sources: tuple[str, str]) -> Arrays:
    """qk_norm's gradients, to ``sources`` (the queries and keys it normalised) and to its γ and β."""
    norm = spec.qk_norm
    axes = (-1,) if norm.scope == "head" else (0, -1)
    out: Arrays = {}
    for what, made, source in zip(("query", "key"), ("normalized_queries", "normalized_keys"), sources, strict=True):
        dy = d.get(made)
        if dy is None:
            continue
        gamma, beta = getattr(norm, f"gamma_{what}"), getattr(norm, f"beta_{what}")
        d_k = dy.shape[-1]
        dx, cells = b.norm_back(a[source], dy, gamma.reshape(-1, 1, d_k), norm.kind, norm.eps, axes)
        out[source] = dx
        out[f"qk_norm_gamma_{what}"] = _to_shape(cells, gamma)
        if beta is not None:
            out[f"qk_norm_beta_{what}"] = _to_shape(dy, beta)
    return out


def _to_shape(cells: np.ndarray, param: np.ndarray) -> np.ndarray:
    """Cells (h, n, d_k) summed to a qk_norm parameter's shape: (d_k,), (h, d_k) or (h·d_k,)."""
    per_head = cells.sum(axis=1)  # (h, d_k)
    return per_head.sum(axis=0) if param.size == cells.shape[-1] else per_head.reshape(param.shape)


def _qk_norm(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    return _qk(spec, a, d, ("queries", "keys"))


def _qk_norm_after_rope(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    rotated = spec.rope is not None
    return _qk(spec, a, d, ("queries_rotated", "keys_rotated") if rotated else ("queries", "keys"))


def _rope(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """Q′ = rope(Q): the rotation's transpose, to Q (or Q̂ when normalised first)."""
    before = qknorm.before_rope(spec)
    out: Arrays = {}
    if d.get("queries_rotated") is not None:
        out["normalized_queries" if before else "queries"] = b.rotate_back(d["queries_rotated"],
                                                                          spec.query_positions, spec.rope)
    if d.get("keys_rotated") is not None:
        out["normalized_keys" if before else "keys"] = b.rotate_back(d["keys_rotated"], spec.key_positions, spec.rope)
    return out


def _kernel(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """The kernel's view is the last query and key stage (τ ⊙ it for the queries): to that stage."""
    out: Arrays = {}
    if d.get("kernel_queries") is not None:
        dq = d["kernel_queries"]
        tau = a.get("query_temperature")
        out[last_key(spec, "queries")] = dq if tau is None else dq * tau[None, :, None]
    if d.get("kernel_keys") is not None:
        out[last_key(spec, "keys")] = d["kernel_keys"]
    return out


def _scores(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    dq, dk = b.scores_back(d["scores"], a["kernel_queries"], a["kernel_keys"])
    return {"kernel_queries": dq, "kernel_keys": dk}


def _scale(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    return {"scores": b.scale_back(d["scaled_scores"], a["scores"], spec.scale, spec.softcap)}


def _weights(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """A = softmax (with the sink): dZ = A ⊙ (dA − D), and D itself (``delta``); ds with sinks."""
    d_z, delta = b.softmax_back(a["weights"], d["weights"])
    out = {"scaled_scores": d_z, "delta": delta}
    if spec.sinks is not None:
        out["sinks"] = b.sink_back(a["sink_weights"], delta)
    return out


def _mix(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    d_a, d_v = b.mix_back(d["head_outputs"], a["weights"], a["values"])
    return {"weights": d_a, "values": d_v}


def _gate(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """G = σ(X̂·W_G + b_G): dlogits = dG ⊙ G(1 − G), then as a projection."""
    g = a["gate"]
    dx, dw, db = b.project_back(_x(spec, a), spec.w_g, d["gate"] * g * (1.0 - g))
    out = {_x_key(spec): dx, "weight_gate": dw}
    if spec.b_g is not None:
        out["bias_gate"] = db
    return out


def _gating(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    d_hg = d["gated_head_outputs"]
    return {"head_outputs": d_hg * a["gate"], "gate": d_hg * a["head_outputs"]}


def _output(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """Y = concat(H)·W_O + b_O: to each head's H (or H ⊙ G), W_O and b_O."""
    dy = d["output"]
    gated = a.get("gated_head_outputs") is not None
    heads = a["gated_head_outputs"] if gated else a["head_outputs"]  # (h, n, d_v)
    h, n, d_v = heads.shape
    d_concat = dy if spec.w_o is None else dy @ spec.w_o.T  # (n, h·d_v)
    out = {"gated_head_outputs" if gated else "head_outputs": d_concat.reshape(n, h, d_v).transpose(1, 0, 2)}
    if spec.w_o is not None:
        out["weight_output"] = heads.transpose(1, 0, 2).reshape(n, h * d_v).T @ dy
    if spec.b_o is not None:
        out["bias_output"] = dy.sum(axis=0)
    return out


def _post_norm(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    return _norm(a["output"], d["normalized_output"], spec.post_norm, "post_norm", "output")


def _residual(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """R = X₀ + α·Y (or α·post_norm(Y)); N = LayerNorm(R): to R, X₀ and what was added."""
    out: Arrays = {}
    d_r = d.get("residual")
    if spec.add_norm is not None and d.get("normalized") is not None:
        gamma, beta, eps = spec.add_norm
        out = _norm(a["residual"], d["normalized"], Norm("layer", gamma, beta, eps), "add_norm", "residual")
        d_r = out["residual"] if d_r is None else d_r + out["residual"]
    added = "output" if a.get("normalized_output") is None else "normalized_output"
    out.update({"residual": d_r, "inputs": d_r, added: spec.residual_scale * d_r})
    return out


BACKWARD: dict[str, Backward] = {
    "pre_norm": _pre_norm, "latent": _latent, "projections": _projections, "clip_qkv": _clip, "qk_norm": _qk_norm,
    "rope": _rope, "qk_norm_after_rope": _qk_norm_after_rope, "kernel": _kernel, "scores": _scores, "scale": _scale,
    "weights": _weights, "mix": _mix, "gate": _gate, "gating": _gating, "output": _output, "post_norm": _post_norm,
    "residual": _residual,
}  # the other stages (document, context, score_bias, query_temperature) make nothing a gradient flows through
