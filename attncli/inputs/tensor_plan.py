"""What a ``{file, tensor, layout, rows, columns}`` mapping asks of one tensor: its layout and the rows and columns
kept (:class:`TensorPlan`), checked against the tensor's shape as soon as a file's header gives it.

:mod:`attncli.inputs.archives` makes the plan from the document's mapping; the readers of
:mod:`attncli.inputs.tensorfiles` check it against the header and read only the bytes it keeps.
"""

from __future__ import annotations

import math
from contextvars import ContextVar
from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe, nearest, quoted, shape_str, shorten
from attncli.core.memory import ensure_fits

LAYOUTS = ("rows", "torch")
NAME_CHARS = 60  # of a tensor name a message shows (names such as model.layers.31.self_attn.q_proj.weight)
NEAREST = 3  # names a message suggests for an unknown tensor
# how many axes an array may have: 3 (heads, rows, columns), or 4 while a batch's queries, keys and values are read
# (attncli.inputs.batch, layout: bshd / bhsd)
AXES: ContextVar[int] = ContextVar("AXES", default=3)


class TensorPlan:
    """What the mapping asks of the tensor: its layout and the rows and columns to keep,
    checked as its shape is known."""

    def __init__(self, spec: dict, file: str, tensor: str):
        self.layout = spec.get("layout", "rows")
        if not isinstance(self.layout, str) or self.layout not in LAYOUTS:
            shown = quoted(self.layout) if isinstance(self.layout, str) else describe(self.layout)
            raise AttnError("tensor_plan.not_rows_stored_torch_nn", "layout", shown=shown)
        self.cuts: dict[str, tuple[int, int]] = {}  # the part of each axis that is read: a range, or the span of ranges
        self.blocks: tuple[str, list[tuple[int, int]]] | None = None  # the axis cut in several ranges, and they
        for key in ("rows", "columns"):
            value = spec.get(key)
            if self.blocks is None and _several(value):
                ranges = [_pair(r, key) for r in value]
                self.blocks = key, ranges
                self.cuts[key] = min(start for start, _ in ranges), max(stop for _, stop in ranges)
            elif value is not None:
                self.cuts[key] = _pair(value, key)
        self.file, self.tensor = file, tensor
        self.shown = quoted(tensor, NAME_CHARS)
        self.name = f"{shorten(file)}, tensor {self.shown}"

    def check(self, shape: tuple[int, ...], dtype: str) -> tuple[int, ...]:
        """The shape the document will see; every reason the mapping cannot apply to ``shape`` is an error here."""
        what = f"tensor {self.shown} in {shorten(self.file)} is " + (shape_str(shape) if shape else "a single number")
        if len(shape) == 0 or len(shape) > AXES.get() or 0 in shape:
            if AXES.get() > 3:
                raise AttnError("tensor_plan.batch_s_arrays_have_axes", what=what, dtype=dtype)
            raise AttnError("tensor_plan.expected_axes_not_empty", what=what, dtype=dtype)
        if self.layout == "torch" and len(shape) == 3:
            raise AttnError("tensor_plan.torch_transposes_d_nn_linear", "layout", what=what)
        if self.layout == "torch" and len(shape) == 2:
            shape, what = shape[::-1], f"{what}, {shape_str(shape[::-1])} after layout: torch"
        if self.cuts and len(shape) == 3:
            raise AttnError("tensor_plan.rows_columns_cut_matrix_but", next(iter(self.cuts)), what=what)
        matrix = list(shape) if len(shape) == 2 else [1, shape[0]]  # a vector is one row
        for axis, key in enumerate(("rows", "columns")):
            if key in self.cuts:
                ranges = self.blocks[1] if self.blocks and self.blocks[0] == key else [self.cuts[key]]
                for start, stop in ranges:
                    if stop > matrix[axis]:
                        count = f"{matrix[axis]} {key}" if len(shape) == 2 else (
                            "one row (a vector is one row)" if axis == 0
                            else f"{matrix[axis]} columns (a vector's entries)")
                        raise AttnError("tensor_plan.goes_beyond_count_from_stop", key, start=shorten(start),
                                        stop=shorten(stop), count=count, what=what, key=key)
                matrix[axis] = sum(stop - start for start, stop in ranges)
        if self.blocks and self.blocks[0] == "rows" and len(shape) == 1:
            raise AttnError("tensor_plan.vector_one_row_cut_entries", "rows")
        return tuple(matrix) if len(shape) == 2 else (matrix[1],)

    def leading(self, shape: tuple[int, ...]) -> tuple[int, int]:
        """The part of the stored array's first axis the cuts keep (so that only its bytes need be read): the rows
        as stored, the columns after layout: torch (the stored rows), a vector's entries; all of it otherwise."""
        key = None if len(shape) == 3 else "columns" if len(shape) == 1 or self.layout == "torch" else "rows"
        return self.cuts.get(key, (0, shape[0])) if key else (0, shape[0])

    def apply(self, array: np.ndarray, first_axis_cut: bool = False) -> np.ndarray:
        """The array as the document sees it; ``first_axis_cut``: the reader kept only :meth:`leading` already."""
        if self.layout == "torch" and array.ndim == 2:
            array = array.T
        if self.cuts:
            (r0, r1), (c0, c1) = self.cuts.get("rows", (0, None)), self.cuts.get("columns", (0, None))
            if first_axis_cut:
                r0, r1, c0, c1 = (r0, r1, 0, None) if array.ndim == 1 or self.layout == "torch" else (0, None, c0, c1)
            array = array[r0:r1, c0:c1] if array.ndim == 2 else array[c0:c1]
        if self.blocks:  # the ranges, cut from their span (which starts at the first's start)
            key, ranges = self.blocks
            axis = 0 if key == "rows" else array.ndim - 1
            first = self.cuts[key][0]
            array = np.concatenate([array[(slice(None),) * axis + (slice(start - first, stop - first),)]
                                    for start, stop in ranges], axis=axis)
        return array

    def ensure_room(self, shape: tuple[int, ...], dtype: str, read: int) -> None:
        """The memory reading takes, refused before anything is read: the bytes read, a float64 copy of
        what the document keeps (and a float32 one for bfloat16), the finite test."""
        cells = math.prod(self.check(shape, dtype))
        ensure_fits(read + cells * (8 + 4 + 1), f"reading {self.name} ({shape_str(shape)} {dtype})", None)

    def missing(self, names: list[str]) -> AttnError:
        """No such tensor: the nearest names in the file, or some of them."""
        where = shorten(self.file)
        if not names:
            return AttnError("tensor_plan.no_tensor_holds_no_tensors", shown=self.shown, place=where)
        shown = [quoted(name, NAME_CHARS) for name in nearest(self.tensor[:200], names, n=NEAREST)]
        if shown:
            return AttnError("tensor_plan.no_tensor_nearest", shown=self.shown, place=where, shown_2=', '.join(shown))
        some = ", ".join(quoted(name, NAME_CHARS) for name in names[:NEAREST])
        more = f" and {len(names) - NEAREST} more" if len(names) > NEAREST else ""
        return AttnError("tensor_plan.no_tensor_which_holds", shown=self.shown, place=where, some=some, more=more)


def _several(value: Any) -> bool:
    """``[[start, stop], …]``: several ranges (one ``[start, stop]`` is a list of numbers)."""
    return isinstance(value, list) and bool(value) and all(isinstance(r, list) for r in value)


def _pair(value: Any, key: str) -> tuple[int, int]:
    if (not isinstance(value, list) or len(value) != 2
            or any(isinstance(x, bool) or not isinstance(x, int) for x in value)):
        shown = shorten(value) if isinstance(value, list) else describe(value)
        raise AttnError("tensor_plan.expected_start_stop_two_whole", key, shown=shown)
    start, stop = value
    if start < 0 or start >= stop:
        raise AttnError("tensor_plan.no_range_needs_start_stop", key, start=shorten(start), stop=shorten(stop))
    return start, stop
