"""The attention layers of StableLM, GLM-4, Cohere (Command R), Cohere 2 and ModernBERT, as document keys.

Each function is a family's ``plan`` (see :mod:`attncli.models.families`); the steps transformers computes in
float32 are switched to float64 by :mod:`attncli.models.float64_switches`.  A variant that a document cannot write
is refused in one sentence, before anything is run.
"""

from __future__ import annotations

from typing import Any

from attncli.core.errors import AttnError, quoted
from attncli.models import float64_switches
from attncli.models.family import Param, Plan, _layer_norm, _projections, _scale, epsilon


def _rope(config: Any, rotary: Any, head_dim: int, style: str, kind: str | None = None) -> tuple[dict, list[float]]:
    """The ``rope`` key (θ and the turned dims, or the module's frequencies) and the frequencies in float64."""
    scaling = getattr(rotary, f"{kind}_attention_scaling" if kind else "attention_scaling", 1.0)
    rope_type = rotary.rope_type[kind] if kind else rotary.rope_type
    if float(scaling) != 1.0:
        raise AttnError("other_outlines.rope_type_scales_cos_sin_only", rope_type=quoted(rope_type), scaling=scaling)
    inv_freq = getattr(rotary, f"{kind}_inv_freq" if kind else "inv_freq")
    dims = 2 * len(inv_freq)
    if dims > head_dim:
        raise AttnError("other_outlines.rope_turns_dimensions_heads", dims=dims, head_dim=head_dim)
    part = {} if dims == head_dim else {"dims": dims}
    if rope_type == "default":
        from attncli.core.positions import rope_frequencies

        parameters = config.rope_parameters[kind] if kind else config.rope_parameters
        base = float(parameters["rope_theta"])
        return {"base": base, **part, "style": style}, [float(f) for f in rope_frequencies(base, dims)]
    frequencies = [float(f) for f in inv_freq.double().tolist()]
    return {"frequencies": frequencies, **part, "style": style}, frequencies


def _heads(config: Any) -> dict[str, int]:
    h, g = config.num_attention_heads, config.num_key_value_heads
    return {"heads": h, **({"kv_heads": g} if g != h else {})}


def _qkvo(model: Any, p: str) -> dict[str, Any]:
    return _projections(model, {"query": f"{p}.q_proj", "key": f"{p}.k_proj", "value": f"{p}.v_proj",
                                "output": f"{p}.o_proj"})


def _parallel_note() -> str:
    return "the attention and the MLP of its parallel block are added to X together"


# ---------------------------------------------------------------- StableLM: LayerNorm, partial rope, qk layernorm


def _per_head(model: Any, path: str) -> list[list[float]]:
    """γ of StableLM's per-head LayerNorms (one module per head): h × d_k numbers, written in the document."""
    return [norm.weight.detach().double().tolist() for norm in model.get_submodule(path).norms]


def stablelm(config: Any, model: Any, layer: int, stack: str) -> Plan:
    block, p = f"layers.{layer}", f"layers.{layer}.self_attn"
    attn = model.get_submodule(p)
    rope, frequencies = _rope(config, model.rotary_emb, attn.head_dim, "half")
    keys = {**_heads(config), **_qkvo(model, p), **_scale(attn.scaling, attn.head_dim), "mask": "causal",
            "pre_norm": {"kind": "layer", **_layer_norm(model.get_submodule(f"{block}.input_layernorm"),
                                                        f"{block}.input_layernorm")},
            "rope": rope}
    if config.qk_layernorm:
        keys["qk_norm"] = {"kind": "layer", "gamma": {"query": _per_head(model, f"{p}.q_layernorm"),
                                                      "key": _per_head(model, f"{p}.k_layernorm")},
                           "eps": float(config.layer_norm_eps)}
        if attn.q_layernorm.norms[0].bias is not None:
            raise AttnError("other_outlines.qk_layernorm_bias_per_head_not")
    if not config.use_parallel_residual:
        keys["residual"] = True
    return Plan(keys, block, f"{p}.o_proj", pre_norm=f"{block}.input_layernorm",
                residual=None if config.use_parallel_residual else (f"{block}.post_attention_layernorm", "input"),
                float64={"install": (float64_switches.rope64({None: frequencies}, "half"),)},
                limit=config.max_position_embeddings)


# ---------------------------------------------------------------- GLM-4: partial interleaved rope, sandwich norm


