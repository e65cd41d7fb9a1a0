"""Every array at its door: what the Python API and the verdict read is checked here before any maths runs.

One rule for every function that takes arrays (``attncli.attention``, ``check --against``'s kernel result, and
what ``attncli.reference`` / ``assert_close`` read): an array is

    real    floating point or integers (bool only where it is a mask: :func:`mask_array`);
            complex numbers, text, bytes, Python objects, dates and None are refused, never cast
    whole   not empty, with the axes it needs (a 0-d array is not a matrix)
    finite  where the maths needs it (``finite=True``): NaN and ±inf are refused, naming the first such cell
    sized   small enough to compute with: :func:`ensure_room` refuses a result larger than memory before it is
            allocated (a broadcast view of 10¹² zeros costs nothing until its scores are made)

Each refusal is an :class:`AttnError` naming the argument (``q``, ``allowed``, a file's key) and what was found.

>>> real_array([[1, 2], [3, 4]], "q", min_ndim=2).dtype
dtype('float64')
>>> real_array("abc", "q")
Traceback (most recent call last):
...
attncli.core.errors.AttnError: q: is a string, not an array of numbers
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from attncli.core.errors import AttnError

KINDS = {"U": "text", "S": "bytes", "O": "Python objects", "c": "complex numbers", "M": "dates", "m": "time spans",
         "V": "raw records", "b": "True/False values"}


def shape_text(shape: Sequence[int]) -> str:
    """``3 × 4`` (``a number`` for a 0-d shape)."""
    return " × ".join(map(str, shape)) or "a number"


def _as_array(value: Any, name: str, kinds: str) -> np.ndarray:
    """``value`` as a numpy array without casting away what it is (complex stays complex, text stays text)."""
    if value is None:
        raise AttnError("arguments.none_not_array_numbers", name)
    if isinstance(value, str):
        raise AttnError("arguments.string_not_array_numbers", name)
    if isinstance(value, bytes):
        raise AttnError("arguments.bytes_not_array_numbers", name)
    if isinstance(value, np.ndarray):
        array = value
    elif isinstance(value, (numbers.Number, np.generic, Sequence)) or hasattr(value, "__array__"):
        try:
            array = np.asarray(value)
        except (ValueError, TypeError, RecursionError):  # ragged rows, a list that holds itself
            raise AttnError("arguments.not_array_numbers_rows_not", name) from None
    else:
        raise AttnError("arguments.not_array_numbers", name, type_name=type_name(value))
    if array.dtype.kind not in kinds:
        what = KINDS.get(array.dtype.kind, "numbers")
        if kinds == "b":
            raise AttnError("arguments.holds_expected_true_false_values", name, what=what, dtype=array.dtype)
        raise AttnError("arguments.holds_expected_real_numbers_floating", name, what=what, dtype=array.dtype)
    return array


def _whole(array: np.ndarray, name: str, min_ndim: int, empty: bool = False) -> None:
    if array.ndim < min_ndim:
        raise AttnError("arguments.expected_least_axes", name, array_shape=shape_text(array.shape), min_ndim=min_ndim)
    if array.size == 0 and not empty:
        raise AttnError("arguments.empty", name, array_shape=shape_text(array.shape))


def first_not_finite(array: np.ndarray) -> tuple[str, str] | None:
    """(``NaN``, ``1, 3``) for the first cell that is not finite (its 0-based numpy index), or None."""
    bad = ~np.isfinite(array)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0]) if array.ndim else ()
    value = float(array[index])
    return "NaN" if np.isnan(value) else ("inf" if value > 0 else "-inf"), ", ".join(map(str, index))


def real_array(value: Any, name: str, *, min_ndim: int = 0, finite: bool = True, empty: bool = False) -> np.ndarray:
    """``value`` (an array, nested lists, a number) as float64, or an AttnError naming ``name`` and why not."""
    array = _as_array(value, name, "fiu")
    _whole(array, name, min_ndim, empty)
    array = array.astype(np.float64, copy=False)
    if finite:
        bad = first_not_finite(array)
        if bad:
            raise AttnError("arguments.holds_expected_finite_numbers", name, bad=bad[0], bad_2=bad[1])
    return array


def mask_array(value: Any, name: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """A mask (of ``shape``, when given): True/False values only (0 and 1 as numbers are not taken for them)."""
    array = _as_array(value, name, "b")
    if shape is not None and array.shape != shape:
        raise AttnError("arguments.expected", name, array_shape=shape_text(array.shape), shape=shape_text(shape))
    return array


def number(value: Any, name: str) -> float:
    """A finite real number (not a bool, not a string), as float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise AttnError("arguments.not_number", name, type_name=type_name(value))
    result = float(value)
    if not np.isfinite(result):
        raise AttnError("arguments.expected_finite_number", name, result=result)
    return result


def type_name(value: Any) -> str:
    """``None``, ``a string``, ``an int``, ``a list``: what a value is, for a message."""
    if value is None:
        return "None"
    name = {str: "string"}.get(type(value), type(value).__name__)
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def ensure_room(name: str | None, shape: Sequence[int], copies: int = 1) -> None:
    """Refuse, before allocating, ``copies`` float64 arrays of ``shape`` that would not fit in the memory attncli
    may use (:func:`attncli.core.memory.ensure_fits`: RLIMIT_AS, a cgroup, ATTNCLI_MEMORY, what is available)."""
    from attncli.core.memory import ensure_fits

    need = 8 * copies * int(np.prod([int(s) for s in shape], dtype=object))
    ensure_fits(need, f"{shape_text(shape)} numbers", name)
