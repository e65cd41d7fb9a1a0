"""The model run on the sentence, and layer L's numbers caught where the model makes them.

Forward hooks catch X (the layer's input), X̂ (its pre-norm's output), Y (the output projection's output), R
(the residual, where the next module reads it) and N (the Add & Norm's output); the attention probabilities
are the model's own ``output_attentions``.

In float64, transformers still computes a few steps in float32 (an error near 1e-8, where the document and
the model must agree far closer).  While the model runs, :func:`float64_steps` computes those steps in float64
without changing what they compute:

- softmax: ``softmax(x, dtype=torch.float32)`` keeps a float64 ``x`` in float64 (Llama, Mistral, Qwen2, BLOOM);
- RMSNorm (Llama, Mistral, Qwen2, T5): the output of every module with a ``variance_epsilon`` is recomputed in
  float64, ``γ · x / √(mean(x²) + ε)``;
- RoPE: the rotary module's cos and sin come from float64 frequencies and angles: θ^(−2i/d), as attncli
  computes them (``rope: {base: θ}``), or the module's own ``inv_freq`` for scaled RoPE types;
- ALiBi (BLOOM): the slopes and the bias slope · j in float64 (the ALiBi paper's slopes, as attncli's
  ``alibi: true``);
- GPT-2's ``reorder_and_upcast_attn`` (a float32 path for half precision) is turned off.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from attncli.core.errors import AttnError
from attncli.models.family import Plan


def run(torch: Any, model: Any, plan: Plan, inputs: dict[str, Any], float64: bool, attentions: str,
        layer: int) -> dict[str, np.ndarray]:
    """The model's numbers of the layer: inputs, normalized_inputs, output, residual, normalized, weights."""
    caught: dict[str, Any] = {}
    handles = []

    def keep(name: str, value: Any) -> None:
        caught.setdefault(name, value[0] if isinstance(value, tuple) else value)  # (the first call: this layer)

    def on(path: str, hook: Any, pre: bool = False) -> None:
        module = model.get_submodule(path)
        if pre:
            handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))
        else:
            handles.append(module.register_forward_hook(hook))

    on(plan.block, lambda m, args, kwargs: keep("inputs", args[0] if args else kwargs["hidden_states"]), pre=True)
    on(plan.output, lambda m, args, out: keep("output", out))
    if plan.pre_norm:
        on(plan.pre_norm, lambda m, args, out: keep("normalized_inputs", out))
    if plan.normalized:
        on(plan.normalized, lambda m, args, out: keep("normalized", out))
    if plan.residual:
        path, where = plan.residual
        if where == "input":
            on(path, lambda m, args, kwargs: keep("residual", args[0] if args else kwargs["hidden_states"]), pre=True)
        else:
            on(path, lambda m, args, out: keep("residual", out))
    try:
        with float64_steps(torch, model, plan) if float64 else _nothing():
            with torch.no_grad():
                result = model(**inputs, output_attentions=True)
    except (RuntimeError, ValueError, TypeError, IndexError) as e:  # the model itself refuses (shapes, a config)
        detail = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise AttnError("capture.model_failed_run_sentence", detail=detail) from None
    finally:
        for handle in handles:
            handle.remove()
    if not plan.linear:  # (linear attention has no attention probabilities)
        caught["weights"] = getattr(result, attentions)[layer if plan.attentions_index is None
                                                        else plan.attentions_index]
    return {name: value.detach()[0].double().numpy() for name, value in caught.items()}


@contextmanager
def _nothing() -> Iterator[None]:
    yield


@contextmanager
def float64_steps(torch: Any, model: Any, plan: Plan) -> Iterator[None]:
    """While the model runs: its float32 steps in float64 (see the module's docstring)."""
    functional = torch.nn.functional
    softmax = functional.softmax

    def softmax64(input: Any, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Any:
        return softmax(input, dim=dim, dtype=None if input.dtype == torch.float64 else dtype)

    handles = []
    upcast = []
    for module in model.modules():
        if hasattr(module, "variance_epsilon") and getattr(module, "weight", None) is not None and \
                type(module).__name__ not in plan.float64.get("not_rms", ()):  # (a LayerNorm: other_outlines)
            handles.append(module.register_forward_hook(_rms64, prepend=True))  # (before the hooks that catch X̂)
        elif hasattr(module, "inv_freq") and "rope" in plan.float64:
            handles.append(module.register_forward_hook(_rope64(torch, plan.float64["rope"]), with_kwargs=True))
        elif "alibi" in plan.float64 and hasattr(module, "query_key_value"):
            handles.append(module.register_forward_pre_hook(_alibi64(torch, plan.float64["alibi"]), with_kwargs=True))
        if getattr(module, "reorder_and_upcast_attn", False):
            module.reorder_and_upcast_attn = False
            upcast.append(module)
    for install in plan.float64.get("install", ()):  # a family's own float64 switches (llama_outline, float64_switches)
        handles += install(torch, model)
    functional.softmax = softmax64
    try:
        yield
    finally:
        functional.softmax = softmax
        for handle in handles:
            handle.remove()
        for module in upcast:
            module.reorder_and_upcast_attn = True


def _rms64(module: Any, args: tuple, output: Any) -> Any:
    x = args[0]
    return module.weight * (x * (x.pow(2).mean(-1, keepdim=True) + module.variance_epsilon).rsqrt())


def _rope64(torch: Any, rope: Any) -> Any:
    """cos and sin of the angles p·f in float64, written twice (rotate_half's layout)."""
    from attncli.core.positions import rope_frequencies

    if isinstance(rope, tuple):  # ("base", θ, d): attncli's own frequencies
        frequencies = torch.from_numpy(rope_frequencies(rope[1], rope[2]))
    else:
        frequencies = torch.tensor(rope, dtype=torch.float64)

    def hook(module: Any, args: tuple, kwargs: dict, output: Any) -> Any:
        x = args[0] if args else kwargs["x"]
        position_ids = args[1] if len(args) > 1 else kwargs["position_ids"]
        angles = position_ids.to(torch.float64)[..., None] * frequencies
        emb = torch.cat((angles, angles), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    return hook


def _alibi64(torch: Any, heads: int) -> Any:
    """BLOOM's alibi argument (batch·h, 1, m), slope · j, with the slopes and the product in float64."""
    from attncli.core.bias import alibi_slopes

    slopes = torch.from_numpy(alibi_slopes(heads))

    def hook(module: Any, args: tuple, kwargs: dict) -> Any:
        alibi = kwargs["alibi"]
        m = alibi.shape[-1]
        exact = (slopes[:, None, None] * torch.arange(m, dtype=torch.float64)).repeat(alibi.shape[0] // heads, 1, 1)
        return args, {**kwargs, "alibi": exact.to(alibi.dtype)}

    return hook
