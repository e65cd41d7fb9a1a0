"""The two files ``{file, tensor}`` reads one array out of: ``.safetensors`` and ``.npz``.

Each reader checks every promise of the file (signature, header length, header
JSON, dtype, shape, byte range; the ``.npy`` header of an archive's member)
before it believes it, reads only the named array's bytes (read, never mapped: see
:func:`attncli.inputs.reading.read_exactly`),
and says what is wrong in one line that shows no more of the file than a
shortened tensor name.  The :class:`attncli.inputs.tensor_plan.TensorPlan` says how
the array is laid out and cut, and refuses what would not fit in memory.
"""

from __future__ import annotations

import gc
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from attncli.core.errors import AttnError, quoted, shape_str, shorten
from attncli.core.memory import ensure_fits, size_text
from attncli.inputs.reading import npy_header, read_exactly
from attncli.inputs.tensor_plan import TensorPlan

HEADER_LIMIT = 100_000_000  # bytes of a .safetensors header: the safetensors package's own limit
HEADER_MEMORY = 12  # bytes of memory per byte of JSON header while it is parsed (measured: about 6)
# .safetensors dtypes attncli reads, as numpy dtypes (BF16 is read as its bits and widened; BOOL as bytes 0/1)
SAFETENSORS_DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "BOOL": "|u1",
    "I8": "|i1", "I16": "<i2", "I32": "<i4", "I64": "<i8", "U8": "|u1", "U16": "<u2", "U32": "<u4", "U64": "<u8",
}
NPY_KINDS = "biuf"
PICKLED = ("a PyTorch file (.bin, .pt, .pth, .ckpt: Python pickles, which attncli never reads); "
           "save the weights with safetensors.torch.save_file")


def _widen(raw: np.ndarray, kind: str) -> np.ndarray:
    if kind == "BF16":  # the upper 16 bits of a float32: exactly that float32
        return (raw.astype(np.uint32) << 16).view(np.float32)
    if kind == "BOOL":
        return raw.view(np.bool_)
    return raw


# ---------------------------------------------------------------- .safetensors


def read_safetensors(path: Path, plan: TensorPlan) -> np.ndarray:
    where = plan.file
    with path.open("rb") as f:
        table, data_start, size = _header(f, path, where)
        kind, shape, begin, end = _described(_entry(table, plan), plan.shown, where)
        dtype, need = _stored(kind, shape, begin, end, data_start, size, plan.shown, where)
        plan.check(shape, kind)
        first, last = plan.leading(shape)  # only the stored rows the cuts keep are read: they are one run of bytes
        row = need // shape[0]
        offset, part, kept = data_start + begin + first * row, (last - first) * row, (last - first, *shape[1:])
        plan.ensure_room(shape, kind, part)
        raw = read_exactly(f, offset, dtype, kept, _ended_early(plan.shown, size, where))
    if kind == "BOOL" and (raw > 1).any():
        raise AttnError("tensorfiles.not_readable_safetensors_file_bool", where, shown=plan.shown)
    return _widen(plan.apply(raw, first_axis_cut=True), kind)


HEADERS_KEPT = 4  # parsed headers kept for the run: each range of a multi-range cut, each matrix of one checkpoint
HEADERS_KEPT_BYTES = 64_000_000  # and their JSON's bytes, together (a larger header is kept alone)
_headers: dict[tuple, tuple[dict, int]] = {}


def _header(f: Any, path: Path, where: str) -> tuple[dict, int, int]:
    """The file's header as a table of its tensors, where its data starts, and the file's size: parsed once per file
    (kept by its identity: device, inode, size, times), each promise checked before it is believed."""
    status = os.fstat(f.fileno())
    size = status.st_size
    identity = (str(path), status.st_dev, status.st_ino, size, status.st_mtime_ns, status.st_ctime_ns)
    if identity in _headers:
        return (*_headers[identity], size)
    start = f.read(8)
    if len(start) < 8:
        raise AttnError("tensorfiles.not_safetensors_file_has_bytes",
                        where, size=size)
    _check_signature(start, where)
    length = int.from_bytes(start, "little")
    if length > min(HEADER_LIMIT, size - 8):
        limit = "the 100 MB a header may have" if length > HEADER_LIMIT else f"the {size_text(size - 8)} that follow"
        raise AttnError("tensorfiles.not_safetensors_file_cut_short", where, size_text=size_text(length), limit=limit)
    ensure_fits(length * HEADER_MEMORY, f"reading the {size_text(length)} header", where)
    table = _table(f.read(length), where)
    while _headers and (len(_headers) >= HEADERS_KEPT
                        or sum(start for _, start in _headers.values()) + length > HEADERS_KEPT_BYTES):
        del _headers[next(iter(_headers))]
    _headers[identity] = (table, 8 + length)
    return table, 8 + length, size


