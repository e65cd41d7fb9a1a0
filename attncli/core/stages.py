"""The order of the computation, written once: one list of stages that every path runs.

:data:`STAGES` lists every :class:`~attncli.core.stage.Stage` in the contract's order.  The full
computation, the streamed one, ``--only`` (the stages the keys asked for need) and the slips of
``attncli check`` (the list with one stage replaced) all run it (:mod:`attncli.core.pipeline`); JSON,
tables, ``--only`` and check read :data:`QUANTITIES`, every array of the result in order.  A new stage
is one entry here, with its maths in a module of its own (which may define its Stage beside the maths).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from attncli.core import attention as maths
from attncli.core import formulas as f
from attncli.core import gradients as grad
from attncli.core import qknorm, sinks
from attncli.core.differential_stage import DIFFERENTIAL
from attncli.core.gate import GATE, GATING, gated_or_not
from attncli.core.gradient_keys import GRADIENT_KEYS, GRADIENTS
from attncli.core.indexer_stage import INDEX_DROPPED, INDEXER
from attncli.core.latent_stage import absorb_stage, latent_aware, latent_stage
from attncli.core.max_logits import max_logits_stage
from attncli.core.scores import shared
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, Lazy, Quantity, Stage, extra_steps
from attncli.core.temperature import TEMPERED, temperature_stage, tempered
from attncli.core.vnorm import V_NORM, mixed


def last_queries(a: Arrays, spec: Spec) -> np.ndarray:
    """The last query stage before the temperature (h, n, d_k): normalised after the rotation, rotated, normalised,
    or as projected."""
    return _last(a, spec, "queries")


def kernel_queries(a: Arrays, spec: Spec) -> np.ndarray:
    """The queries the scores see (h, n, d_k): the last query stage the document has (tempered, normalised after the
    rotation, rotated, normalised, or as projected)."""
    if a.get("query_temperature") is None:
        return last_queries(a, spec)
    q = a.get(TEMPERED)  # made by the temperature stage; from a Trace's arrays (check's reruns), made again here
    return tempered(last_queries(a, spec), a["query_temperature"]) if q is None else q


def kernel_keys(a: Arrays, spec: Spec) -> np.ndarray:
    """The keys the scores see (g, m, d_k): with ``kv_from``, the earlier layer's, as its scores saw them."""
    return a["keys"] if spec.shared_kv is not None else _last(a, spec, "keys")


def _last(a: Arrays, spec: Spec, what: str) -> np.ndarray:
    """The last of the stages making queries or keys (``what``) that the document has, before the temperature."""
    if qknorm.normalized_last(spec):
        return a[f"normalized_{what}"]
    return a[what] if a.get(f"{what}_rotated") is None else a[f"{what}_rotated"]


# ---------------------------------------------------------------- each stage on everything at once


def _projections(spec: Spec, a: Arrays) -> Arrays:
    q, k, v = maths.projections(spec, a.get("normalized_inputs"))
    if spec.shared_kv is not None:  # kv_from (Gemma 4's kv sharing): an earlier layer's keys and values
        k, v = spec.shared_kv
    return {"queries": q, "keys": k, "values": v}


def _rotations(spec: Spec, a: Arrays) -> Arrays:
    q_in, k_in = qknorm.rope_inputs(spec, a)  # Q, K (or Q̂, K̂ with qk_norm first)
    q_rot, k_rot = maths.rotations(q_in, None if spec.shared_kv is not None else k_in, spec)  # (kv_from: turned)
    rope = spec.rope
    return {"queries_rotated": q_rot, "keys_rotated": k_rot, "rope_frequencies": rope.frequencies,
            "rope_attention_factor": np.array(rope.attention_factor)}  # (dims/2,) and a number


def _kernel(spec: Spec, a: Arrays) -> Arrays:
    return {"kernel_queries": kernel_queries(a, spec), "kernel_keys": kernel_keys(a, spec)}  # no copy


