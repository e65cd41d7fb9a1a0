"""DeepSeek V2, V3 and V3.2 (and Kimi K2 where its folder declares DeepSeek V3): multi-head latent attention, each
layer as the keys of a document (a :class:`Plan`) with ``latent``; V3.2's with its lightning indexer (``indexer``).

Their layer is Llama's outline (``layers.L.self_attn``, an RMSNorm pre-norm, a causal mask, a residual) with the
latent projections: ``q_proj`` (or ``q_a_proj``, ``q_a_layernorm``, ``q_b_proj``), ``kv_a_proj_with_mqa``,
``kv_a_layernorm``, ``kv_b_proj``, ``o_proj``; the rotary part is the last ``qk_rope_head_dim`` numbers of each
head: V2 turns complex pairs in place (``interleaved``), V3 rotate_half's halves, or with ``rope_interleave`` the
pairs written as halves (``interleaved_halves``).  The scale is the module's (1/√d_k times YaRN's mscale²).

While capture runs in float64, :func:`rope64` gives the rotary module float64 tables from the document's ``rope``
key (V2: its complex ``freqs_cis`` in complex128, and ``apply_rotary_emb`` turning in complex128 instead of
complex64).
"""

from __future__ import annotations

from typing import Any

from attncli.core.errors import AttnError
from attncli.models.family import Param, Plan, _scale, epsilon
from attncli.models.llama_outline import rope_hook, rope_key, rope_table

# model_type -> why extract cannot read the folder (it never runs code from a model folder)
REFUSED = {"kimi_k2": "latent_families.kimi_k2_refused"}  # (the message's id: the folder needs its own code)


def _linear(model: Any, path: str) -> tuple[Param, Param | None]:
    return Param(f"{path}.weight", "torch"), (Param(f"{path}.bias") if model.get_submodule(path).bias is not None
                                              else None)


def _rms(model: Any, path: str) -> dict[str, Any]:
    return {"kind": "rms", "gamma": Param(f"{path}.weight"),
            "eps": epsilon(model.get_submodule(path))}


def _latent(model: Any, p: str) -> dict[str, Any]:
    """``weights``, ``bias`` and ``latent`` of one DeepSeek attention module."""
    attn = model.get_submodule(p)
    weights, bias = {}, {}
    lora = getattr(attn, "q_proj", None) is None  # (DeepSeek-V3.2's attention has no q_proj at all)
    names = {"query_down": "q_a_proj", "query_up": "q_b_proj"} if lora else {"query": "q_proj"}
    names.update({"kv_down": "kv_a_proj_with_mqa", "kv_up": "kv_b_proj", "output": "o_proj"})  # (as computed)
    for key, name in names.items():
        weights[key], b = _linear(model, f"{p}.{name}")
        if b is not None:
            bias[key] = b
    latent = {"kv_norm": _rms(model, f"{p}.kv_a_layernorm")}
    if lora:
        latent["query_norm"] = _rms(model, f"{p}.q_a_layernorm")
    return {"latent": latent, "weights": weights, **({"bias": bias} if bias else {})}


def deepseek(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """DeepSeek V2 and V3: the latent projections, the rotary part last in each head, the module's scale."""
    block = f"layers.{layer}"
    p = f"{block}.self_attn"
    attn = model.get_submodule(p)
    d_r, d_k = int(attn.qk_rope_head_dim), int(attn.qk_head_dim)
    v2 = type(attn).__name__.startswith("DeepseekV2")
    rope = rope_key(config, d_r)
    style = "interleaved" if v2 else "interleaved_halves" if getattr(config, "rope_interleave", False) else "half"
    rope.update(dims=d_r, part="last", style=style)
    pre = model.get_submodule(f"{block}.input_layernorm")
    keys: dict[str, Any] = {"heads": config.num_attention_heads, "rope": rope, **_latent(model, p),
                            **_scale(attn.scaling, d_k), "mask": "causal",
                            "pre_norm": {"kind": "rms", "gamma": Param(f"{block}.input_layernorm.weight"),
                                         "eps": epsilon(pre)}, "residual": True}
    if getattr(config, "num_key_value_heads", config.num_attention_heads) != config.num_attention_heads:
        raise AttnError("latent_families.num_key_value_heads_differs_from_num_attention_heads_latent")
    install = rope64(rope, d_r) if v2 else rope_hook({None: (rope, d_r)})
    return Plan(keys, block, f"{p}.o_proj", pre_norm=f"{block}.input_layernorm",
                residual=(f"{block}.post_attention_layernorm", "input"), float64={"install": [install]},
                limit=config.max_position_embeddings)


class _Restore:
    """A module attribute put back on ``remove()`` (what capture calls on its hooks' handles)."""

    def __init__(self, owner: Any, name: str, value: Any):
        self.owner, self.name, self.old = owner, name, getattr(owner, name)
        setattr(owner, name, value)

    def remove(self) -> None:
        setattr(self.owner, self.name, self.old)


def rope64(rope: dict[str, Any], d_r: int) -> Any:
    """An installer for capture: DeepSeek V2's freqs_cis in complex128 from the document's ``rope`` key, and its
    ``apply_rotary_emb`` turning in complex128 (transformers turns in complex64, even in a float64 model)."""

    def install(torch: Any, model: Any) -> list[Any]:
        import sys

        def hook(module: Any, args: tuple, kwargs: dict, output: Any) -> Any:
            position_ids = args[1] if len(args) > 1 else kwargs["position_ids"]
            frequencies, a = rope_table(rope, d_r, float(position_ids.max()) + 1)
            angles = position_ids.to(torch.float64)[..., None] * torch.from_numpy(frequencies)
            return torch.polar(torch.ones_like(angles), angles) * a

        def turn(xq: Any, xk: Any, freqs_cis: Any) -> tuple[Any, Any]:
            def one(x: Any) -> Any:
                pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())
                return torch.view_as_real(pairs * freqs_cis.unsqueeze(1)).flatten(3).to(x.dtype)
            return one(xq), one(xk)

        rotary = [m for m in model.modules() if type(m).__name__ == "DeepseekV2RotaryEmbedding"]
        handles = [m.register_forward_hook(hook, with_kwargs=True, prepend=True) for m in rotary]
        modules = {sys.modules[type(m).__module__] for m in rotary}
        return handles + [_Restore(module, "apply_rotary_emb", turn) for module in modules]

    return install


