"""Issue 26, the readers' half: no signal, no hang, no wait, and one ``Error:`` line for files that change or lie.

- A checkpoint or .npy that shrinks while attncli reads it: read, never mapped (no SIGBUS), the missing bytes an error.
- A model folder whose files are pipes, devices or folders: refused before anything is opened (no hang).
- A header of many names: one parse per file per run, and a nearest-name search that does not compare with all.
- NumPy's floating-point warnings never reach stderr; the fast YAML path gives what the careful one gives.
- An empty file name is said to be one, wherever a file is named.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from test_checkpoints import (
    RNG,
    assert_refused,
    compute,
    counting_reads,
    entry,
    raw_safetensors,
    safetensors_bytes,
    sparse_checkpoint,
)

from attncli.core.errors import NEAREST_POOL, AttnError, nearest
from attncli.inputs import archives, matrices
from attncli.inputs.matrices import read_value

ROOT = Path(__file__).resolve().parent.parent
TENSOR = "model.layers.{}.self_attn.{}_proj.weight"
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


# ---------------------------------------------------------------- many ranges, many names


def test_many_ranges_parse_the_header_once_and_read_the_bytes_once(tmp_path, monkeypatch):
    """100 ranges of one tensor: one parse of the header and one read of the bytes that span them (each range
    re-read and re-parsed the header: 18.8 s for a 4.4 MB one), the blocks cut as numpy's indexing cuts them."""
    import json as json_module

    w = RNG.normal(size=(300, 40)).astype(np.float32)
    names = {f"pad.{i}": np.zeros(1, np.float32) for i in range(500)}
    (tmp_path / "m.safetensors").write_bytes(safetensors_bytes({**names, "w": w}))
    np.savez(tmp_path / "m.npz", w=w)
    ranges = [[int(a), int(a) + int(n)] for a, n in zip(RNG.integers(0, 290, 100), RNG.integers(1, 10, 100))]
    picked = np.concatenate([np.arange(a, b) for a, b in ranges])
    parses = []
    real_loads = json_module.loads
    monkeypatch.setattr(json_module, "loads",
                        lambda text, *a, **k: parses.append(len(text)) or real_loads(text, *a, **k))
    counted = counting_reads(monkeypatch, tmp_path / "m.safetensors")
    span = (max(b for _, b in ranges) - min(a for a, _ in ranges)) * 40 * 4  # the stored rows the ranges span
    for spec, expected in (({"layout": "torch", "columns": ranges}, w.T[:, picked]), ({"rows": ranges}, w[picked]),
                           ({"rows": ranges, "columns": [3, 7]}, w[picked, 3:7])):
        parses.clear(), counted["reads"].clear()
        got = read_value({"file": "m.safetensors", "tensor": "w", **spec}, tmp_path)
        assert np.array_equal(got, expected.astype(np.float64)), spec
        assert len(parses) <= 1, parses
        assert sum(n > 8 for n in counted["reads"]) - len(parses) == 1 and span in counted["reads"], counted["reads"]
        assert np.array_equal(read_value({"file": "m.npz", "tensor": "w", **spec}, tmp_path), expected), spec
    assert len(parses) == 0  # the header was parsed once for the run: the file is the same


def test_a_rewritten_checkpoint_is_read_again(tmp_path):
    """The header kept for the run is the file's: the file rewritten (another inode, size or time) is parsed again."""
    path = tmp_path / "m.safetensors"
    for value in (1.0, 2.0, 3.0):
        path.write_bytes(safetensors_bytes({"w": np.full((2, int(value)), value)}))
        os.utime(path, ns=(0, int(value)))  # (a rewrite within the clock's tick)
        assert np.array_equal(read_value({"file": "m.safetensors", "tensor": "w"}, tmp_path),
                              np.full((2, int(value)), value))


def nearest_in_message(error: AttnError) -> list[str]:
    return re.findall(r"'([^']*)'", str(error).split("nearest: ", 1)[1])


