"""Issue 26, the readers' half: no signal, no hang, no wait, and one ``Error:`` line for files that change or lie.

- A checkpoint or .npy that shrinks while attncli reads it: read, never mapped (no SIGBUS), the missing bytes an error.
- A model folder whose files are pipes, devices or folders: refused before anything is opened (no hang).
- A header of many names: one parse per file per run, and a nearest-name search that does not compare with all.
- NumPy's floating-point warnings never reach stderr; the fast YAML path gives what the careful one gives.
- An empty file name is said to be one, wherever a file is named.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from test_checkpoints import assert_refused, compute, entry, safetensors_bytes, sparse_checkpoint

from attncli.core.errors import AttnError
from attncli.inputs import archives, matrices
from attncli.inputs.matrices import read_value

ROOT = Path(__file__).resolve().parent.parent
ROWS, COLS = 4200, 4096  # 65.6 MiB of float32: past the 64 MiB from which attncli used to map a file


# ---------------------------------------------------------------- a file that shrinks while it is read


def npy_zeros(path: Path, rows: int, cols: int) -> None:
    """A valid .npy of rows × cols float32 zeros, its data a hole (no disk used)."""
    header = np.lib.format.header_data_from_array_1_0(np.zeros((1, 1), np.float32)) | {"shape": (rows, cols)}
    with path.open("wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        f.truncate(f.tell() + rows * cols * 4)


SHRINK_AFTER_READING = """
import os, sys
from attncli.inputs import archives, matrices
path, kind = sys.argv[1], sys.argv[2]
def truncating(real):
    def hooked(*a, **k):
        os.truncate(path, 100)  # (as `truncate -s 100` while attncli runs)
        return real(*a, **k)
    return hooked
if kind == "safetensors":
    archives.TensorPlan.apply = truncating(archives.TensorPlan.apply)  # the tensor's bytes are located, not yet used
else:
    matrices._checked_array = truncating(matrices._checked_array)  # the .npy is loaded, its numbers not yet used
from attncli.cli import main
main(sys.argv[3:])
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["safetensors", "npy"])
def test_a_file_cut_short_after_it_is_read_kills_nothing(tmp_path, kind):
    """The file is truncated once attncli has its bytes: mapped, the process died of SIGBUS (exit 135, nothing said);
    read, the run has every value it read and finishes."""
    data = tmp_path / f"m.{kind}"
    (sparse_checkpoint if kind == "safetensors" else npy_zeros)(data, ROWS, COLS)
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps({"inputs": {"file": data.name, "tensor": "w"} if kind == "safetensors" else data.name}))
    out = tmp_path / "x.npy"
    result = subprocess.run([sys.executable, "-c", SHRINK_AFTER_READING, str(data), kind, "compute", str(doc), "--only",
                             "inputs", "-o", str(out)], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "ATTNCLI_MEMORY": "2G"})
    assert result.returncode == 0, (result.returncode, result.stderr)
    assert data.stat().st_size == 100 and result.stderr == ""
    got = np.load(out)
    assert got.shape == (ROWS, COLS) and not got.any()


@pytest.mark.parametrize("keep", [100, 30_000])  # (of 48 kB)
@pytest.mark.parametrize("kind", ["safetensors", "npy"])
def test_a_file_cut_short_while_it_is_read_is_one_error(runner, tmp_path, monkeypatch, kind, keep):
    """Truncated between the header's checks and the data's read: one line, exit 2, nothing written."""
    data = tmp_path / f"m.{kind}"
    array = np.arange(40 * 300, dtype=np.float32).reshape(40, 300)
    if kind == "safetensors":
        data.write_bytes(safetensors_bytes({"w": array}))
        real = archives.TensorPlan.ensure_room
        monkeypatch.setattr(archives.TensorPlan, "ensure_room", lambda *a: (os.truncate(data, keep), real(*a))[1])
    else:
        np.save(data, array)
        real = matrices.ensure_fits
        monkeypatch.setattr(matrices, "ensure_fits", lambda *a, **k: (os.truncate(data, keep), real(*a, **k))[1])
    doc = {"inputs": {"file": data.name, "tensor": "w"} if kind == "safetensors" else data.name}
    result = compute(runner, tmp_path, doc, "--only", "inputs", "-o", str(tmp_path / "x.json"))
    assert_refused(result, f"inputs: {data.name}", "data ends early", "cut short or rewritten while attncli read it")
    assert not (tmp_path / "x.json").exists()


# ---------------------------------------------------------------- no NumPy warning on stderr


SIGNALLING_NAN = {"BF16": (0x7F81, "<u2"), "F16": (0x7C01, "<u2"), "F32": (0x7F800001, "<u4")}


@pytest.mark.parametrize("kind", SIGNALLING_NAN)
def test_a_signalling_nan_is_named_without_a_warning(tmp_path, kind):
    """A signalling NaN is cast to float64 with the invalid flag raised: the reader names the cell, warning nothing."""
    bits, dtype = SIGNALLING_NAN[kind]
    cells = np.array([[0, 0], [0, bits]], dtype=dtype)
    (tmp_path / "m.safetensors").write_bytes(entry(kind, (2, 2), (0, cells.nbytes), cells.tobytes()))
    np.save(tmp_path / "m.npy", cells.view({"<u2": np.float16, "<u4": np.float32}[dtype]) if kind != "BF16" else
            np.zeros(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttnError, match="row 2, column 2: nan is not a finite number"):
            read_value({"file": "m.safetensors", "tensor": "w"}, tmp_path)
        if kind != "BF16":
            with pytest.raises(AttnError, match="row 2, column 2: nan is not a finite number"):
                read_value("m.npy", tmp_path)
        with pytest.raises(AttnError, match="row 2, column 2: nan is not a mask value"):
            read_value({"file": "m.safetensors", "tensor": "w"}, tmp_path, boolean=True)
