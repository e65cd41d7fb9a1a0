"""The eager attention in a low precision, as FlashAttention-2's tests run it, and the error budget it gives.

    Q, K, V, dO rounded to the dtype
    S = Q·Kᵀ in float32; scale, cap, bias, mask and softmax in float32 (Z not rounded); lse in float32
    P rounded to the dtype;  O = P·V in float32, then rounded
    dV = Pᵀ·dO,  dP = dO·Vᵀ,  D = rowsum(dO ⊙ O) in float32;  dS = P ⊙ (dP − D) (· (1 − tanh²)) rounded
    dQ = dS·K·scale,  dK = dSᵀ·Q·scale in float32, each result rounded

A kernel's result is then within budget when its largest error against the float64 truth is at most twice the
eager computation's, plus two units in the last place of the dtype at the quantity's magnitude (FlashAttention's
rule).  bf16 is rounded from float32 to nearest even by its bits (numpy has no bfloat16).

>>> rounded(np.array([1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8]), "bf16").tolist()
[1.0, 1.015625]
"""

from __future__ import annotations

import numpy as np

from attncli.core.backward import grouped
from attncli.core.errors import AttnError
from attncli.core.spec import Spec

MANTISSA = {"bf16": 7, "fp16": 10, "fp32": 23}  # stored fraction bits
LARGEST = {"bf16": 3.3895313892515355e38, "fp16": 65504.0, "fp32": 3.4028234663852886e38}  # largest finite value
DTYPES = tuple(MANTISSA)
KEYS = ("head_outputs", "lse", "weights", "grad_kernel_queries", "grad_kernel_keys", "grad_values")


def rounded(x: np.ndarray, dtype: str) -> np.ndarray:
    """x rounded to ``dtype`` (to nearest, ties to even), as float32 values."""
    x32 = np.asarray(x, dtype=np.float32)
    if dtype == "fp16":
        with np.errstate(over="ignore"):
            return x32.astype(np.float16).astype(np.float32)
    if dtype == "fp32":
        return x32
    bits = x32.view(np.uint32)
    odd = (bits >> 16) & 1
    return ((bits + np.uint32(0x7FFF) + odd) & np.uint32(0xFFFF0000)).view(np.float32)


def within_range(x: np.ndarray, dtype: str, name: str, option: str = "--emulate") -> np.ndarray:
    """x rounded to ``dtype``, or an AttnError when a value is beyond its range: the eager computation would hold inf
    there (PyTorch's ``.half()`` of 1e6 is inf, and every product after it inf or NaN), so it is named, never shown
    as inf or NaN, never judged with (FORMAT.md, ``emulate``)."""
    y = rounded(x, dtype)
    if np.isfinite(y).all():
        return y
    index = tuple(int(i) for i in np.argwhere(~np.isfinite(y))[0])
    where = ", ".join(f"{axis} {i + 1}" for axis, i in zip(("head", "row", "column")[-len(index):], index))
    raise AttnError("emulate.overflows_s_range_eager_computation", option, name=name, dtype=dtype,
                    largest=LARGEST[dtype], place=where, x=float(x[index]), dtype_2=dtype)


def ulp(magnitude: float, dtype: str) -> float:
    """One unit in the last place of ``dtype`` at ``magnitude`` (0 at 0)."""
    if magnitude <= 0 or not np.isfinite(magnitude):
        return 0.0
    return float(2.0 ** (np.floor(np.log2(magnitude)) - MANTISSA[dtype]))


def softmax_of_dots(spec: Spec, option: str) -> None:
    """The eager computation is a softmax of dot-product scores (FlashAttention's): ``score: additive`` and
    ``normalize: sum | none``, which have no log-sum-exp (FORMAT.md Part 3), are refused, naming the key."""
    if spec.score != "dot":
        raise AttnError("emulate.which_has_no_log_sum", "score", score=spec.score, option=option)
    if spec.normalize != "softmax":
        raise AttnError("emulate.which_has_no_log_sum", "normalize", score=spec.normalize, option=option)
    if getattr(spec, "differential", None) is not None:  # (two kernel calls, combined after them)
        raise AttnError("emulate.combines_two_softmaxes_per_head", "differential", option=option)


