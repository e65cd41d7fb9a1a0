"""A mask's wrong versions, on the weights stage: left out, 0 for −∞, after softmax, the diagonal, the window, the
padding put on the query rows, the convention read the other way round.

    causal_strict   j < i (the query's own key hidden)      causal_future   j ≥ i
    window ± 1      W + 1 or W − 1 keys                      padding_rows    row i masked for a padded token i
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attncli.core.softmax import softmax
from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.variants import Variant
from attncli.core.variants.softmax import allowed_of


def _masked(change):
    """The weights with another mask: ``change(spec) -> Mask | None`` (None: every key allowed)."""
    def apply(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
        return run(replace(spec, mask=change(spec)), a)
    return apply


def _has(test):
    return lambda spec: ({},) if spec.mask is not None and test(spec) else ()


def _plain_causal(spec: Spec) -> bool:
    return spec.mask.causal == "upper_left" and spec.mask.window is None and spec.mask.chunk is None


def _cells(which):
    """A causal mask drawn wrong: ``which(n, m)`` the cells the learner allowed, with the document's other parts."""
    def change(spec: Spec):
        mask = spec.mask
        cells = which(spec.n, spec.m)
        matrix = cells if mask.matrix is None else cells & mask.matrix
        return replace(mask, causal=None, matrix=matrix)
    return change


def _window(step: int):
    def change(spec: Spec):
        return replace(spec.mask, window=spec.mask.window + step)
    return change


def _padding_rows(spec: Spec):
    """The padding flags put on the query rows: a padded token's row masked whole, every key seen."""
    mask = spec.mask
    rows = np.broadcast_to(mask.keys[:spec.n, None], (spec.n, spec.m))
    return replace(mask, keys=None, matrix=rows if mask.matrix is None else rows & mask.matrix)


def _zero(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    z = a["scaled_scores"]
    return {"weights": softmax(np.where(allowed_of(spec, z), z, 0.0)), "lse": None, "sink_weights": None}


def _after(spec: Spec, a: Arrays, p: dict, run) -> Arrays:
    z = a["scaled_scores"]
    return {"weights": np.where(allowed_of(spec, z), softmax(z), 0.0), "lse": None, "sink_weights": None}


def _softmax(spec: Spec) -> bool:
    return spec.normalize == "softmax" and spec.sinks is None


MASK_VARIANTS = (
    Variant("mask_ignored", _masked(lambda spec: None), _has(lambda spec: not spec.mask.full().all())),
    Variant("mask_zero", _zero, _has(_softmax)),
    Variant("mask_after", _after, _has(_softmax)),
    Variant("causal_strict", _masked(_cells(lambda n, m: np.tril(np.ones((n, m), dtype=bool), -1))),
            _has(_plain_causal)),
    Variant("causal_future", _masked(_cells(lambda n, m: np.triu(np.ones((n, m), dtype=bool)))), _has(_plain_causal)),
    Variant("window_wider", _masked(_window(1)), _has(lambda spec: spec.mask.window is not None)),
    Variant("window_narrower", _masked(_window(-1)), _has(lambda spec: (spec.mask.window or 0) > 1)),
    Variant("padding_rows", _masked(_padding_rows),
            _has(lambda spec: spec.mask.keys is not None and spec.context is None and spec.n <= spec.m)),
    Variant("mask_inverted", _masked(lambda spec: spec.mask.inverted()),
            _has(lambda spec: spec.mask.inverted() is not None)),
)
