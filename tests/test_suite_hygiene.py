"""The suite itself: it runs under plain `pytest`, it cannot hang on a child process, and it pins no BLAS kernel."""

from __future__ import annotations

import ast
import re

from conftest import ROOT

TESTS = sorted((ROOT / "tests").glob("*.py"))
WAITS = {"run", "check_output", "check_call", "call", "wait", "communicate"}  # calls that wait for a child


def test_no_test_imports_through_a_tests_package():
    """`from tests.x import …` works only under `python -m pytest` (the folder on sys.path); plain `pytest` fails."""
    bad = [f"{path.name}:{n}" for path in TESTS for n, line in enumerate(path.read_text().splitlines(), 1)
           if re.match(r"\s*(from|import) tests[.\s]", line)]
    assert bad == []


def _waits_without_timeout(source: str) -> list[int]:
    """Lines that wait for a child process with no timeout: subprocess.run & co., a process's wait or communicate,
    and a read of its standard output or error (read those with conftest.read_within or communicate)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if node.func.attr in ("read", "readline", "readlines") and isinstance(owner, ast.Attribute) and \
                owner.attr in ("stdout", "stderr") and not (isinstance(owner.value, ast.Name)
                                                            and owner.value.id == "sys"):
            found.append(node.lineno)
            continue
        if node.func.attr not in WAITS:
            continue
        if not (isinstance(owner, ast.Name) and (owner.id == "subprocess" or "proc" in owner.id)):
            continue
        positional_timeout = (node.func.attr in ("wait", "communicate")
                              and len(node.args) >= (1 if node.func.attr == "wait" else 2))
        if not positional_timeout and not any(k.arg == "timeout" for k in node.keywords):
            found.append(node.lineno)
    return found


def test_every_wait_for_a_child_process_has_a_timeout():
    bad = {path.name: lines for path in TESTS if (lines := _waits_without_timeout(path.read_text()))}
    assert bad == {}


def test_the_timeout_check_finds_a_missing_timeout():
    assert _waits_without_timeout("import subprocess\nsubprocess.run(['true'])\n"
                                  "process.wait()\nproc.stderr.read()\n") == [2, 3, 4]
    assert _waits_without_timeout("subprocess.run(['true'], timeout=5)\nprocess.communicate(timeout=5)\n") == []


def test_neither_tests_nor_ci_choose_the_blas_kernel():
    """The tests hold on any CPU by their design (tolerances relative to the largest entry), not by pinning a kernel."""
    setting = re.compile(r"OPENBLAS_CORETYPE\s*=|\[\s*[\"']OPENBLAS_CORETYPE[\"']\s*\]\s*="
                         r"|setenv\(\s*[\"']OPENBLAS_CORETYPE")
    places = [*TESTS, ROOT / ".ci" / "run", ROOT / "pyproject.toml"]
    bad = [path.name for path in places
           if any(setting.search(line) for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))]
    assert bad == []