def _check_signature(start: bytes, where: str) -> None:
    """A file of another kind named .safetensors: said at once, rather than as a header of 5 EiB."""
    if start.startswith(b"PK\x03\x04") or start.startswith(b"PK\x05\x06"):
        kind = "a zip archive (an .npz, or " + PICKLED + ")"
    elif start.startswith(b"\x93NUMPY"):
        kind = "a .npy file (one array): give its name alone, without file and tensor"
    elif start[:1] == b"\x80" and start[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        kind = "a Python pickle (" + PICKLED + ")"
    elif start.startswith(b"\x89HDF"):
        kind = "an HDF5 file (Keras .h5)"
    elif start[:4] == b"GGUF":
        kind = "a GGUF file (llama.cpp)"
    else:
        return
    raise AttnError("tensorfiles.not_safetensors_file", where, kind=kind)


def _table(header: bytes, where: str) -> dict:
    import json  # (here: a document without a checkpoint never needs it)

    if not header.lstrip(b" ").startswith(b"{"):
        raise AttnError("tensorfiles.not_safetensors_file_header_not", where)
    # 300,000 entries are a million new containers, none in a cycle: the collector's passes over them cost more
    # than the parse itself. Parsed with it off, then set aside from its later passes (gc.freeze: the table is
    # kept for the run, and a freed one is still freed by its reference counts); benchmarks/tensor_names.py
    collecting = gc.isenabled()
    gc.disable()
    try:
        table = json.loads(header)
    except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
        raise AttnError("tensorfiles.not_readable_safetensors_file_header", where) from None
    finally:
        if collecting:
            gc.freeze()
            gc.enable()
    if not isinstance(table, dict):
        raise AttnError("tensorfiles.not_safetensors_file_header_not", where)
    return table


def _entry(table: dict, plan: TensorPlan) -> Any:
    if plan.tensor == "__metadata__" or plan.tensor not in table:
        raise plan.missing([name for name in table if name != "__metadata__"])
    return table[plan.tensor]


def _described(entry: Any, shown: str, where: str) -> tuple[str, tuple[int, ...], int, int]:
    """dtype, shape and byte range of the header's entry for tensor ``shown`` (quoted), each checked."""
    bad = f"is not a readable .safetensors file: the header's entry for tensor {shown}"
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
        raise AttnError("tensorfiles.lacks_dtype_shape_data_offsets", where, bad=bad)
    kind, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(kind, str):
        raise AttnError("tensorfiles.has_dtype_that_not_text", where, bad=bad)
    if kind not in SAFETENSORS_DTYPES:
        known = "F64, F32, F16, BF16, integers and BOOL"
        raise AttnError("tensorfiles.tensor_holds_values_which_attncli", where, shown=shown, kind=shorten(kind, 20),
                        known=known)
    if not isinstance(shape, list) or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in shape):
        raise AttnError("tensorfiles.has_shape_that_not_list", where, bad=bad)
    if (not isinstance(offsets, list) or len(offsets) != 2
            or any(isinstance(x, bool) or not isinstance(x, int) for x in offsets)
            or not 0 <= offsets[0] <= offsets[1]):
        raise AttnError("tensorfiles.has_data_offsets_that_not_begin", where, bad=bad)
    return kind, tuple(shape), offsets[0], offsets[1]


def read_every_tensor(path: Path, where: str) -> dict[str, tuple[str, np.ndarray]]:
    """Every tensor of a whole checkpoint file as its dtype's name and its stored values (BF16 as its bits, BOOL as
    bytes), each entry of the header checked and each read (never mapped): a file cut short, before or while it is
    read, is one :class:`AttnError` naming it.  The caller has made sure the file's size fits in memory."""
    found = {}
    with path.open("rb") as f:
        table, data_start, size = _header(f, path, where)
        for name, entry in table.items():
            if name == "__metadata__":
                continue
            shown = quoted(name, 60)
            kind, shape, begin, end = _described(entry, shown, where)
            dtype, _ = _stored(kind, shape, begin, end, data_start, size, shown, where)
            found[name] = kind, read_exactly(f, data_start + begin, dtype, shape, _ended_early(shown, size, where))
    return found


