"""Is a kernel's result a bug or rounding?  Each array against the float64 truth, within FlashAttention's budget.

    budget = 2 × (largest error of the eager computation in that dtype) + 2 units in the last place of the dtype
             at the quantity's magnitude (its largest |value|)

The eager computation is :func:`attncli.core.emulate.eager`.  A cell the truth has no number for (lse of a query
with no key: −inf) must be −inf in the result too.

>>> f = finding("lse", np.array([[1.0, 2.0]]), np.array([[1.0, 2.001]]), np.array([[1.0, 2.0]]), "bf16")
>>> f.within, f.worst
(True, (0, 1))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncli.core.emulate import ulp


@dataclass(frozen=True)
class Finding:
    key: str
    largest: float  # max |result − truth|
    rms: float  # √ mean (result − truth)²
    budget: float
    eager: float  # the eager computation's largest error
    worst: tuple[int, ...]  # the cell of the largest error
    truth: float  # the truth there
    got: float  # the result there

    @property
    def within(self) -> bool:
        return self.largest <= self.budget


def errors(got: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """|got − truth| per cell; 0 where both are −inf (no key), inf where only one is, or where got is not a number."""
    both = np.isneginf(truth) & np.isneginf(got)
    with np.errstate(invalid="ignore"):
        diff = np.abs(np.where(both, 0.0, got - np.where(both, 0.0, truth)))
    return np.where(np.isnan(diff), np.inf, diff)


def finding(key: str, truth: np.ndarray, got: np.ndarray, eager: np.ndarray, dtype: str) -> Finding:
    """One array's errors, budget and worst cell; ``got`` and ``eager`` have ``truth``'s shape."""
    err = errors(got, truth)
    eager_err = errors(eager, truth)
    finite = np.isfinite(truth)
    magnitude = float(np.abs(truth[finite]).max()) if finite.any() else 0.0
    budget = 2.0 * float(eager_err[np.isfinite(eager_err)].max(initial=0.0)) + 2.0 * ulp(magnitude, dtype)
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(err)), err.shape))
    rms = float(np.sqrt(np.mean(np.square(err)))) if err.size else 0.0
    return Finding(key, float(err.max(initial=0.0)), rms, budget, float(eager_err.max(initial=0.0)), worst,
                   float(truth[worst]) if err.size else 0.0, float(got[worst]) if err.size else 0.0)


def _shaped(got: np.ndarray, truth: np.ndarray | None, key: str) -> np.ndarray:
    """The result in attncli's shape: PyTorch's leading batch axis of 1 dropped."""
    from attncli.core.errors import AttnError, shape_str

    if truth is None:
        raise AttnError("verdict.this_document_has_no_judge", "--against", key=key, key_2=key)
    if got.ndim == truth.ndim + 1 and got.shape[0] == 1:
        got = got[0]
    if got.shape != truth.shape:
        raise AttnError("verdict.but_this_document_s_pytorch", "--against", key=key, got_shape=shape_str(got.shape),
                        truth_shape=shape_str(truth.shape))
    return got


def judge(truths: dict[str, np.ndarray], results: dict[str, np.ndarray], eager: dict[str, np.ndarray],
          dtype: str) -> list[Finding]:
    """A finding for each array of ``results`` (by attncli's keys), against ``truths``, with ``eager``'s budget."""
    return [finding(key, truths[key], _shaped(got, truths[key], key), eager[key], dtype)
            for key, got in results.items()]
