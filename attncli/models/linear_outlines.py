"""The linear-attention layers of Qwen3-Next (Gated DeltaNet), Kimi Linear (Kimi Delta Attention) and MiniMax
(lightning attention) as a ``linear:`` block (docs/format.md Part 4), and the full-attention layers between them.

Each function is a family's ``plan`` for one of those layers (:mod:`attncli.models.families`): X is what enters the
attention module (after the decoder layer's input norm), Y what its output projection gives. The steps transformers
computes in float32 (the delta rules, the gated norms, MiniMax's decays) are switched to float64 by
:mod:`attncli.models.float64_switches` while the model runs.

The full-attention layers are ordinary documents: MiniMax's is Mistral's attention (:func:`minimax_full`, on the
normalised X, as its lightning layers: the decoder layer adds it to that X), Kimi Linear's is DeepSeek's latent
attention without rotation (:func:`kimi_full`, a whole layer with its pre-norm and residual).
"""

from __future__ import annotations

from typing import Any

from attncli.core.errors import AttnError, quoted
from attncli.models import float64_switches, llama_outline
from attncli.models.family import Param, Plan, _scale, epsilon
from attncli.models.latent_families import _latent, _rms


def _cut(width: int, groups: int, offset: int, size: int) -> tuple[tuple[int, int], ...]:
    """Columns ``offset … offset + size`` of each of ``groups`` consecutive blocks of ``width`` columns."""
    return tuple((width * j + offset, width * j + offset + size) for j in range(groups))


def _silu_only(activation: str, what: str) -> None:
    if activation not in ("silu", "swish"):
        raise AttnError("linear_outlines.hidden_act_activation_linear_document_takes", activation=quoted(activation),
                        what=what)


def qwen3_next_linear(config: Any, model: Any, layer: int) -> Plan:
    """Qwen3NextGatedDeltaNet: in_proj_qkvz and in_proj_ba cut per query/key head group
    (fix_query_key_value_ordering), the conv, A_log, dt_bias, the gated RMSNorm and out_proj."""
    p = f"layers.{layer}.linear_attn"
    attn = model.get_submodule(p)
    _silu_only(attn.activation, "its conv")
    h_k, h_v, d_k, d_v = attn.num_k_heads, attn.num_v_heads, attn.head_k_dim, attn.head_v_dim
    r = h_v // h_k
    width, qkvz, ba = 2 * d_k + 2 * r * d_v, f"{p}.in_proj_qkvz.weight", f"{p}.in_proj_ba.weight"
    weights = {"query": Param(qkvz, "torch", _cut(width, h_k, 0, d_k)),
               "key": Param(qkvz, "torch", _cut(width, h_k, d_k, d_k)),
               "value": Param(qkvz, "torch", _cut(width, h_k, 2 * d_k, r * d_v)),
               "beta": Param(ba, "torch", _cut(2 * r, h_k, 0, r)),
               "decay": Param(ba, "torch", _cut(2 * r, h_k, r, r)),
               "gate": Param(qkvz, "torch", _cut(width, h_k, 2 * d_k + r * d_v, r * d_v)),
               "output": Param(f"{p}.out_proj.weight", "torch")}
    linear = {"kind": "gated_delta", "heads": h_k, "value_heads": h_v, "weights": weights,
              "conv": Param(f"{p}.conv1d.weight"), "A_log": Param(f"{p}.A_log"), "dt_bias": Param(f"{p}.dt_bias"),
              "norm": {"gamma": Param(f"{p}.norm.weight"), "eps": epsilon(attn.norm),
                       "activation": "silu"}}
    rules = float64_switches.rules64("transformers.models.qwen3_next.modeling_qwen3_next",
                                     ("torch_chunk_gated_delta_rule", "torch_recurrent_gated_delta_rule"))
    return Plan({"linear": linear}, p, f"{p}.out_proj", linear=True, limit=config.max_position_embeddings,
                float64={"install": (float64_switches.keep_float64, float64_switches.eager_experts,
                                     float64_switches.gated_norms64, rules),
                         "not_rms": ("Qwen3NextRMSNormGated",)})


