"""The document keys of today's attention (Part 2 of the contract), read and checked against the core sizes.

    kv_heads: 2                       # grouped-query: query head i uses key/value head i // (h / g)
    rope: true                        # or a mapping: see inputs/rope.py
    positions: [9, 10, 11]            # the queries' positions (rope, alibi, relative)
    context_positions: [0, 1, …]      # the keys' positions
    pre_norm: {kind: rms, gamma, eps} # X̂ = norm(X₀) before the projections
    post_norm: {kind: rms, …}         # R = X₀ + post_norm(Y); needs residual: true
    residual: true                    # R = X₀ + Y
    softcap: 50                       # z → c·tanh(z / c)
    clip_qkv: 8                       # Q, K, V = clamp(·, −8, 8) (MPT, DBRX; Part 3)
    query_temperature: {…}            # Q′ row i times τ_i (Llama 4; Part 3, inputs/factors.py)
    sinks: [0.5, -1.2]                # one softmax sink logit per query head (gpt-oss; Part 3)
    qk_norm: {kind: rms, …}           # Q̂, K̂ = norm(Q), norm(K) (Qwen3, OLMo 2, Llama 4; Part 3)
    max_logits: true                  # each head's largest logit (inputs/logits.py)
    qk_clip: {tau: 100}               # Kimi K2's QK-Clip of W_Q and W_K (inputs/logits.py)
    v_norm: true                      # V̂ = V / √(mean(V²) + ε), Gemma 4 (inputs/gemma.py)
    k_eq_v: true                      # V = the key projection, Gemma 4's global layers (inputs/gemma.py)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe, shape_str
from attncli.core.norms import NORM_KINDS, Norm
from attncli.inputs.factors import read_factors, residual_given
from attncli.inputs.gemma import read_gemma
from attncli.inputs.logits import read_logits
from attncli.inputs.source import MatrixSource
from attncli.inputs.values import head_count, mapping_of, number_of

MODERN_KEYS = ("kv_heads", "rope", "positions", "context_positions", "pre_norm", "post_norm", "residual", "softcap",
               "clip_qkv", "query_temperature", "sinks", "qk_norm",
               "max_logits", "qk_clip",
               "v_norm", "k_eq_v",
               "kv_from")
NORM_KEYS = ("kind", "gamma", "beta", "eps")
NORM_EPS = {"rms": 1e-6, "layer": 1e-5}  # Llama's RMSNorm and torch.nn.LayerNorm


def kv_heads_of(value: Any) -> int | None:
    """``kv_heads:`` as a whole number ≥ 1, or None when not given."""
    return head_count(value, "kv_heads")


def check_grouping(heads: int, kv_heads: int) -> None:
    if heads % kv_heads:
        raise AttnError("modern.does_not_divide_heads_each", "kv_heads", kv_heads=kv_heads, heads=heads)


def read_modern(builder: MatrixSource, n: int, m: int, d_model: int, d_k: int, d_out: int, has_context: bool,
                heads: int = 1, kv_heads: int = 1) -> dict[str, Any]:
    """The Spec fields of the Part 2 keys: rope, positions, norms, residual, softcap."""
    data = builder.data
    fields: dict[str, Any] = {
        "rope": _rope(builder, data.get("rope"), d_k),
        "positions": _positions(builder, "positions", data.get("positions"), n, "queries (inputs rows)"),
        "context_positions": _positions(builder, "context_positions", data.get("context_positions"), m,
                                        "keys (context rows)" if has_context else "keys (inputs rows)"),
        "pre_norm": _norm(builder, "pre_norm", data.get("pre_norm"), d_model, "d_model"),
        "post_norm": _norm(builder, "post_norm", data.get("post_norm"), d_out, "d_out"),
        "residual": _flag(residual_given(data.get("residual", False)), "residual"),
        "softcap": _positive_or_off(data.get("softcap"), "softcap"),
        "clip_qkv": _positive_or_off(data.get("clip_qkv"), "clip_qkv"),
        **read_factors(data),
        "sinks": _sinks(builder, data.get("sinks"), heads),
        "qk_norm": _qk_norm(builder, data.get("qk_norm"), heads, kv_heads, d_k),
        "differential": _differential(builder, data.get("differential"), heads),
    }
    fields.update(read_logits(data, fields["qk_norm"], fields["clip_qkv"]))
    fields.update(read_gemma(data))
    if fields["rope"] is not None:
        from attncli.inputs.rope import at_length

        fields["rope"] = at_length(fields["rope"], n, m, fields["positions"], fields["context_positions"],
                                   has_context)
    if fields["post_norm"] is not None and not fields["residual"]:
        raise AttnError("modern.normalises_output_before_added_residual",
                        "post_norm")
    if fields["residual"] and d_out != d_model:
        raise AttnError("modern.adds_output_inputs_so_needs", "residual", d_out=d_out, d_model=d_model)
    return fields


# ---------------------------------------------------------------- the optional parts, each read by its own module
# (imported only for a document that gives the part: a plain one never imports them; tests/test_startup_imports.py)


def _given(value: Any) -> bool:
    """Whether the document gives an optional part (not left out, not ``false``)."""
    return value is not None and value is not False


def _rope(builder: MatrixSource, value: Any, d_k: int):
    if not _given(value):
        return None
    from attncli.inputs.rope import read_rope

    return read_rope(builder, value, d_k, number_of)


def _sinks(builder: MatrixSource, value: Any, heads: int) -> np.ndarray | None:
    if not _given(value):
        return None
    from attncli.inputs.sinks import read_sinks

    return read_sinks(builder, value, heads)


def _qk_norm(builder: MatrixSource, value: Any, heads: int, kv_heads: int, d_k: int):
    if not _given(value):
        return None
    from attncli.inputs.qknorm import read_qk_norm

    return read_qk_norm(builder, value, heads, kv_heads, d_k)


def _differential(builder: MatrixSource, value: Any, heads: int):
    if not _given(value):
        return None
    from attncli.inputs.differential import read_differential

    return read_differential(builder, value, heads)


# ---------------------------------------------------------------- the keys read here


def _flag(value: Any, key: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise AttnError("gemma.not_true_false", key, flag=describe(value))
    return value


def _positive_or_off(value: Any, key: str) -> float | None:
    """A positive number, or None when the key is left out or ``false``."""
    if value is None or value is False:
        return None
    return number_of(value, key)


def _positions(builder: MatrixSource, key: str, value: Any, count: int, of: str) -> np.ndarray | None:
    if value is None:
        return None
    p = builder.read(key, value, (count,))
    p = p.reshape(-1) if p.ndim == 2 and 1 in p.shape else p
    if p.ndim != 1 or p.shape[0] != count:
        raise AttnError("modern.but_there_one_position_each", key, p_shape=shape_str(p.shape), count=count, of=of)
    return np.ascontiguousarray(p, dtype=np.float64)


def _norm(builder: MatrixSource, key: str, value: Any, d: int, width: str) -> Norm | None:
    if value is None or value is False:
        return None
    value = mapping_of(value, key, NORM_KEYS, "a mapping with kind (rms or layer) and any of gamma, beta, eps")
    kind = value.get("kind")
    if kind is None:
        raise AttnError("modern.required_rms_layer", f"{key}.kind")
    if kind not in NORM_KINDS:
        raise AttnError("modern.not_one_rms_layer", f"{key}.kind", kind=describe(kind))
    if kind == "rms" and value.get("beta") is not None:
        raise AttnError("modern.only_used_kind_layer_rmsnorm", f"{key}.beta")
    gamma = _vector(builder, f"{key}.gamma", value.get("gamma"), d, width, 1.0)
    beta = _vector(builder, f"{key}.beta", value.get("beta"), d, width, 0.0) if kind == "layer" else None
    eps = number_of(value.get("eps", NORM_EPS[kind]), f"{key}.eps")
    return Norm(kind, gamma, beta, eps)


def _vector(builder: MatrixSource, key: str, value: Any, d: int, width: str, default: float) -> np.ndarray:
    if value is None:
        return np.full(d, default)
    v = builder.read(key, value, (d,))
    v = v.reshape(-1) if v.ndim == 2 and 1 in v.shape else v
    if v.shape != (d,):
        raise AttnError("modern.but_needs_vector_length", key, v_shape=shape_str(v.shape), width=width, d=d)
    return v
