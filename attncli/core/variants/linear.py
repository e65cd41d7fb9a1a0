"""The wrong versions of a linear-attention layer (docs/format.md Part 4, :mod:`attncli.core.linear`): what
``attncli check`` names on a ``linear:`` document.

The delta rule, per token (right: S ← e^{g}·S, u = β(v − Sᵀk), S ← S + k·uᵀ, o = Sᵀq):

    decay_after        u = β(v − Sᵀk) with the state not yet decayed; S ← e^{g}·(S + k·uᵀ)
    beta_left_out      u = v − Sᵀk
    delta_left_out     u = β·v (plain gated linear attention: nothing already stored is taken away)
    state_transposed   o = S·q (S read as d_v × d_k; only where d_k = d_v)
    q_unscaled         q not multiplied by 1/√d_k (o is √d_k times too large)
    l2_left_out        q and k not l2-normalised (where the layer normalises them)

Lightning attention (right: S ← e^{−s}·S + k·vᵀ, o = Sᵀq):

    decay_sign         S ← e^{+s}·S + k·vᵀ (the decay made a growth)
    decay_after        S ← e^{−s}·(S + k·vᵀ) (the new token decayed too)
    lightning_state_transposed   o = S·q

Each is ``apply(spec, arrays)`` -> the arrays it changes (u, state, final_state, head_outputs and what follows), from
the right run's arrays; ``cases(spec)`` the words of its sentence (``name``: another sentence of the same slip),
or none where the document cannot show it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attncli.core.linear import LinearSpec, finished, recurrence_inputs


@dataclass(frozen=True)
class LinearVariant:
    name: str
    kinds: tuple[str, ...]  # gated_delta, kda, lightning
    apply: Callable[[LinearSpec, dict], dict]
    cases: Callable[[LinearSpec], tuple[dict, ...]] = lambda spec: ({},)


def _delta(spec: LinearSpec, arrays: dict, after: bool = False, beta: bool = True, subtract: bool = True,
           transposed: bool = False, scale: float = 1.0) -> dict:
    """The delta rule token by token with one part done another way -> the arrays it changes."""
    q, k, v, b, g = recurrence_inputs(spec, arrays)
    q = q * scale
    h, n, d_k = k.shape
    decay = np.exp(g[..., None] if g.ndim == 2 else g)  # (h, n, 1 or d_k)
    s = np.zeros((h, d_k, v.shape[-1])) if spec.initial_state is None else np.array(spec.initial_state, float)
    o, u, states = np.zeros(v.shape), np.zeros(v.shape), np.zeros((h, n, d_k, v.shape[-1]))
    for t in range(n):
        if not after:
            s = s * decay[:, t, :, None]
        stored = np.einsum("hkv,hk->hv", s, k[:, t]) if subtract else 0.0  # Sᵀk
        u[:, t] = (b[:, t, None] if beta else 1.0) * (v[:, t] - stored)
        s = s + k[:, t, :, None] * u[:, t, None, :]
        if after:
            s = s * decay[:, t, :, None]
        o[:, t] = np.einsum("hkv,hv->hk", s, q[:, t]) if transposed else np.einsum("hkv,hk->hv", s, q[:, t])
        states[:, t] = s
    return finished(spec, {"u": u, "state": states, "final_state": s, "head_outputs": o}, o)


def _unnormalised(arrays: dict) -> dict:
    """The arrays without the l2-normalised q and k: the recurrence then reads q and k as they are."""
    return {key: value for key, value in arrays.items() if key not in ("normalized_queries", "normalized_keys")}


def _l2(spec: LinearSpec) -> tuple[dict, ...]:
    return ({},) if spec.l2 else ()


def _lightning(spec: LinearSpec, arrays: dict, sign: float = -1.0, transposed: bool = False,
               after: bool = False) -> dict:
    q, k, v = spec.scale * arrays["queries"], arrays["keys"], arrays["values"]
    h, n, d_k = k.shape
    decay = np.exp(sign * spec.slopes)[:, None, None]
    s = np.zeros((h, d_k, v.shape[-1])) if spec.initial_state is None else np.array(spec.initial_state, float)
    o, states = np.zeros(v.shape), np.zeros((h, n, d_k, v.shape[-1]))
    for t in range(n):
        written = k[:, t, :, None] * v[:, t, None, :]  # k·vᵀ
        s = decay * (s + written) if after else decay * s + written
        o[:, t] = np.einsum("hkv,hv->hk", s, q[:, t]) if transposed else np.einsum("hkv,hk->hv", s, q[:, t])
        states[:, t] = s
    with np.errstate(over="ignore", invalid="ignore"):
        return finished(spec, {"state": states, "final_state": s, "head_outputs": o}, o)


def _square(spec: LinearSpec) -> tuple[dict, ...]:
    return ({},) if spec.d_k == spec.d_v else ()


def _scaled(spec: LinearSpec) -> tuple[dict, ...]:
    """The default 1/√d_k, or the document's own ``scale:`` number (``name``: the sentence that says it)."""
    if spec.scale == 1.0:
        return ()
    if spec.scale_name == "number":
        return ({"name": "linear_q_unscaled_scale", "scale": f"{spec.scale:.6g}"},)
    return ({"d_k": spec.d_k, "root": f"{spec.d_k ** 0.5:.4g}"},)


DELTA = ("gated_delta", "kda")
LINEAR_VARIANTS = (
    LinearVariant("linear_decay_after", DELTA, lambda spec, a: _delta(spec, a, after=True)),
    LinearVariant("linear_beta_left_out", DELTA, lambda spec, a: _delta(spec, a, beta=False)),
    LinearVariant("linear_delta_left_out", DELTA, lambda spec, a: _delta(spec, a, subtract=False)),
    LinearVariant("linear_state_transposed", DELTA, lambda spec, a: _delta(spec, a, transposed=True), _square),
    LinearVariant("linear_q_unscaled", DELTA, lambda spec, a: _delta(spec, a, scale=1.0 / spec.scale), _scaled),
    LinearVariant("linear_l2_left_out", DELTA, lambda spec, a: _delta(spec, _unnormalised(a)), _l2),
    LinearVariant("lightning_decay_sign", ("lightning",), lambda spec, a: _lightning(spec, a, sign=1.0)),
    LinearVariant("lightning_decay_after", ("lightning",), lambda spec, a: _lightning(spec, a, after=True)),
    LinearVariant("lightning_state_transposed", ("lightning",), lambda spec, a: _lightning(spec, a, transposed=True),
                  _square),
)
