"""What compute writes: .npy/.npz read back with np.load, and JSON through orjson or json alike."""

from __future__ import annotations

import builtins
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import EXAMPLES
from reference import max_scaled_diff, naive_attention

from attncli.cli import app
from attncli.outputs.serialize import to_json

DOC = {
    "tokens": ["我", "想", "吃", "鱼"],
    "inputs": [[1.0, 0.5, -1.0, 2.0], [0.0, 1.5, 0.25, -0.5], [2.0, -1.0, 0.5, 1.0], [0.3, 0.1, 0.7, -0.2]],
    "heads": 2,
    "weights": {"query": [[0.2, -0.1, 0.4, 0.3], [0.5, 0.1, -0.3, 0.2], [-0.4, 0.3, 0.1, 0.6], [0.1, 0.7, -0.2, -0.5]]},
    "mask": "causal",
}


def strict(text: str):
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def run(runner, tmp_path, *args, doc=DOC):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    result = runner.invoke(app, ["compute", str(path), *args])
    assert result.exit_code == 0, result.output
    return result


def reference():
    return naive_attention(DOC["inputs"], DOC["weights"]["query"], heads=2, mask="causal")


def test_npy_holds_the_one_array_asked_for(runner, tmp_path):
    out = tmp_path / "out.npy"
    result = run(runner, tmp_path, "--only", "output", "-o", str(out))
    assert result.stdout == ""
    y = np.load(out, allow_pickle=False)
    assert y.dtype == np.float64 and y.shape == (4, 4)
    assert np.abs(y - np.array(reference()["output"])).max() < 1e-12


def test_npy_of_weights_full_computation(runner, tmp_path):
    out = tmp_path / "w.npy"
    run(runner, tmp_path, "--only", "weights", "-o", str(out))
    weights = np.load(out)
    assert weights.shape == (2, 4, 4)
    assert np.abs(weights - np.array(reference()["weights"])).max() < 1e-12
    assert not np.triu(weights, 1).any()  # causal: nothing above the diagonal


def test_npz_holds_every_array(runner, tmp_path):
    out = tmp_path / "all.npz"
    run(runner, tmp_path, "-o", str(out))
    want = reference()
    with np.load(out, allow_pickle=False) as arrays:
        assert set(arrays.files) == {"inputs", "queries", "keys", "values", "scores", "scaled_scores", "weights",
                                     "lse", "head_outputs", "output", "scale"}
        for key in ("queries", "keys", "values", "scores", "weights", "head_outputs", "output"):
            assert np.abs(arrays[key] - np.array(want[key])).max() < 1e-12, key
        causal = np.tril(np.ones((4, 4), bool))
        scaled = arrays["scaled_scores"]  # (2, 4, 4): -inf where masked (JSON: null), as masked_fill leaves it
        assert (scaled[:, ~causal] == -np.inf).all()
        assert np.abs(scaled[:, causal] - np.array(want["scaled_scores"])[:, causal]).max() < 1e-12
        assert float(arrays["scale"]) == 1 / math.sqrt(2)  # d_k = 4 / 2 heads


def test_npy_needs_one_key(runner, tmp_path):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(DOC))
    out = tmp_path / "out.npy"
    result = runner.invoke(app, ["compute", str(path), "-o", str(out)])
    assert result.exit_code == 2 and not out.exists()
    assert "a .npy file holds one array: choose it with --only" in result.stderr


def test_json_round_trips_every_float_exactly(runner, tmp_path):
    from attncli.core.pipeline import attend
    from attncli.inputs.builder import build_spec
    from attncli.inputs.document import read_document

    result = run(runner, tmp_path, "--format", "json")
    got = strict(result.stdout)
    trace = attend(build_spec(read_document(str(tmp_path / "doc.json"))))
    for key in ("queries", "keys", "values", "scores", "weights", "head_outputs", "output"):
        assert np.array_equal(np.array(got[key]), getattr(trace, key)), key  # bit for bit, not to a tolerance
    assert result.stdout.count("\n") == 1 and result.stdout.endswith("}\n")


def test_json_masked_scaled_scores_are_null(runner, tmp_path):
    got = strict(run(runner, tmp_path, "--format", "json", "--only", "scaled_scores").stdout)
    for head in got["scaled_scores"]:
        for i, row in enumerate(head):
            assert all((cell is None) == (j > i) for j, cell in enumerate(row))
            assert all(isinstance(cell, float) for cell in row[: i + 1])


def test_json_keeps_non_ascii_tokens(runner, tmp_path):
    result = run(runner, tmp_path, "--format", "json", "--only", "output")
    assert '"tokens":["我","想","吃","鱼"]' in result.stdout.replace(" ", "")
    assert strict(result.stdout)["tokens"] == ["我", "想", "吃", "鱼"]


def test_json_same_without_orjson(runner, tmp_path, monkeypatch):
    fast = strict(run(runner, tmp_path, "--format", "json").stdout)
    real_import = builtins.__import__

    def no_orjson(name, *args, **kwargs):
        if name == "orjson":
            raise ImportError("no orjson")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_orjson)
    slow = strict(run(runner, tmp_path, "--format", "json").stdout)
    assert slow == fast and list(slow) == list(fast)


