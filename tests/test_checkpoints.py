"""Matrices from checkpoints and archives: ``{file, tensor, layout, rows, columns}`` in .safetensors and .npz.

- Exactness: files written by ``safetensors.torch.save_file`` in float64/32/16 and bfloat16 read to the bit
  (against torch's own ``.double()``), .npz written by ``np.savez`` (and by attncli itself) read back exactly.
- Layout and cuts: ``layout: torch`` transposes, ``rows``/``columns`` cut after it, a vector is one row.
- Hostile and damaged files, every error case: exit 2, one line, nothing on stdout, nothing written, no file
  content beyond a shortened tensor name; the memory guard refuses a huge tensor before it is read.
- Real layers: a GPT-2 block's attention read straight from its ``save_file`` checkpoint (``columns`` cutting
  ``c_attn``), a Llama attention from a bfloat16 checkpoint with ``layout: torch``, each to 1e-9 against
  Hugging Face.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import attncli
from attncli.cli import app
from attncli.core.errors import AttnError
from attncli.inputs.matrices import read_value

F32 = np.float32
KINDS = {np.dtype(np.float64): "F64", np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
         np.dtype(np.int64): "I64", np.dtype(np.int32): "I32", np.dtype(np.uint8): "U8", np.dtype(np.bool_): "BOOL"}
RNG = np.random.default_rng(16)
Q_NAME = "model.layers.0.self_attn.q_proj.weight"


# ---------------------------------------------------------------- writing files by hand


def safetensors_bytes(arrays: dict[str, np.ndarray], metadata: dict | None = None) -> bytes:
    """A .safetensors file as the format describes it (what save_file writes), from numpy arrays."""
    header: dict = {"__metadata__": metadata} if metadata else {}
    blobs, offset = [], 0
    for name, array in arrays.items():
        blob = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": KINDS[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    return raw_safetensors(json.dumps(header).encode(), b"".join(blobs))


def raw_safetensors(header: bytes, data: bytes = b"") -> bytes:
    header += b" " * (-len(header) % 8)
    return len(header).to_bytes(8, "little") + header + data


def entry(dtype="F32", shape=(2, 2), offsets=(0, 16), data: bytes = bytes(16), name: str = "w") -> bytes:
    """A file of one tensor whose header entry says what the arguments say (true or not)."""
    header = {name: {"dtype": dtype, "shape": list(shape) if isinstance(shape, tuple) else shape,
                     "data_offsets": list(offsets) if isinstance(offsets, tuple) else offsets}}
    return raw_safetensors(json.dumps(header).encode(), data)


def npz_bytes(compressed: bool = False, **arrays) -> bytes:
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    return buffer.getvalue()


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=array.dtype == object)
    return buffer.getvalue()


def zip_of(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def forged_npy_member(shape: str = "(100000, 100000)") -> bytes:
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + bytes(16)


def read(spec: dict, folder: Path, **options) -> np.ndarray:
    return read_value(spec, folder, **options)


def compute(runner, tmp_path: Path, doc: dict, *args: str, env: dict | None = None):
    path = tmp_path / "doc.yaml"
    path.write_text(json.dumps(doc))  # (JSON is YAML; yaml.safe_dump would write aliases)
    return runner.invoke(app, ["compute", str(path), "--format", "json", *args], env=env)


def assert_refused(result, *fragments: str) -> str:
    err = result.stderr
    assert result.exit_code == 2, (result.exit_code, err, result.stdout[:200])
    assert result.stdout == "" and "Traceback" not in err
    assert err.startswith(("Error: ", "错误：")) and err.count("\n") == 1, err  # (错误： under --lang zh)
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    return err


# ---------------------------------------------------------------- exact reading


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def save_file():
    return pytest.importorskip("safetensors.torch").save_file


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_save_file_tensors_read_exactly(tmp_path, torch, save_file, dtype):
    g = torch.Generator().manual_seed(0)
    kind = getattr(torch, dtype)
    tensors = {"matrix": torch.randn(5, 7, generator=g).to(kind), "vector": torch.randn(7, generator=g).to(kind),
               "cube": (torch.randn(2, 3, 4, generator=g) * 1e3).to(kind),
               "tiny": torch.tensor([[1e-40, -3e-39, 6e-8], [65504.0, -0.0, 1.0]]).to(kind)}
    save_file(tensors, tmp_path / "m.safetensors")
    for name, tensor in tensors.items():
        got = read({"file": "m.safetensors", "tensor": name}, tmp_path)
        want = tensor.double().numpy()
        assert got.dtype == np.float64 and got.shape == want.shape
        assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want)), name
    if dtype == "bfloat16":  # the widening is bit for bit: float32 values with their low 16 bits zero
        assert not np.array_equal(read({"file": "m.safetensors", "tensor": "matrix"}, tmp_path),
                                  tensors["matrix"].float().numpy().astype(np.float64) + 1e-12)


def test_layout_and_cuts(tmp_path, torch, save_file):
    w = torch.randn(6, 4, dtype=torch.float64)  # an nn.Linear.weight: d_out × d_in
    b = torch.randn(6, dtype=torch.float64)
    save_file({"w": w, "b": b}, tmp_path / "m.safetensors")
    spec = {"file": "m.safetensors", "tensor": "w"}
    wn, bn = w.numpy(), b.numpy()
    assert np.array_equal(read(spec, tmp_path), wn)
    assert np.array_equal(read(spec | {"layout": "rows"}, tmp_path), wn)
    assert np.array_equal(read(spec | {"layout": "torch"}, tmp_path), wn.T)
    assert np.array_equal(read(spec | {"layout": "torch", "columns": [2, 5]}, tmp_path), wn.T[:, 2:5])
    assert np.array_equal(read(spec | {"layout": "torch", "rows": [1, 3], "columns": [0, 6]}, tmp_path), wn.T[1:3])
    assert np.array_equal(read(spec | {"rows": [5, 6]}, tmp_path), wn[5:6])
    vector = {"file": "m.safetensors", "tensor": "b"}
    assert np.array_equal(read(vector | {"layout": "torch"}, tmp_path), bn)  # a vector stays as it is
    assert np.array_equal(read(vector | {"columns": [2, 4]}, tmp_path), bn[2:4])  # one row: columns cut it
    assert np.array_equal(read(vector | {"rows": [0, 1], "columns": [0, 6]}, tmp_path), bn)
    assert read(spec | {"layout": "torch"}, tmp_path).flags.c_contiguous


def test_integers_and_boolean_masks(tmp_path):
    mask = np.tril(np.ones((3, 3), dtype=bool))
    (tmp_path / "m.safetensors").write_bytes(safetensors_bytes({
        "mask": mask, "ints": np.arange(6, dtype=np.int64).reshape(2, 3),
        "bytes": np.array([[0, 1], [1, 1]], np.uint8)}))
    assert np.array_equal(read({"file": "m.safetensors", "tensor": "mask"}, tmp_path, boolean=True), mask)
    assert np.array_equal(read({"file": "m.safetensors", "tensor": "mask", "layout": "torch"}, tmp_path, boolean=True),
                          mask.T)
    assert np.array_equal(read({"file": "m.safetensors", "tensor": "ints"}, tmp_path), np.arange(6.0).reshape(2, 3))
    assert np.array_equal(read({"file": "m.safetensors", "tensor": "bytes"}, tmp_path, boolean=True), [[0, 1], [1, 1]])
    with pytest.raises(AttnError, match="bool values; booleans belong only in a mask"):
        read({"file": "m.safetensors", "tensor": "mask"}, tmp_path)
    with pytest.raises(AttnError, match=r"^m.safetensors, tensor 'ints': row 1, column 3: 2 is not a mask value"):
        read({"file": "m.safetensors", "tensor": "ints"}, tmp_path, boolean=True)


def test_our_writer_is_the_format(tmp_path):
    """The files this test module writes by hand are what the safetensors package reads."""
    numpy_side = pytest.importorskip("safetensors.numpy")
    arrays = {"a": RNG.normal(size=(3, 5)), "b": RNG.normal(size=4).astype(F32), "c": np.arange(3, dtype=np.int32)}
    (tmp_path / "m.safetensors").write_bytes(safetensors_bytes(arrays, metadata={"format": "np"}))
    loaded = numpy_side.load_file(tmp_path / "m.safetensors")
    assert all(np.array_equal(loaded[k], v) and loaded[k].dtype == v.dtype for k, v in arrays.items())


def test_npz_arrays(tmp_path):
    arrays = {"a": RNG.normal(size=(4, 6)), "half": RNG.normal(size=(3, 2)).astype(np.float16),
              "fortran": np.asfortranarray(RNG.normal(size=(3, 5))), "v": RNG.normal(size=5).astype(F32),
              "heads": RNG.normal(size=(2, 3, 4))}
    (tmp_path / "a.npz").write_bytes(npz_bytes(**arrays))
    (tmp_path / "c.npz").write_bytes(npz_bytes(compressed=True, **arrays))
    for file in ("a.npz", "c.npz"):
        for name, array in arrays.items():
            assert np.array_equal(read({"file": file, "tensor": name}, tmp_path), array.astype(np.float64))
        got = read({"file": file, "tensor": "fortran", "layout": "torch", "columns": [1, 3]}, tmp_path)
        assert np.array_equal(got, arrays["fortran"].T[:, 1:3])


def test_attncli_reads_back_the_npz_it_writes(runner, tmp_path):
    doc = {"inputs": [[1.0, 0.5, -1.0], [0.25, 2.0, 1.0]], "heads": 1, "weights": {"output": [[1, 0], [0, 1], [1, 1]]}}
    (tmp_path / "doc.yaml").write_text(json.dumps(doc))
    result = runner.invoke(app, ["compute", str(tmp_path / "doc.yaml"), "-o", str(tmp_path / "out.npz")])
    assert result.exit_code == 0, result.stderr
    first = np.load(tmp_path / "out.npz")
    chained = {"inputs": {"file": "out.npz", "tensor": "output"},
               "weights": {"query": {"file": "out.npz", "tensor": "keys"},
                           "key": {"file": "out.npz", "tensor": "keys"}}}
    (tmp_path / "next").mkdir()
    result = compute(runner, tmp_path, chained, "--only", "inputs", "--only", "queries")
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    assert np.array_equal(got["inputs"], first["output"])
    assert np.allclose(got["queries"], first["output"] @ first["keys"][0], rtol=0, atol=1e-12)


def test_minus_inf_and_nan_in_a_tensor(tmp_path):
    bias = np.array([[0.0, -np.inf], [0.5, 0.0]], dtype=F32)
    (tmp_path / "b.safetensors").write_bytes(safetensors_bytes({"bias": bias, "nan": np.array([1.0, np.nan])}))
    assert np.array_equal(read({"file": "b.safetensors", "tensor": "bias"}, tmp_path, minus_inf=True), bias)
    with pytest.raises(AttnError,
                       match=r"^b.safetensors, tensor 'bias': row 1, column 2: -inf is not a finite number$"):
        read({"file": "b.safetensors", "tensor": "bias"}, tmp_path)
    with pytest.raises(AttnError, match=r"tensor 'nan': entry 2: nan is not allowed here"):
        read({"file": "b.safetensors", "tensor": "nan"}, tmp_path, minus_inf=True)


def counting_reads(monkeypatch, path: Path) -> dict:
    """The bytes read from ``path`` (opened with Path.open), and each read's size (``reads``), counted as they go."""
    counted: dict = {"bytes": 0, "reads": []}
    real_open = Path.open

    class Counting(io.BufferedReader):
        def read(self, *a):
            data = super().read(*a)
            counted["bytes"] += len(data)
            counted["reads"].append(len(data))
            return data

        def readinto(self, b):
            n = super().readinto(b)
            counted["bytes"] += n
            counted["reads"].append(n)
            return n

    def counting_open(self, mode="r", *a, **k):
        return Counting(io.FileIO(self, "r")) if self == path and mode == "rb" else real_open(self, mode, *a, **k)

    monkeypatch.setattr(Path, "open", counting_open)
    return counted


