"""One array out of a checkpoint or an archive: ``{file, tensor, layout, rows, columns}``.

    weights:
      query: {file: model.safetensors, tensor: model.layers.3.self_attn.q_proj.weight, layout: torch}
      key:   {file: result.npz, tensor: keys}
      value: {file: gpt2.safetensors, tensor: h.0.attn.c_attn.weight, columns: [1536, 2304]}

The mapping is checked here, and its :class:`~attncli.inputs.tensor_plan.TensorPlan` (the layout, the rows
and columns kept) is checked against the tensor's shape as soon as the file's
header gives it, before any data is read.  The files themselves are read by
:mod:`attncli.inputs.tensorfiles`: ``.safetensors`` without PyTorch and without
the ``safetensors`` package (whose numpy side cannot give bfloat16), ``.npz``
without pickles; only the named array's bytes, so taking one 4 MB matrix out of
a 1 GB checkpoint reads 4 MB.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe, nearest, quoted, shorten, unknown_key
from attncli.inputs.reading import file_status
from attncli.inputs.tensor_plan import TensorPlan

ARCHIVE_KEYS = ("file", "tensor", "layout", "rows", "columns")
ARCHIVE_KINDS = (".safetensors", ".npz")


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
        raise AttnError("archives.required_next_tensor_safetensors_npz", "file")
    if not isinstance(file, str):
        raise AttnError("archives.expected_file_name_not", "file", file=describe(file))
    if file == "":
        raise AttnError("archives.empty_file_name_give_safetensors", "file")
    path = Path(file) if Path(file).is_absolute() else folder / file
    suffix = path.suffix.lower()
    if suffix not in ARCHIVE_KINDS:
        raise AttnError("values.value_and_problem", "file", value=quoted(file), problem=_not_an_archive(suffix))
    if tensor is None:
        raise AttnError("archives.required_name_one_array", "tensor", file=shorten(file))
    if not isinstance(tensor, str):
        raise AttnError("archives.expected_array_s_name_text", "tensor", tensor=describe(tensor))
    mode = file_status(path, file, "a .safetensors or .npz file").st_mode
    if not stat.S_ISREG(mode):
        raise AttnError("archives.not_regular_file_device_pipe", file)
    from attncli.inputs.tensorfiles import read_npz, read_safetensors  # (only a document with such a file reads one)

    plan = TensorPlan(spec, file, tensor)
    try:
        array = read_safetensors(path, plan) if suffix == ".safetensors" else read_npz(path, plan)
    except PermissionError:
        raise AttnError("archives.permission_denied", file) from None
    except OSError as e:
        raise AttnError("archives.cannot_read", file, value=e.strerror or type(e).__name__) from None
    return array, plan.name


def _not_an_archive(suffix: str) -> str:
    if suffix in (".npy", ".csv", ".tsv", ".txt"):
        return "holds one matrix: give its name alone (query: x.npy), without file and tensor"
    if suffix in (".bin", ".pt", ".pth", ".ckpt", ".pkl"):
        from attncli.inputs.tensorfiles import PICKLED

        return "is " + PICKLED
    return "is not a .safetensors or .npz file"
