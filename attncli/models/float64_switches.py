"""The float64 switches of the families of :mod:`attncli.models.other_outlines`, installed by
:func:`attncli.models.capture.float64_steps` (``plan.float64["install"]``): each returns handles with ``remove``.

- :func:`keep_float64`: ``Tensor.float()`` leaves a float64 tensor as it is (ModernBERT's and Cohere's
  ``apply_rotary_pos_emb`` and MPT's softmax call it on the queries, keys and scores);
- :func:`layer_norms64`: a LayerNorm written with ``variance_epsilon`` (Cohere's, without β, over the last axis,
  or the heads × d_k of its qk norm) computed in float64, ``γ · (x − mean) / √(var + ε)``;
- :func:`rope64`: a rotary module's cos and sin from float64 frequencies (and attention factor), in its own layout
  (``half``: the angles written twice, as Llama, or once, as gpt-oss; ``interleaved``: each angle twice in a row,
  as Cohere), by layer type (ModernBERT, Gemma 3); llama_outline's scaled ropes use it too;
- :func:`sums64`: ``torch.sum(x, dtype=torch.float32)`` keeps a float64 ``x`` in float64 (DiffLlama's λ).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class _Undo:
    def __init__(self, undo: Callable[[], None]) -> None:
        self.remove = undo


def keep_float64(torch: Any, model: Any) -> list[Any]:
    original = torch.Tensor.float

    def float_(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self if self.dtype == torch.float64 else original(self, *args, **kwargs)

    torch.Tensor.float = float_
    return [_Undo(lambda: setattr(torch.Tensor, "float", original))]


def layer_norms64(names: tuple[str, ...]) -> Callable[[Any, Any], list[Any]]:
    """The modules whose class is named in ``names`` (LayerNorms holding ``variance_epsilon``), in float64."""

    def hook(module: Any, args: tuple, output: Any) -> Any:
        x = args[0]
        centred = x - x.mean(-1, keepdim=True)
        return module.weight * (centred * (centred.pow(2).mean(-1, keepdim=True) + module.variance_epsilon).rsqrt())

    def install(torch: Any, model: Any) -> list[Any]:
        return [m.register_forward_hook(hook, prepend=True) for m in model.modules() if type(m).__name__ in names]

    return install


def rope64(table: dict[str | None, list[float]] | Callable[[str | None, float], tuple[Any, float]],
           layout: str = "half") -> Callable[[Any, Any], list[Any]]:
    """An installer for capture: every rotary module's cos and sin of p·f in float64, times the attention factor a.

    ``table``: the frequencies f by layer type (None when the model has one set; a = 1), or a function of the layer
    type and the positions' end P giving (f, a) (``rope.scaling``'s dynamic and longrope depend on P). ``layout``:
    ``interleaved``, each angle twice in a row (Cohere); ``half``, the angles written twice (Llama), or once where
    the module makes one per pair (gpt-oss)."""
    if isinstance(table, dict):
        fixed = table
        table = lambda kind, top: (fixed[None if None in fixed else kind], 1.0)  # noqa: E731

    def install(torch: Any, model: Any) -> list[Any]:
        def hook(module: Any, args: tuple, kwargs: dict, output: Any) -> Any:
            x = args[0] if args else kwargs["x"]
            position_ids = args[1] if len(args) > 1 else kwargs["position_ids"]
            kind = args[2] if len(args) > 2 else kwargs.get("layer_type")
            frequencies, a = table(kind, float(position_ids.max()) + 1)
            angles = position_ids.to(torch.float64)[..., None] * torch.as_tensor(frequencies, dtype=torch.float64)
            if layout == "interleaved":
                angles = torch.repeat_interleave(angles, 2, dim=-1)
            elif output[0].shape[-1] == 2 * angles.shape[-1]:
                angles = torch.cat((angles, angles), dim=-1)
            return (angles.cos() * a).to(x.dtype), (angles.sin() * a).to(x.dtype)

        return [module.register_forward_hook(hook, with_kwargs=True, prepend=True) for module in model.modules()
                if type(module).__name__.endswith("RotaryEmbedding")]

    return install


def mpt_alibi64(torch: Any, model: Any) -> list[Any]:
    """MPT's own ALiBi tensor (its slopes, its order of heads), computed in float64 instead of float32."""
    import math

    def alibi(num_heads: int, sequence_length: int, alibi_bias_max: int = 8, device: Any = None) -> Any:
        distance = torch.arange(1 - sequence_length, 1, dtype=torch.float64).view(1, 1, 1, sequence_length)
        power = 2 ** math.ceil(math.log2(num_heads))
        slopes = 1.0 / torch.pow(2, torch.arange(1, power + 1, dtype=torch.float64) * (alibi_bias_max / power))
        slopes = slopes.view(1, power, 1, 1)
        if power != num_heads:
            slopes = torch.concat([slopes[:, 1::2, ...], slopes[:, ::2, ...]], dim=1)[:, :num_heads, ...]
        return (distance * slopes).squeeze(0)

    model.build_mpt_alibi_tensor = alibi
    return [_Undo(lambda: delattr(model, "build_mpt_alibi_tensor"))]