def _scores(spec: Spec, a: Arrays) -> Arrays:
    s = maths.scores(kernel_queries(a, spec), kernel_keys(a, spec), spec)  # (h, n, m)
    maths.check_finite(s, "scores", spec.tokens)
    return {"scores": s}


def _score_bias(spec: Spec, a: Arrays) -> Arrays:
    bias = spec.score_bias.full(spec.heads, spec.query_positions, spec.key_positions)  # (h, n, m), −inf kept
    return {"score_bias": bias}


def _scaled(spec: Spec, a: Arrays) -> Arrays:
    z = maths.scaled(a["scores"], spec)  # (h, n, m)
    maths.check_finite(z, "scaled scores", spec.tokens)
    bias = a.get("score_bias")
    if bias is not None:
        z += np.where(np.isneginf(bias), 0.0, bias)  # a −inf cell is masked: its score is never used
        maths.check_finite(z, "scaled scores", spec.tokens)
    return {"scaled_scores": z}


def _mix(spec: Spec, a: Arrays) -> Arrays:
    return {"head_outputs": a["weights"] @ shared(mixed(a, spec), spec.heads)}  # (h, n, d_v): V, or V̂ (v_norm)


def _output(spec: Spec, a: Arrays) -> Arrays:
    y = maths.output_projection(gated_or_not(a), spec)  # (n, d_out)
    maths.check_finite(y, "output", spec.tokens)
    return {"output": y}


def _post_norm(spec: Spec, a: Arrays) -> Arrays:
    return {"normalized_output": maths.normalized_rows(a["output"], spec.post_norm, "normalized output", spec.tokens)}


def _residual(spec: Spec, a: Arrays) -> Arrays:
    added = a["output"] if a.get("normalized_output") is None else a["normalized_output"]
    residual, normalized = maths.residual_of(added, spec)
    return {"residual": residual, "normalized": normalized}


# ---------------------------------------------------------------- the attention stages on a block of queries


def _scores_block(spec: Spec, a: Arrays, lo: int, hi: int) -> Arrays:
    return {"scores": maths.scores(kernel_queries(a, spec)[:, lo:hi], kernel_keys(a, spec), spec)}  # (h, b, m)


def _scaled_block(spec: Spec, a: Arrays, lo: int, hi: int) -> Arrays:
    return {"scaled_scores": maths.biased(maths.scaled(a["scores"], spec), spec, lo, hi)}


def _mix_block(spec: Spec, a: Arrays, lo: int, hi: int) -> Arrays:
    return _mix(spec, a)


# ---------------------------------------------------------------- the list


def _q_(key, symbol, title, shape, formula, needs="", source="", note=None, masked=False, checkable=False,
        null_at_minus_inf=False, steps=()):
    return Quantity(key, symbol, title, shape, needs, source, False, *formula, note, masked, checkable,
                    null_at_minus_inf, steps)


def _p_(key, symbol, title, shape, needs, source):
    return Quantity(key, symbol, title, shape, needs, source, True, *f.symbol(symbol))


def _projected(sym: str, title: str, shape: str, source: str):
    weight, bias = f"W_{sym}", f"b_{sym}"
    return _q_(title.lower(), sym, title, shape, (f.projection_text(sym, weight, bias, source),
                                                  f.projection_latex(sym, weight, bias, source)), checkable=True,
               steps=(3,))


def _kernel_view(key: str, sym: str, title: str, shape: str) -> Quantity:
    """The Q or K an attention kernel receives (written only when asked for, like W_Q): the last query/key stage's."""
    def last(spec: Spec) -> str:
        rotated = f"{sym}′" if spec.rope is not None else sym
        return f"τ ⊙ {rotated}" if sym == "Q" and spec.query_temperature is not None else rotated
    return Quantity(key, "", title, shape, parameter=True, text=lambda spec: f"{sym}_kernel = {last(spec)}",
                    latex=lambda spec, up: up(rf"{sym}_{{\text{{kernel}}}}") + " = "
                    + up(last(spec).replace("τ ⊙ ", r"\tau \odot ").replace("′", "'")))


