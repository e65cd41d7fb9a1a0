"""Every output path under faults: devices, FIFOs, size limits, full disks, non-blocking pipes, signals,
kept permissions, both-or-neither files, odd names, COLUMNS, and closed standard streams.

Real processes (the installed ``attncli`` or ``python -m attncli``), since only they show exit
codes, file descriptors, resource limits and signals. Each run either writes every byte, or
fails with one ``Error:`` line, a non-zero exit, and no file replaced or left behind.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import resource
import select
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import default_signals

from attncli.outputs import files

pytestmark = pytest.mark.slow  # subprocess suite: `pytest -m 'not slow'` skips it

ROOT = Path(__file__).resolve().parent.parent
ENTRY_POINT = Path(sys.executable).parent / "attncli"
COMMAND = [str(ENTRY_POINT)] if ENTRY_POINT.exists() else [sys.executable, "-m", "attncli"]
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
ENV["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
GOOD = "tokens: [a, b, c]\ninputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]\nscale: none\n"
BIG = "inputs: {random: normal, seed: 1, shape: [120, 8]}\n"  # its JSON: about 600 kB
ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0
LINUX = sys.platform.startswith("linux")


def attncli(*args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("capture_output", True)
    return subprocess.run([*COMMAND, *args], env={**ENV, **(env or {})}, timeout=120, **kwargs)


def shell(script: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``script`` in bash, where ``attncli`` runs this checkout's attncli."""
    command = " ".join(f"'{part}'" for part in COMMAND)
    return subprocess.run(["bash", "-c", f"attncli() {{ {command} \"$@\"; }}\n{script}"], cwd=cwd,
                          env={**ENV, **(env or {})}, capture_output=True, timeout=120)


def one_error(result, *words: str) -> str:
    """Exit 2, nothing on standard output, and exactly one line on standard error: ``Error: …``."""
    stderr = result.stderr.decode() if isinstance(result.stderr, bytes) else result.stderr
    assert result.returncode == 2, (result.returncode, stderr)
    assert stderr.startswith("Error: ") and stderr.count("\n") == 1 and stderr.endswith("\n"), stderr
    assert "Traceback" not in stderr and "Internal error" not in stderr
    for word in words:
        assert word in stderr, (word, stderr)
    assert not result.stdout
    return stderr


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".attncli-"))


@pytest.fixture
def doc(tmp_path) -> Path:
    path = tmp_path / "doc.yaml"
    path.write_text(GOOD)
    return path


def expected_json(doc: Path) -> bytes:
    result = attncli("compute", str(doc), "--format", "json")
    assert result.returncode == 0 and result.stdout.startswith(b'{"tokens":')
    return result.stdout


# ------------------------------------------------------------------ devices and FIFOs


def char_device(tmp_path: Path, name: str = "null") -> Path:
    """A character device like /dev/null or /dev/full, made in tmp_path: a bug that replaces the device it
    writes to then replaces this one, never the machine's (as root it could)."""
    path = tmp_path / name
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, {"null": 3, "full": 7}[name]))
    except (PermissionError, AttributeError, OSError):
        if ROOT_USER or not Path(f"/dev/{name}").exists():
            pytest.skip(f"cannot make a character device like /dev/{name} here")
        return Path(f"/dev/{name}")  # not root: the real one cannot be replaced
    return path


def full_device(tmp_path: Path) -> Path:
    return char_device(tmp_path, "full")


WRITERS = [  # (name, arguments before the destination, option naming the destination, suffix)
    ("compute -o", ["compute", "{doc}", "--format", "json"], "-o"),
    ("compute table -o", ["compute", "{doc}"], "-o"),
    ("compute --export", ["compute", "{doc}", "--export"], None),
    ("heatmap --export", ["heatmap", "{doc}", "--export"], None),
    ("explain --export", ["explain", "{doc}", "--export"], None),
    ("init -o", ["init", "--n", "3", "--force"], "-o"),  # (--force: a file that exists is replaced)
]


def writer_args(args: list[str], option: str | None, destination: Path, doc: Path) -> list[str]:
    args = [a.replace("{doc}", str(doc)) for a in args]
    return [*args, option, str(destination)] if option else [*args, str(destination)]


