"""Limits and time bombs: every size is checked against the memory attncli may use before it is allocated.

The memory cases run attncli in a process with an address-space limit (``ulimit -v``,
``resource.RLIMIT_AS``) a few hundred MiB above what the interpreter itself takes, and
check the answer: exit code 2, one ``Error:`` line that names memory, nothing on standard
output, no traceback, and quickly (a refusal comes before the work, not after it).
Without the checks these runs ended in a segmentation fault inside the JSON encoder, in
``MemoryError`` tracebacks, or after seconds of work.

The time bombs are measured against a baseline taken in the same test (the same work at
a tenth of the size, or the number of cells formatted), never in absolute seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from attncli.cli.run import run
from attncli.core.errors import AttnError

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc/self/status")]

ENTRY_POINT = Path(sys.executable).parent / "attncli"
COMMAND = [str(ENTRY_POINT)] if ENTRY_POINT.exists() else [sys.executable, "-m", "attncli"]
ROOM = 800 << 20  # address space above the interpreter's own: the "1 GiB" of ulimit -v 1048576 on a small machine
QUICK = 60.0  # seconds: a refusal before the work (the work itself takes minutes, or never ends)


@pytest.fixture(scope="module")
def limit() -> int:
    """The address-space limit for the runs: what the interpreter and attncli's modules take, plus ROOM.

    Measured, because the address space numpy's OpenBLAS reserves at import grows with the number of cores.
    """
    probe = "import attncli.cli.main, numpy, orjson, yaml, rich.console; print(open('/proc/self/status').read())"
    status = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                            timeout=600).stdout
    size = next(int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmSize:"))
    return size + ROOM


def attncli(limit: int, *args: str, cwd: Path | None = None,
            timeout: float = 600) -> tuple[subprocess.CompletedProcess, float]:
    """attncli ARGS in a process whose address space is limited to ``limit`` bytes; the result and its seconds."""
    import resource

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    start = time.monotonic()
    result = subprocess.run([*COMMAND, *args], capture_output=True, text=True, cwd=cwd, preexec_fn=limited,
                            timeout=timeout)
    return result, time.monotonic() - start


def assert_refused(result: subprocess.CompletedProcess, seconds: float, *words: str) -> None:
    """Exit 2, nothing on stdout, one `Error:` line with ``words`` (memory by default), no traceback, quickly."""
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])  # not -11 (SIGSEGV), not 70
    assert result.stdout == ""
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for word in words or ("of memory, more than the",):
        assert word in lines[0], lines[0]
    assert seconds < QUICK, seconds


def random_doc(rows: int, cols: int) -> str:
    return f"inputs: {{random: normal, seed: 0, shape: [{rows}, {cols}]}}\n"


def sparse_npy(path: Path, shape: tuple[int, ...], dtype: str) -> None:
    """A .npy file whose header promises ``shape`` and whose data is a hole (takes no disk)."""
    with path.open("wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": dtype, "fortran_order": False, "shape": shape})
        f.truncate(f.tell() + int(np.prod(shape)) * np.dtype(dtype).itemsize)


def holey_csv(path: Path) -> None:
    """4 GiB of CSV: real rows at the start, then a hole (reading it would take 4 GiB, parsing it far more)."""
    with path.open("wb") as f:
        f.write(b"1,2,3,4\n" * 10000)
        f.truncate(4 << 30)


# ---------------------------------------------------------------- refused before anything is allocated


@dataclass
class Case:
    id: str
    args: list[str]  # FILE is the document written to doc.yaml
    doc: str = ""
    words: tuple[str, ...] = ()  # what the one line must say (default: that it is about memory)
    files: dict = field(default_factory=dict)  # name -> function(path) that makes it


CASES = [
    # n = 4000: the weights alone are 128 MiB, their JSON about 350 MiB, orjson's buffer up to twice that
    Case("json-weights-n4000", ["compute", "FILE", "--format", "json", "--only", "weights"], random_doc(4000, 8),
         ("--only: weights of 1 × 4000 × 4000 need about", "of memory, more than the", "ulimit -v")),
    Case("npz-scores-n6000", ["compute", "FILE", "--only", "scores", "-o", "out.npz"], random_doc(6000, 8),
         ("--only: scores of 1 × 6000 × 6000 need about", "ulimit -v")),
    Case("csv-weights-n6000", ["compute", "FILE", "--format", "csv", "--only", "weights"], random_doc(6000, 8)),
    Case("random-12000x12000", ["compute", "FILE", "--only", "output"], random_doc(12000, 12000),
         ("doc.yaml: inputs: shape: 12000×12000 would need 1.2 GiB of memory, more than the", "ulimit -v")),
    Case("random-weight-3d", ["compute", "FILE"], "inputs: [[1, 2]]\nheads: 2\n"
         "weights: {query: {random: xavier, shape: [2, 9000, 9000]}}\n",
         ("weights.query: shape: 2×9000×9000 would need",)),
    Case("heatmap-n12000", ["heatmap", "FILE"], random_doc(12000, 4),
         ("heatmap needs the scores and weights of 1 × 12000 × 12000, which would need", "ulimit -v")),
    Case("explain-n12000", ["explain", "FILE"], random_doc(12000, 4),
         ("doc.yaml: explain needs the scores and weights of 1 × 12000 × 12000",)),
    Case("explain-why-json-n3000", ["explain", "FILE", "--why", "--format", "json"], random_doc(3000, 4),
         ("explain --why --format json needs the scores and weights",)),
    Case("check-n12000", ["check", "FILE"], random_doc(12000, 4) + "answer: {output: [1, 2, 3, 4]}\n",
         ("check needs the scores and weights of 1 × 12000 × 12000",)),
    Case("streamed-json-too-long", ["compute", "FILE", "--format", "json", "--only", "output"], random_doc(1000, 40000)
         + "weights: {query: {random: normal, shape: [40000, 2]}, key: {random: normal, shape: [40000, 2]},"
           " value: {random: normal, shape: [40000, 2]}}\n",
         ("even block by block, this document needs about", "of memory")),
    Case("only-inputs-json-too-long", ["compute", "FILE", "--format", "json", "--only", "inputs"],
         random_doc(1000, 40000)
         + "weights: {query: {random: normal, shape: [40000, 2]}, key: {random: normal, shape: [40000, 2]},"
           " value: {random: normal, shape: [40000, 2]}}\n",
         # (no attention: the JSON is the limit)
         ("--format json: writing this result as JSON would need", "of memory")),
    Case("csv-4GiB", ["compute", "FILE"], "inputs: big.csv\n",
         ("doc.yaml: inputs: big.csv: reading this 4 GiB text matrix would need", "save large matrices as .npy"),
         {"big.csv": holey_csv}),
    Case("csv-4GiB-sparse", ["compute", "FILE"], "inputs: big.csv\n", ("big.csv: is binary, not UTF-8 text",),
         {"big.csv": lambda p: subprocess.run(["truncate", "-s", "4G", str(p)], check=True, timeout=600)}),
    Case("npy-1.5GiB", ["compute", "FILE", "--only", "output"], "inputs: big.npy\n",
         ("big.npy: its 20000×10000 float64 array would need", "ulimit -v"),
         {"big.npy": lambda p: sparse_npy(p, (20000, 10000), "<f8")}),
    Case("npy-float32-converted", ["compute", "FILE", "--only", "output"], "inputs: big.npy\n",
         ("big.npy: its 12000×8000 float32 array would need",),
         {"big.npy": lambda p: sparse_npy(p, (12000, 8000), "<f4")}),
    Case("init-billion", ["init", "--n", "1000000000"], words=("--n: a 1000000000×4 matrix is too large to generate",)),
    Case("init-labels", ["init", "--n", "200000000", "--d-model", "1"],
         words=("--n: a document of 200,000,000 labels would need", "ulimit -v")),
    Case("init-inline", ["init", "--n", "30000000", "--inline"],
         words=("--inline: would write more than 1,000,000 numbers",)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refused_up_front(case, limit, tmp_path):
    if case.doc:
        (tmp_path / "doc.yaml").write_text(case.doc)
    for name, make in case.files.items():
        make(tmp_path / name)
    result, seconds = attncli(limit, *[("doc.yaml" if a == "FILE" else a) for a in case.args], cwd=tmp_path)
    assert_refused(result, seconds, *case.words)
    # no output file
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["doc.yaml", *case.files] if case.doc else [])


def test_json_of_large_matrices_is_refused_and_what_fits_streamed(limit, tmp_path):
    """compute --format json of n = 4000 ended in SIGSEGV inside orjson, then left the matrices out with a warning
    (exit 0, a script reading .weights broke later); now the whole JSON is refused, and --only output is streamed."""
    (tmp_path / "doc.yaml").write_text(random_doc(4000, 8))
    result, seconds = attncli(limit, "compute", "doc.yaml", "--format", "json", cwd=tmp_path)
    assert_refused(result, seconds,
                   "doc.yaml: the whole result, with the scores, scaled_scores and weights of 1 × 4000 × 4000",
                   "ulimit -v", "--only output")
    result, _ = attncli(limit, "compute", "doc.yaml", "--format", "json", "--only", "output", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "", (result.returncode, result.stderr[-2000:])
    assert np.array(json.loads(result.stdout)["output"]).shape == (4000, 8)


def test_what_fits_is_still_computed(limit, tmp_path):
    """The checks refuse what does not fit, not what does:
    a 1000 × 1000 heat map and its explanation run under the limit."""
    (tmp_path / "doc.yaml").write_text(random_doc(1000, 8))
    for args in (["heatmap", "doc.yaml"], ["explain", "doc.yaml", "--step", "8"],
                 ["compute", "doc.yaml", "--format", "json"]):
        result, _ = attncli(limit, *args, cwd=tmp_path)
        assert result.returncode == 0 and result.stderr == "", (args, result.stderr[-2000:])
        assert result.stdout


def test_budget_counts_the_address_space_limit(limit):
    """memory_budget() is at most what the limit leaves after what the process already uses."""
    probe = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]),) * 2)\n"
             "from attncli.core import memory\n"
             "size = memory._status_bytes('VmSize')\n"
             "print(memory.memory_budget(), size, memory.budget_source())")
    result = subprocess.run([sys.executable, "-c", probe, str(limit)], capture_output=True, text=True, check=True,
                            timeout=600)
    budget, size, source = result.stdout.split(maxsplit=2)
    assert 0 < int(budget) <= limit - int(size)
    assert source.strip().startswith("what is left of the address-space limit, ulimit -v")


def test_out_of_memory_is_one_error_line(capsys):
    """The last resort: a MemoryError the estimates did not foresee is exit 2 and one line,
    not exit 70 or a traceback."""
    import typer

    def action() -> None:
        raise MemoryError

    with pytest.raises(typer.Exit) as stop:
        run(action, debug=False)
    assert stop.value.exit_code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("Error: memory: ran out of memory")
    assert "ATTNCLI_MEMORY" in err and "smaller input" in err


# ---------------------------------------------------------------- time bombs, against a baseline


def _best_of(repeat: int, work) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("start, filler, end", [
    ("", "# key: [[ text\n", ""),  # in comments
    ("note: '", "a: [[ b ", "'\n"),  # in a string
    ("", "# a: [[1, 2], [3, 4] x\n", ""),  # rows of numbers, then not
    ("", "# a: [[" + "123456, " * 3000 + "x\n", ""),  # long rows of numbers, then not
])
def test_inline_matrix_scan_is_linear(start, filler, end):
    """`: [[` said many times (in comments or strings) made the fast matrix scan quadratic: 3 MB took 21 s."""
    from attncli.inputs.document import parse_text

    def document(size: int) -> str:
        return "inputs: [[1, 2], [3, 4]]\n" + start + filler * (size // len(filler)) + end

    small, large = document(300_000), document(3_000_000)
    assert parse_text(large, "doc.yaml")["inputs"] == [[1, 2], [3, 4]]
    from attncli.inputs.fastmatrix import lift

    base = _best_of(5, lambda: lift(small))
    ten_times = _best_of(5, lambda: lift(large))
    # linear: about 10× (a few ms here, so a quarter second for a busy machine); quadratic: 100×, 10 s and more
    assert ten_times < 20 * base + 0.25, (base, ten_times)


def test_heatmap_formats_the_cells_it_shows(monkeypatch):
    """heatmap formatted every one of the n × m numbers to size its columns (n = 3000: 10× the time of compute)."""
    from attncli import views
    from attncli.cli.write import render_text
    from attncli.core.pipeline import attend
    from attncli.inputs.builder import build_spec
    from attncli.inputs.document import Document
    from attncli.views.heatmap import HeatMap

    calls = []
    real = views.heatmap.format_number
    monkeypatch.setattr(views.heatmap, "format_number", lambda *a: calls.append(1) or real(*a))
    trace = attend(build_spec(Document({"inputs": {"random": "normal", "shape": [600, 4]}}, "doc.yaml", Path("."))))
    render_text([HeatMap(trace, "weights", None, full=False, color=False, precision=2)])
    assert 0 < len(calls) < 10 * 24 * 24  # the 20 × 20 cells shown (and their legend), a few times; not 360000
    calls.clear()
    render_text([HeatMap(trace, "weights", None, full=True, color=False, precision=2)])
    assert len(calls) >= 600 * 600  # --full shows (and so formats) every cell


def test_heatmap_costs_about_what_compute_costs(tmp_path):
    (tmp_path / "doc.yaml").write_text(random_doc(2500, 8))

    def seconds(*args: str) -> float:
        start = time.monotonic()
        result = subprocess.run([*COMMAND, *args, "doc.yaml"], capture_output=True, cwd=tmp_path, timeout=600)
        assert result.returncode == 0, result.stderr
        return time.monotonic() - start

    compute = min(seconds("compute") for _ in range(2))
    heatmap = min(seconds("heatmap") for _ in range(2))
    assert heatmap < 3 * compute, (heatmap, compute)  # it was 6 to 10 times


def test_init_checks_sizes_before_building_anything():
    """init --n 30000000 --inline built 30 million labels (6 s) before saying it writes too many numbers."""
    from attncli.teach.starter import document

    for options, message in (({"n": 30_000_000, "inline": True}, "would write more than"),
                             ({"n": 3_000_000_000}, "too large to generate")):
        tracemalloc.start()
        try:
            with pytest.raises(AttnError, match=message):
                document(**options)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1 << 20, peak  # nothing of the size asked for was built
