"""Ctrl-C while the command line is still importing (its first ~0.3 s) is one line, exit 130, the old output file
intact — as it is later in a run (tests/test_subprocess_errors.py). The interrupt is delivered at a chosen import,
so the test does not depend on how fast the machine starts Python; benchmarks/interrupt_at_start.py sends real
SIGINTs at set delays."""

from __future__ import annotations

import subprocess
import sys

import pytest

# what the console script does (`from attncli.cli import main; sys.exit(main())`), after a finder that raises
# KeyboardInterrupt, as SIGINT's handler does, the first time the module named by argv[1] is imported
SCRIPT = """
import sys
target = sys.argv.pop(1)

class Interrupt:
    def find_spec(self, name, path=None, target_module=None):
        if name == target:
            sys.meta_path.remove(self)
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, Interrupt())
from attncli.cli import main
sys.exit(main())
"""


@pytest.mark.parametrize("module", ["numpy", "typer", "attncli.cli.compute",
                                    "attncli.inputs.document",
                                    "attncli.core.threads"])  # (imported in main, before its parsing: issue 40)
def test_ctrl_c_during_an_import_is_one_line_and_exit_130(tmp_path, module):
    doc = tmp_path / "doc.yaml"
    doc.write_text("inputs: [[1, 0], [0, 1]]\n")
    out = tmp_path / "out.json"
    out.write_text("an earlier result\n")
    result = subprocess.run([sys.executable, "-c", SCRIPT, module, "compute", str(doc), "--format", "json", "-o",
                             str(out)], capture_output=True, text=True, timeout=300)
    assert (result.returncode, result.stderr, result.stdout) == (130, "Interrupted.\n", "")
    assert out.read_text() == "an earlier result\n"


@pytest.mark.parametrize("module", ["typer", "attncli.core.threads", "attncli.cli.compute"])
def test_ctrl_c_during_an_import_speaks_the_runs_language(tmp_path, module):
    doc = tmp_path / "doc.yaml"
    doc.write_text("inputs: [[1, 0], [0, 1]]\n")
    result = subprocess.run([sys.executable, "-c", SCRIPT, module, "compute", str(doc), "--lang", "zh"],
                            capture_output=True, text=True, timeout=300)
    assert (result.returncode, result.stderr, result.stdout) == (130, "已中断。\n", "")


def test_the_package_imports_nothing_before_the_command_lines_guard():
    """`import attncli` (the first step of the console script) loads no module of its own beyond itself, so the
    window before attncli.cli's guard is Python's own start-up."""
    code = "import sys; before = set(sys.modules); import attncli; print(sorted(set(sys.modules) - before))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.stdout.strip() == "['attncli']", result.stdout