@pytest.mark.parametrize("name, args, option", WRITERS, ids=[w[0] for w in WRITERS])
def test_a_character_device_is_written_not_replaced(tmp_path, doc, name, args, option):
    device = char_device(tmp_path)
    if option is None and device.suffix == "":  # --export needs .svg, .html or .txt: a link with that name
        link = tmp_path / "null.txt"
        link.symlink_to(device)
        target = link
    else:
        target = device
    before = os.stat(device)
    result = attncli(*writer_args(args, option, target, doc))
    assert result.returncode == 0, result.stderr
    after = os.stat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino
    assert leftovers(tmp_path) == [] and leftovers(device.parent) == []


@pytest.mark.parametrize("name, args, option", WRITERS, ids=[w[0] for w in WRITERS])
def test_a_fifo_is_written_whole_not_replaced(tmp_path, doc, name, args, option):
    fifo = tmp_path / ("pipe.json" if "json" in args else "pipe.txt")  # -o's extension agrees with --format
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as f:
            received.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    result = attncli(*writer_args(args, option, fifo, doc))
    reader.join(timeout=60)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert received and len(received[0]) > 100
    if name == "compute -o":
        assert received[0] == expected_json(doc)
    if name == "init -o":
        assert received[0] == attncli("init", "--n", "3").stdout
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("args", [
    ["compute", "{doc}"],
    ["compute", "{doc}", "--format", "json"],
    ["compute", "{doc}", "--format", "csv", "--only", "weights"],
    ["heatmap", "{doc}"],
    ["explain", "{doc}"],
    ["explain", "{doc}", "--format", "json"],
    ["check", "{answer}"],
    ["init"],
    ["--version"],
], ids=lambda a: " ".join(a))
def test_standard_output_on_a_full_disk_is_one_error(tmp_path, doc, args):
    answer = tmp_path / "answer.yaml"
    answer.write_text(GOOD + "answer:\n  scores: [[2, 4, 4], [4, 8, 8], [4, 8, 8]]\n")
    args = [a.replace("{doc}", str(doc)).replace("{answer}", str(answer)) for a in args]
    with open(full_device(tmp_path), "wb") as full:
        result = attncli(*args, stdout=full, stderr=subprocess.PIPE, capture_output=False)
    one_error(result, "standard output", "cannot be written", os.strerror(errno.ENOSPC))


def test_output_and_export_are_both_written_or_neither(tmp_path, doc):
    out, picture, full = tmp_path / "out.txt", tmp_path / "picture.svg", full_device(tmp_path)
    out.write_text("an earlier result\n")
    full_txt = tmp_path / "full.txt"
    full_txt.symlink_to(full)
    # the picture fails (a full disk): -o keeps its old content
    one_error(attncli("compute", str(doc), "-o", str(out), "--export", str(full_txt)), "full.txt", "No space left")
    assert out.read_text() == "an earlier result\n"
    # -o fails: no picture
    one_error(attncli("compute", str(doc), "-o", str(full), "--export", str(picture)), str(full), "No space left")
    assert not picture.exists()
    # standard output fails: no picture either
    with open(full, "wb") as stdout:
        result = attncli("compute", str(doc), "--export", str(picture), stdout=stdout, stderr=subprocess.PIPE,
                         capture_output=False)
    one_error(result, "standard output")
    assert not picture.exists() and leftovers(tmp_path) == [] and stat.S_ISCHR(os.stat(full).st_mode)
    # all well: both
    assert attncli("compute", str(doc), "-o", str(out), "--export", str(picture)).returncode == 0
    assert out.read_text().startswith("Inputs") and picture.read_text().startswith("<svg")


def test_dev_stdout_is_standard_output_itself(tmp_path, doc):
    want = expected_json(doc)
    result = attncli("compute", str(doc), "--format", "json", "-o", "/dev/stdout")
    assert result.returncode == 0 and result.stdout == want
    log = tmp_path / "log.txt"
    log.write_text("first line\n")
    inode = log.stat().st_ino
    result = shell(f"attncli compute {doc} --format json -o /dev/stdout >> {log}", tmp_path)
    assert result.returncode == 0, result.stderr
    assert log.read_bytes() == b"first line\n" + want and log.stat().st_ino == inode  # appended, not replaced
    assert leftovers(Path("/dev")) == [] and leftovers(tmp_path) == []