def _softmax32(z: np.ndarray, sinks: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(P, lse) of z (h, n, m) float32 (−inf where masked), a sink's term with ``sinks``, in float32."""
    top = z.max(axis=-1, keepdims=True)
    s = None if sinks is None else sinks.astype(np.float32).reshape(-1, 1, 1)
    if s is not None:
        top = np.maximum(top, s)
    top = np.where(np.isfinite(top), top, np.float32(0))
    e = np.exp(z - top)
    total = e.sum(axis=-1, keepdims=True, dtype=np.float32)
    if s is not None:
        total = total + np.exp(s - top)
    p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    with np.errstate(divide="ignore"):
        return p, (top + np.log(total))[..., 0]


@np.errstate(over="ignore", invalid="ignore")
def eager(spec: Spec, q: np.ndarray, k: np.ndarray, v: np.ndarray, d_o: np.ndarray | None, dtype: str,
          modify=None, keep: tuple[np.ndarray, float] | None = None, option: str = "--emulate"
          ) -> dict[str, np.ndarray]:
    """The eager computation in ``dtype`` from the kernel's view Q (h, n, d_k), K (g, m, d_k), V (g, m, d_v) and dO
    (h, n, d_v) -> the arrays of :data:`KEYS` (the gradients only with dO), in float64.  A value beyond the dtype's
    range, given or made, is an AttnError at ``option`` naming the quantity (:func:`within_range`).

    For ``attncli.reference``: ``modify(Z)`` -> (score_mod(Z), its derivative), both float32, after the bias and
    before the mask (dS is multiplied by the derivative); ``keep`` = (mask (h, n, m), p): dropout as FlashAttention's
    reference, O = (P ⊙ keep)·V / (1 − p) with that product rounded, dP = dO·Vᵀ ⊙ keep / (1 − p)."""
    softmax_of_dots(spec, "the eager computation")
    r = lambda x, name: within_range(x, dtype, name, option)  # noqa: E731
    h, g = q.shape[0], k.shape[0]
    q, k, v = r(q, "kernel_queries"), r(k, "kernel_keys"), r(v, "values")
    k_h, v_h = (x if g == h else np.repeat(x, h // g, axis=0) for x in (k, v))
    scale = np.float32(spec.scale)
    z = (q @ k_h.transpose(0, 2, 1)) * scale  # (h, n, m) float32
    cap = None
    if spec.softcap is not None:
        cap = np.tanh(z / np.float32(spec.softcap))
        z = np.float32(spec.softcap) * cap
    if spec.score_bias is not None:
        bias = spec.score_bias.full(h, spec.query_positions, spec.key_positions)
        z = z + np.where(np.isneginf(bias), 0.0, bias).astype(np.float32)
    slope = None
    if modify is not None:
        z, slope = modify(z)
    if spec.allowed is not None:
        z = np.where(spec.allowed, z, np.float32(-np.inf))
    p, lse = _softmax32(z, spec.sinks)
    p = r(p, "weights")
    kept = None if keep is None else keep[0].astype(np.float32) / np.float32(1.0 - keep[1])  # (h, n, m)
    dropped = p if kept is None else r(p * kept, "weights")
    o = r(dropped @ v_h, "head_outputs")
    out = {"head_outputs": o, "lse": lse, "weights": p}
    if d_o is not None:
        d_o = r(d_o, "grad_head_outputs (the gradient dO)")
        d_p = d_o @ v_h.transpose(0, 2, 1)
        if kept is not None:
            d_p = d_p * kept
        delta = np.einsum("hnd,hnd->hn", d_o, o, dtype=np.float32)
        d_s = p * (d_p - delta[..., None])
        if slope is not None:
            d_s = np.where(d_s == 0, np.float32(0), d_s * slope)
        d_s = r(d_s if cap is None else d_s * (1 - cap * cap), "grad_kernel_scores (dS)")
        out.update(grad_values=r(grouped(dropped.transpose(0, 2, 1) @ d_o, g), "grad_values"),
                   grad_kernel_queries=r((d_s @ k_h) * scale, "grad_kernel_queries"),
                   grad_kernel_keys=r(grouped(d_s.transpose(0, 2, 1) @ q, g) * scale, "grad_kernel_keys"))
    return {key: value.astype(np.float64) for key, value in out.items()}


def emulated_trace(trace, dtype: str, keys: list[str] | None) -> tuple:
    """(the Trace with the eager computation's arrays in place of the truth's, the keys to write): ``compute
    --emulate`` shows what an eager computation in ``dtype`` gives, and only that (the keys of :data:`KEYS`)."""
    from dataclasses import replace

    d_o = trace.grad_head_outputs
    asked = [key for key in keys or [] if key.startswith("grad_")]
    if asked and d_o is None:
        raise AttnError("emulate.needs_gradient_document_do_backward", "--only", asked=asked[0])
    made = eager(trace.spec, trace.kernel_queries, trace.kernel_keys, trace.mixed_values, d_o, dtype)
    gradients = {key: made[key] for key in made if key.startswith("grad_")}
    plain = {key: made[key] for key in made if not key.startswith("grad_")}
    from attncli.core.stages import QUANTITIES

    wanted = [key for key in QUANTITIES if key in made and (keys is None or key in keys)]  # in the contract's order
    return replace(trace, gradients=gradients, emulated=dtype, **plain), wanted