def deepseek32(config: Any, model: Any, layer: int, stack: str) -> Plan:
    """DeepSeek-V3.2: V3's latent attention (its rotary pairs always interleaved, written as halves) after the
    lightning indexer, whose top-k keys mask it (``indexer``: wq_b from c_Q, wk with its LayerNorm k_norm,
    weights_proj; the model's own cos and sin, turned rotate_half's way)."""
    plan = deepseek(config, model, layer, stack)
    p = f"layers.{layer}.self_attn.indexer"
    ix = model.get_submodule(p)
    plan.keys["rope"]["style"] = "interleaved_halves"  # apply_rotary_pos_emb_interleave, with no config switch
    plan.keys["indexer"] = {
        "top_k": int(ix.index_topk), "heads": int(ix.n_heads), "d": int(ix.head_dim),
        "weights": {"query": Param(f"{p}.wq_b.weight", "torch"), "key": Param(f"{p}.wk.weight", "torch"),
                    "head_weights": Param(f"{p}.weights_proj.weight", "torch")},
        "key_norm": {"kind": "layer", "gamma": Param(f"{p}.k_norm.weight"), "beta": Param(f"{p}.k_norm.bias"),
                     "eps": epsilon(ix.k_norm)}}
    plan.float64.setdefault("install", []).append(indexer64)
    return plan


def indexer64(torch: Any, model: Any) -> list[Any]:
    """An installer for capture: each DeepseekV32Indexer's forward in float64 (transformers casts q, k and the head
    weights to float32), its top-k by attncli's rule (a stable sort: of equal scores the lower key index first;
    torch.topk keeps any of them), so that the model's selection is the document's."""

    def forward64(module: Any) -> Any:
        from transformers.models.deepseek_v32 import modeling_deepseek_v32 as ds32

        def forward(hidden_states, q_resid, position_embeddings, attention_mask, position_ids=None, cache=None,
                    **kwargs):
            b, s, _ = hidden_states.shape
            rope, dims = module.qk_rope_head_dim, module.head_dim
            q = module.wq_b(q_resid).view(b, s, module.n_heads, dims)
            q_rot, q_pass = torch.split(q, [rope, dims - rope], dim=-1)
            k = module.k_norm(module.wk(hidden_states)).unsqueeze(2)
            k_rot, k_pass = torch.split(k, [rope, dims - rope], dim=-1)
            q_rot, k_rot = ds32.apply_rotary_pos_emb(q_rot, k_rot, *position_embeddings, unsqueeze_dim=2)
            q, k = torch.cat([q_rot, q_pass], dim=-1), torch.cat([k_rot, k_pass], dim=-1).squeeze(2)
            if cache is not None:
                k = cache.update_indexer(k, module.layer_idx)
            scores = torch.relu(torch.matmul(q, k.transpose(-1, -2).unsqueeze(1)) * module.softmax_scale)
            weights = module.weights_proj(hidden_states) * module.n_heads**-0.5
            table = torch.matmul(weights.unsqueeze(-2), scores).squeeze(-2)  # (b, s, t)
            if attention_mask.dtype == torch.bool:
                table = table.masked_fill(~attention_mask, float("-inf"))
            else:
                table = table + attention_mask
            top = min(module.index_topk, table.shape[-1])
            order = torch.sort(table, dim=-1, descending=True, stable=True).indices
            return order[..., :top].to(torch.int32)

        return forward

    indexers = [m for m in model.modules() if type(m).__name__ == "DeepseekV32Indexer"]
    return [_Restore(m, "forward", forward64(m)) for m in indexers]
