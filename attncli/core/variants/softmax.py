"""The weights stage's wrong versions: softmax's base, axis, maximum and normaliser; the weights confused.

    A = 2^z / Σ 2^z        base 2                     A = e^z / Σ_i e^z       down the columns
    A = e^z / Σ e^z        the maximum not subtracted: e^z past float range is inf, and inf / inf is NaN
    A = e^(z − max_col)…   the maximum of each column  A = e^z / Σ_all e^z    the whole matrix's sum
    A = z − ln Σ e^z       log-softmax                 A = e^z, A = z / Σ z, A = z, softmax twice
    A = c·softmax(S), softmax(S)·V·c                   the scale on the weights, on the output
"""

from __future__ import annotations

import numpy as np

from attncli.core.scores import shared
from attncli.core.softmax import softmax
from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.variants import Variant

OVERFLOW = float(np.log(np.finfo(np.float64).max))  # ≈ 709.78: e^z is inf beyond it


def allowed_of(spec: Spec, z: np.ndarray) -> np.ndarray:
    """(h, n, m) bool: the keys each query may see (every one without a mask)."""
    return np.ones(z.shape, dtype=bool) if spec.allowed is None else np.broadcast_to(spec.allowed, z.shape)


def _divided(e: np.ndarray, axis) -> np.ndarray:
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total != 0) if np.isfinite(total).all() else e / total


def _row_max(z: np.ndarray, ok: np.ndarray, axis=-1) -> np.ndarray:
    top = np.where(ok, z, -np.inf).max(axis=axis, keepdims=True)
    return np.where(np.isfinite(top), top, 0.0)


def _weights(fn):
    """A variant of the weights from the scaled scores: ``fn(z, ok, spec) -> A`` (h, n, m), masked keys 0."""
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        z = a["scaled_scores"]
        ok = allowed_of(spec, z)
        with np.errstate(all="ignore"):
            return {"weights": np.where(ok, fn(z, ok, spec), 0.0), "lse": None, "sink_weights": None}
    return apply


def _exp(z, ok, base=np.e, shift=None):
    z = np.where(ok, z, -np.inf)
    return np.power(base, z if shift is None else z - shift)


def _base_2(z, ok, spec):
    return _divided(_exp(z, ok, 2.0, _row_max(z, ok)), -1)


def _columns(z, ok, spec):
    return _divided(_exp(z, ok, shift=_row_max(z, ok, -2)), -2)


def _unshifted(z, ok, spec):
    return _divided(_exp(z, ok), -1)  # e^800 = inf: inf / inf = NaN, the learner's own number


def _max_column(z, ok, spec):
    return _divided(_exp(z, ok, shift=_row_max(z, ok, -2)), -1)


def _whole(z, ok, spec):
    return _divided(_exp(z, ok, shift=_row_max(z, ok, (-2, -1))), (-2, -1))


def _log_softmax(z, ok, spec):
    top = _row_max(z, ok)
    return z - top - np.log(_exp(z, ok, shift=top).sum(axis=-1, keepdims=True))


def _softmax_twice(z, ok, spec):
    return softmax(softmax(z, ok), ok)


def _unscaled(z, ok, spec):
    return softmax(z / spec.scale, ok)


def _plain(spec: Spec) -> bool:
    return spec.normalize == "softmax" and spec.sinks is None


def _softmax_case(test=lambda spec: True, **words):
    return lambda spec: ({key: fn(spec) for key, fn in words.items()},) if _plain(spec) and test(spec) else ()


def _overflows(spec: Spec) -> tuple:
    return ({"limit": f"{OVERFLOW:.2f}"},) if _plain(spec) else ()


def _scaled_output(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    return {"head_outputs": spec.scale * (a["weights"] @ shared(a["values"], spec.heads))}


_ON_SCORES = lambda spec: spec.scale != 1.0 and spec.softcap is None and spec.score_bias is None  # noqa: E731
_C = {"c": lambda spec: f"{spec.scale:.4g}"}
SOFTMAX_VARIANTS = (
    Variant("softmax_overflow", _weights(_unshifted), _overflows),
    Variant("softmax_axis", _weights(_columns), _softmax_case(lambda spec: spec.n > 1)),
    Variant("not_divided", _weights(lambda z, ok, spec: _exp(z, ok)), _softmax_case()),
    Variant("sum_not_softmax", _weights(lambda z, ok, spec: _divided(np.where(ok, z, 0.0), -1)), _softmax_case()),
    Variant("softmax_base_2", _weights(_base_2), _softmax_case()),
    Variant("log_softmax", _weights(_log_softmax), _softmax_case()),
    Variant("max_column", _weights(_max_column), _softmax_case(lambda spec: spec.n > 1)),
    Variant("sum_whole", _weights(_whole), _softmax_case(lambda spec: spec.n > 1)),
    Variant("scale_on_weights", _weights(lambda z, ok, spec: spec.scale * _unscaled(z, ok, spec)),
            _softmax_case(_ON_SCORES, **_C)),
    Variant("scale_on_output", _weights(_unscaled), _softmax_case(_ON_SCORES, **_C),
            later=(("mix", _scaled_output),)),
    Variant("scores_as_weights", _weights(lambda z, ok, spec: z), _softmax_case()),
    Variant("softmax_twice", _weights(_softmax_twice), _softmax_case()),
)
