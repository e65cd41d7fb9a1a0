"""Each stage's backward step, and the gradients the result gains (FORMAT.md Part 3, "The backward pass").

A backward step ``step(spec, a, d)`` gets the forward arrays ``a`` and ``d``: the gradient of L with respect to
each quantity the stage wrote (complete: every later stage has given its share), and returns the gradients of
what the stage read (summed by :func:`attncli.core.pipeline.backward` where several stages read one quantity),
of the document's matrices it applies (``weight_query`` …) and of what else it made on the way (``delta``).
Each stage of :data:`attncli.core.stages.STAGES` names its step (``Stage.backward``): the steps here are those of
the stages written in core/stages.py; a stage with a module of its own (gate, qk_norm, latent) has its step there,
beside its forward.  The maths is :mod:`attncli.core.backward`'s.  Everything is float64.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attncli.core import attention as maths
from attncli.core import backward as b
from attncli.core import qknorm
from attncli.core.latent_stage import latent_forward
from attncli.core.norms import Norm
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, added, rows_in, rows_key
from attncli.core.threads import matmul
from attncli.core.vnorm import mixed, mixed_key

Backward = Callable[[Spec, Arrays, Arrays], Arrays]


def seed_key(spec: Spec) -> str:
    """The block's last quantity, whose gradient the document gives: normalized, residual or output."""
    return "normalized" if spec.add_norm is not None else "residual" if spec.residual else "output"


def last_key(spec: Spec, what: str) -> str:
    """The last query (``what`` = queries) or key stage before the temperature: what the kernel's view is."""
    if qknorm.normalized_last(spec):
        return f"normalized_{what}"
    return f"{what}_rotated" if spec.rope is not None else what


def _norm(x: np.ndarray, dy: np.ndarray, norm: Norm, name: str, to: str) -> Arrays:
    """A row norm's gradients: to ``to`` and to its γ and β, named ``<name>_gamma``, ``<name>_beta``."""
    dx, d_gamma = b.norm_back(x, dy, norm.gamma, norm.kind, norm.eps)
    out = {to: dx, f"{name}_gamma": d_gamma.sum(axis=0)}
    if norm.kind == "layer":
        out[f"{name}_beta"] = dy.sum(axis=0)
    return out


# ---------------------------------------------------------------- the steps, in the order of the stage list


def pre_norm(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    return _norm(spec.embedded, d["normalized_inputs"], spec.pre_norm, "pre_norm", "inputs")


def projections(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """Q = X̂·W_Q + b_Q, K = C·W_K + b_K, V = C·W_V + b_V: to X̂ (or X₀), C, and the weights the document gives."""
    if spec.given_qkv is not None:
        return {}  # Q, K and V given: the gradients end at them
    x = rows_in(spec, a)
    out: Arrays = {}
    if spec.k_eq_v and d.get("values") is not None:  # V = K's projection (Gemma 4): C·W_K + b_K feeds both
        d = {**d, "keys": d["values"] if d.get("keys") is None else d["keys"] + d["values"], "values": None}
    for key, name, w, bias in (("queries", "query", spec.w_q, spec.b_q), ("keys", "key", spec.w_k, spec.b_k),
                               ("values", "value", spec.w_v, spec.b_v)):
        if d.get(key) is None:
            continue
        source, to = (x, rows_key(spec)) if key == "queries" or spec.context is None else (spec.context, "context")
        dx, dw, db = b.project_back(source, w, d[key])
        added(out, to, dx)
        if name not in spec.identity:
            out[f"weight_{name}"] = dw
        if bias is not None:
            out[f"bias_{name}"] = db
    return out


def clip(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """clamp(·, −c, c): the gradient passes where the projection was within [−c, c] (closed, as torch.clamp)."""
    if spec.latent is not None:  # the assembled Q, K and V
        unclipped = latent_forward(spec, a)
    else:
        unclipped = dict(zip(("queries", "keys", "values"), maths.projections(spec, a.get("normalized_inputs")),
                             strict=True))
    return {key: d[key] * (np.abs(unclipped[key]) <= spec.clip_qkv) for key in d}


def rope(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """Q′ = rope(Q): the rotation's transpose, to Q (or Q̂ when normalised first)."""
    before = qknorm.before_rope(spec)
    out: Arrays = {}
    if d.get("queries_rotated") is not None:
        out["normalized_queries" if before else "queries"] = b.rotate_back(d["queries_rotated"],
                                                                          spec.query_positions, spec.rope)
    if d.get("keys_rotated") is not None:
        out["normalized_keys" if before else "keys"] = b.rotate_back(d["keys_rotated"], spec.key_positions, spec.rope)
    return out


def kernel(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """The kernel's view is the last query and key stage (τ ⊙ it for the queries): to that stage."""
    out: Arrays = {}
    if d.get("kernel_queries") is not None:
        dq = d["kernel_queries"]
        tau = a.get("query_temperature")
        out[last_key(spec, "queries")] = dq if tau is None else dq * tau[None, :, None]
    if d.get("kernel_keys") is not None:
        out[last_key(spec, "keys")] = d["kernel_keys"]
    return out


def scores(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    dq, dk = b.scores_back(d["scores"], a["kernel_queries"], a["kernel_keys"])
    return {"kernel_queries": dq, "kernel_keys": dk}


def scale(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    return {"scores": b.scale_back(d["scaled_scores"], a["scores"], spec.scale, spec.softcap)}


def weights(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """A = softmax (with the sink): dZ = A ⊙ (dA − D), and D itself (``delta``); ds with sinks."""
    d_z, delta = b.softmax_back(a["weights"], d["weights"])
    out = {"scaled_scores": d_z, "delta": delta}
    if spec.sinks is not None:
        out["sinks"] = b.sink_back(a["sink_weights"], delta)
    return out


def mix(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    d_a, d_v = b.mix_back(d["head_outputs"], a["weights"], mixed(a, spec))
    return {"weights": d_a, mixed_key(spec): d_v}


def output(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    """Y = concat(H)·W_O + b_O: to each head's H (or H ⊙ G), W_O and b_O."""
    dy = d["output"]
    gated = a.get("gated_head_outputs") is not None
    heads = a["gated_head_outputs"] if gated else a["head_outputs"]  # (h, n, d_v)
    h, n, d_v = heads.shape
    d_concat = dy if spec.w_o is None else matmul(dy, spec.w_o.T)  # (n, h·d_v)
    out = {"gated_head_outputs" if gated else "head_outputs": d_concat.reshape(n, h, d_v).transpose(1, 0, 2)}
    if spec.w_o is not None:
        out["weight_output"] = matmul(heads.transpose(1, 0, 2).reshape(n, h * d_v).T, dy)
    if spec.b_o is not None:
        out["bias_output"] = dy.sum(axis=0)
    return out


def post_norm(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    return _norm(a["output"], d["normalized_output"], spec.post_norm, "post_norm", "output")


def residual(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
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


