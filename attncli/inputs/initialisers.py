"""Seeded random matrices: ``{random: xavier, seed: 0, shape: [768, 64]}``, with torch.nn.init's meanings."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe, shape_str, unknown_key
from attncli.core.memory import ensure_fits, size_text
from attncli.inputs.values import finite_number

RANDOM_KINDS = ("normal", "uniform", "xavier", "kaiming")
_RANDOM_KEYS = ("random", "seed", "shape", "mean", "std", "low", "high", "gain")
MAX_RANDOM_BYTES = 2 << 30  # one generated matrix; a larger one belongs in a .npy file


def random_matrix(spec: dict, shape_hint: tuple[int, ...] | None) -> np.ndarray:
    """``{random: xavier, seed: 0, shape: [768, 64]}`` with torch.nn.init's meanings.

    Our matrices are ``d_in × d_out`` (rows are inputs), so fan_in is the number
    of rows and fan_out the number of columns, as for the same ``nn.Linear``.
    """
    for key in spec:
        if key not in _RANDOM_KEYS:
            raise unknown_key(key, _RANDOM_KEYS)
    kind = spec.get("random")
    if kind not in RANDOM_KINDS:
        raise AttnError("initialisers.random_not_initialiser_expected_one", kind=describe(kind),
                        random_kinds=', '.join(RANDOM_KINDS))
    seed = spec.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise AttnError("initialisers.seed_not_whole_number", seed=describe(seed))
    shape = _random_shape(spec.get("shape"), shape_hint)
    need = 8 * math.prod(shape)  # a Python int: exact, however large the sizes
    if need > MAX_RANDOM_BYTES:
        raise AttnError(
            "initialisers.shape_would_need_memory_more", shape=shape_str(shape), size_text=size_text(need),
            size_text_2=size_text(MAX_RANDOM_BYTES)
        )
    ensure_fits(need + math.prod(shape), f"shape: {shape_str(shape)}")  # the numbers, and the test that they are finite
    params = {k: _param(spec, k) for k in ("mean", "std", "low", "high", "gain") if k in spec}
    for key in ("std", "gain"):
        if params.get(key, 0.0) < 0:
            raise AttnError("initialisers.negative_must", key=key, spec=describe(spec[key]))
    if kind == "uniform" and params.get("low", 0.0) > params.get("high", 1.0):
        raise AttnError("initialisers.low_above_high", low=describe(spec.get('low', 0.0)),
                        high=describe(spec.get('high', 1.0)))
    if kind in ("xavier", "kaiming") and len(shape) < 2:
        raise AttnError("initialisers.random_needs_matrix_fan_fan", kind=kind, shape=shape_str(shape))
    with np.errstate(over="ignore", invalid="ignore"):
        values = _generate(kind, np.random.default_rng(seed), shape, params)
    if not np.isfinite(values).all():
        raise AttnError("initialisers.random_these_parameters_gives_numbers", kind=kind)
    return values


def _generate(kind: str, rng: np.random.Generator, shape: tuple[int, ...], params: dict[str, float]) -> np.ndarray:
    """The numbers, as torch.nn.init would draw them (fan_in = rows, fan_out = columns)."""
    if kind == "normal":
        return rng.normal(params.get("mean", 0.0), params.get("std", 1.0), shape)
    if kind == "uniform":
        low, high = params.get("low", 0.0), params.get("high", 1.0)
        if not math.isfinite(high - low):  # numpy cannot draw from a range wider than float64
            return np.full(shape, math.inf)
        return rng.uniform(low, high, shape)
    fan_in, fan_out = shape[-2], shape[-1]
    if kind == "xavier":
        bound = params.get("gain", 1.0) * math.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-bound, bound, shape) if math.isfinite(2 * bound) else np.full(shape, math.inf)
    return rng.normal(0.0, params.get("gain", math.sqrt(2.0)) / math.sqrt(fan_in), shape)


def _random_shape(shape: Any, hint: tuple[int, ...] | None) -> tuple[int, ...]:
    if shape is None:
        if hint is None:
            raise AttnError("initialisers.random_give_shape_e_g")
        return hint
    if not isinstance(shape, list) or not 1 <= len(shape) <= 3:
        raise AttnError("initialisers.shape_not_list_sizes_e", shape=describe(shape))
    for size in shape:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise AttnError("initialisers.shape_not_positive_whole_number", size=describe(size))
    return tuple(shape)


def _param(spec: dict, key: str) -> float:
    number = finite_number(spec[key])
    if number is None:
        raise AttnError("initialisers.not_finite_number_within_float64", key=key, spec=describe(spec[key]))
    return number