def keep_float64_ints(torch: Any, model: Any) -> list[Any]:
    """:func:`keep_float64`, and whole numbers made float64 too (Llama 4's positions in its query temperature)."""
    original = torch.Tensor.float

    def float_(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.dtype == torch.float64:
            return self
        return self.to(torch.float64) if not self.is_floating_point() and not self.is_complex() else \
            original(self, *args, **kwargs)

    torch.Tensor.float = float_
    return [_Undo(lambda: setattr(torch.Tensor, "float", original))]


def complex_rope64(frequencies: list[float]) -> Callable[[Any, Any], list[Any]]:
    """Llama 4's rotary module: e^(i·p·f) as complex128, from float64 frequencies."""

    def install(torch: Any, model: Any) -> list[Any]:
        f = torch.tensor(frequencies, dtype=torch.float64)

        def hook(module: Any, args: tuple, kwargs: dict, output: Any) -> Any:
            position_ids = args[1] if len(args) > 1 else kwargs["position_ids"]
            angles = position_ids.to(torch.float64)[..., None] * f
            return torch.polar(torch.ones_like(angles), angles)

        rotary = [m for m in model.modules() if type(m).__name__.endswith("RotaryEmbedding")]
        return [m.register_forward_hook(hook, with_kwargs=True) for m in rotary]

    return install


def eager_experts(torch: Any, model: Any) -> list[Any]:
    """Mixture-of-experts layers run by their plain PyTorch loop (torch's grouped matmul has no float64)."""
    configs = {id(m.config): m.config for m in model.modules() if hasattr(getattr(m, "config", None),
                                                                           "_experts_implementation")}
    before = {key: config._experts_implementation for key, config in configs.items()}
    for config in configs.values():
        config._experts_implementation = "eager"

    def undo() -> None:
        for key, config in configs.items():
            config._experts_implementation = before[key]

    return [_Undo(undo)]


GATED_NORMS = ("Qwen3NextRMSNormGated", "KimiLinearRMSNormGated")


def gated_norms64(torch: Any, model: Any) -> list[Any]:
    """The gated RMSNorm of Qwen3-Next's and Kimi Linear's linear-attention layers, γ · x / √(mean(x²) + ε) ·
    act(gate) (its ``activation``: silu or sigmoid), in float64 (capture's RMSNorm switch, which would drop the gate,
    leaves it: ``not_rms``)."""

    def hook(module: Any, args: tuple, kwargs: dict, output: Any) -> Any:
        x, gate = (args + (kwargs.get("hidden_states"), kwargs.get("gate")))[:2] if len(args) < 2 else args[:2]
        normed = x * (x.pow(2).mean(-1, keepdim=True) + module.variance_epsilon).rsqrt()
        act = torch.sigmoid if module.activation == "sigmoid" else torch.nn.functional.silu
        return module.weight * normed * act(gate)

    return [m.register_forward_hook(hook, with_kwargs=True, prepend=True) for m in model.modules()
            if type(m).__name__ in GATED_NORMS]


def sums64(torch: Any, model: Any) -> list[Any]:
    """``torch.sum(x, …, dtype=torch.float32)`` of a float64 ``x`` summed in float64 (DiffLlama's λ = e^(λ_q·λ_k))."""
    original = torch.sum

    def sum_(x: Any, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        if dtype == torch.float32 and getattr(x, "dtype", None) == torch.float64:
            dtype = None
        return original(x, *args, **kwargs) if dtype is None else original(x, *args, dtype=dtype, **kwargs)

    torch.sum = sum_
    return [_Undo(lambda: setattr(torch, "sum", original))]


def rules64(module_name: str, names: tuple[str, ...]) -> Callable[[Any, Any], list[Any]]:
    """An installer for capture: the delta-rule functions ``names`` of transformers' ``module_name`` replaced, while
    the model runs, by their own source with its float32 casts made float64 (the rule computed as written, in
    float64; the layers call them by their module's global names)."""

    def install(torch: Any, model: Any) -> list[Any]:
        import importlib
        import inspect

        module = importlib.import_module(module_name)
        before = {name: getattr(module, name) for name in names}
        for name, function in before.items():
            source = "\n".join(line for line in inspect.getsource(_plain(function)).splitlines()
                               if not line.startswith("@"))
            space = dict(vars(module))
            exec(source.replace("torch.float32", "torch.float64"), space)  # transformers' own function, in float64
            setattr(module, name, space[name])
        return [_Undo(lambda: [setattr(module, name, f) for name, f in before.items()])]

    return install


def _plain(function: Any) -> Any:
    """The function itself, under the hub-kernel wrapper transformers puts on it when the ``kernels`` package is
    installed (an ``nn.Module`` named ``Func`` whose forward calls it: its closure's ``func``)."""
    import inspect

    if inspect.isfunction(function):
        return function
    return inspect.getclosurevars(type(function).forward).nonlocals["func"]


def lightning_decays64(torch: Any, model: Any) -> list[Any]:
    """MiniMax's lightning layers: the slopes (get_slope_rate, made in float32) and the decays made from them
    (decay_factors) computed in float64 from the same formula, as attncli's ``slopes: {layer, layers}``."""
    names = ("slope_rate", "query_decay", "key_decay", "diagonal_decay")
    saved = []
    for module in model.modules():
        if type(module).__name__ != "MiniMaxLightningAttention":
            continue
        heads = module.num_attention_heads
        rate = (1 / 2 ** (8 / heads)) ** torch.arange(1, heads + 1, dtype=torch.float64)
        rate = (rate * (1 - module.layer_idx / (module.num_hidden_layers - 1 + 1e-5) + 1e-5))[:, None, None]
        saved.append((module, {name: getattr(module, name).clone() for name in names}))
        exact = (rate, *module.decay_factors(rate))
        with torch.no_grad():
            for name, value in zip(names, exact):
                getattr(module, name).copy_(value)

    def undo() -> None:
        with torch.no_grad():
            for module, values in saved:
                for name, value in values.items():
                    getattr(module, name).copy_(value)

    return [_Undo(undo)]
