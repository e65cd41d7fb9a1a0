"""The decoder families of 2025 (issue 28): Qwen3 (and Qwen3-MoE), Gemma 3 (text), OLMo 2 and 3, gpt-oss,
Phi-3/3.5/4-mini, Granite, SmolLM3, Mixtral and Starcoder2, each layer as the keys of a document (a :class:`Plan`).

They share Llama's outline (``layers.L.self_attn`` with q/k/v/o projections, a pre-norm, rotate_half RoPE, a
causal mask, a residual) and add Part 3's keys: ``qk_norm`` (Qwen3 and Gemma 3 per head, OLMo over the
projection), ``rope.scaling`` (YaRN, LongRoPE, …, derived from the config as Hugging Face derives it),
``sinks`` (gpt-oss), ``residual: {scale}`` and a ``scale`` (Granite), no rotation on SmolLM3's NoPE layers.

While capture runs the model in float64, :func:`rope_hook` gives every rotary module cos and sin computed in
float64 (by :func:`attncli.models.float64_switches.rope64`) from the document's own ``rope`` key
(``attncli.core.rope_scaling``, checked against Hugging Face's ``_compute_*_parameters`` by
tests/test_rope_scaling_torch.py), and :func:`gemma_norms64` computes Gemma's
RMSNorm, ``(1 + w) ⊙ x / √(mean(x²) + ε)``, in float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncli.core.errors import AttnError, quoted
from attncli.core.positions import rope_frequencies
from attncli.core.rope_scaling import Scaling, scaled
from attncli.models import float64_switches
from attncli.models.family import Param, Plan, _layer_norm, _projections, _scale, epsilon

SCALING = {"linear": (), "dynamic": (), "llama3": ("low_freq_factor", "high_freq_factor"),
           "yarn": ("beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"),
           "longrope": ("short_factor", "long_factor")}
ORIGINAL = "original_max_position_embeddings"


# ---------------------------------------------------------------- rope: the config's rope_parameters as `rope`


def rope_key(config: Any, head_dim: int, layer_type: str | None = None) -> dict[str, Any]:
    """The ``rope`` key of the config's rope_parameters (those of ``layer_type`` when they are per layer type)."""
    params = dict(config.rope_parameters)
    if layer_type is not None and layer_type in params:
        params = dict(params[layer_type])
    kind = params.get("rope_type", "default")
    dims = int(head_dim * params.get("partial_rotary_factor", 1.0))
    rope: dict[str, Any] = {"base": float(params["rope_theta"]), **({"dims": dims} if dims != head_dim else {}),
                            "style": "half"}
    if kind == "default":
        return rope
    if kind not in SCALING:
        raise AttnError("llama_outline.rope_type_not_one_default", kind=quoted(kind), scaling=', '.join(SCALING))
    scaling: dict[str, Any] = {"type": kind}
    if kind == "dynamic":  # Hugging Face's dynamic NTK grows from max_position_embeddings
        original = config.max_position_embeddings
    else:  # Phi-3: the config's top-level original_max_position_embeddings wins
        original = getattr(config, ORIGINAL, None) or params.get(ORIGINAL) or config.max_position_embeddings
    factor = params.get("factor")
    scaling["factor"] = float(factor if factor is not None else config.max_position_embeddings / original)
    if kind != "linear":
        scaling[ORIGINAL] = int(original) if float(original).is_integer() else float(original)
    for name in SCALING[kind]:
        value = params.get(name)
        if name in ("beta_fast", "beta_slow") and not value:
            continue  # (Hugging Face: `or 32`, `or 1`, the document's defaults)
        if value is not None and name != "truncate":
            scaling[name] = [float(v) for v in value] if isinstance(value, (list, tuple)) else float(value)
    if kind == "yarn" and config.rope_parameters.get("truncate", True) is False:
        scaling["truncate"] = False  # (read from the top level, as Hugging Face does)
    rope["scaling"] = scaling
    if params.get("attention_factor") is not None:
        rope["attention_factor"] = float(params["attention_factor"])
    return rope


def rope_table(rope: dict[str, Any], head_dim: int, top: float) -> tuple[np.ndarray, float]:
    """The frequencies (dims/2) and the attention factor of a ``rope`` key, for positions below ``top``."""
    base, dims = rope["base"], rope.get("dims", head_dim)
    s = rope.get("scaling")
    if s is None:
        return rope_frequencies(base, dims), float(rope.get("attention_factor", 1.0))
    fields = {k: (np.asarray(v, dtype=np.float64) if isinstance(v, list) else v) for k, v in s.items()
              if k not in ("type", "factor", ORIGINAL)}
    scaling = Scaling(s["type"], s["factor"], s.get(ORIGINAL), **fields)
    frequencies, a = scaled(base, dims, scaling, top)
    return frequencies, float(rope.get("attention_factor", a))