def _clip(spec: Spec, a: Arrays) -> Arrays:
    """Q, K, V = clamp(·, −c, c), every number (MPT's and DBRX's clip_qkv)."""
    c = spec.clip_qkv
    return {key: np.clip(a[key], -c, c) for key in ("queries", "keys", "values")}


def _clamped(q: Quantity) -> Quantity:
    """Q, K or V as ``clip_qkv`` leaves them: ``Q = clamp(X·W_Q + b_Q, −c, c)`` when the document clips."""
    def text(spec: Spec) -> str:
        lhs, rhs = q.text(spec).split(" = ", 1)
        return f"{lhs} = clamp({rhs}, −{spec.clip_qkv:g}, {spec.clip_qkv:g})" if spec.clip_qkv else f"{lhs} = {rhs}"

    def latex(spec: Spec, up: Callable[[str], str]) -> str:
        lhs, rhs = q.latex(spec, up).split(" = ", 1)
        c = f"{spec.clip_qkv:g}" if spec.clip_qkv else ""
        return rf"{lhs} = \operatorname{{clamp}}({rhs}, -{c}, {c})" if c else f"{lhs} = {rhs}"
    return replace(q, text=text, latex=latex)


def _from_keys(v: Quantity, k: Quantity) -> Quantity:
    """V as ``k_eq_v`` makes it (Gemma 4): ``V = X·W_K + b_K``, the keys' projection."""
    return replace(v, text=lambda spec: "V = " + k.text(spec).split(" = ", 1)[1] if spec.k_eq_v else v.text(spec),
                   latex=lambda spec, up: up("V") + " = " + k.latex(spec, up).split(" = ", 1)[1] if spec.k_eq_v
                   else v.latex(spec, up))


QUERIES, KEYS, VALUES = (latent_aware(_projected("Q", "Queries", "h n d_k", "inputs")),
                         latent_aware(_projected("K", "Keys", "g m d_k", "source")),
                         latent_aware(_projected("V", "Values", "g m d_v", "source")))
VALUES = _from_keys(VALUES, KEYS)


def _shared(q: Quantity, what: str) -> Quantity:
    """K or V as ``kv_from`` gives them: an earlier layer's, as its scores saw them or its weights mixed them."""
    return replace(q, text=lambda spec: f"{q.key[0].upper()} = {what} of the layer kv_from names" if spec.shared_kv
                   is not None else q.text(spec),
                   latex=lambda spec, up: up(q.key[0].upper()) + r" = \text{kv\_from}" if spec.shared_kv is not None
                   else q.latex(spec, up))


KEYS, VALUES = _shared(KEYS, "K_kernel"), _shared(VALUES, "V (V̂ with v_norm)")