@pytest.mark.slow  # a 24 MB header
def test_the_nearest_name_among_300000(tmp_path, monkeypatch):
    """An unknown name in a header of 300,000 (14 s when every name was compared): a few hundred compared, and the
    names suggested are the ones meant."""
    header = {TENSOR.format(i, part): {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
              for i in range(75_000) for part in "qkvo"}
    (tmp_path / "m.safetensors").write_bytes(raw_safetensors(json.dumps(header).encode(), bytes(4)))
    compared = []
    real_set = difflib.SequenceMatcher.set_seq1  # (once for each name compared)
    monkeypatch.setattr(difflib.SequenceMatcher, "set_seq1", lambda s, name: compared.append(name) or real_set(s, name))
    for asked, meant in (("model.layers.41234.self_attn.q_proj.weigth", "model.layers.41234.self_attn.q_proj.weight"),
                         ("model.layers.41234.self_atn.k_proj.weight", "model.layers.41234.self_attn.k_proj.weight"),
                         ("model.layer.7.self_attn.v_proj.weight", "model.layers.7.self_attn.v_proj.weight"),
                         ("Model.layers.70000.self_attn.o_proj.weight", "model.layers.70000.self_attn.o_proj.weight")):
        compared.clear()
        with pytest.raises(AttnError) as error:
            read_value({"file": "m.safetensors", "tensor": asked}, tmp_path)
        assert nearest_in_message(error.value)[0] == meant, str(error.value)
        assert len(compared) <= NEAREST_POOL


@pytest.mark.parametrize("count", [50, NEAREST_POOL, pytest.param(3000, marks=pytest.mark.slow)])
def test_the_nearest_names_are_difflibs_best(count):
    """Against difflib comparing every name: the same names up to the pool, and as good a first one beyond it."""
    rng = np.random.default_rng(count)
    names = [TENSOR.format(i, part) for i in range(count // 4 + 1) for part in "qkvo"][:count]
    for _ in range(25):
        word = list(names[int(rng.integers(count))])
        for _ in range(int(rng.integers(1, 4))):  # a deletion, an insertion or a substitution, anywhere
            at, kind = int(rng.integers(len(word))), int(rng.integers(3))
            word[at:at + (kind != 1)] = [] if kind == 0 else [chr(int(rng.integers(97, 123)))]
        word = "".join(word)
        got, full = nearest(word, names, n=3), difflib.get_close_matches(word, names, n=3)
        if count <= NEAREST_POOL:
            assert got == full, word
        else:
            first, best = (difflib.SequenceMatcher(None, name, word).ratio() for name in (got[0], full[0]))
            assert first >= best - 0.03, (word, got, full)


# ---------------------------------------------------------------- special files in a model folder


def fifo(path: Path) -> None:
    os.mkfifo(path)


def model_folder(root: Path) -> Path:
    """The start of a model folder: a config and a one-tensor checkpoint (enough for what extract checks first)."""
    folder = root / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}')
    (folder / "model.safetensors").write_bytes(safetensors_bytes({"w": np.zeros(1, np.float32)}))
    return folder


def sharded(shard: str, make) -> callable:
    def change(folder: Path) -> None:
        (folder / "model.safetensors").unlink()
        (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": shard}}))
        make(folder / shard)
    return change


SPECIAL = {  # id: (change of the folder, the file named)
    "weights-fifo": (lambda f: ((f / "model.safetensors").unlink(), fifo(f / "model.safetensors")),
                     "model.safetensors"),
    "second-weights-fifo": (lambda f: fifo(f / "model-2.safetensors"), "model-2.safetensors"),
    "config-fifo": (lambda f: ((f / "config.json").unlink(), fifo(f / "config.json")), "config.json"),
    "tokenizer-fifo": (lambda f: fifo(f / "tokenizer.json"), "tokenizer.json"),
    "vocab-device": (lambda f: (f / "vocab.txt").symlink_to("/dev/zero"), "vocab.txt"),
    "index-fifo": (lambda f: fifo(f / "model.safetensors.index.json"), "model.safetensors.index.json"),
    "shard-fifo": (sharded("model-00001.safetensors", fifo), "model-00001.safetensors"),
    "shard-device": (sharded("zero.safetensors", lambda p: p.symlink_to("/dev/zero")), "zero.safetensors"),
    "shard-outside-is-a-device": (sharded("/dev/zero", lambda p: None), "zero"),
    "shard-folder": (sharded("shards.safetensors", lambda p: p.mkdir()), "shards.safetensors"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", SPECIAL)
def test_extract_opens_no_special_file(tmp_path, case):
    """A named pipe in the model folder made extract wait for ever: every file it (or transformers) reads from the
    folder is checked to be a regular file before anything is opened. In a process of its own, with a timeout."""
    change, named = SPECIAL[case]
    folder = model_folder(tmp_path)
    change(folder)
    out = tmp_path / "layer.yaml"
    result = subprocess.run([sys.executable, "-m", "attncli", "extract", str(folder), "--text", "hi", "--layer", "0",
                             "-o", str(out)], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr.startswith(f"Error: {folder}/{named}: ") and result.stderr.count("\n") == 1, result.stderr
    assert "is not a regular file" in result.stderr or "is a directory" in result.stderr, result.stderr
    assert not out.exists() and not out.with_suffix(".npy").exists()


@pytest.mark.parametrize("case", ["config-fifo", "weights-fifo"])
def test_a_special_file_is_refused_before_it_is_opened(runner, tmp_path, monkeypatch, case):
    """In process (safe: nothing may be opened): the folder's files are checked, none is opened."""
    from attncli.cli import app

    change, named = SPECIAL[case]
    folder = model_folder(tmp_path)
    change(folder)
    real_open = Path.open
    monkeypatch.setattr(Path, "open", lambda p, *a, **k: pytest.fail(f"{p} opened") if p.name == named else
                        real_open(p, *a, **k))
    out = tmp_path / "layer.yaml"
    assert_refused(runner.invoke(app, ["extract", str(folder), "--text", "hi", "--layer", "0", "-o", str(out)]),
                   f"{folder}/{named}: is not a regular file")


# ---------------------------------------------------------------- the fast YAML path gives what the careful one gives


def flow_list(rows) -> str:
    return "[" + ", ".join("[" + ", ".join(map(str, row)) + "]" for row in rows) + "]"


RANGES = flow_list([[4 * i, 4 * i + 2] for i in range(2500)])  # 20 kB of ranges: lifted
ZEROS_ONES = flow_list([[int(j <= i) for j in range(100)] for i in range(100)])
MIXED = flow_list([[i, 0.5, -1, 2.0e-3] * 40 for i in range(40)])
LIST_DOCS = {  # id: a document whose large flow list sits at a key that may or may not take a matrix
    "columns-ranges": f"inputs: {{random: normal, seed: 1, shape: [2, 3]}}\nweights:\n"
                      f"  query: {{file: m.safetensors, tensor: w, columns: {RANGES}}}\n"
                      f"  key: {{file: m.safetensors, tensor: w, columns: {RANGES}}}\n",
    "rows-ranges": "inputs: {random: normal, seed: 1, shape: [2, 5000]}\nweights:\n"
                   + "".join(f"  {k}: {{file: m.safetensors, tensor: w, layout: torch, rows: {RANGES}}}\n"
                             for k in ("query", "key", "value")),
    "json-style-columns": f'{{"inputs": [[1, 0, 0], [0, 1, 0]], "weights": {{"query": {{"file": "m.safetensors", '
                          f'"tensor": "w", "columns": {RANGES}}}, "key": {{"file": "m.safetensors", "tensor": "w", '
                          f'"columns": {RANGES}}}}}}}\n',
    "mask-of-ints": f"inputs: {{random: normal, seed: 1, shape: [100, 4]}}\nmask: {ZEROS_ONES}\n",
    "mask-keys": f"inputs: {{random: normal, seed: 1, shape: [100, 4]}}\nmask: {{keys: {ZEROS_ONES}}}\n",
    "score-bias": f"inputs: {{random: normal, seed: 1, shape: [100, 4]}}\nscore_bias: {{matrix: {ZEROS_ONES}}}\n",
    "mixed-inputs": f"inputs: {MIXED}\nscale: none\n",
    "tokens": f"inputs: {{random: normal, seed: 1, shape: [100, 4]}}\ntokens: {ZEROS_ONES}\n",
    "positions": f"inputs: {{random: normal, seed: 1, shape: [100, 4]}}\nrope: {{}}\npositions: {ZEROS_ONES}\n",
    "heads": f"inputs: {{random: normal, seed: 1, shape: [100, 4]}}\nheads: {ZEROS_ONES}\n",
    "alibi-slopes": f"inputs: {{random: normal, seed: 1, shape: [100, 4]}}\nscore_bias: {{alibi: {ZEROS_ONES}}}\n",
    "rope-frequencies": f"inputs: {{random: normal, seed: 1, shape: [100, 4]}}\nrope: {{frequencies: {MIXED}}}\n",
    "unknown-key": f"inputs: {{random: normal, seed: 1, shape: [100, 4]}}\nranges: {RANGES}\n",
    "random-shape": f"inputs: {{random: normal, seed: 1, shape: {RANGES}}}\n",
}


def same(a, b) -> bool:
    """Equal, and of the same Python types all the way down (a list of ints is not a list of floats)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and (a == b or a != a and b != b)


@pytest.mark.parametrize("case", LIST_DOCS)
def test_the_fast_path_gives_what_the_careful_one_gives(runner, tmp_path, monkeypatch, case):
    """A large flow list read by numpy (the fast path) and by the YAML reader: the same values of the same types for
    every key, the same result or the same one-line error, and never a NumPy repr (2,500 ranges were refused with one,
    2,000 read)."""
    from attncli.cli import app
    from attncli.inputs import fastmatrix
    from attncli.inputs.document import parse_text

    text = LIST_DOCS[case]
    assert fastmatrix.lift(text)[1], "the list is lifted"
    (tmp_path / "m.safetensors").write_bytes(safetensors_bytes({"w": RNG.normal(size=(3, 10_000)).astype(np.float32)}))
    (tmp_path / "doc.yaml").write_text(text)
    env = {"ATTNCLI_MEMORY": "2G"}  # (the budget, named in messages, the same for both)
    fast = (parse_text(text, "doc.yaml"),
            runner.invoke(app, ["compute", str(tmp_path / "doc.yaml"), "-f", "json"], env=env))
    monkeypatch.setattr(fastmatrix, "MIN_CHARS", 10**9)  # the careful path: the YAML reader, number by number
    assert not fastmatrix.lift(text)[1]
    careful = parse_text(text, "doc.yaml"), runner.invoke(app, ["compute", str(tmp_path / "doc.yaml"), "-f", "json"],
                                                          env=env)
    assert same(fast[0], careful[0])
    assert (fast[1].exit_code, fast[1].stdout, fast[1].stderr) == (careful[1].exit_code, careful[1].stdout,
                                                                   careful[1].stderr)
    assert "array(" not in fast[1].stderr and "np." not in fast[1].stderr, fast[1].stderr
    if case.endswith("ranges") or case == "json-style-columns":
        assert fast[1].exit_code == 0, fast[1].stderr
    elif fast[1].exit_code:
        assert fast[1].stderr.startswith("Error: ") and fast[1].stderr.count("\n") == 1


@pytest.mark.parametrize("value", [np.array([0, 1.5]), [np.int64(0), np.float64(1.5)], np.float64(0.5), np.int32(3),
                                   [[np.float32(1.0), np.float32(0.5)]], (np.int8(1), np.int8(2), np.int8(3))])
def test_no_message_shows_a_numpy_repr(tmp_path, value):
    """NumPy values given through the Python API where a range belongs: the message shows numbers, not reprs."""
    (tmp_path / "m.safetensors").write_bytes(safetensors_bytes({"w": np.ones((2, 4), np.float32)}))
    with pytest.raises(AttnError) as error:
        read_value({"file": "m.safetensors", "tensor": "w", "columns": value}, tmp_path)
    message = str(error.value)
    assert "expected [start, stop]" in message
    assert "np." not in message and "array(" not in message and "dtype" not in message, message
    shown = np.asarray(value, dtype=np.float64).ravel().tolist()
    assert str(shown[0]) in message or str(int(shown[0])) in message, message


NUMPY_WARNS = """
import sys
import numpy as np
from attncli.inputs import matrices
real = matrices._checked_array
def warning(*a, **k):  # any NumPy floating-point flag raised on a reader's path, outside its np.errstate
    np.float64(1e308) * 10, np.float32(0) / np.float32(0), np.array([np.nan]).astype(np.int64)
    return real(*a, **k)
matrices._checked_array = warning
from attncli.cli import main
main(sys.argv[1:])
"""


@pytest.mark.slow
@pytest.mark.parametrize("command", ["compute", "heatmap", "explain"])
def test_stderr_holds_one_error_line_and_no_numpy_warning(tmp_path, command):
    """A bfloat16 signalling NaN put NumPy's RuntimeWarning (with a source path) above the error: in a real process,
    stderr is exactly one Error line; and a NumPy warning raised anywhere on the way is not shown either."""
    cells = np.array([[0, 0x3F80], [0x7F81, 0]], dtype="<u2")  # 0, 1.0; a signalling NaN, 0
    (tmp_path / "m.safetensors").write_bytes(entry("BF16", (2, 2), (0, 8), cells.tobytes()))
    (tmp_path / "doc.yaml").write_text("inputs: {file: m.safetensors, tensor: w}\n")
    np.save(tmp_path / "x.npy", np.array([[1.0, 0.0], [0.0, 2.0]]))
    (tmp_path / "good.yaml").write_text("inputs: x.npy\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "attncli", command, str(tmp_path / "doc.yaml")], capture_output=True,
                         text=True, timeout=60, env=env)
    assert run.returncode == 2 and run.stdout == "", run.stderr
    assert run.stderr == (f"Error: {tmp_path / 'doc.yaml'}: inputs: m.safetensors, tensor 'w': row 2, column 1: "
                          "nan is not a finite number\n")
    run = subprocess.run([sys.executable, "-c", NUMPY_WARNS, command, str(tmp_path / "good.yaml")], capture_output=True,
                         text=True, timeout=60, env=env)
    assert run.returncode == 0 and run.stderr == "", run.stderr


# ---------------------------------------------------------------- an empty file name


GOOD = "inputs: [[1, 0], [0, 2]]\n"
EMPTY_NAMES = {  # id: (arguments, the document's text, what the message says); -o '' and --export '' are options'
    # errors (cli.options.output_path: "is empty; give a file name"), tested with the options
    "document": (["compute", ""], None, "Error: FILE: the document's file name is empty"),
    "explain-document": (["explain", ""], None, "Error: FILE: the document's file name is empty"),
    "matrix": (["compute", "{doc}"], "inputs: ''\n", "inputs: is an empty file name"),
    "weight": (["compute", "{doc}"], GOOD + "weights: {query: ''}\n", "weights.query: is an empty file name"),
    "checkpoint": (["compute", "{doc}"], "inputs: {file: '', tensor: w}\n", "inputs: file: is an empty file name"),
    "mask": (["compute", "{doc}"], GOOD + "mask: ''\n", "mask: is an empty file name"),
    "mask-matrix": (["compute", "{doc}"], GOOD + "mask: {matrix: ''}\n", "mask.matrix: is an empty file name"),
    "score-bias": (["compute", "{doc}"], GOOD + "score_bias: {matrix: ''}\n",
                   "score_bias.matrix: is an empty file name"),
    "model-folder": (["extract", "", "--text", "hi", "--layer", "0", "-o", "{tmp}/l.yaml"], None,
                     "Error: MODEL: the folder name is empty"),
}


@pytest.mark.parametrize("case", EMPTY_NAMES)
def test_an_empty_file_name_is_said_to_be_one(runner, tmp_path, monkeypatch, case):
    """``attncli compute ''`` said ``.: is a directory``: an empty name is the working folder as a path."""
    from attncli.cli import app

    args, text, fragment = EMPTY_NAMES[case]
    monkeypatch.chdir(tmp_path)
    if text is not None:
        (tmp_path / "doc.yaml").write_text(text)
    result = runner.invoke(app, [a.format(doc=tmp_path / "doc.yaml", tmp=tmp_path) for a in args])
    err = assert_refused(result, fragment)
    assert "directory" not in err and sorted(p.name for p in tmp_path.iterdir()) == (["doc.yaml"] if text else [])