def test_json_of_an_example_matches_the_naive_loop(runner):
    result = runner.invoke(app, ["compute", str(EXAMPLES / "illustrated.yaml"), "--format", "json"])
    got = strict(result.stdout)
    assert all(isinstance(x, float) and math.isfinite(x) for row in got["output"] for x in row)
    w = yaml.safe_load((EXAMPLES / "illustrated.yaml").read_text())["weights"]
    x = [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]
    want = naive_attention(x, w["query"], w["key"], w["value"], scale="none")
    for key in ("queries", "keys", "values", "scores", "weights", "head_outputs", "output"):
        assert max_scaled_diff(got[key], want[key]) < 1e-12, key
    assert got["scores"][0] == [[2.0, 4.0, 4.0], [4.0, 16.0, 12.0], [4.0, 12.0, 10.0]]  # the walkthrough's figures


def test_to_json_refuses_to_hide_a_non_finite_value():
    from attncli.core.pipeline import attend
    from attncli.inputs.builder import build_spec
    from attncli.inputs.document import Document

    trace = attend(build_spec(Document({"inputs": [[1.0, 2.0]]}, "doc", Path("."))))
    broken = replace(trace, output=np.array([[np.inf, 0.0]]))
    with pytest.raises(ValueError, match="output holds a value that is not finite"):
        to_json(broken, ["output"])


def test_output_file_mode_follows_the_umask(runner, tmp_path):
    import os

    out = tmp_path / "y.npy"
    old = os.umask(0o022)
    try:
        run(runner, tmp_path, "--only", "output", "-o", str(out))
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644


def test_npz_is_written_array_by_array_into_its_file(runner, tmp_path, monkeypatch):
    """The .npz goes straight into the temporary file beside it (never whole in memory), then into place."""
    from attncli.outputs import files

    monkeypatch.setattr(files.Streamed, "data", lambda self: pytest.fail("the .npz was held whole in memory"))
    out = tmp_path / "y.npz"
    run(runner, tmp_path, "--only", "output", "--only", "weights", "-o", str(out))
    with np.load(out, allow_pickle=False) as arrays:
        assert set(arrays.files) == {"output", "weights", "scale"}
        assert np.abs(arrays["output"] - np.array(reference()["output"])).max() < 1e-12
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json", "y.npz"]


def test_npz_failing_half_way_leaves_the_old_file_and_no_temporary_one(runner, tmp_path, monkeypatch):
    import errno
    import os

    real, written = np.lib.format.write_array, []

    def write_array(fp, array, *args, **kwargs):  # the first array written, the disk full at the second
        if written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(real(fp, array, *args, **kwargs))

    monkeypatch.setattr(np.lib.format, "write_array", write_array)
    out = tmp_path / "y.npz"
    out.write_bytes(b"old")
    (tmp_path / "doc.json").write_text(json.dumps(DOC), encoding="utf-8")
    result = runner.invoke(app, ["compute", str(tmp_path / "doc.json"), "-o", str(out)])
    assert result.exit_code == 2 and written
    assert f"{out}: cannot be written (No space left on device)" in result.output
    assert out.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["doc.json", "y.npz"]


def test_npy_is_written_into_its_file_and_a_failing_write_leaves_the_old_one(runner, tmp_path, monkeypatch):
    """The .npy goes straight into the temporary file beside it (never whole in memory), byte for byte np.save's;
    a write that fails part-way (a file size limit: the disk full) leaves the old file and no temporary one."""
    import io
    import os
    import resource
    import signal
    import subprocess
    import sys

    from attncli.outputs import files, serialize

    real, into = serialize.write_npy, []
    monkeypatch.setattr(serialize, "write_npy", lambda file, array: (into.append(type(file)), real(file, array)))
    rng = np.random.default_rng(0)
    doc = {"inputs": rng.normal(size=(64, 16)).tolist(), "heads": 2, "mask": "causal"}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    monkeypatch.setattr(files.Streamed, "data", lambda self: pytest.fail("the .npy was held whole in memory"))
    out = tmp_path / "y.npy"
    result = runner.invoke(app, ["compute", str(path), "--only", "output", "-o", str(out)])
    assert result.exit_code == 0, result.output
    saved = io.BytesIO()
    np.save(saved, np.load(out), allow_pickle=False)
    assert out.read_bytes() == saved.getvalue() and len(saved.getvalue()) > 8192  # (64 × 16 numbers)
    assert into == [io.BufferedWriter]  # the temporary file itself
    out.write_bytes(b"old")

    def limited() -> None:  # the file may not grow past 4 KiB: the write fails (EFBIG) instead of the signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    failed = subprocess.run([sys.executable, "-m", "attncli", "compute", str(path), "--only", "output", "-o", str(out)],
                            capture_output=True, text=True, preexec_fn=limited, env=env, timeout=120)
    assert failed.returncode == 2 and failed.stderr.count("\n") == 1, failed.stderr
    assert f"{out}: cannot be written (File too large)" in failed.stderr and "Traceback" not in failed.stderr
    assert out.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["doc.json", "y.npy"]