def _rms(model: Any, path: str) -> dict[str, Any]:
    norm = model.get_submodule(path)
    return {"kind": "rms", "gamma": Param(f"{path}.weight"), "eps": epsilon(norm)}


def glm4(config: Any, model: Any, layer: int, stack: str) -> Plan:
    block, p = f"layers.{layer}", f"layers.{layer}.self_attn"
    attn = model.get_submodule(p)
    rope, frequencies = _rope(config, model.rotary_emb, attn.head_dim, "interleaved")
    keys = {**_heads(config), **_qkvo(model, p), **_scale(attn.scaling, attn.head_dim), "mask": "causal",
            "pre_norm": _rms(model, f"{block}.input_layernorm"),
            "post_norm": _rms(model, f"{block}.post_self_attn_layernorm"),
            "rope": rope, "residual": True}
    return Plan(keys, block, f"{p}.o_proj", pre_norm=f"{block}.input_layernorm",
                residual=(f"{block}.post_attention_layernorm", "input"),
                float64={"install": (float64_switches.rope64({None: frequencies}, "half"),)},
                limit=config.max_position_embeddings)


# ---------------------------------------------------------------- Cohere, Cohere 2: parallel block, LayerNorm without β


def cohere(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """Command R (cohere) and Command R7B / A (cohere2: sliding layers with rope, full layers without)."""
    block, p = f"layers.{layer}", f"layers.{layer}.self_attn"
    attn = model.get_submodule(p)
    norm = model.get_submodule(f"{block}.input_layernorm")
    keys = {**_heads(config), **_qkvo(model, p), **_scale(attn.scaling, attn.head_dim)}
    window = getattr(attn, "sliding_window", None)
    keys["mask"] = {"causal": True, "window": int(window)} if window else "causal"
    keys["pre_norm"] = {"kind": "layer", "gamma": Param(f"{block}.input_layernorm.weight"),
                        "eps": epsilon(norm)}
    install: list[Any] = [float64_switches.keep_float64,
                          float64_switches.layer_norms64(("CohereLayerNorm", "Cohere2LayerNorm"))]
    rope, frequencies = _rope(config, model.rotary_emb, attn.head_dim, "interleaved")
    install.append(float64_switches.rope64({None: frequencies}, "interleaved"))  # (every layer: X of later layers)
    if config.model_type == "cohere" or window:  # (Cohere 2's full-attention layers have no positions)
        keys["rope"] = rope
    if getattr(config, "use_qk_norm", False):
        keys["qk_norm"] = {"kind": "layer", "gamma": {"query": Param(f"{p}.q_norm.weight"),
                                                      "key": Param(f"{p}.k_norm.weight")},
                           "eps": epsilon(attn.q_norm)}
    return Plan(keys, block, f"{p}.o_proj", pre_norm=f"{block}.input_layernorm",
                float64={"install": tuple(install), "not_rms": ("CohereLayerNorm", "Cohere2LayerNorm")},
                limit=config.max_position_embeddings)


# ---------------------------------------------------------------- ModernBERT: fused Wqkv, global and local layers


def modernbert(config: Any, model: Any, layer: int, stack: str) -> Plan:
    block, p = f"layers.{layer}", f"layers.{layer}.attn"
    attn = model.get_submodule(p)
    kind = config.layer_types[layer]
    d = config.hidden_size
    cut = {name: ((i * d, (i + 1) * d),) for i, name in enumerate(("query", "key", "value"))}
    fused = f"{p}.Wqkv"
    bias = attn.Wqkv.bias is not None
    rope, _ = _rope(config, model.rotary_emb, attn.head_dim, "half", kind)
    keys: dict[str, Any] = {
        "heads": config.num_attention_heads,
        "weights": {**{k: Param(f"{fused}.weight", "torch", c) for k, c in cut.items()},
                    "output": Param(f"{p}.Wo.weight", "torch")},
        **({"bias": {**{k: Param(f"{fused}.bias", columns=c) for k, c in cut.items()},
                     "output": Param(f"{p}.Wo.bias")}} if bias else {}),
        **_scale(attn.head_dim**-0.5, attn.head_dim)}
    if kind == "sliding_attention":  # Hugging Face's |i − j| ≤ sliding_window (inclusive) is |i − j| < window here
        keys["mask"] = {"window": int(config.sliding_window) + 1}
    norm = model.get_submodule(f"{block}.attn_norm")
    if hasattr(norm, "weight"):  # (layer 0's is an identity: the embeddings are normalised already)
        keys["pre_norm"] = {"kind": "layer", "gamma": Param(f"{block}.attn_norm.weight"),
                            **({"beta": Param(f"{block}.attn_norm.bias")} if norm.bias is not None else {}),
                            "eps": epsilon(norm)}
    keys["rope"] = rope
    keys["residual"] = True
    frequencies_of = {k: _rope(config, model.rotary_emb, attn.head_dim, "half", k)[1]
                      for k in model.rotary_emb.layer_types}
    return Plan(keys, block, f"{p}.Wo", pre_norm=f"{block}.attn_norm" if "pre_norm" in keys else None,
                residual=(f"{block}.mlp_norm", "input"),
                float64={"install": (float64_switches.keep_float64, float64_switches.rope64(frequencies_of, "half"))},
                limit=config.max_position_embeddings)



# ---------------------------------------------------------------- MPT (ALiBi) and DBRX (rope): fused Wqkv, clip_qkv


def _fused(model: Any, p: str, sizes: tuple[int, int, int], out: str) -> dict[str, Any]:
    """W_Q, W_K, W_V cut from the rows of a fused nn.Linear ``Wqkv`` (q, then k, then v), and W_O."""
    start = (0, sizes[0], sizes[0] + sizes[1])
    cut = {k: ((s, s + n),) for k, s, n in zip(("query", "key", "value"), start, sizes)}
    if model.get_submodule(f"{p}.Wqkv").bias is not None or model.get_submodule(f"{p}.{out}").bias is not None:
        raise AttnError("other_outlines.fused_wqkv_bias_not_supported")
    return {"weights": {**{k: Param(f"{p}.Wqkv.weight", "torch", c) for k, c in cut.items()},
                        "output": Param(f"{p}.{out}.weight", "torch")}}


def _bias_free_norm(model: Any, path: str) -> dict[str, Any]:
    norm = model.get_submodule(path)
    return {"kind": "layer", "gamma": Param(f"{path}.weight"),
            **({"beta": Param(f"{path}.bias")} if norm.bias is not None else {}), "eps": epsilon(norm)}


def mpt(config: Any, model: Any, layer: int, stack: str) -> Plan:
    block, p = f"blocks.{layer}", f"blocks.{layer}.attn"
    attn = model.get_submodule(p)
    h, d = config.n_heads, config.d_model
    keys = {"heads": h, **_fused(model, p, (d, d, d), "out_proj"), **_scale(attn.softmax_scale, d // h),
            **({"clip_qkv": float(attn.clip_qkv)} if attn.clip_qkv else {}),
            "mask": "causal", "score_bias": {"alibi": True},  # (MPT's slope · (j − n + 1): the same softmax)
            "pre_norm": _bias_free_norm(model, f"{block}.norm_1"), "residual": True}
    return Plan(keys, block, f"{p}.out_proj", pre_norm=f"{block}.norm_1", residual=(f"{block}.norm_2", "input"),
                float64={"install": (float64_switches.keep_float64, float64_switches.mpt_alibi64)},
                limit=config.max_seq_len)


def dbrx(config: Any, model: Any, layer: int, stack: str) -> Plan:
    block = f"blocks.{layer}"
    p, norms = f"{block}.norm_attn_norm.attn", f"{block}.norm_attn_norm"
    attn = model.get_submodule(p)
    h, g, hd = config.n_heads, config.attn_config.kv_n_heads, attn.head_dim
    rope, frequencies = _rope(config, model.rotary_emb, hd, "half")
    keys = {"heads": h, **({"kv_heads": g} if g != h else {}), **_fused(model, p, (h * hd, g * hd, g * hd), "out_proj"),
            **_scale(attn.scaling, hd), **({"clip_qkv": float(attn.clip_qkv)} if attn.clip_qkv else {}),
            "mask": "causal", "pre_norm": _bias_free_norm(model, f"{norms}.norm_1"), "rope": rope, "residual": True}
    return Plan(keys, block, f"{p}.out_proj", pre_norm=f"{norms}.norm_1", residual=(f"{norms}.norm_2", "input"),
                float64={"install": (float64_switches.rope64({None: frequencies}, "half"),)},
                limit=config.max_seq_len)


# ---------------------------------------------------------------- Llama 4 (text): chunked rope layers, NoPE layers


def llama4(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """Llama4TextModel: rope layers (complex rope = interleaved pairs, weightless RMS qk norm after it, chunked
    mask) and NoPE layers (full causal mask, the query temperature)."""
    block, p = f"layers.{layer}", f"layers.{layer}.self_attn"
    attn = model.get_submodule(p)
    rope, frequencies = _rope(config, model.rotary_emb, attn.head_dim, "interleaved")
    keys: dict[str, Any] = {**_heads(config), **_qkvo(model, p), **_scale(attn.scaling, attn.head_dim)}
    chunk = config.layer_types[layer] == "chunked_attention"
    keys["mask"] = {"causal": True, "chunk": int(config.attention_chunk_size)} if chunk else "causal"
    keys["pre_norm"] = _rms(model, f"{block}.input_layernorm")
    if attn.use_rope:
        keys["rope"] = rope
    keys["residual"] = True
    if hasattr(attn, "qk_norm"):  # Llama4TextL2Norm: x / √(mean(x²) + ε), no γ, after the rotation
        keys["qk_norm"] = {"kind": "rms", "eps": epsilon(attn.qk_norm), "after_rope": True}
    if attn.attn_temperature_tuning and not attn.use_rope:
        keys["query_temperature"] = {"floor_scale": float(attn.floor_scale), "attn_scale": float(attn.attn_scale)}
    return Plan(keys, block, f"{p}.o_proj", pre_norm=f"{block}.input_layernorm",
                residual=(f"{block}.post_attention_layernorm", "input"),
                float64={"install": (float64_switches.keep_float64_ints, float64_switches.complex_rope64(frequencies))},
                limit=config.max_position_embeddings)


# ---------------------------------------------------------------- Qwen3-Next: its full-attention layers


def _plus_one(model: Any, path: str) -> list[float]:
    """γ of a norm that multiplies by 1 + w (Qwen3-Next stores γ − 1): the numbers, written in the document."""
    return (1.0 + model.get_parameter(f"{path}.weight").detach().double()).tolist()


def qwen3_next(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """Gated attention: the gate cut from q_proj (per head, its queries then its gate), qk norm, partial rope."""
    if config.layer_types[layer] != "full_attention":  # a Gated DeltaNet layer: a linear: document
        from attncli.models.linear_outlines import qwen3_next_linear

        return qwen3_next_linear(config, model, layer)
    block, p = f"layers.{layer}", f"layers.{layer}.self_attn"
    attn = model.get_submodule(p)
    h, hd = config.num_attention_heads, attn.head_dim
    rope, frequencies = _rope(config, model.rotary_emb, hd, "half")
    cut = {"query": tuple((2 * hd * j, 2 * hd * j + hd) for j in range(h)),
           "gate": tuple((2 * hd * j + hd, 2 * hd * (j + 1)) for j in range(h))}
    keys = {**_heads(config), **_qkvo(model, p)}
    keys["weights"].update({k: Param(f"{p}.q_proj.weight", "torch", c) for k, c in cut.items()})
    if "bias" in keys and "query" in keys["bias"]:
        keys["bias"].update({k: Param(f"{p}.q_proj.bias", columns=c) for k, c in cut.items()})
    norm = model.get_submodule(f"{block}.input_layernorm")
    keys.update({**_scale(attn.scaling, hd), "mask": "causal",
                 "pre_norm": {"kind": "rms", "gamma": _plus_one(model, f"{block}.input_layernorm"),
                              "eps": epsilon(norm)},
                 "rope": rope, "residual": True,
                 "qk_norm": {"kind": "rms", "gamma": {"query": _plus_one(model, f"{p}.q_norm"),
                                                      "key": _plus_one(model, f"{p}.k_norm")},
                             "eps": epsilon(attn.q_norm)}})
    return Plan(keys, block, f"{p}.o_proj", pre_norm=f"{block}.input_layernorm",
                residual=(f"{block}.post_attention_layernorm", "input"),
                float64={"install": (float64_switches.keep_float64, float64_switches.eager_experts,
                                     float64_switches.gated_norms64,
                                     float64_switches.rope64({None: frequencies}, "half")),
                         "not_rms": ("Qwen3NextRMSNormGated",)},
                limit=config.max_position_embeddings,
                attentions_index=config.layer_types[:layer].count("full_attention"))  # (only these give attentions)
