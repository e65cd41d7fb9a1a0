"""Each model family's attention layer, as the keys of a document and the modules that hold its numbers.

This module is the registry (:data:`FAMILIES`, :func:`family_of`), with the families of the first releases
(BERT, DistilBERT, GPT-2, Llama, BLOOM, T5); the others are in the modules it imports, each named by the layer's
outline, and every family builds its plan from :mod:`attncli.models.family`'s parts (so no family module imports
this one).  A family function gets the transformers config and the loaded model (its base model, whose module and
parameter names are relative to it) and returns a :class:`Plan`: the document keys, with each weight a :class:`Param`
(a parameter's name, its layout and the columns to keep) that :mod:`attncli.models.extract` turns into a
``{file, tensor, layout, columns}`` reference into the checkpoint, and where the hooks of
:mod:`attncli.models.capture` catch the layer's input X, its normalised input X̂, the attention output Y, the
residual R and the Add & Norm N.
"""

from __future__ import annotations

from typing import Any

from attncli.core.differential import lambda_init_of
from attncli.core.errors import AttnError, quoted
from attncli.models import (
    float64_switches,
    gemma4_outline,
    latent_families,
    linear_outlines,
    llama_outline,
    other_outlines,
)
from attncli.models.family import STACKS, Family, Param, Plan, _layer_norm, _projections, _scale, epsilon

__all__ = ["FAMILIES", "Family", "Param", "Plan", "family_of"]


# ---------------------------------------------------------------- encoders: BERT, RoBERTa, DistilBERT


