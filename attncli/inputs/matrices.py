"""Matrix values: inline lists, CSV/TSV/TXT/.npy files, arrays in checkpoints and archives,
and seeded random initialisers.

Every function returns a float64 array (or a bool array for masks) and raises
:class:`AttnError` naming the cell, line or file when a value is not a number.
Rows and columns in messages count from 1, as people count them.
"""

from __future__ import annotations

import math
import re
import stat
from pathlib import Path
from typing import Any

import numpy as np

from attncli.core.arguments import ensure_room, shape_text
from attncli.core.errors import AttnError, describe, shape_str, shorten
from attncli.core.memory import ensure_fits, size_text
from attncli.inputs.archives import ARCHIVE_KINDS, check_spelling, is_archive, read_tensor
from attncli.inputs.document import OutOfRange
from attncli.inputs.fastmatrix import FastMatrix
from attncli.inputs.reading import decode_utf8, file_status, npy_header, read_exactly
from attncli.inputs.tensor_plan import AXES  # (a checkpoint's tensor is held to it too)

TEXT_DELIMITERS = {".csv": ",", ".tsv": "\t", ".txt": None}
FILE_KINDS = (*TEXT_DELIMITERS, ".npy")
_AXES = ("head", "row", "column")
NPY_DTYPE_KINDS = "biuf"  # bool, signed and unsigned integers, floats



def read_value(
    value: Any, folder: Path, shape: tuple[int, ...] | None = None, boolean: bool = False, minus_inf: bool = False
) -> np.ndarray:
    """An inline list, a file name, a ``{file, tensor, …}`` array of a checkpoint, or a ``{random: …}`` spec,
    as an array.

    ``shape`` is what the rest of the document implies, used when a random spec
    leaves its shape out.  ``boolean`` reads a mask: 0/1 or true/false.
    ``minus_inf`` lets a cell be −inf (a score bias, PyTorch's float mask): YAML's
    ``-.inf``, the text ``"-inf"`` (strict JSON has no −inf), ``-inf`` in a text
    file, −inf in .npy; NaN and +inf stay errors.
    """
    assert not (boolean and minus_inf), "a mask is 0/1, a score bias is a number or -inf"
    if isinstance(value, str):
        return read_file(value, folder, boolean, minus_inf)
    if is_archive(value):
        array, name = read_tensor(value, folder)  # (a transposed or cut view: made contiguous before it is widened)
        return _checked_array(np.ascontiguousarray(array), name, boolean, minus_inf)
    if isinstance(value, dict):
        check_spelling(value)
        if boolean:
            raise AttnError("matrices.mask_cannot_random_give_causal")
        from attncli.inputs.initialisers import random_matrix

        return random_matrix(value, shape)
    if isinstance(value, list):
        return inline(value, boolean, minus_inf)
    if isinstance(value, np.ndarray):  # from the Python API: checked as a .npy file's data is
        return _checked_array(value, None, boolean, minus_inf)
    if boolean:
        raise AttnError("matrices.expected_none_causal_matrix_list", value=describe(value))
    raise AttnError("matrices.expected_matrix_list_rows_file", value=describe(value))


# ---------------------------------------------------------------- inline lists


def inline(rows: list, boolean: bool = False, minus_inf: bool = False) -> np.ndarray:
    if isinstance(rows, FastMatrix) and not boolean:  # already read whole, by attncli.inputs.fastmatrix
        return _checked_cells(rows.array, minus_inf)
    shape = _nested_shape(rows)
    flat = _flatten(rows, len(shape))
    if minus_inf and any(type(x) is str for x in flat):  # "-inf": JSON has no −inf; YAML reads -inf as text
        from attncli.inputs.textfile import MINUS_INF  # (the text files' reader: imported when it is needed)

        flat = [-math.inf if type(x) is str and MINUS_INF.fullmatch(x) else x for x in flat]
    kinds = {type(x) for x in flat}
    if not kinds <= ({bool, int, float} if boolean else {int, float}):
        _raise_bad_cell(flat, shape, boolean, minus_inf)
    if boolean:
        if any(type(x) is int and x not in (0, 1) for x in flat):  # (np.array overflows on 10**330)
            _raise_bad_cell(flat, shape, boolean, minus_inf)
        values = np.array(flat, dtype=np.float64)
        if not np.isin(values, (0.0, 1.0)).all():
            _raise_bad_cell(flat, shape, boolean, minus_inf)
        return values.astype(bool).reshape(shape)
    try:
        values = np.array(flat, dtype=np.float64)
    except OverflowError:
        _raise_bad_cell(flat, shape, boolean, minus_inf)
    if not np.isfinite(values).all() and (
        not minus_inf or (np.isnan(values) | (values == math.inf)).any() or any(type(x) is OutOfRange for x in flat)
    ):
        _raise_bad_cell(flat, shape, boolean, minus_inf)
    return values.reshape(shape)