def rope_hook(tables: dict[str | None, tuple[dict[str, Any], int]]) -> Any:
    """An installer for capture (:func:`float64_switches.rope64`): every rotary module's cos and sin in float64 from the
    document's ``rope`` keys (one per layer type: Gemma 3's rotary module is called with the type), times the
    attention factor."""

    def table(layer_type: str | None, top: float) -> tuple[np.ndarray, float]:
        rope, head_dim = tables.get(layer_type) or tables[None]
        return rope_table(rope, head_dim, top)

    return float64_switches.rope64(table)


def gemma_norms64(torch: Any, model: Any) -> list[Any]:
    """Gemma's RMSNorm, (1 + w) ⊙ x / √(mean(x²) + ε), in float64 (transformers computes it in float32)."""
    def hook(module: Any, args: tuple, output: Any) -> Any:
        x = args[0]
        return (1.0 + module.weight) * (x * (x.pow(2).mean(-1, keepdim=True) + epsilon(module)).rsqrt())

    return [module.register_forward_hook(hook, prepend=True) for module in model.modules()
            if type(module).__name__.endswith("RMSNorm") and hasattr(module, "eps")]


# ---------------------------------------------------------------- the common decoder layer


def _window(config: Any, attn: Any) -> int | None:
    window = attn.sliding_window if hasattr(attn, "sliding_window") else getattr(config, "sliding_window", None)
    return int(window) if window else None


def _layer_type(config: Any, layer: int) -> str | None:
    types = getattr(config, "layer_types", None)
    return types[layer] if types else None


def decoder(config: Any, model: Any, layer: int, *, rope: bool = True, fused: str | None = None,
            norm: str = "rms", gamma: Any = None) -> tuple[dict[str, Any], Plan]:
    """Llama's layer as keys and a plan: projections (or the fused ``qkv_proj``), heads, scale, mask, pre-norm,
    rope, residual. ``gamma``: the pre-norm's γ when it is not the checkpoint's tensor (Gemma's 1 + w)."""
    block = f"layers.{layer}"
    p = f"{block}.self_attn"
    attn = model.get_submodule(p)
    head_dim = attn.head_dim
    h, g = config.num_attention_heads, config.num_key_value_heads
    projections = _fused(p, fused, h, g, head_dim) if fused else _projections(
        model, {"query": f"{p}.q_proj", "key": f"{p}.k_proj", "value": f"{p}.v_proj", "output": f"{p}.o_proj"})
    window = _window(config, attn)
    pre = getattr(model.get_submodule(block), "input_layernorm", None)
    if pre is None:  # (OLMo 2 and 3: none)
        pre_norm = None
    elif norm == "layer":
        pre_norm = {"kind": "layer", **_layer_norm(pre, f"{block}.input_layernorm")}
    else:
        pre_norm = {"kind": "rms", "gamma": gamma or Param(f"{block}.input_layernorm.weight"), "eps": epsilon(pre)}
    keys: dict[str, Any] = {"heads": h, **({"kv_heads": g} if g != h else {}), **projections,
                            **_scale(attn.scaling, head_dim),
                            "mask": {"causal": True, "window": window} if window else "causal",
                            **({"pre_norm": pre_norm} if pre_norm else {}), "residual": True}
    float64: dict[str, Any] = {"install": []}
    if rope:
        types = sorted(set(getattr(config, "layer_types", None) or [None]), key=str)
        per_type = isinstance(config.rope_parameters, dict) and any(t in config.rope_parameters for t in types if t)
        tables = {t: (rope_key(config, head_dim, t if per_type else None), head_dim) for t in types}
        tables[None] = tables.get(_layer_type(config, layer) if per_type else None) or next(iter(tables.values()))
        keys["rope"] = tables[None][0]
        float64["install"].append(rope_hook(tables))
    plan = Plan(keys, block, f"{p}.o_proj", pre_norm=f"{block}.input_layernorm" if pre_norm else None,
                residual=(f"{block}.post_attention_layernorm", "input"), float64=float64,
                limit=config.max_position_embeddings)
    return keys, plan


def _fused(p: str, fused: str, h: int, g: int, head_dim: int) -> dict[str, Any]:
    """Phi-3's qkv_proj: the query rows, then the keys', then the values'."""
    q, k = h * head_dim, g * head_dim
    cut = {"query": (0, q), "key": (q, q + k), "value": (q + k, q + 2 * k)}
    return {"weights": {**{name: Param(f"{p}.{fused}.weight", "torch", (c,)) for name, c in cut.items()},
                        "output": Param(f"{p}.o_proj.weight", "torch")}}