_UP_TO_THE_KERNEL: tuple[Stage, ...] = (  # the rows of X, Q, K and V: every stage the kernel's view may read
    Stage("document", "X, P: the document's inputs and positional encoding", (),
          (_q_("inputs", "X", "Inputs", "n d_model", f.symbol("X"), source="inputs"),
           _q_("positional", "P", "Positional encoding", "n d_model", f.symbol("P"), "positional:", "positional")),
          lambda spec, a: {}, explained=("positional",)),
    Stage("pre_norm", "X̂ = pre_norm(X + P)", ("inputs", "positional"),
          (_q_("normalized_inputs", "X̂", "Normalised inputs", "n d_model",
               (f.normalized_inputs_text, f.normalized_inputs_latex), "pre_norm:", checkable=True,
               steps=("pre_norm",)),),
          lambda spec, a: {"normalized_inputs": maths.pre_norm(spec)}, lambda spec: spec.pre_norm is not None,
          backward=grad.pre_norm, variants=Lazy("attncli.core.variants.norms:PRE_NORM_VARIANTS"),
          explained=("pre_norm",)),
    Stage("context", "C: the document's context (keys and values come from X̂ without one)", (),
          (_q_("context", "C", "Context", "m d_ctx", f.symbol("C"), "a context", "context"),), lambda spec, a: {}),
    replace(latent_stage(QUERIES, KEYS, VALUES), variants=Lazy("attncli.core.variants.latent:LATENT_VARIANTS")),
    Stage("projections", "Q = X̂·W_Q + b_Q   K = C·W_K + b_K   V = C·W_V + b_V",
          ("inputs", "positional", "normalized_inputs", "context"),
          (_p_("weight_query", "W_Q", "Query projection", "h d_model d_k", "", "w_q"),
           _p_("bias_query", "b_Q", "Query bias", "h d_k", "bias.query:", "b_q"),
           QUERIES,
           _p_("weight_key", "W_K", "Key projection", "g d_ctx d_k", "", "w_k"),
           _p_("bias_key", "b_K", "Key bias", "g d_k", "bias.key:", "b_k"),
           KEYS,
           _p_("weight_value", "W_V", "Value projection", "g d_ctx d_v", "", "w_v"),
           _p_("bias_value", "b_V", "Value bias", "g d_v", "bias.value:", "b_v"),
           VALUES),
          _projections, lambda spec: spec.latent is None, backward=grad.projections,
          variants=Lazy("attncli.core.variants.heads:HEAD_VARIANTS")),
    Stage("clip_qkv", "Q, K, V = clamp(·, −c, c)", ("queries", "keys", "values"),
          (_clamped(QUERIES), _clamped(KEYS), _clamped(VALUES)), _clip, lambda spec: spec.clip_qkv is not None,
          backward=grad.clip, variants=Lazy("attncli.core.variants.left_out:CLIP_LEFT_OUT")),
    replace(qknorm.QK_NORM, variants=Lazy("attncli.core.variants.qknorm:QK_NORM_VARIANTS")),
    V_NORM,
    Stage("rope", "Q′, K′ = rope(Q), rope(K)", ("queries", "keys", "normalized_queries", "normalized_keys"),
          (qknorm.rotated_from_normalized(_q_("queries_rotated", "Q′", "Rotated queries", "h n d_k",
                                              (f.rotated_text("Q"), f.rotated_latex("Q")), "rope:",
                                              checkable=True, steps=("rope",)), "Q"),
           qknorm.rotated_from_normalized(_q_("keys_rotated", "K′", "Rotated keys", "g m d_k",
                                              (f.rotated_text("K"), f.rotated_latex("K")), "rope:",
                                              checkable=True, steps=("rope",)), "K"),
           _q_("rope_frequencies", "f", "Rotary frequencies", "dims/2", (f.frequencies_text, f.frequencies_latex),
               "rope:"),
           _q_("rope_attention_factor", "a_rope", "Rotary attention factor", "1",
               (f.attention_factor_text, f.attention_factor_latex), "rope:")),
          _rotations, lambda spec: spec.rope is not None, backward=grad.rope,
          variants=Lazy("attncli.core.variants.rope:ROPE_VARIANTS", "attncli.core.variants.latent:ROPE_LATENT_VARIANTS",
                        "attncli.core.variants.qknorm:ROPE_QK_NORM_VARIANTS"),
          explained=("rope",)),
    replace(qknorm.QK_NORM_AFTER_ROPE, variants=Lazy("attncli.core.variants.qknorm:QK_NORM_AFTER_ROPE_VARIANTS")),
    temperature_stage(last_queries),
)
# What the kernel's view (and the scores, and absorb) read: the last query and key stage the document has, which is
# any array a stage before it made (the stages that make them are the ones ``--only scores`` needs).
QK_READS = tuple(dict.fromkeys(key for stage in _UP_TO_THE_KERNEL for key in stage.keys))
# The query and key stages the tiles need not keep (stream lets them go): what the stages from the first that makes
# Q (latent or the projections) up to the kernel's view make with a row per query or key, except the values.
_FIRST_Q = next(i for i, stage in enumerate(_UP_TO_THE_KERNEL) if "queries" in stage.keys)
QK_ROWS = tuple(dict.fromkeys(q.key for stage in _UP_TO_THE_KERNEL[_FIRST_Q:] for q in stage.writes
                              if not q.parameter and q.rows and " " in q.shape and not q.shape.endswith("d_v")))

