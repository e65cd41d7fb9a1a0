"""What only a real process shows: a reader that goes away, Ctrl-C, and -o left intact by a failed run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import default_signals, read_within

pytestmark = pytest.mark.slow  # fuzz, property and subprocess suites: `pytest -m 'not slow'` skips them

ENTRY_POINT = Path(sys.executable).parent / "attncli"
COMMAND = [str(ENTRY_POINT)] if ENTRY_POINT.exists() else [sys.executable, "-m", "attncli"]
GOOD = "tokens: [a, b, c]\ninputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]\nscale: none\n"


def start(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([*COMMAND, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=default_signals, **kwargs)


def test_reader_that_goes_away_gets_no_traceback(tmp_path):
    doc = tmp_path / "big.yaml"  # about 3 MB of JSON: far more than a pipe holds
    doc.write_text("inputs: {random: normal, seed: 1, shape: [160, 32]}\nheads: 4\n")
    process = start("compute", str(doc), "--format", "json")
    first = read_within(process.stdout, 100)  # like `| head -c 100`: read a little, then leave
    process.stdout.close()
    process.stdout = None  # communicate reads standard error only
    stderr = process.communicate(timeout=60)[1].decode()
    assert first.startswith(b'{"tokens":')
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr and stderr == ""
    assert process.returncode == 0


def test_reader_that_goes_away_in_a_shell_pipeline(tmp_path):
    doc = tmp_path / "big.yaml"
    doc.write_text("inputs: {random: normal, seed: 1, shape: [300, 16]}\n")
    command = (" ".join([*COMMAND, "compute", str(doc), "--format", "json"])
               + " | head -c 20; echo; echo ${PIPESTATUS[0]}")
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert result.stdout == '{"tokens":["x1","x2"\n0\n'  # attncli's own exit code: 0
    assert result.stderr == ""


def _wait_until_reading(pid: int) -> bool:
    """True once the process is blocked reading its stdin pipe (Linux: /proc/PID/wchan)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            wchan = Path(f"/proc/{pid}/wchan").read_text()
        except OSError:
            return False
        if "pipe" in wchan:
            return True
        time.sleep(0.02)
    return False


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="needs Linux /proc to know the process is waiting")
def test_ctrl_c_exits_130_quietly():
    process = start("compute", "-", stdin=subprocess.PIPE)
    process.stdin.write(GOOD.encode())  # half a conversation: the document never ends
    process.stdin.flush()
    if not _wait_until_reading(process.pid):
        process.kill()
        process.wait(timeout=600)
        pytest.skip("cannot tell when the process waits on its input here")
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    assert stdout == b""
    assert stderr.decode() == "Interrupted.\n"


def test_failed_run_leaves_the_output_file_alone(tmp_path):
    out = tmp_path / "result.json"
    out.write_text("an earlier result\n")
    doc = tmp_path / "doc.yaml"
    doc.write_text(GOOD + "mask: [[1, 0], [1, 1]]\n")
    result = subprocess.run([*COMMAND, "compute", str(doc), "--format", "json", "-o", str(out)], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("Error: ") and "mask: is 2×2 but needs 3×3" in result.stderr
    assert out.read_text() == "an earlier result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.yaml", "result.json"]  # no temporary files


def test_successful_run_replaces_the_output_file_whole(tmp_path):
    out = tmp_path / "result.json"
    out.write_text("an earlier result\n")
    doc = tmp_path / "doc.yaml"
    doc.write_text(GOOD)
    result = subprocess.run([*COMMAND, "compute", str(doc), "--format", "json", "-o", str(out)], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    assert json.loads(out.read_text())["scores"][0][0] == [2.0, 0.0, 2.0]  # [1,0,1,0] · each input
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.yaml", "result.json"]


def test_output_never_overwrites_an_input(tmp_path):
    (tmp_path / "x.csv").write_text("1,0\n0,1\n")
    doc = tmp_path / "doc.yaml"
    doc.write_text("inputs: x.csv\n")
    for target in ("x.csv", "doc.yaml"):
        only = ["--only", "weights"]  # (-o x.csv writes CSV: one matrix)
        result = subprocess.run([*COMMAND, "compute", str(doc), *only, "-o", str(tmp_path / target)],
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 2 and "input files" in result.stderr
    assert (tmp_path / "x.csv").read_text() == "1,0\n0,1\n" and doc.read_text() == "inputs: x.csv\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.yaml", "x.csv"]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root may write into a read-only folder")
def test_unwritable_folder_is_a_clear_error(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "result.json").write_text("kept\n")
    folder.chmod(0o555)
    doc = tmp_path / "doc.yaml"
    doc.write_text(GOOD)
    try:
        result = subprocess.run([*COMMAND, "compute", str(doc), "-o", str(folder / "result.json")], capture_output=True,
                                text=True, timeout=600)
    finally:
        folder.chmod(0o755)
    assert result.returncode == 2 and result.stderr.startswith("Error: ") and "Traceback" not in result.stderr
    assert (folder / "result.json").read_text() == "kept\n"
    assert [p.name for p in folder.iterdir()] == ["result.json"]
