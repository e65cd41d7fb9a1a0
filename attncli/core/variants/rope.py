"""RoPE's wrong versions: the pair order, the sign of the angle, the frequency exponent, the positions, what turns.

    rope_interleaved / rope_halves   pairs (2i, 2i + 1) for (i, i + dims/2), or the reverse
    rope_reversed                    turned by −φ                 rope_frequency_no_2   f_i = θ^(−i/dims)
    rope_from_1                      positions 1 … n              rope_forgotten        Q′ = Q, K′ = K
    rope_queries_only                K′ = K                       rope_values           V turned too
    rope_factor_once                 the attention factor a on the queries' cos and sin only: the scores times a, not a²
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attncli.core.positions import rotate
from attncli.core.qknorm import rope_inputs
from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.variants import Variant


def _rope(change):
    """The rotation with other settings: ``change(spec) -> {Rope field: value}``."""
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        return run(replace(spec, rope=replace(spec.rope, **change(spec))), a)
    return apply


def _plain(spec: Spec) -> bool:
    return spec.rope is not None and spec.latent is None


def _pairs(spec: Spec) -> tuple:
    if not _plain(spec) or spec.rope.dims <= 2 or spec.rope.style not in ("half", "interleaved"):
        return ()
    return ({"name": "rope_interleaved" if spec.rope.style == "half" else "rope_halves"},)


def _from_zero(spec: Spec) -> bool:
    return all(np.array_equal(p, np.arange(len(p))) for p in (spec.query_positions, spec.key_positions))


def _from_1(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    return run(replace(spec, positions=spec.query_positions + 1, context_positions=spec.key_positions + 1), a)


def _forgotten(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    q, k = rope_inputs(spec, a)
    return {**run(spec, a), "queries_rotated": q, "keys_rotated": k}


def _queries_only(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    return {**run(spec, a), "keys_rotated": rope_inputs(spec, a)[1]}


def _values(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    return {**run(spec, a), "values": rotate(a["values"], spec.key_positions, spec.rope)}


def _factor_once(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    plain = replace(spec, rope=replace(spec.rope, attention_factor=1.0))
    return {**run(spec, a), "keys_rotated": run(plain, a)["keys_rotated"]}  # K′ turned without a


def _no_2(spec: Spec) -> dict:
    rope = spec.rope
    half = rope.dims // 2
    return {"frequencies": 1.0 / rope.base ** (np.arange(half, dtype=np.float64) / rope.dims)}


def _when(test):
    return lambda spec: ({},) if _plain(spec) and test(spec) else ()


ROPE_VARIANTS = (
    Variant("rope_interleaved", _rope(lambda spec: {"style": "interleaved" if spec.rope.style == "half" else "half"}),
            _pairs),
    Variant("rope_reversed", _rope(lambda spec: {"frequencies": -spec.rope.frequencies})),
    Variant("rope_frequency_no_2", _rope(_no_2),
            _when(lambda spec: spec.rope.base is not None and spec.rope.scaling is None and spec.rope.dims > 2)),
    Variant("rope_from_1", _from_1, _when(_from_zero)),
    Variant("rope_forgotten", _forgotten, _when(lambda spec: True)),
    Variant("rope_queries_only", _queries_only, _when(lambda spec: True)),
    Variant("rope_values", _values, lambda spec: ({"written": "values"},) if _plain(spec) and spec.d_v >= spec.rope.dims
            and spec.rope.part == "first" else ()),  # (it changes the values, which an earlier stage makes)
    Variant("rope_factor_once", _factor_once,
            lambda spec: ({"a": f"{spec.rope.attention_factor:.4g}", "a2": f"{spec.rope.attention_factor ** 2:.4g}"},)
            if spec.rope is not None and spec.rope.attention_factor != 1 else ()),
)