STAGES: tuple[Stage, ...] = (
    *_UP_TO_THE_KERNEL,
    INDEXER,  # DeepSeek-V3.2's lightning indexer: I and the kept keys (core/indexer_stage.py)
    Stage("kernel", "Q_kernel, K_kernel: the Q and K whose product is S", QK_READS,
          (_kernel_view("kernel_queries", "Q", "Kernel queries", "h n d_k"),
           _kernel_view("kernel_keys", "K", "Kernel keys", "g m d_k")), _kernel, backward=grad.kernel),
    absorb_stage(kernel_queries, QK_READS),
    Stage("scores", "S = Q′·K′ᵀ", QK_READS,
          (qknorm.scores_of_normalized(_q_("scores", "S", "Scores", "h n m", (f.score_formula, f.scores_latex),
                                           checkable=True, steps=(4,))),),
          _scores, part="attention",
          block=_scores_block, tiled=lambda spec: spec.score == "dot", backward=grad.scores,
          variants=Lazy("attncli.core.variants.products:SCORE_VARIANTS",
                        "attncli.core.variants.backward:SCORES_BACKWARD")),
    Stage("score_bias", "B = matrix + ALiBi + T5 buckets", (),
          (_q_("score_bias", "B", "Score bias", "h n m", (f.bias_text, lambda spec, up: "B"), "score_bias:",
               masked=True, checkable=True, null_at_minus_inf=True, steps=(4,)),),
          _score_bias, lambda spec: spec.score_bias is not None, part="attention", block=lambda spec, a, lo, hi: {},
          tiled=lambda spec: True, variants=Lazy("attncli.core.variants.scale:BIAS_VARIANTS")),
    Stage("scale", "Z = scale·S → c·tanh(Z / c) (+ B)", ("scores", "score_bias"),
          (_q_("scaled_scores", "Z", "Scaled scores", "h n m",
               (f.scale_text, lambda spec, up: f.scaled_latex(spec, up("S"))), note=f.scaled_note, masked=True,
               checkable=True, steps=(4,)),),
          _scaled, part="attention", block=_scaled_block, tiled=lambda spec: True, backward=grad.scale,
          variants=Lazy("attncli.core.variants.scale:SCALE_VARIANTS", "attncli.core.variants.left_out:SOFTCAP_LEFT_OUT",
                        "attncli.core.variants.latent:SCALE_LATENT_VARIANTS",
                        "attncli.core.variants.backward:SCALE_BACKWARD")),
    Stage("weights", "A = softmax over the allowed keys (with the sink)", ("scaled_scores",),
          (_q_("weights", "A", "Weights", "h n m", (f.weights_formula, lambda spec, up: f"{up('A')} = "
                                                    f"{f.weights_latex(spec, f.scaled_latex(spec, up('S')))}"),
               checkable=True, steps=(5,)),
           sinks.SINK_WEIGHTS, sinks.LSE),
          sinks.weights, part="attention", block=sinks.weights_block, tiled=lambda spec: spec.normalize == "softmax",
          backward=grad.weights,
          variants=Lazy("attncli.core.variants.softmax:SOFTMAX_VARIANTS", "attncli.core.variants.masks:MASK_VARIANTS",
                        "attncli.core.variants.left_out:SINK_LEFT_OUT",
                        "attncli.core.variants.backward:WEIGHTS_BACKWARD")),
    INDEX_DROPPED,  # the full attention's weight on the keys the indexer dropped
    replace(max_logits_stage(lambda a, spec: (kernel_queries(a, spec), kernel_keys(a, spec))),
            variants=Lazy("attncli.core.variants.max_logits:MAX_LOGIT_VARIANTS")),
    Stage("mix", "H = A·V", ("weights", "values", "normalized_values"),
          (_q_("head_outputs", "H", "Head output", "h n d_v",
               (lambda spec: "H = A·V", lambda spec, up: f"{up('H')} = {up('A')} {up('V')}"), checkable=True,
               steps=(6, 7)),),
          _mix, lambda spec: spec.differential is None, part="attention", block=_mix_block, tiled=lambda spec: True,
          backward=grad.mix,
          variants=Lazy("attncli.core.variants.products:MIX_VARIANTS", "attncli.core.variants.backward:MIX_BACKWARD")),
    DIFFERENTIAL,
    GATE,
    GATING,
    Stage("output", "Y = concat(H₁ … H_h)·W_O + b_O", ("head_outputs", "gated_head_outputs"),
          (_p_("weight_output", "W_O", "Output projection", "h·d_v d_out", "weights.output:", "w_o"),
           _p_("bias_output", "b_O", "Output bias", "d_out", "bias.output:", "b_o"),
           _q_("output", "Y", "Output", "n d_out", (f.output_formula, lambda spec, up: f.output_latex(spec)),
               checkable=True)),
          _output, part="after", backward=grad.output,
          variants=Lazy("attncli.core.variants.products:OUTPUT_VARIANTS",
                        "attncli.core.variants.left_out:GATE_AFTER_OUTPUT")),
    Stage("post_norm", "post_norm(Y)", ("output",),
          (_q_("normalized_output", "", "Normalised output", "n d_out",
               (f.normalized_output_text, f.normalized_output_latex), "post_norm:", checkable=True),),
          _post_norm, lambda spec: spec.post_norm is not None, part="after", backward=grad.post_norm,
          variants=Lazy("attncli.core.variants.norms:POST_NORM_VARIANTS")),
    Stage("residual", "R = X₀ + α·Y (or + α·post_norm(Y));  N = LayerNorm(R)",
          ("inputs", "positional", "output", "normalized_output"),
          (_q_("residual", "R", "Residual", "n d_model",
               (f.residual_formula, lambda spec, up: f.residual_formula(spec)), "add_norm: or residual: true",
               checkable=True),
           _q_("normalized", "N", "Add & Norm", "n d_model", f.fixed("LayerNorm(R)", r"\operatorname{LayerNorm}(R)"),
               "add_norm:", checkable=True, steps=("add_norm",))),
          _residual, lambda spec: spec.add_norm is not None or spec.residual, part="after",
          backward=grad.residual, variants=Lazy("attncli.core.variants.norms:RESIDUAL_VARIANTS"),
          explained=("add_norm", "residual")),
)

