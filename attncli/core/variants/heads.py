"""The projections' wrong versions: the heads' columns, the weights' layout, the biases, where K and V come from.

    heads_split      head i from the columns i, i + h, … (interleaved) instead of the i-th block of d_k
    heads_one_block  every head from head 1's columns
    weights_as_wx    a square W applied as W·x (nn.Linear's layout): x·Wᵀ
    bias_left_out    b_Q, b_K or b_V (or all of them) left out
    keys_from_inputs cross-attention's K and V made from the inputs;  pre_norm_left_out: from X, not X̂
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.variants import Variant

WEIGHTS = (("w_q", "W_Q"), ("w_k", "W_K"), ("w_v", "W_V"))
BIASES = (("b_q", "b_Q"), ("b_k", "b_K"), ("b_v", "b_V"))


def side_by_side(w: np.ndarray) -> np.ndarray:
    """(h, d_in, d) -> (d_in, h·d): the heads' columns as the document gave them."""
    h, d_in, d = w.shape
    return w.transpose(1, 0, 2).reshape(d_in, h * d)


def interleaved(spec: Spec) -> dict:
    """Every head's weights (and biases) taken as interleaved columns (head i: columns i, i+h, …)."""
    changes = {}
    for name, _ in WEIGHTS:
        w = getattr(spec, name)  # (h, d_in, d)
        h, d_in, d = w.shape
        changes[name] = side_by_side(w).reshape(d_in, d, h).transpose(2, 0, 1)
    for name, _ in BIASES:
        b = getattr(spec, name)  # (h, d)
        if b is not None:
            changes[name] = b.reshape(-1).reshape(b.shape[1], b.shape[0]).T.copy()
    return changes


def one_block(spec: Spec) -> dict:
    """Every head given head 1's weights and biases."""
    changes = {}
    for name, _ in (*WEIGHTS, *BIASES):
        x = getattr(spec, name)
        if x is not None:
            changes[name] = np.repeat(x[:1], x.shape[0], axis=0)
    return changes


def _respec(changes):
    """The projections with changed settings: ``changes(spec, p) -> {field: value}``."""
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        return run(replace(spec, **changes(spec, p)), a)
    return apply


def _heads(spec: Spec) -> tuple:
    return ({},) if spec.heads > 1 and spec.given_qkv is None and spec.latent is None else ()


def _square(spec: Spec) -> dict:
    """The weights a learner could apply as W·x (square overall), each as x·Wᵀ: {symbol: (field, Wᵀ per head)}."""
    found = {}
    for name, symbol in WEIGHTS:
        w = getattr(spec, name)
        h, d_in, d = w.shape
        if d_in == h * d:
            found[symbol] = (name, side_by_side(w).T.reshape(d_in, h, d).transpose(1, 0, 2))
    return found


def _wx_cases(spec: Spec) -> tuple:
    if spec.given_qkv is not None or spec.latent is not None:
        return ()
    square = _square(spec)
    cases = [{"names": symbol, "fields": (symbol,)} for symbol in square]
    if len(square) > 1:
        cases.insert(0, {"names": ", ".join(square), "fields": tuple(square)})
    return tuple(cases)


def _bias_cases(spec: Spec) -> tuple:
    if spec.given_qkv is not None or spec.latent is not None:
        return ()
    present = [(name, symbol) for name, symbol in BIASES if getattr(spec, name) is not None]
    cases = [{"name": "bias_left_out", "names": symbol, "fields": (name,)} for name, symbol in present]
    if len(present) > 1:
        cases.insert(0, {"name": "biases_left_out", "names": ", ".join(s for _, s in present),
                         "fields": tuple(name for name, _ in present)})
    return tuple(cases)


def _from_inputs(spec: Spec) -> tuple:
    fits = spec.context is not None and spec.context.shape[1] == spec.inputs.shape[1]
    return ({},) if fits and spec.given_qkv is None and spec.latent is None and (spec.mask is None
                                                                                or spec.n == spec.m) else ()


def _without_pre_norm(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    return run(spec, {**a, "normalized_inputs": None})


HEAD_VARIANTS = (
    Variant("heads_split", _respec(lambda spec, p: interleaved(spec)), _heads),
    Variant("heads_one_block", _respec(lambda spec, p: one_block(spec)), _heads),
    Variant("weights_as_wx", _respec(lambda spec, p: {_square(spec)[s][0]: _square(spec)[s][1] for s in p["fields"]}),
            _wx_cases),
    Variant("bias_left_out", _respec(lambda spec, p: dict.fromkeys(p["fields"])), _bias_cases),
    Variant("keys_from_inputs", _respec(lambda spec, p: {"context": None}), _from_inputs),
    Variant("pre_norm_left_out", _without_pre_norm,
            lambda spec: ({},) if spec.pre_norm is not None and spec.latent is None else ()),
)
