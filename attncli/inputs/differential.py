"""The document key ``differential`` (differential attention, DiffLlama), read and checked against the heads.

    differential:
      lambda_q1: [...]      # d numbers shared by every head pair (DiffLlama's), or (h/2) × d, a row per pair;
      lambda_k1: [...]      #   λ_q1 and λ_k1 of one shape, λ_q2 and λ_k2 of one shape; all four, or none (λ = λ_init)
      lambda_q2: [...]
      lambda_k2: [...]
      lambda_init: 0.2      # or
      layer: 0              # λ_init = 0.8 − 0.6·e^(−0.3·layer), counted from 0 (transformers' layer_idx)
      eps: 1e-5             # the RMSNorm of each pair's output (DiffLlama's rms_norm_eps); default 1e-5

The maths is :mod:`attncli.core.differential`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncli.core.differential import EPS, Differential, lambda_init_of
from attncli.core.errors import AttnError, describe, shape_str
from attncli.inputs.source import MatrixSource
from attncli.inputs.values import mapping_of, number_of

VECTORS = ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")
DIFFERENTIAL_KEYS = (*VECTORS, "lambda_init", "layer", "eps")


def read_differential(builder: MatrixSource, value: Any, heads: int) -> Differential | None:
    """``differential:`` as a :class:`Differential`, or None when left out or ``false``."""
    if value is None or value is False:
        return None
    value = mapping_of(value, "differential", DIFFERENTIAL_KEYS,
                       "a mapping with lambda_init or layer, and lambda_q1, lambda_k1, lambda_q2, lambda_k2")
    if heads % 2:
        raise AttnError("differential.takes_heads_pairs_head_p",
                        "differential", heads=heads)
    if builder.data.get("normalize", "softmax") != "softmax":
        raise AttnError("differential.subtracts_one_softmax_from_another",
                        "differential", get=builder.data.get('normalize'))
    init, layer = _lambda_init(value)
    vectors = _vectors(builder, value, heads // 2)
    eps = number_of(value.get("eps", EPS), "differential.eps")
    made = Differential(*vectors, lambda_init=init, eps=eps, layer=layer)
    with np.errstate(over="ignore", invalid="ignore"):
        lam = made.lambdas(heads // 2)
    bad = np.flatnonzero(~np.isfinite(lam))
    if len(bad):
        raise AttnError("differential.gives_e_q1_k1_e", "differential", lam=lam[bad[0]], bad=bad[0] + 1)
    return made


def _lambda_init(value: dict) -> tuple[float, int | None]:
    """λ_init, from ``lambda_init`` or from ``layer`` (exactly one of them), and the layer when given."""
    if value.get("lambda_init") is None and value.get("layer") is None:
        raise AttnError("differential.needs_lambda_init_number_layer_init",
                        "differential")
    if value.get("lambda_init") is not None and value.get("layer") is not None:
        raise AttnError("differential.gives_both_lambda_init_layer_which",
                        "differential")
    if value.get("layer") is not None:
        layer = int(value["layer"]) if isinstance(value["layer"], np.integer) else value["layer"]
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer <= 1_000_000:
            raise AttnError("differential.not_whole_number_layer_counted",
                            "differential.layer", layer=describe(layer))
        return lambda_init_of(layer), layer
    return number_of(value["lambda_init"], "differential.lambda_init", positive=False), None


def _vectors(builder: MatrixSource, value: dict, pairs: int) -> tuple[np.ndarray, ...]:
    """The four λ vectors: each (d,) or (p, d), the two of each product alike; zeros when none is given."""
    given = [name for name in VECTORS if value.get(name) is not None]
    if not given:
        return (None,) * len(VECTORS)
    if len(given) < len(VECTORS):
        missing = ", ".join(name for name in VECTORS if name not in given)
        raise AttnError("differential.gives_but_not_all_four",
                        "differential", given=', '.join(given), missing=missing)
    out = [_vector(builder, f"differential.{name}", value[name], pairs) for name in VECTORS]
    for q, k, i in ((out[0], out[1], 1), (out[2], out[3], 2)):
        if q.shape != k.shape:
            raise AttnError("differential.but_lambda_q_they_multiplied_number", f"differential.lambda_k{i}",
                            k_shape=shape_str(k.shape), i=i, q_shape=shape_str(q.shape))
    return tuple(out)


def _vector(builder: MatrixSource, key: str, value: Any, pairs: int) -> np.ndarray:
    v = builder.read(key, value)
    if v.ndim == 2 and v.shape[0] == 1 and pairs != 1:  # one row: a vector
        v = v.reshape(-1)
    if v.ndim == 2 and v.shape[0] != pairs or v.ndim not in (1, 2):
        raise AttnError("differential.expected_d_numbers_shared_head", key, v_shape=shape_str(v.shape), pairs=pairs,
                        value=2 * pairs)
    return np.ascontiguousarray(v, dtype=np.float64)
