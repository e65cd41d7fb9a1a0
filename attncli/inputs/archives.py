"""One array out of a checkpoint or an archive: ``{file, tensor, layout, rows, columns}``.

    weights:
      query: {file: model.safetensors, tensor: model.layers.3.self_attn.q_proj.weight, layout: torch}
      key:   {file: result.npz, tensor: keys}
      value: {file: gpt2.safetensors, tensor: h.0.attn.c_attn.weight, columns: [1536, 2304]}

The mapping is checked here, and its :class:`TensorPlan` (the layout, the rows
and columns kept) is checked against the tensor's shape as soon as the file's
header gives it, before any data is read.  The files themselves are read by
:mod:`attncli.inputs.tensorfiles`: ``.safetensors`` without PyTorch and without
the ``safetensors`` package (whose numpy side cannot give bfloat16), ``.npz``
without pickles; only the named array's bytes, so taking one 4 MB matrix out of
a 1 GB checkpoint reads 4 MB.
"""

from __future__ import annotations

import math
import stat
from pathlib import Path
from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe, nearest, quoted, shape_str, shorten, unknown_key
from attncli.core.memory import ensure_fits
from attncli.inputs.reading import file_status
from attncli.inputs.tensorfiles import PICKLED, read_npz, read_safetensors

ARCHIVE_KEYS = ("file", "tensor", "layout", "rows", "columns")
ARCHIVE_KINDS = (".safetensors", ".npz")
LAYOUTS = ("rows", "torch")
NAME_CHARS = 60  # of a tensor name a message shows (names such as model.layers.31.self_attn.q_proj.weight)
NEAREST = 3  # names a message suggests for an unknown tensor


def is_archive(value: Any) -> bool:
    """A mapping naming an array in a file (it has ``file`` or ``tensor``), not a ``{random: …}`` one."""
    return isinstance(value, dict) and ("file" in value or "tensor" in value)


def check_spelling(value: dict) -> None:
    """``{fiel: …, tensr: …}`` is a mistyped checkpoint mapping, not a random one: say so."""
    if "random" not in value:
        for key in value:
            if nearest(str(key)[:100], ("file", "tensor")):
                raise unknown_key(key, ARCHIVE_KEYS)


def read_tensor(spec: dict, folder: Path) -> tuple[np.ndarray, str]:
    """The named array as the mapping lays it out and cuts it, and how messages name it.

    Its dtype is the file's (integers, bool, floats; bfloat16 already widened to
    float32, exactly); the caller turns it into float64 or a mask and checks it.
    ``rows`` or ``columns`` may list several ranges, ``[[start, stop], …]``: the
    blocks are placed side by side in that order (one head's columns of BLOOM's
    fused ``query_key_value`` after another's), cut from one read of the part of the
    tensor that spans them all.
    """
    return _read_one(spec, folder)


def _read_one(spec: dict, folder: Path) -> tuple[np.ndarray, str]:
    for key in spec:
        if key not in ARCHIVE_KEYS:
            raise unknown_key(key, ARCHIVE_KEYS)
    file, tensor = spec.get("file"), spec.get("tensor")
    if file is None:
        raise AttnError("is required next to tensor: the .safetensors or .npz file that holds it", "file")
    if not isinstance(file, str):
        raise AttnError(f"expected a file name, not {describe(file)}", "file")
    if file == "":
        raise AttnError("is an empty file name; give the .safetensors or .npz file that holds the tensor", "file")
    path = Path(file) if Path(file).is_absolute() else folder / file
    suffix = path.suffix.lower()
    if suffix not in ARCHIVE_KINDS:
        raise AttnError(f"{quoted(file)} {_not_an_archive(suffix)}", "file")
    if tensor is None:
        raise AttnError(f"is required: the name of one array in {shorten(file)}", "tensor")
    if not isinstance(tensor, str):
        raise AttnError(f"expected the array's name (text), not {describe(tensor)}", "tensor")
    mode = file_status(path, file, "a .safetensors or .npz file").st_mode
    if not stat.S_ISREG(mode):
        raise AttnError("is not a regular file (a device, pipe or socket)", file)
    plan = TensorPlan(spec, file, tensor)
    try:
        array = read_safetensors(path, plan) if suffix == ".safetensors" else read_npz(path, plan)
    except PermissionError:
        raise AttnError("permission denied", file) from None
    except OSError as e:
        raise AttnError(f"cannot be read ({e.strerror or type(e).__name__})", file) from None
    return array, plan.name


