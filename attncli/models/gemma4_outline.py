"""Gemma 4 (text), ``Gemma4TextAttention``: each layer as the keys of a document (a :class:`Plan`).

Gemma 3's outline (a pre-norm, the attention, a post-norm, the residual) with Gemma 4's attention: scale 1,
``qk_norm`` with γ as stored (Gemma 4's RMSNorm multiplies by w, not 1 + w), ``v_norm`` (no γ), on the global
layers V from the raw key projection (``k_eq_v``, no v_proj), their own head width and key/value heads, and a
proportional rope (a share of the pairs turned, the others at frequency 0: written as ``rope.frequencies``).  A
layer in kv sharing's "reuse" mode makes no K or V of its own: it is refused, naming the layer it takes them from.

While capture runs the model in float64, :func:`norms64` computes every Gemma4RMSNorm in float64 and the rotary
module's cos and sin come from the document's frequencies (:func:`attncli.models.float64_switches.rope64`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncli.core.errors import AttnError
from attncli.models import float64_switches
from attncli.models.family import Param, Plan, _projections, _scale, epsilon


def frequencies(config: Any, layer_type: str, head_dim: int) -> np.ndarray:
    """The inverse frequencies (head_dim/2) Hugging Face derives for ``layer_type``, in float64: default rope, or
    proportional (the first ⌊share·head_dim/2⌋ pairs turned at base^(−2i/head_dim), the rest 0), over ``factor``."""
    params = config.rope_parameters[layer_type]
    base, kind = float(params["rope_theta"]), params.get("rope_type", "default")
    if kind == "default":
        return base ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    if kind != "proportional":
        raise AttnError("gemma4_outline.rope_type_layers_not_default_proportional", kind=kind, layer_type=layer_type)
    turned = int(params.get("partial_rotary_factor", 1.0) * head_dim // 2)
    f = np.zeros(head_dim // 2)
    f[:turned] = base ** (-np.arange(0, 2 * turned, 2, dtype=np.float64) / head_dim)
    return f / float(params.get("factor", 1.0))


def norms64(torch: Any, model: Any) -> list[Any]:
    """Gemma 4's RMSNorm, w ⊙ x / √(mean(x²) + ε) (no w with with_scale=False), in float64."""
    def hook(module: Any, args: tuple, output: Any) -> Any:
        x = args[0]
        y = x * (x.pow(2).mean(-1, keepdim=True) + epsilon(module)).rsqrt()
        return y * module.weight if module.with_scale else y

    return [module.register_forward_hook(hook, prepend=True) for module in model.modules()
            if type(module).__name__ == "Gemma4RMSNorm"]


def _source(config: Any, layer: int) -> int:
    """The "store" layer whose K and V a "reuse" layer takes: the last one of its type before the shared layers."""
    kind, first = config.layer_types[layer], config.num_hidden_layers - config.num_kv_shared_layers
    return max(i for i in range(first) if config.layer_types[i] == kind)


def gemma4(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """Gemma 4 (text): see the module's docstring."""
    if getattr(config, "use_bidirectional_attention", None) == "all":
        raise AttnError("gemma4_outline.use_bidirectional_attention_lets_every_token_see")
    block, p = f"layers.{layer}", f"layers.{layer}.self_attn"
    attn = model.get_submodule(p)
    if attn.is_kv_shared_layer:
        j = _source(config, layer)
        raise AttnError("gemma4_outline.layer_makes_no_keys_values", layer=layer, j=j,
                        num_kv_shared_layers=config.num_kv_shared_layers, j_2=j)
    head_dim, h = attn.head_dim, config.num_attention_heads
    g = attn.k_proj.out_features // head_dim
    names = {"query": f"{p}.q_proj", "key": f"{p}.k_proj", "output": f"{p}.o_proj"}
    if attn.v_proj is not None:
        names["value"] = f"{p}.v_proj"
    eps = float(config.rms_norm_eps)
    window = attn.sliding_window
    types = sorted(set(config.layer_types))
    dims = {t: next(model.get_submodule(f"layers.{i}.self_attn").head_dim for i, k in enumerate(config.layer_types)
                    if k == t) for t in types}
    table = {t: frequencies(config, t, dims[t]) for t in types}
    keys: dict[str, Any] = {
        "heads": h, **({"kv_heads": g} if g != h else {}), **_projections(model, names),
        **_scale(attn.scaling, head_dim),
        "mask": {"causal": True, "window": int(window)} if window else "causal",
        "pre_norm": {"kind": "rms", "gamma": Param(f"{block}.input_layernorm.weight"), "eps": eps},
        "qk_norm": {"kind": "rms", "gamma": {"query": Param(f"{p}.q_norm.weight"), "key": Param(f"{p}.k_norm.weight")},
                    "eps": eps},
        "v_norm": {"eps": eps}, **({"k_eq_v": True} if attn.v_proj is None else {}),
        "rope": {"frequencies": [float(f) for f in table[config.layer_types[layer]]]},
        "post_norm": {"kind": "rms", "gamma": Param(f"{block}.post_attention_layernorm.weight"), "eps": eps},
        "residual": True}
    install = [float64_switches.rope64(lambda kind, top: (table[kind], 1.0)), norms64]
    return Plan(keys, block, f"{p}.o_proj", pre_norm=f"{block}.input_layernorm",
                residual=(f"{block}.pre_feedforward_layernorm", "input"), float64={"install": install},
                limit=config.max_position_embeddings)