def _bert(config: Any, model: Any, layer: int, stack: str) -> Plan:
    kind = getattr(config, "position_embedding_type", "absolute") or "absolute"
    if kind != "absolute":
        raise AttnError("families.position_embedding_type_not_supported_absolute_positions", kind=quoted(kind))
    p = f"encoder.layer.{layer}.attention"
    keys = {"heads": config.num_attention_heads,
            **_projections(model, {"query": f"{p}.self.query", "key": f"{p}.self.key", "value": f"{p}.self.value",
                                   "output": f"{p}.output.dense"}),
            **_scale(model.get_submodule(f"{p}.self").scaling, config.hidden_size // config.num_attention_heads),
            **({"mask": "causal"} if config.is_decoder else {}),
            "add_norm": _layer_norm(model.get_submodule(f"{p}.output.LayerNorm"), f"{p}.output.LayerNorm")}
    offset = config.pad_token_id + 1 if config.model_type == "roberta" else 0  # RoBERTa counts positions from pad + 1
    return Plan(keys, f"encoder.layer.{layer}", f"{p}.output.dense", residual=(f"{p}.output.LayerNorm", "input"),
                normalized=f"{p}.output.LayerNorm", limit=config.max_position_embeddings - offset)


def _distilbert(config: Any, model: Any, layer: int, stack: str) -> Plan:
    block = f"transformer.layer.{layer}"
    p = f"{block}.attention"
    keys = {"heads": config.n_heads,
            **_projections(model, {"query": f"{p}.q_lin", "key": f"{p}.k_lin", "value": f"{p}.v_lin",
                                   "output": f"{p}.out_lin"}),
            **_scale(model.get_submodule(p).scaling, config.dim // config.n_heads),
            "add_norm": _layer_norm(model.get_submodule(f"{block}.sa_layer_norm"), f"{block}.sa_layer_norm")}
    return Plan(keys, block, f"{p}.out_lin", residual=(f"{block}.sa_layer_norm", "input"),
                normalized=f"{block}.sa_layer_norm", limit=config.max_position_embeddings)


# ---------------------------------------------------------------- decoders: GPT-2, Llama, Mistral, Qwen2, BLOOM


def _gpt2(config: Any, model: Any, layer: int, stack: str) -> Plan:
    block = f"h.{layer}"
    d = config.n_embd
    cut = {name: ((i * d, (i + 1) * d),) for i, name in enumerate(("query", "key", "value"))}
    fused = f"{block}.attn.c_attn"  # Conv1D: weight d × 3d, already d_in × d_out
    keys = {"heads": config.n_head,
            "weights": {**{k: Param(f"{fused}.weight", columns=c) for k, c in cut.items()},
                        "output": Param(f"{block}.attn.c_proj.weight")},
            "bias": {**{k: Param(f"{fused}.bias", columns=c) for k, c in cut.items()},
                     "output": Param(f"{block}.attn.c_proj.bias")},
            **_scale(model.get_submodule(f"{block}.attn").scaling, d // config.n_head),
            "mask": "causal",
            "pre_norm": {"kind": "layer", **_layer_norm(model.get_submodule(f"{block}.ln_1"), f"{block}.ln_1")},
            "residual": True}
    return Plan(keys, block, f"{block}.attn.c_proj", pre_norm=f"{block}.ln_1", residual=(f"{block}.ln_2", "input"),
                float64={"no_upcast": True}, limit=config.n_positions)


def _llama(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """Llama, Mistral and Qwen2: RMSNorm, grouped-query heads, rotate_half RoPE, causal (sliding) mask."""
    block = f"layers.{layer}"
    p = f"{block}.self_attn"
    attn = model.get_submodule(p)
    head_dim = attn.head_dim
    rotary = model.rotary_emb
    if rotary.rope_type in ("yarn", "longrope"):  # their attention factor: written as rope.scaling (issue 28)
        return llama_outline.mixtral(config, model, layer, stack)
    if rotary.rope_type == "default":
        theta = float(config.rope_parameters["rope_theta"])
        rope: dict[str, Any] = {"base": theta}
        frequencies = None  # attncli's own θ^(−2i/d), in float64, in the model too
    else:
        frequencies = [float(f) for f in rotary.inv_freq.double().tolist()]
        rope = {"frequencies": frequencies}
    if 2 * len(rotary.inv_freq) != head_dim:
        raise AttnError("families.rope_turns_dimensions_head_only", value=2 * len(rotary.inv_freq), head_dim=head_dim)
    window = config.sliding_window if config.model_type == "mistral" else getattr(attn, "sliding_window", None)
    norm = model.get_submodule(f"{block}.input_layernorm")
    keys = {"heads": config.num_attention_heads,
            **({"kv_heads": config.num_key_value_heads}
               if config.num_key_value_heads != config.num_attention_heads else {}),
            **_projections(model, {"query": f"{p}.q_proj", "key": f"{p}.k_proj", "value": f"{p}.v_proj",
                                   "output": f"{p}.o_proj"}),
            **_scale(attn.scaling, head_dim),
            "mask": {"causal": True, "window": int(window)} if window else "causal",
            "pre_norm": {"kind": "rms", "gamma": Param(f"{block}.input_layernorm.weight"),
                         "eps": epsilon(norm)},
            "rope": {**rope, "style": "half"},
            "residual": True}
    return Plan(keys, block, f"{p}.o_proj", pre_norm=f"{block}.input_layernorm",
                residual=(f"{block}.post_attention_layernorm", "input"),
                float64={"rope": frequencies if frequencies is not None else ("base", rope["base"], head_dim)},
                limit=config.max_position_embeddings)


def _diffllama(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """DiffLlama: Llama's layer with differential attention (its four λ vectors, λ_init of the layer, the pairs'
    RMSNorm), λ's sums computed in float64 while the model runs."""
    plan = _llama(config, model, layer, stack)
    p = f"layers.{layer}.self_attn"
    attn = model.get_submodule(p)
    init = {"layer": layer} if abs(attn.lambda_init - lambda_init_of(layer)) <= 1e-15 else \
        {"lambda_init": float(attn.lambda_init)}
    plan.keys["differential"] = {**{name: Param(f"{p}.{name}") for name in
                                    ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")},
                                 **init, "eps": epsilon(attn.groupnorm)}
    plan.float64["install"] = (*plan.float64.get("install", ()), float64_switches.sums64)
    return plan


def _bloom(config: Any, model: Any, layer: int, stack: str) -> Plan:
    if config.apply_residual_connection_post_layernorm:
        raise AttnError("families.apply_residual_connection_post_layernorm_adds_normalised_inputs_back")
    block = f"h.{layer}"
    h, d = config.n_head, config.hidden_size
    hd = d // h
    fused = f"{block}.self_attention.query_key_value"  # per head: its q, k and v rows next to each other
    cut = {name: tuple((j * 3 * hd + i * hd, j * 3 * hd + (i + 1) * hd) for j in range(h))
           for i, name in enumerate(("query", "key", "value"))}
    dense = f"{block}.self_attention.dense"
    keys = {"heads": h,
            "weights": {**{k: Param(f"{fused}.weight", "torch", c) for k, c in cut.items()},
                        "output": Param(f"{dense}.weight", "torch")},
            "bias": {**{k: Param(f"{fused}.bias", columns=c) for k, c in cut.items()},
                     "output": Param(f"{dense}.bias")},
            **_scale(model.get_submodule(f"{block}.self_attention").inv_norm_factor, hd),
            "mask": "causal",
            "score_bias": {"alibi": True},
            "pre_norm": {"kind": "layer", **_layer_norm(model.get_submodule(f"{block}.input_layernorm"),
                                                        f"{block}.input_layernorm")},
            "residual": True}
    return Plan(keys, block, dense, pre_norm=f"{block}.input_layernorm",
                residual=(f"{block}.post_attention_layernorm", "input"), float64={"alibi": h})


# ---------------------------------------------------------------- T5: either stack's self-attention


def _t5(config: Any, model: Any, layer: int, stack: str) -> Plan:
    block = f"{stack}.block.{layer}"
    p = f"{block}.layer.0"
    table = Param(f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight")  # layer 0's, shared
    norm = model.get_submodule(f"{p}.layer_norm")
    keys = {"heads": config.num_heads,
            **_projections(model, {k: f"{p}.SelfAttention.{n}" for k, n in
                                   (("query", "q"), ("key", "k"), ("value", "v"), ("output", "o"))}),
            "scale": "none",
            **({"mask": "causal"} if stack == "decoder" else {}),
            "score_bias": {"relative": {"table": table, "buckets": config.relative_attention_num_buckets,
                                        "max_distance": config.relative_attention_max_distance,
                                        "bidirectional": stack == "encoder"}},
            "pre_norm": {"kind": "rms", "gamma": Param(f"{p}.layer_norm.weight"), "eps": epsilon(norm)},
            "residual": True}
    return Plan(keys, block, f"{p}.SelfAttention.o", pre_norm=f"{p}.layer_norm", residual=(p, "output"))


def _t5_layers(config: Any, stack: str = "encoder") -> int:
    return config.num_decoder_layers if stack == "decoder" else config.num_layers



FAMILIES: dict[str, Family] = {
    "bert": Family("AutoModel", lambda c: c.num_hidden_layers, _bert),
    "roberta": Family("AutoModel", lambda c: c.num_hidden_layers, _bert),
    "distilbert": Family("AutoModel", lambda c: c.n_layers, _distilbert),
    "gpt2": Family("AutoModel", lambda c: c.n_layer, _gpt2),
    "llama": Family("AutoModel", lambda c: c.num_hidden_layers, _llama),
    "mistral": Family("AutoModel", lambda c: c.num_hidden_layers, _llama),
    "qwen2": Family("AutoModel", lambda c: c.num_hidden_layers, _llama),
    "t5": Family("T5EncoderModel", _t5_layers, _t5),
    "bloom": Family("AutoModel", lambda c: c.n_layer, _bloom),
    "diffllama": Family("AutoModel", lambda c: c.num_hidden_layers, _diffllama),
    "qwen3": Family("AutoModel", lambda c: c.num_hidden_layers, llama_outline.qwen3),
    "qwen3_moe": Family("AutoModel", lambda c: c.num_hidden_layers, llama_outline.qwen3),
    "gemma3_text": Family("AutoModel", lambda c: c.num_hidden_layers, llama_outline.gemma3),
    "olmo2": Family("AutoModel", lambda c: c.num_hidden_layers, llama_outline.olmo2),
    "olmo3": Family("AutoModel", lambda c: c.num_hidden_layers, llama_outline.olmo2),
    "gpt_oss": Family("AutoModel", lambda c: c.num_hidden_layers, llama_outline.gpt_oss),
    "phi3": Family("AutoModel", lambda c: c.num_hidden_layers, llama_outline.phi3),
    "granite": Family("AutoModel", lambda c: c.num_hidden_layers, llama_outline.granite),
    "smollm3": Family("AutoModel", lambda c: c.num_hidden_layers, llama_outline.smollm3),
    "mixtral": Family("AutoModel", lambda c: c.num_hidden_layers, llama_outline.mixtral),
    "starcoder2": Family("AutoModel", lambda c: c.num_hidden_layers, llama_outline.starcoder2),
    **{name: Family("AutoModel", lambda c: c.num_hidden_layers, lambda *a, f=plan: getattr(other_outlines, f)(*a))
       for name, plan in (("stablelm", "stablelm"), ("glm4", "glm4"), ("cohere", "cohere"), ("cohere2", "cohere"),
                          ("modernbert", "modernbert"), ("mpt", "mpt"), ("dbrx", "dbrx"),
                          ("llama4_text", "llama4"), ("qwen3_next", "qwen3_next"))},  # (other_outlines.py)
    "minimax": Family("AutoModel", lambda c: c.num_hidden_layers, linear_outlines.minimax),
    "kimi_linear": Family("AutoModel", lambda c: c.num_hidden_layers, linear_outlines.kimi_linear),
    "deepseek_v2": Family("AutoModel", lambda c: c.num_hidden_layers, latent_families.deepseek),
    "deepseek_v3": Family("AutoModel", lambda c: c.num_hidden_layers, latent_families.deepseek),
    "deepseek_v32": Family("AutoModel", lambda c: c.num_hidden_layers, latent_families.deepseek32),
    "gemma4_text": Family("AutoModel", lambda c: c.num_hidden_layers, gemma4_outline.gemma4),
}


def family_of(model_type: str, stack: str | None, where: str) -> tuple[Family, str]:
    """The family of ``model_type`` and the stack to read (``encoder`` unless T5's decoder is asked for)."""
    family = FAMILIES.get(model_type)
    if model_type in latent_families.REFUSED:
        raise AttnError(latent_families.REFUSED[model_type], f"{where}/config.json")
    if family is None:
        known = ", ".join(FAMILIES)
        raise AttnError("families.model_type_not_supported_extract_knows", f"{where}/config.json",
                        model_type=quoted(model_type) if model_type else '(none)', known=known)
    if stack is not None and stack not in STACKS:
        raise AttnError("families.not_encoder_decoder", "--stack", stack=quoted(stack))
    if stack == "decoder":
        if model_type != "t5":
            raise AttnError("families.only_t5_has_decoder_stack",
                            "--stack", model_type=model_type)
        family = Family("T5Model", lambda c: _t5_layers(c, "decoder"), _t5, "decoder_attentions")
    return family, stack or "encoder"