def kimi_linear(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """KimiLinearDeltaAttention: q, k, v, b_proj, the conv, the forget gate (f_a_proj·f_b_proj, A_log, dt_bias),
    the output gate (g_a_proj·g_b_proj), the sigmoid-gated RMSNorm and o_proj."""
    if config.layer_types[layer] != "linear_attention":
        return kimi_full(config, model, layer)
    p = f"layers.{layer}.self_attn"
    attn = model.get_submodule(p)
    _silu_only(attn.activation, "its conv")
    gate = attn.forget_gate
    weights = {"query": Param(f"{p}.q_proj.weight", "torch"), "key": Param(f"{p}.k_proj.weight", "torch"),
               "value": Param(f"{p}.v_proj.weight", "torch"), "beta": Param(f"{p}.b_proj.weight", "torch"),
               "decay": {"product": [Param(f"{p}.forget_gate.f_a_proj.weight", "torch"),
                                     Param(f"{p}.forget_gate.f_b_proj.weight", "torch")]},
               "gate": {"product": [Param(f"{p}.g_a_proj.weight", "torch"), Param(f"{p}.g_b_proj.weight", "torch")]},
               "output": Param(f"{p}.o_proj.weight", "torch")}
    # the conv is stored as q_conv1d, k_conv1d and v_conv1d (transformers stacks them on loading): its numbers
    conv = attn.conv1d.weight.detach().double()[:, 0].tolist()
    linear = {"kind": "kda", "heads": attn.num_heads, "weights": weights, "conv": conv,
              "A_log": gate.A_log.detach().double().reshape(-1).tolist(),  # (stored 1 × 1 × h × 1)
              "dt_bias": Param(f"{p}.forget_gate.dt_bias"),
              "norm": {"gamma": Param(f"{p}.o_norm.weight"), "eps": epsilon(attn.o_norm),
                       "activation": "sigmoid"}}
    rules = float64_switches.rules64("transformers.models.kimi_linear.modeling_kimi_linear",
                                     ("chunk_kimi_delta_attention", "recurrent_kimi_delta_attention"))
    return Plan({"linear": linear}, p, f"{p}.o_proj", linear=True, limit=None,
                float64={"install": (float64_switches.keep_float64, float64_switches.eager_experts,
                                     float64_switches.gated_norms64, rules),
                         "not_rms": ("KimiLinearRMSNormGated",)})


def minimax(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """MiniMaxLightningAttention: qkv_proj cut per head ([q | k | v] of d columns each), the slopes of the layer,
    the RMSNorm over all heads, the sigmoid output gate and out_proj."""
    if config.layer_types[layer] != "linear_attention":
        return minimax_full(config, model, layer)
    p = f"layers.{layer}.self_attn"
    attn = model.get_submodule(p)
    activation = config.hidden_act
    if activation not in ("silu", "swish", "sigmoid"):
        raise AttnError("linear_outlines.hidden_act_activation_q_k_v", activation=quoted(activation))
    h, d = attn.num_attention_heads, attn.head_dim
    qkv = f"{p}.qkv_proj.weight"
    weights = {"query": Param(qkv, "torch", _cut(3 * d, h, 0, d)), "key": Param(qkv, "torch", _cut(3 * d, h, d, d)),
               "value": Param(qkv, "torch", _cut(3 * d, h, 2 * d, d)),
               "gate": Param(f"{p}.output_gate.weight", "torch"), "output": Param(f"{p}.out_proj.weight", "torch")}
    linear = {"kind": "lightning", "heads": h, "slopes": {"layer": layer, "layers": attn.num_hidden_layers},
              "activation": "sigmoid" if activation == "sigmoid" else "silu", "weights": weights,
              "norm": {"gamma": Param(f"{p}.norm.weight"), "eps": epsilon(attn.norm)},
              "chunk": int(attn.block_size)}
    return Plan({"linear": linear}, p, f"{p}.out_proj", linear=True, limit=config.max_position_embeddings,
                float64={"install": (float64_switches.eager_experts, float64_switches.lightning_decays64)})


# ---------------------------------------------------------------- the full-attention layers between them


def minimax_full(config: Any, model: Any, layer: int) -> Plan:
    """MiniMaxAttention: Mistral's (grouped-query heads, rotate_half RoPE, config.sliding_window) on the normalised
    X; the decoder layer adds it to that X, each scaled (full_attn_alpha_factor, …), so no residual is written."""
    keys, plan = llama_outline.decoder(config, model, layer)
    del keys["pre_norm"], keys["residual"]
    head_dim = model.get_submodule(f"layers.{layer}.self_attn").head_dim
    turned = 2 * len(model.rotary_emb.inv_freq)  # (MiniMax's rotary module turns whole heads, whatever the config)
    if keys["rope"].get("dims", head_dim) != turned:
        raise AttnError("linear_outlines.rope_parameters_turn_dimensions_head_but",
                        get=keys['rope'].get('dims', head_dim), head_dim=head_dim, turned=turned)
    plan.block, plan.pre_norm, plan.residual = f"layers.{layer}.self_attn", None, None
    plan.after_norm = True
    plan.float64["install"].append(float64_switches.eager_experts)
    return plan


def kimi_full(config: Any, model: Any, layer: int) -> Plan:
    """KimiLinearAttention: DeepSeek's latent attention with no rotation (NoPE): each key still ends with the
    qk_rope_head_dim numbers shared by every head, written as a rope whose frequencies are 0 (turned by angle 0)."""
    block = f"layers.{layer}"
    p = f"{block}.self_attn"
    attn = model.get_submodule(p)
    d_r, d_k = int(attn.qk_rope_head_dim), int(attn.qk_head_dim)
    if config.num_key_value_heads != config.num_attention_heads:
        raise AttnError("latent_families.num_key_value_heads_differs_from_num_attention_heads_latent")
    if d_r < 2 or d_r % 2:
        raise AttnError("linear_outlines.qk_rope_head_dim_latent_attention_shares_even", d_r=d_r)
    rope = {"frequencies": [0.0] * (d_r // 2), "dims": d_r, "part": "last", "style": "half"}
    keys = {"heads": config.num_attention_heads, "rope": rope, **_latent(model, p), **_scale(attn.scaling, d_k),
            "mask": "causal", "pre_norm": _rms(model, f"{block}.input_layernorm"), "residual": True}
    full_before = sum(kind != "linear_attention" for kind in config.layer_types[:layer])  # (only they record weights)
    return Plan(keys, block, f"{p}.o_proj", pre_norm=f"{block}.input_layernorm",
                residual=(f"{block}.post_attention_layernorm", "input"), limit=None, attentions_index=full_before,
                float64={"install": (float64_switches.eager_experts,), "not_rms": ("KimiLinearRMSNormGated",)})
