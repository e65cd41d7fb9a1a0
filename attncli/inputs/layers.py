"""The document's optional layers around attention (positional, score, normalize, add_norm).

Read and checked here, beside :mod:`attncli.inputs.builder`, so the core spec stays short:

    positional: sinusoidal          # or an n × d_model matrix, added to the inputs first
    score: additive                 # e = vᵀ·tanh(Q·W₁ + K·W₂), with weights.w1, w2, v
    normalize: sum                  # softmax (default) · sum · none
    add_norm: true                  # or {gamma, beta, eps}: LayerNorm(X + output)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe, shape_str, shorten
from attncli.core.positions import sinusoidal
from attncli.core.softmax import NORMALIZERS
from attncli.inputs.source import MatrixSource
from attncli.inputs.values import finite_number

SCORES = ("dot", "additive")
ADDITIVE_WEIGHTS = ("w1", "w2", "v")
LAYER_NORM_EPS = 1e-5  # torch.nn.LayerNorm's default


def read_layers(builder: MatrixSource, n: int, d_model: int, h: int, d_k: int, d_out: int) -> dict[str, Any]:
    """The Spec fields of the optional layers, each checked against the core sizes."""
    data = builder.data
    fields: dict[str, Any] = {}
    fields["positional"], fields["positional_name"] = _positional(builder, data.get("positional"), n, d_model)
    fields["score"] = _choice(data.get("score", "dot"), SCORES, "score")
    fields["normalize"] = _choice(data.get("normalize", "softmax"), NORMALIZERS, "normalize")
    given = [name for name in ADDITIVE_WEIGHTS if builder.weights.get(name) is not None]
    if fields["score"] == "additive":
        fields.update(_additive(builder, h, d_k))
    elif given:
        raise AttnError("layers.only_used_score_additive", f"weights.{given[0]}")
    fields["add_norm"] = _add_norm(builder, data.get("add_norm"), d_model, d_out)
    return fields


def _choice(value: Any, choices: tuple[str, ...], key: str) -> str:
    if not isinstance(value, str) or value not in choices:
        shown = repr(shorten(value)) if isinstance(value, str) else describe(value)
        raise AttnError("layers.not_one", key, shown=shown, choices=', '.join(choices))
    return value


def _positional(builder: MatrixSource, value: Any, n: int, d_model: int) -> tuple[np.ndarray | None, str]:
    word = value if isinstance(value, str) else None  # a numpy array (Python API) is never compared with a word
    if value is None or word == "none" or value is False:
        return None, "none"
    if word == "sinusoidal":
        return sinusoidal(n, d_model), "sinusoidal"
    p = builder.read("positional", value, (n, d_model))
    if p.shape != (n, d_model):
        raise AttnError("layers.but_inputs_need_same_shape", "positional", p_shape=shape_str(p.shape), n=n,
                        d_model=d_model)
    return p, "matrix"


def _additive(builder: MatrixSource, h: int, d_k: int) -> dict[str, np.ndarray]:
    """W₁, W₂ as (h, d_k, d_a) and v as (h, d_a); 2-D/1-D ones are shared by every head."""
    values = {name: builder.weights.get(name) for name in ADDITIVE_WEIGHTS}
    for name, value in values.items():
        if value is None:
            raise AttnError("layers.score_additive_needs_weights_w1", "weights", name=name)
    w_1 = _per_head(builder.read("weights.w1", values["w1"], (d_k, d_k)), h, d_k, "weights.w1")
    d_a = w_1.shape[2]
    w_2 = _per_head(builder.read("weights.w2", values["w2"], (d_k, d_a)), h, d_k, "weights.w2")
    if w_2.shape[2] != d_a:
        raise AttnError("layers.has_columns_but_weights_w1", "weights.w2", shape=w_2.shape[2], d_a=d_a)
    v = builder.read("weights.v", values["v"], (d_a,))
    if v.ndim == 2 and v.shape[0] in (1, h) and v.shape[1] == d_a:
        v = np.broadcast_to(v, (h, d_a)).copy()
    elif v.ndim == 1 and v.shape[0] == d_a:
        v = np.tile(v, (h, 1))
    else:
        raise AttnError("layers.but_needs_length_d_a_one",
                        "weights.v", v_shape=shape_str(v.shape), d_a=d_a, h=h, d_a_2=d_a)
    return {"w_1": w_1, "w_2": w_2, "v_a": v}


def _per_head(w: np.ndarray, h: int, d_k: int, key: str) -> np.ndarray:
    if w.ndim == 2:
        w = np.tile(w, (h, 1, 1))
    if w.ndim != 3 or w.shape[0] != h or w.shape[1] != d_k:
        raise AttnError("layers.but_needs_d_k_d_a_d_a", key, w_shape=shape_str(w.shape), d_k=d_k, h=h, d_k_2=d_k)
    return w


def _add_norm(builder: MatrixSource, value: Any, d_model: int, d_out: int
              ) -> tuple[np.ndarray, np.ndarray, float] | None:
    if value is None or value is False:
        return None
    if d_out != d_model:
        raise AttnError(
            "layers.needs_output_wide_inputs_d_out", "add_norm", d_out=d_out, d_model=d_model)
    if value is True:
        value = {}
    if not isinstance(value, dict):
        raise AttnError("layers.expected_true_mapping_any_gamma", "add_norm")
    for key in value:
        if key not in ("gamma", "beta", "eps"):
            from attncli.core.errors import unknown_key

            raise unknown_key(key, ("gamma", "beta", "eps")).at("add_norm")
    gamma = _vector(builder, value.get("gamma"), d_model, "add_norm.gamma", 1.0)
    beta = _vector(builder, value.get("beta"), d_model, "add_norm.beta", 0.0)
    eps = finite_number(value.get("eps", LAYER_NORM_EPS))
    if eps is None or eps <= 0:
        raise AttnError("layers.not_positive_number_within_float64", "add_norm.eps", get=describe(value.get('eps')))
    return gamma, beta, eps


def _vector(builder: MatrixSource, value: Any, d: int, key: str, default: float) -> np.ndarray:
    if value is None:
        return np.full(d, default)
    b = builder.read(key, value, (d,))
    if b.ndim == 2 and 1 in b.shape:
        b = b.reshape(-1)
    if b.shape != (d,):
        raise AttnError("layers.but_needs_vector_length_d_model", key, b_shape=shape_str(b.shape), d=d)
    return b