def _checked_cells(values: np.ndarray, minus_inf: bool) -> np.ndarray:
    """A matrix of numbers (a lifted one) whose non-finite cells are named as an inline list's are."""
    finite = np.isfinite(values)
    if finite.all():
        return values
    bad = ~finite & (values != -math.inf) if minus_inf else ~finite
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AttnError("matrices.cell_problem", cell=_cell(index, values.ndim),
                        problem=_cell_problem(float(values[index]), False, minus_inf))
    return values


def _nested_shape(value: list) -> tuple[int, ...]:
    shape: list[int] = []
    probe: Any = value
    while isinstance(probe, list):
        if not probe:
            raise AttnError("matrices.is_empty" if not shape else "matrices.holds_empty_row")
        shape.append(len(probe))
        probe = probe[0]
    if len(shape) > AXES.get():
        if AXES.get() > 3:
            raise AttnError("matrices.nested_lists_deep_batch_s", count=len(shape))
        raise AttnError("matrices.nested_lists_deep_matrix_has", count=len(shape))
    return tuple(shape)


def _flatten(value: list, depth: int, index: tuple[int, ...] = ()) -> list:
    if depth == 1:
        for i, x in enumerate(value):
            if isinstance(x, list):
                raise AttnError("matrices.list_where_number_belongs", cell=_cell(index + (i,), 1 + len(index)))
        return value
    flat: list = []
    first = None
    for i, row in enumerate(value):
        where = _cell(index + (i,), depth + len(index))
        if not isinstance(row, list):
            raise AttnError("matrices.where_list_belongs_rows_must", place=where, row=describe(row))
        if first is None:
            first = len(row)
        elif len(row) != first:
            raise AttnError("matrices.has_entries_but_first_has", place=where, count=len(row), first=first)
        if not row:
            raise AttnError("matrices.empty", place=where)
        flat.extend(_flatten(row, depth - 1, index + (i,)))
    return flat


def _cell(index: tuple[int, ...], ndim: int) -> str:
    names = _AXES[3 - ndim :] if ndim <= 3 else _AXES
    if ndim == 1:
        names = ("entry",)
    return ", ".join(f"{name} {i + 1}" for name, i in zip(names, index))


def _raise_bad_cell(flat: list, shape: tuple[int, ...], boolean: bool, minus_inf: bool = False) -> None:
    for position, x in enumerate(flat):
        problem = _cell_problem(x, boolean, minus_inf)
        if problem:
            index = np.unravel_index(position, shape)
            raise AttnError("matrices.cell_problem", cell=_cell(tuple(int(i) for i in index), len(shape)),
                            problem=problem)
    raise AttnError("matrices.holds_value_that_not_number")


def _cell_problem(x: Any, boolean: bool, minus_inf: bool = False) -> str | None:
    if boolean:
        if isinstance(x, bool) or (type(x) in (int, float) and x in (0, 1)):
            return None
        return f"{describe(x)} is not a mask value (use 1/true = may attend, 0/false = masked)"
    if isinstance(x, bool):
        return f"{describe(x)} is not a number (booleans belong only in a mask)"
    if isinstance(x, OutOfRange):
        return f"{x} is too large for float64 (about ±1.8e308 at most)"
    if isinstance(x, int):
        try:
            float(x)
            return None
        except OverflowError:
            return f"{describe(x)} is too large for float64 (about ±1.8e308 at most)"
    if isinstance(x, float):
        if math.isfinite(x) or minus_inf and x == -math.inf:
            return None
        from attncli.inputs.textfile import ONLY_MINUS_INF

        return (f"{x} {ONLY_MINUS_INF}" if minus_inf
                else f"{x} is not a finite number (NaN and infinities are not allowed)")
    return f"{describe(x)} is not a number"


# ---------------------------------------------------------------- files


