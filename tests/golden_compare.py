"""Comparing a result with a recorded one: what must not change exactly, and numbers within rounding.

A recording pins the keys, the shapes, the tokens, the strings, the integers and which cells are
``null`` (masked) exactly. Floating-point numbers are compared with a tolerance relative to the
largest entry of the array they belong to, since the last bits of a matrix product depend on the
BLAS kernel the CPU gets (two OpenBLAS kernels differ by up to ~10 ulp of the largest entry on
examples/bert_base.yaml): ``REL`` of it is far below any mistake and far above any kernel's rounding.

>>> assert_same_result({"w": [[0.5, None]], "heads": 1}, {"w": [[0.5 + 1e-17, None]], "heads": 1})
>>> assert_same_result({"w": [[0.5, 1.0]]}, {"w": [[0.5001, 1.0]]})
Traceback (most recent call last):
...
AssertionError: w: [0, 0] is 0.5, recorded 0.5001 (tolerance 1e-12 of the largest entry, 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np

REL = 1e-12


def _numeric_array(value: list) -> np.ndarray | None:
    """A nested list of numbers and nulls as a float array (null as NaN), or None if it is anything else."""
    try:
        array = np.array(value, dtype=float)  # None becomes nan; strings and ragged lists raise
    except (TypeError, ValueError):
        return None
    flat = [value]
    while flat and isinstance(flat[0], list):
        flat = [x for row in flat for x in row]
    if any(isinstance(x, (bool, str)) for x in flat):
        return None
    return array


def _kinds(value: Any) -> list[str]:
    """Each entry's JSON type in order (int, float, null):
    ``4`` and ``4.0`` are the same number but not the same JSON."""
    if isinstance(value, list):
        return [kind for item in value for kind in _kinds(item)]
    return [type(value).__name__]


def _close_arrays(got: np.ndarray, want: np.ndarray, where: str, rel: float) -> None:
    assert got.shape == want.shape, f"{where}: shape {got.shape}, recorded {want.shape}"
    masked = np.isnan(want)
    assert np.array_equal(np.isnan(got), masked), f"{where}: other cells are null than recorded"
    scale = float(np.max(np.abs(want[~masked]), initial=0.0))
    gap = np.where(masked, 0.0, np.abs(got - want))
    if gap.size and gap.max() > rel * scale:
        cell = np.unravel_index(int(np.argmax(gap)), gap.shape)
        index = [int(i) for i in cell]
        raise AssertionError(f"{where}: {index} is {float(got[cell])!r}, recorded {float(want[cell])!r} "
                             f"(tolerance {rel:g} of the largest entry, {scale:g})")


def assert_same_result(got: Any, want: Any, where: str = "", rel: float = REL) -> None:
    """``got`` equals the recorded ``want``: structure and strings exactly,
    floats within ``rel`` of each array's largest entry."""
    here = where or "the result"
    if isinstance(want, dict):
        assert isinstance(got, dict), f"{here}: {type(got).__name__}, recorded a mapping"
        assert list(got) == list(want), f"{here}: keys {list(got)}, recorded {list(want)}"
        for key in want:
            assert_same_result(got[key], want[key], f"{where}.{key}" if where else key, rel)
    elif isinstance(want, list):
        assert isinstance(got, list), f"{here}: {type(got).__name__}, recorded a list"
        numbers = _numeric_array(want)
        if numbers is not None and all(isinstance(x, (int, float, list)) or x is None for x in want):
            other = _numeric_array(got)
            assert other is not None, f"{here}: not an array of numbers as recorded"
            _close_arrays(other, numbers, here, rel)
            assert _kinds(got) == _kinds(want), f"{here}: whole numbers written where floats were recorded, or back"
            return
        assert len(got) == len(want), f"{here}: {len(got)} entries, recorded {len(want)}"
        for i, (a, b) in enumerate(zip(got, want)):
            assert_same_result(a, b, f"{here}[{i}]", rel)
    elif isinstance(want, float) and not isinstance(got, bool) and isinstance(got, (int, float)):
        assert abs(got - want) <= rel * abs(want), f"{here}: {got!r}, recorded {want!r}"
    else:
        assert type(got) is type(want) and got == want, f"{here}: {got!r}, recorded {want!r}"