def _qk_norm(model: Any, p: str, scope: str = "head") -> dict[str, Any]:
    q_norm = model.get_submodule(f"{p}.q_norm")
    return {"kind": "rms", **({"scope": scope} if scope != "head" else {}),
            "gamma": {"query": Param(f"{p}.q_norm.weight"), "key": Param(f"{p}.k_norm.weight")},
            "eps": epsilon(q_norm) if hasattr(q_norm, "eps") or hasattr(q_norm, "variance_epsilon") else 1e-6}


# ---------------------------------------------------------------- the families


def qwen3(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """Qwen3 and Qwen3-MoE: Llama's layer with an RMSNorm over each head's queries and keys (γ shared)."""
    keys, plan = decoder(config, model, layer)
    keys["qk_norm"] = _qk_norm(model, f"layers.{layer}.self_attn")
    return plan


def olmo2(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """OLMo 2 and OLMo 3: no pre-norm; RMSNorm over the whole projection (before the split into heads); the
    output normalised before it is added back (post_norm)."""
    keys, plan = decoder(config, model, layer)
    block = f"layers.{layer}"
    keys["qk_norm"] = _qk_norm(model, f"{block}.self_attn", "projection")
    post = model.get_submodule(f"{block}.post_attention_layernorm")
    keys["post_norm"] = {"kind": "rms", "gamma": Param(f"{block}.post_attention_layernorm.weight"),
                         "eps": epsilon(post)}
    plan.residual = (f"{block}.mlp", "input")
    return plan


def _plus_one(model: Any, name: str) -> list[float]:
    """Gemma's γ: the checkpoint stores w, the norm multiplies by 1 + w (written as numbers)."""
    return [1.0 + v for v in model.get_parameter(name).detach().double().tolist()]


def gemma3(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """Gemma 3 (text): γ = 1 + w for every RMSNorm, query_pre_attn_scalar^(−1/2) as the scale, sliding and global
    layers (each with its own rope), QK-norm per head, the output normalised before it is added back."""
    if getattr(config, "use_bidirectional_attention", False):
        raise AttnError("llama_outline.use_bidirectional_attention_lets_every_layer_see")
    block = f"layers.{layer}"
    keys, plan = decoder(config, model, layer, gamma=_plus_one(model, f"{block}.input_layernorm.weight"))
    p = f"{block}.self_attn"
    eps = epsilon(model.get_submodule(f"{p}.q_norm"))
    keys["qk_norm"] = {"kind": "rms", "gamma": {"query": _plus_one(model, f"{p}.q_norm.weight"),
                                                "key": _plus_one(model, f"{p}.k_norm.weight")}, "eps": eps}
    post = model.get_submodule(f"{block}.post_attention_layernorm")
    keys["post_norm"] = {"kind": "rms", "gamma": _plus_one(model, f"{block}.post_attention_layernorm.weight"),
                         "eps": epsilon(post)}
    # (attn_logit_softcapping: Gemma3Attention keeps it but never passes it to the attention: no softcap)
    plan.residual = (f"{block}.pre_feedforward_layernorm", "input")
    plan.float64["install"].append(gemma_norms64)
    return plan


def gpt_oss(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """gpt-oss: a learned sink per head, sliding layers between full ones, YaRN rope written as rope.scaling."""
    keys, plan = decoder(config, model, layer)
    keys["sinks"] = Param(f"layers.{layer}.self_attn.sinks")
    return plan


def phi3(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """Phi-3, Phi-3.5, Phi-4-mini: the fused qkv_proj, partial rotary, LongRoPE written as rope.scaling."""
    return decoder(config, model, layer, fused="qkv_proj")[1]


def granite(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """Granite: attention_multiplier is the scale, residual_multiplier scales Y before it is added back."""
    keys, plan = decoder(config, model, layer)
    alpha = float(config.residual_multiplier)
    keys["residual"] = True if alpha == 1.0 else {"scale": alpha}
    return plan


def smollm3(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """SmolLM3: no rotation on the layers no_rope_layers marks 0 (NoPE)."""
    use_rope = bool(model.get_submodule(f"layers.{layer}.self_attn").use_rope)
    keys, plan = decoder(config, model, layer, rope=use_rope)
    if not use_rope:  # (the rotary module still runs for the other layers: its float64 tables too)
        plan.float64["install"].append(rope_hook({None: (rope_key(config, keys_head_dim(model, layer)),
                                                       keys_head_dim(model, layer))}))
    return plan


def keys_head_dim(model: Any, layer: int) -> int:
    return int(model.get_submodule(f"layers.{layer}.self_attn").head_dim)


def mixtral(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """Mixtral: Mistral's attention (grouped-query heads, an optional sliding window); its experts follow."""
    return decoder(config, model, layer)[1]


def starcoder2(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """Starcoder2: LayerNorm with β as the pre-norm, biases on every projection, a sliding window."""
    return decoder(config, model, layer, norm="layer")[1]