def read_file(name: str, folder: Path, boolean: bool = False, minus_inf: bool = False) -> np.ndarray:
    if name == "":  # (as a Path, "." : the document's folder)
        raise AttnError("matrices.empty_file_name_give_matrix")
    path = Path(name) if Path(name).is_absolute() else folder / name
    suffix = path.suffix.lower()
    if suffix in ARCHIVE_KINDS:
        raise AttnError("matrices.holds_named_arrays_name_one", name, name=shorten(name))
    if suffix not in FILE_KINDS:
        raise AttnError(
            "matrices.neither_matrix_nor_file_name", name=describe(name), file_kinds=", ".join(FILE_KINDS)
        )
    mode = file_status(path, name, "a matrix file").st_mode
    if not stat.S_ISREG(mode):
        raise AttnError("archives.not_regular_file_device_pipe", name)
    try:
        if suffix == ".npy":
            return _read_npy(path, name, boolean, minus_inf)
        _check_text_size(path, name, TEXT_DELIMITERS[suffix])
        raw = path.read_bytes()
    except PermissionError:
        raise AttnError("archives.permission_denied", name) from None
    except OSError as e:
        raise AttnError("archives.cannot_read", name, value=e.strerror or type(e).__name__) from None
    from attncli.inputs.textfile import read_text

    values, lines = read_text(raw, name, TEXT_DELIMITERS[suffix], boolean, minus_inf)
    return _as_mask(values, name, lines) if boolean else values


TEXT_CELL_BYTES = 56  # memory per cell while a text matrix is read: a Python float in a row's list, its text (measured)
SAMPLE_BYTES = 1 << 16  # the start of a text matrix file, read to estimate how many cells it holds


def _check_text_size(path: Path, name: str, delimiter: str | None) -> None:
    """Refuse a text matrix too large to read, from its size and the cells in its first 64 KiB, before reading it."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(SAMPLE_BYTES)
    if b"\x00" in head[:8192]:
        decode_utf8(head[:8192], name)  # binary: named at once, without reading the rest
    if size <= SAMPLE_BYTES:
        return
    lines = [line for line in head.split(b"\n") if line.strip() and not line.strip().startswith(b"#")]
    cells = sum(len(line.split(None if delimiter is None else delimiter.encode())) for line in lines)
    density = cells / len(head) if cells else 0.5  # cells per byte (a cell and its separator take 2 bytes at least)
    need = 3 * size + int(TEXT_CELL_BYTES * density * size)  # the bytes, the text, its lines; the cells
    ensure_fits(need, f"reading this {size_text(size)} text matrix", name,
                "; save large matrices as .npy, which is read as it is")


def _read_npy(path: Path, name: str, boolean: bool, minus_inf: bool = False) -> np.ndarray:
    shape, fortran, dtype, offset, size = _check_npy_header(path, name)  # before anything is read: no pickles,
    need = math.prod(shape) * dtype.itemsize  # no forged sizes
    converted = boolean or dtype != np.float64  # a float64 copy; and always the test that every number is finite
    ensure_fits(math.prod(shape) * (9 if converted else 1) + need, f"its {shape_str(shape)} {dtype} array", name)
    with path.open("rb") as f:
        raw = read_exactly(f, offset, dtype, shape[::-1] if fortran else shape, lambda: AttnError(
            "matrices.not_readable_npy_file_data", name, size=size))
    return _checked_array(raw.T if fortran else raw, name, boolean, minus_inf)


def _reason(e: Exception) -> str:
    """numpy's reason, without what it quotes of the file ("Cannot parse header: '…'"): a file is never echoed."""
    text = str(e).split(":")[0]
    text = re.sub(r"'[^']*'?|\"[^\"]*\"?|\(.*", "", text).strip()
    return shorten(text, 60) if text else type(e).__name__