def test_only_the_named_tensors_bytes_are_read(tmp_path, monkeypatch):
    """A 1 GiB checkpoint (sparse) gives one 4 MiB matrix: about 4 MiB is read."""
    big, small = 1 << 30, 1024 * 1024 * 4
    header = json.dumps({"huge": {"dtype": "F32", "shape": [big // 4], "data_offsets": [0, big]},
                         "w": {"dtype": "F32", "shape": [1024, 1024], "data_offsets": [big, big + small]}}).encode()
    header += b" " * (-len(header) % 8)
    path = tmp_path / "big.safetensors"
    with path.open("wb") as f:
        f.write(len(header).to_bytes(8, "little") + header)
        f.seek(8 + len(header) + big)
        f.write(np.full((1024, 1024), 0.5, dtype=F32).tobytes())
    counted = counting_reads(monkeypatch, path)
    start = time.perf_counter()
    got = read({"file": "big.safetensors", "tensor": "w", "layout": "torch"}, tmp_path)
    assert time.perf_counter() - start < 1.0
    assert got.shape == (1024, 1024) and (got == 0.5).all()
    assert small <= counted["bytes"] < small + 8 + len(header) + 4096
    for cut, shape, kept in [({"rows": [3, 5]}, (2, 1024), 2 * 4096),
                             ({"layout": "torch", "columns": [3, 5]}, (1024, 2), 2 * 4096),
                             ({"columns": [3, 5]}, (1024, 2), small)]:  # only the stored rows kept are read
        counted["bytes"] = 0
        assert read({"file": "big.safetensors", "tensor": "w"} | cut, tmp_path).shape == shape
        assert kept <= counted["bytes"] < kept + 8 + len(header) + 4096, cut
    counted["bytes"] = 0  # a 1 GiB vector: four of its entries, neither read nor mapped whole
    assert np.array_equal(read({"file": "big.safetensors", "tensor": "huge", "columns": [7, 11]}, tmp_path),
                          np.zeros(4))
    assert 16 <= counted["bytes"] < 16 + 8 + len(header) + 4096


def test_no_file_is_ever_mapped(tmp_path, monkeypatch):
    """A mapped file that shrinks while in use ends the process with SIGBUS: a tensor or .npy of any size (here
    past the 64 MiB from which they were mapped) is read, to the exact value, and nothing is mapped."""
    import mmap

    def refuse(*a, **k):
        raise AssertionError("a file was mapped")

    monkeypatch.setattr(mmap, "mmap", refuse)  # (np.memmap and np.load(mmap_mode=…) map through it)
    rows, cols = 4200, 4096  # 65.6 MiB of float32
    sparse_checkpoint(tmp_path / "m.safetensors", rows, cols)
    got = read({"file": "m.safetensors", "tensor": "w", "layout": "torch"}, tmp_path)
    assert got.shape == (cols, rows) and not got.any()
    array = np.zeros((rows, cols), F32)
    array[-1, -3:] = (1.5, -2.0, 3.25)
    np.save(tmp_path / "m.npy", array)
    np.save(tmp_path / "f.npy", np.asfortranarray(array[:, :100]))
    assert np.array_equal(read("m.npy", tmp_path), array) and read("m.npy", tmp_path).dtype == np.float64
    assert np.array_equal(read("f.npy", tmp_path), array[:, :100])


# ---------------------------------------------------------------- the checkpoint is an input of the run


def test_the_checkpoint_is_never_written_over(runner, tmp_path):
    original = safetensors_bytes({"x": np.eye(2)})
    (tmp_path / "m.safetensors").write_bytes(original)
    doc = {"inputs": {"file": "m.safetensors", "tensor": "x"}}
    assert_refused(compute(runner, tmp_path, doc, "-o", str(tmp_path / "m.safetensors")),
                   "is one of this run's input files")
    assert (tmp_path / "m.safetensors").read_bytes() == original
    result = compute(runner, tmp_path, doc, "-o", str(tmp_path / "out.json"))
    assert result.exit_code == 0 and json.loads((tmp_path / "out.json").read_text())["inputs"] == [[1, 0], [0, 1]]


# ---------------------------------------------------------------- every error: one line, exit 2


X4 = [[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 2.0], [1.0, 1.0, 1.0, 1.0]]
NAMES = [Q_NAME, Q_NAME.replace("q_proj", "k_proj"), Q_NAME.replace("q_proj", "v_proj"),
         "model.layers.0.input_layernorm.weight", "model.embed_tokens.weight"]


def checkpoint(path: Path) -> None:
    arrays = {name: RNG.normal(size=(4, 4)).astype(F32) for name in NAMES}
    arrays |= {"bias": RNG.normal(size=8).astype(F32), "cube": np.ones((2, 4, 2), F32),
               "big4d": np.ones((1, 1, 2, 2), F32),
               "one": np.ones((), F32), "empty": np.ones((0, 4), F32), "nan": np.array([[1, np.nan, 0, 0]] * 4, F32),
               "mask": np.ones((3, 3), bool)}
    path.write_bytes(safetensors_bytes(arrays, metadata={"secret": "PASSWORD-42"}))


def q(**spec) -> dict:
    return {"inputs": X4, "weights": {"query": {"file": "m.safetensors", "tensor": Q_NAME} | spec}}


REFUSED = [  # (id, document, file bytes (m.safetensors unless named), words the message must hold)
    ("unknown-tensor-nearest", q(tensor="model.layers.0.attn.q_proj.weight"), None,
     ["weights.query: no tensor 'model.layers.0.attn.q_proj.weight' in m.safetensors; nearest: "
      f"'{Q_NAME}', 'model.layers.0.self_attn.v_proj.weight', 'model.layers.0.self_attn.k_proj.weight'\n"]),
    ("unknown-tensor-none-close", q(tensor="zzz"), None, ["no tensor 'zzz' in m.safetensors, which holds", "more"]),
    ("metadata-is-no-tensor", q(tensor="__metadata__"), None, ["no tensor '__metadata__'"]),
    ("unknown-key", q(layuot="torch"), None, ["weights.query: unknown key 'layuot' (did you mean 'layout'?)"]),
    ("misspelled-file", {"inputs": X4, "weights": {"query": {"fiel": "m.safetensors", "tensr": Q_NAME}}}, None,
     ["weights.query: unknown key 'fiel' (did you mean 'file'?)"]),
    ("random-and-file", q(random="normal"), None, ["unknown key 'random'", "file, tensor, layout, rows, columns"]),
    ("no-file", {"inputs": X4, "weights": {"query": {"tensor": Q_NAME}}}, None, ["weights.query: file: is required"]),
    ("no-tensor", {"inputs": X4, "weights": {"query": {"file": "m.safetensors"}}}, None,
     ["weights.query: tensor: is required: the name of one array in m.safetensors"]),
    ("file-not-text", q(file=3), None, ["file: expected a file name, not 3"]),
    ("tensor-not-text", q(tensor=["a"]), None, ["tensor: expected the array's name (text), not a list"]),
    ("npy-named", q(file="x.npy"), None, ["file: 'x.npy' holds one matrix: give its name alone"]),
    ("pickle-named", q(file="pytorch_model.bin"), None, ["'pytorch_model.bin' is a PyTorch file", "never reads"]),
    ("other-suffix", q(file="model.h5"), None, ["'model.h5' is not a .safetensors or .npz file"]),
    ("string-names-an-archive", {"inputs": "m.safetensors"}, None,
     ["inputs: m.safetensors: holds named arrays; name one: {file: m.safetensors, tensor: NAME}"]),
    ("missing-file", q(file="gone.safetensors"), None, ["weights.query: gone.safetensors: no such file"]),
    ("layout-unknown", q(layout="columns"), None, ["layout: 'columns' is not rows (as stored) or torch"]),
    ("layout-not-text", q(layout=True), None, ["layout: true is not rows"]),
    ("layout-torch-3d", q(tensor="cube", layout="torch"), None,
     ["layout: torch transposes a 2-D nn.Linear weight, but tensor 'cube' in m.safetensors is 2×4×2"]),
    ("cut-3d", q(tensor="cube", rows=[0, 1]), None, ["rows: rows and columns cut a matrix, but tensor 'cube'"]),
    ("cut-one-number", q(columns=[1]), None, ["columns: expected [start, stop], two whole numbers", "not [1]"]),
    ("cut-float", q(columns=[0, 1.5]), None, ["columns: expected [start, stop]"]),
    ("cut-bool", q(rows=[True, 2]), None, ["rows: expected [start, stop]"]),
    ("cut-text", q(rows="0:2"), None, ["rows: expected [start, stop]", "not the string '0:2'"]),
    ("cut-empty", q(columns=[2, 2]), None, ["columns: [2, 2] is no range: it needs 0 ≤ start < stop"]),
    ("cut-negative", q(rows=[-1, 2]), None, ["rows: [-1, 2] is no range"]),
    ("cut-beyond", q(columns=[2, 9], layout="torch"), None,
     ["weights.query: columns: [2, 9] goes beyond its 4 columns: tensor", "is 4×4, 4×4 after layout: torch",
      "columns count from 0, stop excluded"]),
    ("cut-huge", q(rows=[0, 10**30]), None, ["rows: [0, 1000000000… (31 digits)] goes beyond its 4 rows"]),
    ("vector-rows", {"inputs": X4, "bias": {"query": {"file": "m.safetensors", "tensor": "bias", "rows": [0, 2]}}},
     None, ["bias.query: rows: [0, 2] goes beyond its one row (a vector is one row)"]),
    ("vector-columns", {"inputs": X4, "bias": {"query": {"file": "m.safetensors", "tensor": "bias",
                                                         "columns": [4, 9]}}},
     None, ["bias.query: columns: [4, 9] goes beyond its 8 columns (a vector's entries)"]),
    ("vector-with-torch-layout", q(tensor="bias", layout="torch"), None,
     ["weights.query: is a vector of 8; expected a 4×d matrix (rows: the inputs columns) (layout: torch leaves a "
      "vector as it is: is it a bias?)"]),
    ("scalar", q(tensor="one"), None, ["tensor 'one' in m.safetensors is a single number (F32); expected 1 to 3 axes"]),
    ("four-axes", q(tensor="big4d"), None, ["tensor 'big4d' in m.safetensors is 1×1×2×2 (F32); expected 1 to 3 axes"]),
    ("empty", q(tensor="empty"), None,
     ["tensor 'empty' in m.safetensors is 0×4 (F32); expected 1 to 3 axes, not empty"]),
    ("nan", q(tensor="nan"), None,
     ["weights.query: m.safetensors, tensor 'nan': row 1, column 2: nan is not a finite"]),
    ("bool-weight", q(tensor="mask"), None, ["tensor 'mask': holds bool values; booleans belong only in a mask"]),
    ("shape-mismatch", q(columns=[0, 2]), None, ["weights.query"]),  # accepted cut, then a d_k that heads must split
    # hostile .safetensors files
    ("empty-file", q(), b"", ["m.safetensors: is not a .safetensors file: it has 0 bytes, fewer than the 8"]),
    ("seven-bytes", q(), b"\x10" * 7, ["it has 7 bytes, fewer than the 8 of its header length"]),
    ("absurd-header-length", q(), (2**63).to_bytes(8, "little") + b"{}", ["header of 8589934592 GiB",
                                                                          "more than the 100 MB a header may have"]),
    ("header-beyond-file", q(), (4000).to_bytes(8, "little") + b"{}      ",
     ["header of 3.9 KiB, more than the 8 bytes"]),
    ("zip-named-safetensors", q(), npz_bytes(x=np.eye(2)), ["is not a .safetensors file: it is a zip archive"]),
    ("npy-named-safetensors", q(), npy_bytes(np.eye(2)), ["it is a .npy file (one array)"]),
    ("pickle-named-safetensors", q(), pickle.dumps({"PASSWORD-42": 1}, protocol=4), ["it is a Python pickle"]),
    ("header-not-json", q(), raw_safetensors(b"{PASSWORD-42: nope}"), ["its header is not valid JSON"]),
    ("header-a-list", q(), raw_safetensors(b"[1, 2]"), ["its header is not a JSON object"]),
    ("header-bad-utf8", q(), raw_safetensors(b'{"\xff\xfe": 1}'), ["its header is not valid JSON"]),
    ("header-deep", q(), raw_safetensors(b"{" + b'"a":[' * 100000 + b"]" * 100000 + b"}"),
     ["its header is not valid JSON"]),
    ("entry-not-mapping", q(), raw_safetensors(json.dumps({Q_NAME: [1]}).encode()),
     ["lacks dtype, shape or data_offsets"]),
    ("entry-no-shape", q(), raw_safetensors(json.dumps({Q_NAME: {"dtype": "F32", "data_offsets": [0, 4]}}).encode()),
     ["lacks dtype, shape or data_offsets"]),
    ("dtype-fp8", q(), entry("F8_E4M3", name=Q_NAME), [f"tensor '{Q_NAME}' holds F8_E4M3 values, which attncli does "
                                                          "not read (F64, F32, F16, BF16, integers and BOOL)"]),
    ("dtype-long", q(), entry("X" * 5000, name=Q_NAME), ["holds XXXXXXXXXXXXXXXXXXXX… (5000 characters) values"]),
    ("dtype-not-text", q(), entry(7, name=Q_NAME), ["has a dtype that is not text"]),
    ("shape-negative", q(), entry(shape=(-2, -2), name=Q_NAME), ["has a shape that is not a list of sizes"]),
    ("shape-text", q(), entry(shape="2x2", name=Q_NAME), ["has a shape that is not a list of sizes"]),
    ("shape-float", q(), entry(shape=[2.0, 2], name=Q_NAME), ["has a shape that is not a list of sizes"]),
    ("offsets-reversed", q(), entry(offsets=(16, 0), name=Q_NAME), ["data_offsets that are not [begin, end]"]),
    ("offsets-one", q(), entry(offsets=[16], name=Q_NAME), ["data_offsets that are not [begin, end]"]),
    ("offsets-text", q(), entry(offsets=["0", "16"], name=Q_NAME), ["data_offsets that are not [begin, end]"]),
    ("offsets-span-wrong", q(), entry(offsets=(0, 12), name=Q_NAME),
     [f"tensor '{Q_NAME}' is 2×2 F32 (16 bytes) but its data_offsets span 12 bytes"]),
    ("offsets-beyond-file", q(), entry(offsets=(8, 24), name=Q_NAME),
     ["ends at byte", "but the file has", "cut short?"]),
    ("forged-huge-shape", q(), entry(shape=(10**12, 10**12), name=Q_NAME), ["is 1000000000000×1000000000000 F32",
                                                                            "but its data_offsets span 16 bytes"]),
    ("forged-huge-offsets", q(), entry(shape=(2**40, 2**40), offsets=(0, 2**82), name=Q_NAME), ["but the file has"]),
    ("bool-byte-2", {"inputs": X4[:1], "context": X4, "mask": {"file": "m.safetensors", "tensor": "w"}},
     entry("BOOL", shape=(1, 3), offsets=(0, 3), data=b"\x01\x02\x00"),
     ["BOOL tensor 'w' holds a byte that is not 0 or 1"]),
    # .npz
    ("npz-not-zip", q(file="a.npz"), {"a.npz": b"hello PASSWORD-42"},
     ["a.npz: is not a .npz archive (a zip of .npy files, as numpy.savez writes): it is not a zip archive"]),
    ("npz-is-npy", q(file="a.npz"), {"a.npz": npy_bytes(np.eye(2))}, ["it is a .npy file (one array)"]),
    ("npz-unknown", q(file="a.npz", tensor="kyes"), {"a.npz": npz_bytes(keys=np.eye(2), values=np.eye(2))},
     ["no tensor 'kyes' in a.npz; nearest: 'keys'"]),
    ("npz-empty", q(file="a.npz", tensor="x"), {"a.npz": npz_bytes()}, ["no tensor 'x' in a.npz: it holds no tensors"]),
    ("npz-pickles", q(file="a.npz", tensor="o"), {"a.npz": npz_bytes(o=np.array([{"PASSWORD-42": 1}], dtype=object))},
     ["array 'o' holds Python objects (pickles are refused)"]),
    ("npz-complex", q(file="a.npz", tensor="c"), {"a.npz": npz_bytes(c=np.ones((2, 2), complex))},
     ["array 'c' in a.npz holds complex128 values; expected real numbers"]),
    ("npz-records", q(file="a.npz", tensor="r"), {"a.npz": npz_bytes(r=np.zeros(2, dtype=[("PASSWORD", "<f8")]))},
     ["array 'r' in a.npz holds records (structured values); expected real numbers"]),
    ("npz-truncated", q(file="a.npz", tensor="x"), {"a.npz": npz_bytes(x=np.eye(9))[:200]},
     ["a.npz: is not a readable .npz archive"]),
    ("npz-forged-member", q(file="a.npz", tensor="x"), {"a.npz": zip_of({"x.npy": forged_npy_member()})},
     ["array 'x' promises 100000×100000 float64 (74.5 GiB) in a member of 144 bytes (cut short or forged)"]),
    ("npz-negative-shape", q(file="a.npz", tensor="x"), {"a.npz": zip_of({"x.npy": forged_npy_member("(-1, 2)")})},
     ["array 'x' has a header with a negative size"]),
    ("npz-member-not-npy", q(file="a.npz", tensor="x"), {"a.npz": zip_of({"x.npy": b"PASSWORD-42 " * 20})},
     ["array 'x' has a header that cannot be read"]),
]


@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_with_one_line(runner, tmp_path, case):
    _, doc, data, words = case
    checkpoint(tmp_path / "m.safetensors")
    for name, raw in (data if isinstance(data, dict) else {} if data is None else {"m.safetensors": data}).items():
        (tmp_path / name).write_bytes(raw)
    (tmp_path / "x.npy").write_bytes(npy_bytes(np.eye(4)))
    err = assert_refused(compute(runner, tmp_path, doc, "-o", str(tmp_path / "out.json")), *words)
    assert "PASSWORD" not in err  # nothing of a file is shown but a tensor name
    assert len(err) < 400
    assert not (tmp_path / "out.json").exists()


def test_damaged_npz_data(runner, tmp_path):
    raw = bytearray(npz_bytes(x=np.arange(16.0).reshape(4, 4)))
    raw[-200] ^= 0xFF  # a byte of the stored array's data: its checksum no longer matches
    (tmp_path / "a.npz").write_bytes(bytes(raw))
    assert_refused(compute(runner, tmp_path, q(file="a.npz", tensor="x")),
                   "a.npz: is not a readable .npz archive: a member's data is damaged (its checksum differs)")
    raw = bytearray(npz_bytes(compressed=True, x=np.arange(4096.0).reshape(64, 64)))
    raw[100:110] = b"\xff" * 10  # the compressed stream
    (tmp_path / "a.npz").write_bytes(bytes(raw))
    assert_refused(compute(runner, tmp_path, q(file="a.npz", tensor="x")), "a.npz: is not a readable .npz archive")


def test_control_characters_and_long_names_in_a_file(runner, tmp_path):
    name = "\x1b[31m" + "model.layers." * 1000
    (tmp_path / "m.safetensors").write_bytes(safetensors_bytes({name: np.eye(4, dtype=F32)}))
    err = assert_refused(compute(runner, tmp_path, q(tensor="model.layers.1")), "no tensor 'model.layers.1'")
    assert "\x1b" not in err and "\\x1b" in err and len(err) < 300


def test_a_directory_and_a_device(runner, tmp_path):
    (tmp_path / "d.safetensors").mkdir()
    assert_refused(compute(runner, tmp_path, q(file="d.safetensors")), "d.safetensors: is a directory")
    if Path("/dev/zero").exists():
        assert_refused(compute(runner, tmp_path, q(file="/dev/zero.npz")), "no such file")


# ---------------------------------------------------------------- memory: refused by size before anything is read


def sparse_checkpoint(path: Path, rows: int, cols: int) -> None:
    """A valid file holding one rows × cols float32 tensor, its data a hole (no disk used)."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [rows, cols], "data_offsets": [0, rows * cols * 4]}}).encode()
    header += b" " * (-len(header) % 8)
    with path.open("wb") as f:
        f.write(len(header).to_bytes(8, "little") + header)
        f.truncate(8 + len(header) + rows * cols * 4)


def test_a_huge_tensor_is_refused_by_size(runner, tmp_path, monkeypatch):
    sparse_checkpoint(tmp_path / "m.safetensors", 32768, 32768)  # 4 GiB of float32: 8 GiB as float64
    doc = {"inputs": {"file": "m.safetensors", "tensor": "w"}}
    assert_refused(compute(runner, tmp_path, doc, env={"ATTNCLI_MEMORY": "1G"}),
                   "inputs: reading m.safetensors, tensor 'w' (32768×32768 F32) would need", "more than the 1 GiB",
                   "ATTNCLI_MEMORY")
    cut = doc | {"inputs": {"file": "m.safetensors", "tensor": "w", "rows": [0, 4], "columns": [0, 4]}}
    result = compute(runner, tmp_path, cut, env={"ATTNCLI_MEMORY": "1G"})  # a cut needs (and reads) only what it keeps
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["inputs"] == [[0.0] * 4] * 4


def test_a_compressed_npz_member_is_refused_by_size(runner, tmp_path):
    (tmp_path / "a.npz").write_bytes(npz_bytes(compressed=True, x=np.zeros((2048, 2048))))  # 32 MiB, a few kB on disk
    assert_refused(compute(runner, tmp_path, q(file="a.npz", tensor="x"), env={"ATTNCLI_MEMORY": "20M"}),
                   "reading a.npz, tensor 'x' (2048×2048 float64) would need", "ATTNCLI_MEMORY")


# ---------------------------------------------------------------- fuzz: damaged and arbitrary files never escape


FUZZ = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
VALID = safetensors_bytes({"a": np.arange(6, dtype=F32).reshape(2, 3), "w": np.arange(12.0).reshape(3, 4)})
VALID_NPZ = npz_bytes(w=np.arange(12.0).reshape(3, 4), b=np.ones(3, F32))


def assert_clean(result) -> None:
    assert "Traceback" not in result.stderr and "Internal error" not in result.stderr, result.stderr
    assert result.exit_code in (0, 2), (result.exit_code, result.stderr)
    if result.exit_code == 2:
        assert result.stdout == "" and result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")


def damaged(raw: bytes, flips: list[tuple[int, int]], keep: int) -> bytes:
    data = bytearray(raw)
    for at, byte in flips:
        data[at % len(data)] = byte
    return bytes(data[:keep])


@pytest.mark.slow
@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), max_size=6),
       st.integers(0, len(VALID)), st.sampled_from(["rows", "torch"]))
@example(flips=[(0, 0xFF)], keep=len(VALID), layout="rows")
@example(flips=[(60, ord("9"))], keep=len(VALID), layout="torch")
def test_a_damaged_safetensors_file(runner, tmp_path, flips, keep, layout):
    (tmp_path / "m.safetensors").write_bytes(damaged(VALID, flips, keep))
    doc = {"inputs": {"file": "m.safetensors", "tensor": "w", "layout": layout},
           "mask": {"file": "m.safetensors", "tensor": "a"}}
    assert_clean(compute(runner, tmp_path, doc))


@pytest.mark.slow
@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(VALID_NPZ) - 1), st.integers(0, 255)), max_size=6),
       st.integers(0, len(VALID_NPZ)))
def test_a_damaged_npz_file(runner, tmp_path, flips, keep):
    (tmp_path / "a.npz").write_bytes(damaged(VALID_NPZ, flips, keep))
    doc = {"inputs": {"file": "a.npz", "tensor": "w"}, "bias": {"query": {"file": "a.npz", "tensor": "b"}}}
    assert_clean(compute(runner, tmp_path, doc))


@pytest.mark.slow
@FUZZ
@given(st.sampled_from(["safetensors", "npz"]), st.binary(max_size=300))
def test_any_bytes_as_a_checkpoint(runner, tmp_path, suffix, raw):
    (tmp_path / f"m.{suffix}").write_bytes(raw)
    assert_clean(compute(runner, tmp_path, {"inputs": {"file": f"m.{suffix}", "tensor": "w"}}))


pieces = st.one_of(st.integers(-3, 5), st.booleans(), st.none(), st.text(max_size=5),
                   st.lists(st.integers(-2, 6), max_size=3),
                   st.sampled_from(["torch", "rows", "w", "a", "m.safetensors"]))
mappings = st.dictionaries(st.sampled_from(["file", "tensor", "layout", "rows", "columns", "random", "shape", "fil"]),
                           pieces, max_size=5)


@pytest.mark.slow
@FUZZ
@given(st.fixed_dictionaries({}, optional={"inputs": mappings, "mask": mappings, "context": mappings,
                                           "weights": st.fixed_dictionaries({}, optional={"query": mappings}),
                                           "bias": st.fixed_dictionaries({}, optional={"query": mappings})}))
def test_mappings_from_the_grammar(runner, tmp_path, doc):
    (tmp_path / "m.safetensors").write_bytes(VALID)
    doc = {"inputs": {"file": "m.safetensors", "tensor": "w"}} | doc
    assert_clean(compute(runner, tmp_path, doc))


# ---------------------------------------------------------------- real layers straight from their checkpoints

TOL = 1e-9


@pytest.fixture
def hf(torch):
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    return pytest.importorskip("transformers", minversion="5.23")


def randomize(torch, module, seed: int, std: float = 0.3):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * std)
    return module.to(torch.float64).eval()


def test_gpt2_block_attention_from_save_file(runner, tmp_path, torch, save_file, hf):
    n, d, heads = 6, 32, 4
    cfg = hf.GPT2Config(vocab_size=16, n_positions=16, n_embd=d, n_layer=1, n_head=heads)
    cfg._attn_implementation = "eager"
    model = randomize(torch, hf.GPT2Model(cfg), seed=2)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, tmp_path / "gpt2.safetensors")
    block, raw = model.h[0], {}
    block.register_forward_pre_hook(lambda _m, args, kwargs: raw.__setitem__("inputs", args[0] if args else
                                                                           kwargs["hidden_states"]), with_kwargs=True)
    block.ln_1.register_forward_hook(lambda _m, _i, o: raw.__setitem__("normalized_inputs", o))
    block.attn.register_forward_hook(lambda _m, _i, o: raw.__setitem__("output", o[0]))
    block.ln_2.register_forward_pre_hook(lambda _m, i: raw.__setitem__("residual", i[0]))
    embeds = torch.randn(1, n, d, generator=torch.Generator().manual_seed(3), dtype=torch.float64) * 2
    with torch.no_grad():
        out = model(inputs_embeds=embeds, output_attentions=True)

    def tensor(name: str, cut: int | None = None) -> dict:
        spec = {"file": "gpt2.safetensors", "tensor": f"h.0.{name}"}
        return spec | ({"columns": [cut * d, (cut + 1) * d]} if cut is not None else {})

    parts = ("query", "key", "value")
    doc = {"inputs": raw["inputs"][0].numpy().tolist(), "heads": heads, "mask": "causal", "residual": True,
           "pre_norm": {"kind": "layer", "gamma": tensor("ln_1.weight"), "beta": tensor("ln_1.bias"),
                        "eps": cfg.layer_norm_epsilon},
           "weights": {p: tensor("attn.c_attn.weight", i) for i, p in enumerate(parts)}
           | {"output": tensor("attn.c_proj.weight")},
           "bias": {p: tensor("attn.c_attn.bias", i) for i, p in enumerate(parts)}
           | {"output": tensor("attn.c_proj.bias")}}
    result = compute(runner, tmp_path, doc)
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    expected = {key: raw[key][0].numpy() for key in ("normalized_inputs", "output", "residual")}
    expected["weights"] = out.attentions[0][0].numpy()
    diffs = {key: float(np.abs(np.array(got[key]) - want).max()) for key, want in expected.items()}
    print("\nGPT-2 from save_file:", ", ".join(f"{k} {v:.1e}" for k, v in diffs.items()))
    assert all(v < TOL for v in diffs.values()), diffs
    assert np.array_equal(np.array(got["weights"])[0][np.triu_indices(n, 1)], np.zeros(n * (n - 1) // 2))


def test_llama_attention_from_a_bfloat16_checkpoint(monkeypatch, tmp_path, torch, save_file, hf):
    from test_modern_torch import Recorder, compare, config, hf_mask, rope_tables, theta_frequencies

    n, hidden, heads, kv_heads, theta = 7, 64, 8, 2, 10000.0
    cfg = config("Llama", hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads,
                 rope_parameters={"rope_type": "default", "rope_theta": theta})
    llama = hf.models.llama.modeling_llama
    attn = randomize(torch, llama.LlamaAttention(cfg, layer_idx=0), seed=5)
    prefix = "model.layers.0.self_attn."
    save_file({prefix + k: v.to(torch.bfloat16).contiguous() for k, v in attn.state_dict().items()},
              tmp_path / "llama.safetensors")
    before = attn.q_proj.weight.detach().clone()
    with torch.no_grad():  # the model torch runs: the same bfloat16-rounded weights, in float64
        for p in attn.parameters():
            p.copy_(p.to(torch.bfloat16).to(torch.float64))
    assert not torch.equal(before, attn.q_proj.weight)  # the rounding changed them: the test sees bfloat16
    x = torch.randn(1, n, hidden, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    mask, allowed = hf_mask(n, n)
    rec = Recorder(monkeypatch, attn)
    with torch.no_grad():
        attn(x, position_embeddings=rope_tables(theta_frequencies(theta, hidden // heads), range(n)),
             attention_mask=mask)
    path = str(tmp_path / "llama.safetensors")
    doc = {"inputs": x[0].numpy(), "heads": heads, "kv_heads": kv_heads, "mask": "causal", "rope": {"base": theta},
           "weights": {name: {"file": path, "tensor": f"{prefix}{name[0]}_proj.weight", "layout": "torch"}
                       for name in ("query", "key", "value", "output")}}
    compare(attncli.compute(doc), rec.expected(heads, kv_heads), allowed, "Llama from a bfloat16 checkpoint")


def test_the_readme_snippet_against_multihead_attention(monkeypatch, tmp_path, torch, save_file):
    """The README's checkpoint example, as written: its document reads what its Python saved, as torch computes."""
    import re

    from conftest import section as page_section

    section = page_section("Matrices from checkpoints\n")  # (docs/documents.md)
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    (tmp_path / "mha.yaml").write_text(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    mha = namespace["mha"].double()
    with torch.no_grad():
        for p in mha.parameters():  # the weights the checkpoint holds: rounded to bfloat16
            p.copy_(p.to(torch.bfloat16).double())
        mha.in_proj_bias.copy_(torch.randn(192, dtype=torch.float64).to(torch.bfloat16).double())
    save_file({name: t.to(torch.bfloat16) for name, t in mha.state_dict().items()}, tmp_path / "mha.safetensors")
    trace = attncli.compute(str(tmp_path / "mha.yaml"))
    x = torch.from_numpy(trace.inputs)[None]
    n = x.shape[1]
    want, weights = mha(x, x, x, attn_mask=torch.ones(n, n, dtype=torch.bool).triu(1), average_attn_weights=False)
    assert np.abs(trace.output - want[0].detach().numpy()).max() < TOL
    assert np.abs(trace.weights - weights[0].detach().numpy()).max() < TOL


@pytest.mark.slow
def test_under_an_address_space_limit(tmp_path):
    """A real process under ulimit -v: a 4 GiB tensor is refused by that limit before it is read, and a cut of it
    (which reads 512 KiB) runs."""
    import resource
    import subprocess
    import sys

    sparse_checkpoint(tmp_path / "m.safetensors", 32768, 32768)
    script = Path(sys.executable).parent / "attncli"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "attncli"]
    limit = 3 << 30

    def run(doc: dict):
        (tmp_path / "doc.json").write_text(json.dumps(doc))
        return subprocess.run([*command, "compute", str(tmp_path / "doc.json"), "--format", "json"],
                              capture_output=True, text=True, timeout=120,
                              env={k: v for k, v in os.environ.items() if k != "ATTNCLI_MEMORY"},
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))

    whole = run({"inputs": {"file": "m.safetensors", "tensor": "w"}})
    assert whole.returncode == 2 and whole.stdout == "" and whole.stderr.count("\n") == 1, whole.stderr
    assert "reading m.safetensors, tensor 'w' (32768×32768 F32) would need" in whole.stderr
    assert "Traceback" not in whole.stderr
    cut = run({"inputs": {"file": "m.safetensors", "tensor": "w", "rows": [100, 103], "columns": [0, 5]}})
    assert cut.returncode == 0, cut.stderr
    assert json.loads(cut.stdout)["inputs"] == [[0.0] * 5] * 3