def _not_an_archive(suffix: str) -> str:
    if suffix in (".npy", ".csv", ".tsv", ".txt"):
        return "holds one matrix: give its name alone (query: x.npy), without file and tensor"
    if suffix in (".bin", ".pt", ".pth", ".ckpt", ".pkl"):
        return "is " + PICKLED
    return "is not a .safetensors or .npz file"


class TensorPlan:
    """What the mapping asks of the tensor: its layout and the rows and columns to keep,
    checked as its shape is known."""

    def __init__(self, spec: dict, file: str, tensor: str):
        self.layout = spec.get("layout", "rows")
        if not isinstance(self.layout, str) or self.layout not in LAYOUTS:
            shown = quoted(self.layout) if isinstance(self.layout, str) else describe(self.layout)
            raise AttnError(f"{shown} is not rows (as stored) or torch (an nn.Linear.weight, transposed)", "layout")
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
        from attncli.inputs.matrices import AXES

        if len(shape) == 0 or len(shape) > AXES.get() or 0 in shape:
            if AXES.get() > 3:
                raise AttnError(f"{what} ({dtype}); a batch's arrays have 1 to 4 axes, none empty")
            raise AttnError(f"{what} ({dtype}); expected 1 to 3 axes, not empty")
        if self.layout == "torch" and len(shape) == 3:
            raise AttnError(f"torch transposes a 2-D nn.Linear weight, but {what}", "layout")
        if self.layout == "torch" and len(shape) == 2:
            shape, what = shape[::-1], f"{what}, {shape_str(shape[::-1])} after layout: torch"
        if self.cuts and len(shape) == 3:
            raise AttnError(f"rows and columns cut a matrix, but {what}", next(iter(self.cuts)))
        matrix = list(shape) if len(shape) == 2 else [1, shape[0]]  # a vector is one row
        for axis, key in enumerate(("rows", "columns")):
            if key in self.cuts:
                ranges = self.blocks[1] if self.blocks and self.blocks[0] == key else [self.cuts[key]]
                for start, stop in ranges:
                    if stop > matrix[axis]:
                        count = f"{matrix[axis]} {key}" if len(shape) == 2 else (
                            "one row (a vector is one row)" if axis == 0
                            else f"{matrix[axis]} columns (a vector's entries)")
                        raise AttnError(f"[{shorten(start)}, {shorten(stop)}] goes beyond its {count}: {what} "
                                        f"({key} count from 0, stop excluded)", key)
                matrix[axis] = sum(stop - start for start, stop in ranges)
        if self.blocks and self.blocks[0] == "rows" and len(shape) == 1:
            raise AttnError("a vector is one row: cut its entries with columns", "rows")
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
            return AttnError(f"no tensor {self.shown} in {where}: it holds no tensors")
        shown = [quoted(name, NAME_CHARS) for name in nearest(self.tensor[:200], names, n=NEAREST)]
        if shown:
            return AttnError(f"no tensor {self.shown} in {where}; nearest: {', '.join(shown)}")
        some = ", ".join(quoted(name, NAME_CHARS) for name in names[:NEAREST])
        more = f" and {len(names) - NEAREST} more" if len(names) > NEAREST else ""
        return AttnError(f"no tensor {self.shown} in {where}, which holds {some}{more}")


def _several(value: Any) -> bool:
    """``[[start, stop], …]``: several ranges (one ``[start, stop]`` is a list of numbers)."""
    return isinstance(value, list) and bool(value) and all(isinstance(r, list) for r in value)


def _pair(value: Any, key: str) -> tuple[int, int]:
    if (not isinstance(value, list) or len(value) != 2
            or any(isinstance(x, bool) or not isinstance(x, int) for x in value)):
        shown = shorten(value) if isinstance(value, list) else describe(value)
        raise AttnError(f"expected [start, stop], two whole numbers (from 0, stop excluded), not {shown}", key)
    start, stop = value
    if start < 0 or start >= stop:
        raise AttnError(f"[{shorten(start)}, {shorten(stop)}] is no range: it needs 0 ≤ start < stop "
                        "(counted from 0, stop excluded)", key)
    return start, stop