# ------------------------------------------------------------------ limits and slow readers


def limit_file_size(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_standard_output_over_the_file_size_limit_fails(tmp_path, unbuffered):
    doc = tmp_path / "big.yaml"
    doc.write_text(BIG)
    out = tmp_path / "out.json"
    with open(out, "wb") as f:
        result = attncli("compute", str(doc), "--format", "json", stdout=f, stderr=subprocess.PIPE,
                         capture_output=False, preexec_fn=limit_file_size(65536), env={"PYTHONUNBUFFERED": unbuffered})
    one_error(result, "standard output", os.strerror(errno.EFBIG))
    assert out.stat().st_size <= 65536


def test_output_file_over_the_file_size_limit_leaves_the_old_one(tmp_path):
    doc = tmp_path / "big.yaml"
    doc.write_text(BIG)
    out = tmp_path / "out.json"
    out.write_text("an earlier result\n")
    result = attncli("compute", str(doc), "--format", "json", "-o", str(out), preexec_fn=limit_file_size(65536))
    one_error(result, "out.json", os.strerror(errno.EFBIG))
    assert out.read_text() == "an earlier result\n" and leftovers(tmp_path) == []


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_non_blocking_pipe_gets_every_byte(tmp_path, unbuffered):
    doc = tmp_path / "big.yaml"
    doc.write_text(BIG)
    want = expected_json(doc)
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # the flag is on the pipe itself: attncli's standard output is non-blocking
    process = subprocess.Popen([*COMMAND, "compute", str(doc), "--format", "json"], stdout=write_end,
                               stderr=subprocess.PIPE, env={**ENV, "PYTHONUNBUFFERED": unbuffered})
    os.close(write_end)
    got = bytearray()
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while chunk := pipe.read(4096):  # a slow reader: the pipe fills, and writes would block
            got += chunk
            if len(got) < 200_000:
                time.sleep(0.002)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert stderr == b"" and bytes(got) == want


def test_reader_that_goes_away_keeps_exit_0_and_the_export(tmp_path):
    doc = tmp_path / "big.yaml"
    doc.write_text("inputs: {random: normal, seed: 1, shape: [60, 4]}\n")
    picture = tmp_path / "p.txt"
    result = shell(f"COLUMNS=1000 attncli compute {doc} --full --only weights --export {picture}"
                   " | head -c 10; echo \" ${PIPESTATUS[0]}\"", tmp_path)
    assert result.stdout.decode().endswith(" 0\n") and result.stderr == b""
    assert picture.read_text().count("\n") > 60 and leftovers(tmp_path) == []


# ------------------------------------------------------------------ signals


def small_pipe() -> tuple[int, int]:
    """A pipe that holds 4 kB (Linux), so that a few kB of output block the writer."""
    read_end, write_end = os.pipe()
    if hasattr(__import__("fcntl"), "F_SETPIPE_SZ"):
        import fcntl

        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    return read_end, write_end


def blocked_writing(process: subprocess.Popen, folder: Path) -> bool:
    """True once the picture's temporary file is there and the process waits for the pipe to drain."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if leftovers(folder) and "pipe" in Path(f"/proc/{process.pid}/wchan").read_text():
            return True
        if process.poll() is not None:
            return False
        time.sleep(0.02)
    return False


@pytest.mark.skipif(not LINUX, reason="needs Linux /proc to see the process wait on its pipe")
@pytest.mark.parametrize("signo, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)],
                         ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_signal_while_writing_leaves_no_temporary_file(tmp_path, signo, code):
    doc = tmp_path / "doc.yaml"
    doc.write_text("inputs: {random: normal, seed: 1, shape: [60, 4]}\n")
    picture, out = tmp_path / "p.txt", tmp_path / "out.json"
    out.write_text("an earlier result\n")
    read_end, write_end = small_pipe()
    process = subprocess.Popen([*COMMAND, "compute", str(doc), "--full", "--only", "weights", "--export", str(picture)],
                               stdout=write_end, stderr=subprocess.PIPE, env={**ENV, "COLUMNS": "1000"},
                               preexec_fn=default_signals)
    os.close(write_end)
    try:
        assert blocked_writing(process, tmp_path), "the run did not block writing its output"
        process.send_signal(signo)
        stderr = process.communicate(timeout=60)[1].decode()
        assert process.returncode == code
    finally:
        if process.poll() is None:
            process.kill()
        os.close(read_end)
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert stderr == ("Interrupted.\n" if signo == signal.SIGINT else f"Stopped by {signal.Signals(signo).name}.\n")
    assert not picture.exists() and leftovers(tmp_path) == []


@pytest.mark.skipif(not LINUX, reason="needs Linux /proc to see the process wait")
def test_signal_while_waiting_for_a_fifo_reader(tmp_path, doc):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    process = subprocess.Popen([*COMMAND, "compute", str(doc), "--format", "json", "-o", str(fifo)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, preexec_fn=default_signals)
    deadline = time.monotonic() + 60
    while not any(w in Path(f"/proc/{process.pid}/wchan").read_text() for w in ("partner", "fifo")):  # in open()
        assert time.monotonic() < deadline and process.poll() is None, "the run did not wait for the FIFO's reader"
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 143 and stdout == b"" and stderr == b"Stopped by SIGTERM.\n"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and leftovers(tmp_path) == []


# ------------------------------------------------------------------ what is replaced keeps its permissions


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o755, 0o444])
@pytest.mark.parametrize("name, args, option", [w for w in WRITERS if w[0] != "compute --export"] + [
    ("compute --export svg", ["compute", "{doc}", "--export"], None)], ids=lambda v: v if isinstance(v, str) else None)
def test_replaced_file_keeps_its_mode(tmp_path, doc, mode, name, args, option):
    target = tmp_path / ("result.svg" if option is None else "result.json" if "json" in args else "result.txt")
    target.write_text("an earlier result\n")
    target.chmod(mode)
    result = attncli(*writer_args(args, option, target, doc))
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert target.read_text() != "an earlier result\n" and leftovers(tmp_path) == []


@pytest.mark.skipif(not ROOT_USER, reason="only root may give a file to another owner")
def test_replaced_file_keeps_its_owner(tmp_path, doc):
    target = tmp_path / "result.json"
    target.write_text("an earlier result\n")
    os.chown(target, 4321, 8765)
    target.chmod(0o664)
    assert attncli("compute", str(doc), "--format", "json", "-o", str(target)).returncode == 0
    info = target.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4321, 8765, 0o664)
    assert target.read_bytes() == expected_json(doc)


def test_new_file_follows_the_umask(tmp_path, doc):
    target = tmp_path / "new.json"
    old = os.umask(0o027)
    try:
        assert attncli("compute", str(doc), "--format", "json", "-o", str(target)).returncode == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


# ------------------------------------------------------------------ never over the input read from standard input


@pytest.mark.parametrize("args", [
    ["compute", "-", "--format", "json", "-o", "{target}"],
    ["compute", "-", "-o", "{target}"],
    ["compute", "-", "--export", "{target}"],
    ["heatmap", "-", "--export", "{target}"],
    ["explain", "-", "--export", "{target}"],
], ids=lambda a: " ".join(a))
@pytest.mark.parametrize("how", ["same name", "hard link"])
def test_document_from_standard_input_is_never_overwritten(tmp_path, args, how):
    suffix = ".json" if "json" in args else ".txt"  # -o's extension agrees with --format; --export takes .txt
    source = tmp_path / f"doc{suffix}"
    source.write_text(GOOD)
    target = source
    if how == "hard link":
        target = tmp_path / f"other{suffix}"
        os.link(source, target)
    with open(source, "rb") as stdin:
        result = attncli(*[a.replace("{target}", str(target)) for a in args], stdin=stdin)
    one_error(result, target.name, "standard input")
    assert source.read_text() == GOOD and target.read_text() == GOOD and leftovers(tmp_path) == []


def test_a_named_input_is_not_overwritten_through_a_hard_link(tmp_path, doc):
    link = tmp_path / "same.json"
    os.link(doc, link)
    one_error(attncli("compute", str(doc), "--format", "json", "-o", str(link)), "same.json", "input files")
    assert doc.read_text() == GOOD


def test_document_from_standard_input_may_go_elsewhere(tmp_path, doc):
    out = tmp_path / "out.json"
    with open(doc, "rb") as stdin:
        result = attncli("compute", "-", "--format", "json", "-o", str(out), stdin=stdin)
    assert result.returncode == 0 and out.read_bytes() == expected_json(doc)


# ------------------------------------------------------------------ names: folders, loops, lengths, permissions


@pytest.mark.parametrize("args", [
    ["compute", "{doc}", "--format", "json", "-o", "results/"],
    ["compute", "{doc}", "-o", "results/"],
    ["compute", "{doc}", "--export", "results/"],
    ["compute", "{doc}", "--export", "results/."],
    ["heatmap", "{doc}", "--export", "results/"],
    ["explain", "{doc}", "--export", "results/"],
    ["init", "-o", "results/"],
    ["init", "-o", "."],
    ["init", "-o", ""],
], ids=lambda a: " ".join(a))
def test_a_name_for_a_folder_is_refused(tmp_path, doc, args):
    result = attncli(*[a.replace("{doc}", str(doc)) for a in args], cwd=tmp_path)
    one_error(result, "give a file name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.yaml"]


@pytest.mark.parametrize("option", ["-o", "--export"])
def test_a_symlink_loop_is_a_clean_error(tmp_path, doc, option):
    loop = tmp_path / "loop.txt"
    loop.symlink_to("loop.txt")
    one_error(attncli("compute", str(doc), option, str(loop)), "loop.txt", "symbolic links")
    other = ["--export", str(tmp_path / "p.svg")] if option == "-o" else ["-o", str(tmp_path / "out.txt")]
    one_error(attncli("compute", str(doc), option, str(loop), *other), "loop.txt", "symbolic links")  # neither file
    assert loop.is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == ["doc.yaml", "loop.txt"]


@pytest.mark.parametrize("length", [250, 255])
def test_any_valid_file_name_can_be_written(tmp_path, doc, length):
    target = tmp_path / ("r" * (length - 5) + ".json")
    assert len(target.name) == length
    result = attncli("compute", str(doc), "--format", "json", "-o", str(target))
    assert result.returncode == 0, result.stderr
    assert target.read_bytes() == expected_json(doc) and leftovers(tmp_path) == []
    result = attncli("compute", str(doc), "--export", str(target.with_suffix(".txt")))
    assert result.returncode == 0 and target.with_suffix(".txt").exists()


@pytest.mark.parametrize("option", ["-o", "--export"])
def test_a_name_too_long_is_a_clean_error(tmp_path, doc, option):
    one_error(attncli("compute", str(doc), option, str(tmp_path / ("r" * 300 + ".txt"))),
              os.strerror(errno.ENAMETOOLONG))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.yaml"]


def test_a_missing_folder_is_named(tmp_path, doc):
    one_error(attncli("init", "-o", str(tmp_path / "nowhere" / "doc.yaml")), "nowhere", "does not exist")


def without_root_powers() -> None:
    """As root: give up reading and writing past permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.mark.skipif(not LINUX, reason="Linux permissions and capabilities")
@pytest.mark.parametrize("mode, where", [(0o000, "locked/out.txt"), (0o666, "locked/out.txt"),
                                         (0o555, "locked/out.txt"), (0o000, "locked/sub/out.txt")])
@pytest.mark.parametrize("option", ["-o", "--export"])
def test_a_folder_without_permission_is_a_clean_error(tmp_path, doc, mode, where, option):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(mode)
    try:
        refused = attncli("compute", str(doc), option, str(tmp_path / where),
                          preexec_fn=without_root_powers if ROOT_USER else None)
        if ROOT_USER and mode == 0o000 and where == "locked/out.txt":  # root, as root is: the permissions do not apply
            as_root = attncli("compute", str(doc), option, str(tmp_path / where))
            assert as_root.returncode == 0 and (tmp_path / where).exists()
            (tmp_path / where).unlink()
    finally:
        locked.chmod(0o755)
    one_error(refused, os.strerror(errno.EACCES))
    assert list(locked.iterdir()) == []


# ------------------------------------------------------------------ COLUMNS


@pytest.mark.parametrize("args", [["compute", "{doc}"], ["heatmap", "{doc}"], ["explain", "{doc}", "--step", "4"]],
                         ids=lambda a: a[0])
@pytest.mark.parametrize("columns", ["0", "1", "19", "-5", "abc", "", " ", "4.5"])
def test_nonsensical_columns_is_ignored(doc, args, columns):
    args = [a.replace("{doc}", str(doc)) for a in args]
    plain = attncli(*args)
    result = attncli(*args, env={"COLUMNS": columns})
    assert result.returncode == 0 and result.stderr == b""
    assert result.stdout == plain.stdout and len(result.stdout) > 100  # as without COLUMNS (80 off a terminal)


@pytest.mark.parametrize("columns, widest",
                         [("20", 20), ("40", 40), ("99999999", 1000), ("1000000000000000000000", 1000)])
def test_sensible_columns_is_used_and_huge_is_clamped(tmp_path, columns, widest):
    doc = tmp_path / "wide.yaml"
    doc.write_text("inputs: {random: normal, seed: 1, shape: [4, 300]}\n")
    result = attncli("compute", str(doc), "--full", "--only", "inputs", env={"COLUMNS": columns})
    assert result.returncode == 0 and result.stderr == b""
    lines = result.stdout.decode().splitlines()
    assert max(len(line) for line in lines) == widest


# ------------------------------------------------------------------ closed standard streams


@pytest.mark.parametrize("script, code, stdout, error", [
    ("attncli compute doc.yaml >&-", 2, "", "standard output: is closed"),
    ("attncli compute doc.yaml --format json >&-", 2, "", "standard output: is closed"),
    ("attncli init >&-", 2, "", "standard output: is closed"),
    ("attncli --version >&-", 2, "", "standard output: is closed"),
    ("attncli compute doc.yaml --format json -o out.json >&- && cat out.json | head -c 10", 0, '{"tokens":', ""),
    ("attncli compute - <&-", 2, "", "standard input: is closed"),
    ("attncli explain - <&-", 2, "", "standard input: is closed"),
    ("attncli compute doc.yaml --format json <&- | head -c 10", 0, '{"tokens":', ""),
    ("attncli compute doc.yaml --format json -o out.json <&- >&- 2>&- && cat out.json | head -c 10",
     0, '{"tokens":', ""),
    ("attncli check right.yaml 2>&-", 0, "correct", ""),
    ("attncli check wrong.yaml 2>&-", 1, "wrong", ""),
    ("attncli check nothing.yaml 2>&-", 2, "", ""),
    ("attncli compute doc.yaml --mask nonsense 2>&-", 2, "", ""),
    ("attncli compute doc.yaml --precision 99 2>&-", 2, "", ""),
    ("attncli check wrong.yaml 2>full", 1, "wrong", ""),
    ("attncli check nothing.yaml 2>full", 2, "", ""),
], ids=lambda v: v if isinstance(v, str) and v.startswith("attncli") else None)
def test_closed_standard_streams(tmp_path, script, code, stdout, error):
    (tmp_path / "doc.yaml").write_text(GOOD)
    (tmp_path / "right.yaml").write_text(GOOD + "answer:\n  scores: [[2, 0, 2], [0, 8, 4], [2, 4, 4]]\n")
    (tmp_path / "wrong.yaml").write_text(GOOD + "answer:\n  scores: [[1, 0, 2], [0, 8, 4], [2, 4, 4]]\n")
    if "full" in script and full_device(tmp_path) != tmp_path / "full":
        (tmp_path / "full").symlink_to("/dev/full")
    result = shell(script, tmp_path)
    assert result.returncode == code, result.stderr
    assert stdout in result.stdout.decode() and (stdout or result.stdout == b"")
    if error:
        assert result.stderr.decode().startswith("Error: " + error) and result.stderr.count(b"\n") == 1
    else:
        assert result.stderr == b""
    assert leftovers(tmp_path) == []


def test_closed_standard_output_never_becomes_an_output_file(tmp_path, doc):
    """With descriptor 1 closed, the temporary file could take its number: nothing else may land in it."""
    out = tmp_path / "out.json"
    result = shell(f"attncli compute {doc} --format json -o {out} >&-; echo $? >&2", tmp_path)
    assert result.stderr == b"0\n" and out.read_bytes() == expected_json(doc)


# ------------------------------------------------------------------ both files or neither, in every failure order


def test_second_rename_failing_puts_the_first_file_back(tmp_path, monkeypatch):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("old a\n")
    second.write_text("old b\n")
    real_replace, calls = os.replace, []

    def replace(source, target):
        calls.append(Path(target).name)
        if Path(target) == second and Path(source).suffix == ".tmp":
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_replace(source, target)

    monkeypatch.setattr(files.os, "replace", replace)
    with pytest.raises(files.AttnError, match="b.txt: cannot be written"):
        files.write_all([(first, b"new a\n"), (second, b"new b\n")], set())
    assert calls[:2] == ["a.txt", "b.txt"]  # the first was renamed, then put back
    assert first.read_text() == "old a\n" and second.read_text() == "old b\n" and leftovers(tmp_path) == []


def test_second_rename_failing_removes_a_first_file_that_was_new(tmp_path, monkeypatch):
    first, second = tmp_path / "new.txt", tmp_path / "b.txt"
    second.write_text("old b\n")
    real_replace = os.replace

    def replace(source, target):
        if Path(target) == second:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_replace(source, target)

    monkeypatch.setattr(files.os, "replace", replace)
    with pytest.raises(files.AttnError):
        files.write_all([(first, b"new\n"), (second, b"new b\n")], set())
    assert not first.exists() and second.read_text() == "old b\n" and leftovers(tmp_path) == []


def test_second_temporary_file_failing_renames_nothing(tmp_path, monkeypatch):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("old a\n")
    real_fsync, synced = os.fsync, []

    def fsync(fd):
        synced.append(fd)
        if len(synced) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", fsync)
    with pytest.raises(files.AttnError, match="b.txt: cannot be written .No space left"):
        files.write_all([(first, b"new a\n"), (second, b"new b\n")], set())
    assert first.read_text() == "old a\n" and not second.exists() and leftovers(tmp_path) == []


def test_both_files_are_written_whole(tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("old a\n")
    first.chmod(0o600)
    files.write_all([(first, b"new a\n"), (second, b"new b\n" * 100_000)], set())
    assert first.read_text() == "new a\n" and second.read_bytes() == b"new b\n" * 100_000
    assert stat.S_IMODE(first.stat().st_mode) == 0o600 and leftovers(tmp_path) == []


def test_temporary_names_are_short_and_hidden(tmp_path, monkeypatch):
    seen = []
    real_fsync = os.fsync

    def fsync(fd):
        seen.extend(leftovers(tmp_path))
        return real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", fsync)
    files.write_atomic(tmp_path / ("x" * 255), b"data", set())
    assert len(seen) == 1 and seen[0].startswith(".attncli-") and seen[0].endswith(".tmp") and len(seen[0]) <= 24


def test_a_non_blocking_pipe_is_waited_for():
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    data = os.urandom(300_000)
    got = bytearray()

    def drain() -> None:
        while len(got) < len(data):
            select.select([read_end], [], [], 5)
            got.extend(os.read(read_end, 65536))
            time.sleep(0.001)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    files._write_stream(write_end, data, "pipe")
    reader.join(timeout=30)
    os.close(write_end)
    os.close(read_end)
    assert bytes(got) == data


def test_strict_json_is_unchanged_by_the_writer(tmp_path, doc):
    out = tmp_path / "out.json"
    assert attncli("compute", str(doc), "--format", "json", "-o", str(out)).returncode == 0
    assert json.loads(out.read_text())["tokens"] == ["a", "b", "c"]
