"""What a model family's plan is made of: the document keys of one attention layer, each weight a :class:`Param`,
and the hook points (:class:`Plan`); a :class:`Family` is how a model type makes its plan.

The families themselves are in :mod:`attncli.models.families` (the registry, with the encoders, GPT-2, Llama,
BLOOM and T5), :mod:`attncli.models.llama_outline`, :mod:`attncli.models.other_outlines` and
:mod:`attncli.models.latent_families`; they all build their plans from the parts here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

STACKS = ("encoder", "decoder")


@dataclass(frozen=True)
class Param:
    """One of the model's parameters, as the document reads it from the checkpoint."""

    name: str  # relative to the base model, e.g. encoder.layer.3.attention.self.query.weight
    layout: str = "rows"  # torch: an nn.Linear.weight (transposed on reading)
    columns: tuple[tuple[int, int], ...] = ()  # the blocks kept (all when empty), side by side


@dataclass
class Plan:
    """Layer L of one model: the document's keys and the hook points."""

    keys: dict[str, Any]  # heads, weights, bias, pre_norm, rope, mask, score_bias, … (Params inside)
    block: str  # the layer: its input is X
    output: str  # the attention's output projection: its output is Y
    pre_norm: str | None = None  # its output is X̂
    residual: tuple[str, str] | None = None  # (module, "input" | "output"): where R = X + Y is seen
    normalized: str | None = None  # its output is N = LayerNorm(R) (post-norm models)
    float64: dict[str, Any] = field(default_factory=dict)  # what capture switches to float64 (rope, alibi)
    limit: int | None = None  # the model's positions (None: relative positions, no limit)
    attentions_index: int | None = None  # its place in output_attentions when not the layer's (Qwen3-Next)
    linear: bool = False  # a layer of linear attention: keys is {"linear": …} (docs/format.md Part 4), X its input
    after_norm: bool = False  # X is what enters the attention module, after the layer's input norm (MiniMax)


@dataclass(frozen=True)
class Family:
    model_class: str  # the transformers class that loads the base model
    layers: Callable[[Any], int]
    plan: Callable[[Any, Any, int, str], Plan]
    attentions: str = "attentions"  # the field of the model's output holding the attention probabilities


def _linear(module: str, has_bias: bool) -> tuple[Param, Param | None]:
    return Param(f"{module}.weight", "torch"), Param(f"{module}.bias") if has_bias else None


def _projections(model: Any, names: dict[str, str]) -> dict[str, Any]:
    """``weights`` and ``bias`` of four nn.Linear modules (query, key, value, output): biases where they exist."""
    weights, bias = {}, {}
    for key, path in names.items():
        weights[key], b = _linear(path, model.get_submodule(path).bias is not None)
        if b is not None:
            bias[key] = b
    return {"weights": weights, **({"bias": bias} if bias else {})}


def _scale(scaling: float, d_k: int) -> dict[str, Any]:
    """The ``scale`` key: nothing for 1/√d_k, none for 1, else the number."""
    if scaling == 1.0:
        return {"scale": "none"}
    if abs(scaling - d_k**-0.5) <= 1e-15:
        return {}
    return {"scale": float(scaling)}


def epsilon(module: Any) -> float:
    """A norm module's ε: ``eps`` (torch's own norms, and transformers' until its classes renamed it) or
    ``variance_epsilon`` (transformers' RMSNorms; Gemma 3's and 4's and Llama 4's from 5.25)."""
    return float(module.eps if hasattr(module, "eps") else module.variance_epsilon)


def _layer_norm(module: Any, path: str) -> dict[str, Any]:
    return {"gamma": Param(f"{path}.weight"), "beta": Param(f"{path}.bias"), "eps": epsilon(module)}
