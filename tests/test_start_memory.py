"""Memory under an address-space limit (``ulimit -v``: RLIMIT_AS in the child), from the first moment: each command
that draws a picture, and JSON and tables, either succeeds or ends in one line naming memory (exit 2, no traceback,
the old output file intact). Below what numpy needs to start, attncli says so itself: OpenBLAS would otherwise end
the process with its own line (exit 1) or raise SIGINT (``Interrupted.``); and numpy's library that cannot be mapped
is memory, not an internal error."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

resource = pytest.importorskip("resource")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not hasattr(resource, "RLIMIT_AS") or sys.platform != "linux",
                                                   reason="RLIMIT_AS and /proc/self/status")]

ROOT = Path(__file__).resolve().parent.parent
ENTRY_POINT = Path(sys.executable).parent / "attncli"
COMMAND = [str(ENTRY_POINT)] if ENTRY_POINT.exists() else [sys.executable, "-m", "attncli"]
MIB = 1 << 20
OLD = b"an earlier picture\n"
BERT = (ROOT / "examples" / "bert_base.yaml").read_text().replace("tokens: 我想吃酸菜鱼", "tokens: [I, want, to, eat, "
                                                                  "fish, soup]", 1)


def limited(limit: int, *args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    environ = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                                  "OMP_NUM_THREADS", "ATTNCLI_MEMORY")}
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, cwd=cwd, preexec_fn=set_limit,
                          env={**environ, **(env or {})}, timeout=600)


def assert_memory_line(result: subprocess.CompletedProcess, start: str = "Error: ") -> str:
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "OpenBLAS error" not in result.stderr  # (nor blas_thread_init)
    assert "blas_thread_init" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(start), result.stderr
    assert "memory" in lines[0] or "内存" in lines[0], lines[0]
    return lines[0]


@pytest.fixture()
def docs(tmp_path) -> Path:
    (tmp_path / "bert.yaml").write_text(BERT)  # the example's shapes, with tokens any machine's fonts have
    assert "seed: 0, shape: [6, 768]" in BERT
    long = re.sub(r"(?m)^tokens:.*\n", "", BERT.replace("shape: [6, 768]", "shape: [512, 768]", 1), count=1)
    assert "\ntokens:" not in long and "shape: [512, 768]" in long
    (tmp_path / "bert512.yaml").write_text(long)  # BERT-base at n = 512
    return tmp_path


RUNS = [("compute", "bert.yaml", "--head", "1", "--export", "out.png"),
        ("compute", "bert512.yaml", "--only", "weights", "--export", "out.png"),
        ("heatmap", "bert512.yaml", "--export", "out.png"),
        ("heatmap", "bert.yaml", "--head", "all", "--export", "out.png"),
        ("explain", "bert.yaml", "--export", "out.html"),
        ("compute", "bert512.yaml", "--format", "json", "-o", "out.json"),
        ("compute", "bert512.yaml", "-o", "out.txt")]


@pytest.mark.parametrize("mib", [100, 200, 700, 1024, 1536, 2048])
def test_every_picture_and_format_is_made_or_refused_naming_memory(docs, mib):
    pytest.importorskip("resvg_py")
    for args in RUNS:
        out = docs / args[-1]
        out.write_bytes(OLD)
        result = limited(mib * MIB, *args, cwd=docs)
        if result.returncode == 0:
            assert out.read_bytes() != OLD and result.stderr == "", (args, result.stderr)
        else:
            assert_memory_line(result)
            assert out.read_bytes() == OLD, args
        assert sorted(p.name for p in docs.iterdir() if p.name.startswith("out")) == [out.name]  # no temporary file
        out.unlink()


def test_a_limit_numpy_cannot_start_in_is_one_line_in_english_and_chinese(docs):
    (docs / "out.json").write_bytes(OLD)
    english = assert_memory_line(limited(100 * MIB, "compute", "bert.yaml", "-o", "out.json", cwd=docs))
    assert re.fullmatch(r"Error: memory: attncli needs about [0-9.]+ MiB of memory to start \(Python, numpy and "
                        r"OpenBLAS's buffers\), more than the 100 MiB that ulimit -v allows; raise that limit",
                        english), english
    chinese = assert_memory_line(limited(100 * MIB, "compute", "bert.yaml", "--lang", "zh", cwd=docs), "错误：")
    assert re.fullmatch(r"错误：memory: attncli 启动需要约 [0-9.]+ MiB 内存（Python、numpy 和 OpenBLAS 的缓冲区），"
                        r"超过了 ulimit -v 允许的 100 MiB；请提高这个限制", chinese), chinese
    assert (docs / "out.json").read_bytes() == OLD


def test_openblas_gets_the_threads_that_fit_unless_the_environment_says(tmp_path):
    """Under 500 MiB: the threads of start.blas_threads_for (what is left, by hand: one at 500 MiB, as a quarter of
    what numpy's start leaves is less than a thread's 80 MiB); a count in the environment is kept."""
    probe = ("from attncli.cli.start import start_within_limits; import os; start_within_limits(); import numpy; "
             "from attncli.core.threads import _openblas; print(os.environ.get('OPENBLAS_NUM_THREADS'), "
             "_openblas()[1]())")

    def threads(env: dict) -> str:
        def set_limit() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (500 * MIB, 500 * MIB))

        environ = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
        return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, preexec_fn=set_limit,
                              env={**environ, **env}, timeout=600, check=True).stdout.split()

    assert threads({}) == ["1", "1"]
    assert threads({"OPENBLAS_NUM_THREADS": "2"})[0] == "2"


# numpy's own ImportError when its OpenBLAS library cannot be mapped (the message as numpy words it), or a
# MemoryError, the first time the module named by argv[1] is imported; then the console script's lines
SCRIPT = """
import sys
target, kind = sys.argv.pop(1), sys.argv.pop(1)

class Fail:
    def find_spec(self, name, path=None, target_module=None):
        if name == target:
            sys.meta_path.remove(self)
            if kind == "map":
                raise ImportError("\\n\\nIMPORTANT: PLEASE READ THIS FOR ADVICE ON HOW TO SOLVE THIS ISSUE!\\n"
                                  "Original error was: libscipy_openblas64_.so: failed to map segment from shared "
                                  "object")
            raise MemoryError
        return None

sys.meta_path.insert(0, Fail())
from attncli.cli import main
sys.exit(main())
"""


@pytest.mark.parametrize(("module", "kind"), [("numpy", "map"), ("numpy", "memory"),
                                              ("attncli.cli.compute", "memory")])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_import_without_memory_is_the_memory_line(tmp_path, module, kind, lang):
    (tmp_path / "doc.yaml").write_text("inputs: [[1, 0], [0, 1]]\n")
    (tmp_path / "out.json").write_bytes(OLD)
    result = subprocess.run([sys.executable, "-c", SCRIPT, module, kind, "compute", "doc.yaml", "-o", "out.json",
                             "--lang", lang], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    line = assert_memory_line(result, "Error: memory: ran out of memory" if lang == "en" else "错误：memory: 内存不足")
    assert line.endswith("computes large results block by block" if lang == "en" else "让它分块计算大的结果")
    assert (tmp_path / "out.json").read_bytes() == OLD
