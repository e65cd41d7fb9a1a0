"""The arguments of :func:`attncli.reference` as float64 numpy arrays, checked; torch tensors taken and given back.

A torch tensor (any float dtype, any device) is read through its own methods (``detach().cpu().double()``), and a
result is made a tensor with the ``torch`` module the tensor came from: attncli itself never imports torch.
Every check names the argument and the shapes; a wrong type is a ``TypeError``, anything else an
:class:`ArgumentError` (both an :class:`~attncli.core.errors.AttnError` and a ``ValueError``), whose messages
are ids of the catalogues (attncli/data/messages/) as every AttnError's.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from attncli.core.arguments import shape_text
from attncli.core.errors import AttnError


class ArgumentError(AttnError, ValueError):
    """A bad argument of the Python API: its name and the shapes involved."""


def is_tensor(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach")


def torch_module():
    """The torch module a given tensor came from (already imported: no import here)."""
    return sys.modules["torch"]


def floats(name: str, x: Any, ndim: tuple[int, ...] | None = None, finite: bool | None = True) -> np.ndarray:
    """``x`` (numpy array, torch tensor or nested lists of real numbers) as a float64 array, checked.

    ``ndim``: the numbers of axes allowed; ``finite``: every value a finite number (−inf allowed when False, but
    never +inf or NaN); None: any value (a kernel's result under judgement).
    """
    if is_tensor(x):
        if x.is_complex() or str(x.dtype) == "torch.bool":
            raise TypeError(f"{name} is a tensor of {x.dtype}: attention takes real numbers (float or int)")
        x = x.detach().cpu().double().numpy()
    elif isinstance(x, (str, bytes)) or x is None or isinstance(x, dict):
        raise TypeError(f"{name} must be an array or a tensor of real numbers, not {type(x).__name__}")
    try:
        a = np.asarray(x)
    except (ValueError, TypeError, RecursionError):  # ragged rows, a list that holds itself
        raise ArgumentError("kernel_arrays.not_array_numbers_rows_not", name=name) from None
    if a.dtype.kind not in "fiu":
        raise TypeError(f"{name} has dtype {a.dtype}: attention takes real numbers (float or int)")
    a = a.astype(np.float64, copy=False)
    if ndim is not None and a.ndim not in ndim:
        axes = " or ".join(map(str, ndim))
        raise ArgumentError("kernel_arrays.axes_but_needs_axes", name=name, a_shape=shape_text(a.shape), ndim=a.ndim,
                            axes=axes)
    if finite is None:
        return a
    bad = ~np.isfinite(a) if finite else (np.isnan(a) | np.isposinf(a))
    if bad.any():
        cell = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ArgumentError("kernel_arrays.holds_every_value_must_finite", name=name, a_shape=shape_text(a.shape),
                            a=a[cell], cell=cell, value='' if finite else ' (or −inf)')
    return a


def integers(name: str, x: Any, ndim: int = 1) -> np.ndarray:
    """Whole numbers ≥ 0 (cu_seqlens, block_table, lengths) as an int64 array of ``ndim`` axes."""
    if is_tensor(x):
        x = x.detach().cpu().numpy()
    a = np.asarray(x)
    if a.ndim == 0 and ndim == 1:
        a = a.reshape(1)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} has dtype {a.dtype}: it holds whole numbers (an int array)")
    if a.ndim != ndim:
        raise ArgumentError("kernel_arrays.but_needs_axes", name=name, a_shape=shape_text(a.shape), ndim=ndim)
    if (a < 0).any():
        raise ArgumentError("kernel_arrays.holds_must", name=name, min=int(a.min()))
    return a.astype(np.int64)


def flags(name: str, x: Any) -> np.ndarray:
    """A boolean mask (True = keep / attend) as a numpy bool array."""
    if is_tensor(x):
        x = x.detach().cpu().numpy()
    a = np.asarray(x)
    if a.dtype != bool:
        raise TypeError(f"{name} has dtype {a.dtype}: it must be boolean (True = kept)")
    return a


def broadcast(name: str, a: np.ndarray, shape: tuple[int, ...], what: str) -> np.ndarray:
    """``a`` broadcast (a view) to ``shape``, or an error giving both shapes."""
    try:
        return np.broadcast_to(a, shape)
    except ValueError:
        raise ArgumentError("kernel_arrays.which_does_not_broadcast", name=name, a_shape=shape_text(a.shape),
                            shape=shape_text(shape), what=what) from None


def number(name: str, x: Any, low: float | None = None, high: float | None = None) -> float:
    """A real number, within [low, high) where given."""
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        if is_tensor(x) and x.numel() == 1:
            x = float(x)
        else:
            raise TypeError(f"{name} must be a number, not {type(x).__name__}")
    x = float(x)
    if not np.isfinite(x) or (low is not None and x < low) or (high is not None and x >= high):
        span = f" in [{low}, {high})" if high is not None else "" if low is None else f" ≥ {low}"
        raise ArgumentError("kernel_arrays.but_must_finite_number", name=name, x=x, span=span)
    return x


def returned(a: np.ndarray | None, torch_out: bool):
    """A result as the kind given: a torch float64 tensor when the inputs were tensors."""
    if a is None or not torch_out:
        return a
    return torch_module().from_numpy(np.ascontiguousarray(a))