def _checked_array(array: np.ndarray, name: str | None, boolean: bool, minus_inf: bool = False) -> np.ndarray:
    """A numeric array (a .npy file's, or one given to the Python API) as float64, or as a mask."""
    if array.dtype.kind not in NPY_DTYPE_KINDS or array.ndim == 0:
        kinds = {"U": "text", "S": "bytes", "O": "Python objects", "c": "complex numbers", "M": "dates"}
        what = "a single number" if array.ndim == 0 else kinds.get(array.dtype.kind) or _kind_of(array.dtype)
        raise AttnError("matrices.holds_expected_matrix_numbers", name, what=what)
    if array.dtype.kind == "b" and not boolean:  # as inline true/false: a boolean is a mask's value, not a number
        raise AttnError("matrices.holds_bool_values_booleans_belong", name)
    if array.size == 0:
        raise AttnError("arguments.empty", name, array_shape=shape_text(array.shape))
    ensure_room(name, array.shape, copies=2)  # (a broadcast view of 10¹¹ zeros costs nothing until cast)
    # A long double beyond float64 becomes inf, a signalling NaN (bfloat16's, float32's) a quiet one: each is named
    # below, so the cast's floating-point flags (a RuntimeWarning on stderr) are not wanted.
    with np.errstate(all="ignore"):
        values = array.astype(np.float64, copy=False)
    if boolean:
        return _as_mask(values, name)
    finite = np.isfinite(values)
    if finite.all():
        return values
    if not minus_inf:
        index = tuple(int(i) for i in np.argwhere(~finite)[0])
        raise AttnError("matrices.not_finite_number", name, cell=_cell(index, values.ndim), values=values[index])
    bad = ~finite & (values != -math.inf)
    if array.dtype.kind == "f" and array.dtype.itemsize > 8:  # a long double beyond float64 is not a −inf
        bad |= (values == -math.inf) & (array != -math.inf)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        from attncli.inputs.textfile import ONLY_MINUS_INF

        problem = (ONLY_MINUS_INF if not np.isfinite(array[index])
                   else "is too large for float64 (about ±1.8e308 at most)")
        raise AttnError("matrices.cell_value_problem", name, cell=_cell(index, values.ndim), array=array[index],
                        problem=problem)
    return values


def _kind_of(dtype: np.dtype) -> str:
    """What an array holds: ``<U1 values``; a record's field names (a file's own text) are never shown."""
    if dtype.names is not None or dtype.subdtype is not None or dtype.kind == "V":
        return "records (structured or raw bytes), not single numbers"
    kinds = {"U": "text", "S": "bytes", "O": "Python objects", "c": "complex numbers", "M": "dates", "m": "time spans"}
    return f"{dtype} values" + (f" ({kinds[dtype.kind]})" if dtype.kind in kinds else "")


def _check_npy_header(path: Path, name: str) -> tuple[tuple[int, ...], bool, np.dtype, int, int]:
    """The .npy header's promises, checked against the file: signature, dtype, axes and data size; returned with
    where its data starts and the file's size."""
    with path.open("rb") as f:
        start = f.read(6)
        if start[:2] == b"PK":
            raise AttnError("matrices.npz_archive_several_arrays_not", name)
        if start != b"\x93NUMPY":
            raise AttnError("matrices.not_readable_npy_file_does", name)
        f.seek(0)
        try:
            shape, fortran, dtype = npy_header(f, "is a .npy file", name)
        except AttnError:
            raise
        except Exception as e:  # numpy parses the header text with Python's tokenizer: any failure is a bad file
            raise AttnError("matrices.not_readable_npy_file_header_3", name, reason=_reason(e)) from None
        offset = f.tell()
    if dtype.hasobject:
        raise AttnError("matrices.not_readable_npy_file_holds", name)
    if dtype.kind not in NPY_DTYPE_KINDS or dtype.subdtype is not None:
        raise AttnError("matrices.holds_expected_real_numbers_int", name, kind_of=_kind_of(dtype))
    if any(isinstance(s, bool) or s < 0 for s in shape):  # numpy's header check lets these through
        raise AttnError("matrices.not_readable_npy_file_header",
                        name, map=', '.join(map(shorten, shape)))
    if len(shape) == 0 or len(shape) > AXES.get() or 0 in shape:
        shown = shape_str(shape) if shape else "()"
        if AXES.get() > 3:
            raise AttnError("matrices.holds_array_shape_batch_s", name, shown=shown)
        raise AttnError("matrices.holds_array_shape_expected_axes", name, shown=shown)
    need, whole = math.prod(shape) * dtype.itemsize, path.stat().st_size
    size = whole - offset
    if size < need:
        raise AttnError(
            "matrices.not_readable_npy_file_header_2",
            name, shape=shape_str(shape), dtype=dtype, size_text=size_text(need), size_text_2=size_text(size)
        )
    return shape, fortran, dtype, offset, whole


def _as_mask(values: np.ndarray, name: str, lines: list[int] | None = None) -> np.ndarray:
    """0/1 values as a bool mask; ``lines`` are a text file's line numbers of the rows (messages name lines)."""
    bad = np.argwhere(~np.isin(values, (0.0, 1.0)))
    if len(bad):
        index = tuple(int(i) for i in bad[0])
        where = f"line {lines[index[0]]}, column {index[1] + 1}" if lines else _cell(index, values.ndim)
        raise AttnError("matrices.not_mask_value_may_attend", name, place=where, values=values[index])
    return values.astype(bool)