def _stored(kind: str, shape: tuple[int, ...], begin: int, end: int, data_start: int, size: int, shown: str,
            where: str) -> tuple[np.dtype, int]:
    """The tensor's dtype and byte count, once its byte range is checked against its shape and the file's size."""
    dtype = np.dtype(SAFETENSORS_DTYPES[kind])
    need = math.prod(shape) * dtype.itemsize
    if end - begin != need:
        raise AttnError("tensorfiles.not_readable_safetensors_file_tensor", where, shown=shown, shape=shape_str(shape),
                        kind=kind, size_text=size_text(need), size_text_2=size_text(end - begin))
    if data_start + end > size:
        raise AttnError("tensorfiles.not_readable_safetensors_file_tensor_2", where, shown=shown,
                        data_start=data_start + end, size=size)
    return dtype, need


def _ended_early(shown: str, size: int, where: str) -> Callable[[], AttnError]:
    """The error of a tensor whose bytes ran out while they were read (the file shrank after its header was read)."""
    return lambda: AttnError("tensorfiles.not_readable_safetensors_file_tensor_3", where, shown=shown, size=size)


# ---------------------------------------------------------------- .npz


def read_npz(path: Path, plan: TensorPlan) -> np.ndarray:
    import lzma
    import zipfile  # (here, not at every run's start: see benchmarks/README.md, imports)
    import zlib

    where = plan.file
    with path.open("rb") as f:
        start = f.read(8)
    if not (start.startswith(b"PK\x03\x04") or start.startswith(b"PK\x05\x06")):
        what = "a .npy file (one array): give its name alone, without file and tensor" if start.startswith(
            b"\x93NUMPY") else "not a zip archive"
        raise AttnError("tensorfiles.not_npz_archive_zip_npy", where, what=what)
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename[:-4]: info for info in archive.infolist() if info.filename.endswith(".npy")}
            info = members.get(plan.tensor)
            if info is None:
                raise plan.missing(list(members))
            with archive.open(info) as member:
                return _npy_member(member, info.file_size, plan)
    except AttnError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as e:
        raise AttnError("tensorfiles.not_readable_npz_archive", where, zip_reason=_zip_reason(e)) from None
    except NotImplementedError:
        raise AttnError("tensorfiles.not_readable_npz_archive_compressed",
                        where) from None
    except RuntimeError:  # zipfile: an encrypted member
        raise AttnError("tensorfiles.not_readable_npz_archive_array", where, shown=plan.shown) from None
    except (zlib.error, lzma.LZMAError, OSError):  # (bz2 says OSError)
        raise AttnError("tensorfiles.not_readable_npz_archive_array_2",
                        where, shown=plan.shown) from None


def _zip_reason(e: Exception) -> str:
    """Why the zip cannot be read, without what zipfile quotes of it (member names)."""
    text = str(e)
    if "CRC" in text:
        return "a member's data is damaged (its checksum differs)"
    if isinstance(e, EOFError) or "truncated" in text.lower():
        return "its data ends early"
    return "it is a damaged zip archive"


def _npy_member(member: Any, size: int, plan: TensorPlan) -> np.ndarray:
    """One ``.npy`` member of the archive, its header checked before its data is read."""
    import zipfile

    where = plan.file
    bad = f"is not a readable .npz archive: array {plan.shown}"
    try:
        shape, fortran, dtype = npy_header(member, f"{bad} is a .npy", where)
    except (AttnError, EOFError, OSError, zipfile.BadZipFile):  # (a damaged member: said by the caller)
        raise
    except Exception:  # numpy parses the header text with Python's tokenizer: any failure is a bad member
        raise AttnError("tensorfiles.has_header_that_cannot_read", where, bad=bad) from None
    if dtype.hasobject:
        raise AttnError("tensorfiles.holds_python_objects_pickles_refused", where, bad=bad)
    if dtype.kind not in NPY_KINDS or dtype.subdtype is not None or dtype.names is not None:
        what = ("records (structured values)" if dtype.names is not None or dtype.subdtype is not None
                else f"{dtype} values")
        raise AttnError("tensorfiles.array_holds_expected_real_numbers", where, shown=plan.shown,
                        file=shorten(plan.file), what=what)
    if any(isinstance(s, bool) or s < 0 for s in shape):
        raise AttnError("tensorfiles.has_header_negative_size", where, bad=bad)
    need = math.prod(shape) * dtype.itemsize
    if need > size:
        raise AttnError("tensorfiles.promises_member_cut_short_forged", where, bad=bad, shape=shape_str(shape),
                        dtype=dtype, size_text=size_text(need), size_text_2=size_text(size))
    plan.ensure_room(shape, str(dtype), need)
    data = member.read(need)
    if len(data) != need:
        raise AttnError("tensorfiles.s_data_ends_early", where, bad=bad)
    raw = np.frombuffer(bytearray(data), dtype=dtype)
    raw = raw.reshape(shape[::-1]).T if fortran else raw.reshape(shape)
    return plan.apply(raw)
