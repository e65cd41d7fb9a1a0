"""A kernel's result for ``attncli check --against``: the arrays a file holds under attncli's keys.

    result.npz / result.safetensors   any of head_outputs, lse, grad_kernel_queries, grad_kernel_keys,
                                      grad_values, weights (attncli's shapes, or PyTorch's (1, heads, n, d))
    head_outputs.npy                  one array, named by the file's name

Read without pickles, bfloat16 and float16 widened exactly (:mod:`attncli.inputs.archives`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from attncli.core.arguments import real_array
from attncli.core.errors import AttnError, quoted
from attncli.inputs.tensorfiles import _widen, read_every_tensor

KINDS = (".npz", ".safetensors", ".npy")
PASSED_OVER = ("scale",)  # what attncli compute's own .npz carries beside the arrays (compute --emulate -o x.npz)


def read_result(name: str, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The arrays of ``keys`` the file ``name`` holds (at least one), as float64."""
    path = Path(name)
    suffix = path.suffix.lower()
    if suffix not in KINDS:
        raise AttnError("result.expected_npz_safetensors_npy_file",
                        "--against", value=quoted(path.suffix or 'no extension'))
    if suffix == ".npy":
        if path.stem not in keys:
            raise AttnError("result.holds_one_array_named_file",
                            name, keys=', '.join(keys))
        try:
            array = np.load(path, allow_pickle=False)  # NaN and ±inf kept: a kernel's bug is judged, not refused
        except OSError as e:
            raise AttnError("archives.cannot_read", name, value=e.strerror or type(e).__name__) from None
        except ValueError:
            raise AttnError("result.not_readable_npy_file_numbers", name) from None
        return {path.stem: _real(array, path.stem, name)}
    if not path.is_file():
        raise AttnError("result.no_such_file", name)
    if suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as archive:
                _known(archive.files, keys, name)
                found = {key: _real(archive[key], key, name) for key in keys if key in archive.files}
        except (OSError, ValueError):
            raise AttnError("result.not_readable_npz_archive_numbers", name) from None
    else:
        tensors = read_every_tensor(path, name)
        _known(list(tensors), keys, name)
        found = {key: _real(_widen(raw, kind), key, name) for key, (kind, raw) in tensors.items() if key in keys}
    if not found:
        raise AttnError("result.holds_none", name, keys=', '.join(keys))
    return found


def _real(array: np.ndarray, key: str, name: str) -> np.ndarray:
    """A result's array at its door: real numbers only (complex, bool, text refused, never cast: a verdict never
    passes what it did not read); NaN and ±inf kept, a kernel's bug is judged, not refused; the shape is judged
    against the truth's (:func:`attncli.core.verdict.judge`)."""
    try:
        return real_array(array, key, finite=False)
    except AttnError as e:
        raise e.at(name) from None


def _known(names: list[str], keys: tuple[str, ...], name: str) -> None:
    """Every array of the file is one of ``keys`` (or :data:`PASSED_OVER`): a misnamed one (``dq``) is refused, not
    silently left unjudged."""
    unknown = [key for key in names if key not in keys and key not in PASSED_OVER]
    if unknown:
        shown = ", ".join(quoted(key) for key in unknown[:5]) + (", …" if len(unknown) > 5 else "")
        raise AttnError("result.holds_which_against_does_not", name, shown=shown, keys=', '.join(keys))