BY_NAME = {stage.name: stage for stage in STAGES}
QUANTITIES: dict[str, Quantity] = {**{q.key: q for stage in STAGES for q in stage.writes},
                                   **{q.key: q for q in GRADIENTS}}  # the gradients last, as the backward makes them
MATRIX_KEYS = tuple(key for key, q in QUANTITIES.items() if q.matrix)  # the n × m matrices only the full path keeps
EXTRA_STEPS = extra_steps(STAGES)  # explain's steps beyond 1 … 8, by name, in its order (--step rope)


def in_order(spec: Spec) -> list[Quantity]:
    """Every quantity in the order this document computes it: by the first stage it has that writes it (with
    ``qk_norm.after_rope`` the normalised queries come after the rotated ones), as QUANTITIES defines each."""
    keys = dict.fromkeys(q.key for stage in STAGES if stage.present(spec) for q in stage.writes)
    return [QUANTITIES[key] for key in (*keys, *(key for key in QUANTITIES if key not in keys))]


def writer(key: str) -> int:
    """The index of the last stage that writes ``key`` (a stage may rewrite what an earlier one wrote); a gradient's
    is past the last stage (the backward pass runs after them all)."""
    if key in GRADIENT_KEYS:
        return len(STAGES)
    return max(i for i, stage in enumerate(STAGES) if key in stage.keys or key in (q.key for q in stage.parameters))
