"""The quick subset (`python -m pytest -m quick`, README): conftest.QUICK names real tests that run every command."""

from __future__ import annotations

import ast
import re

from conftest import QUICK, QUICK_LEAVES_OUT, ROOT

from attncli.cli import app


def test_every_entry_of_the_quick_subset_is_a_test_file_or_a_test():
    for entry in (*QUICK, *QUICK_LEAVES_OUT):
        file, _, name = entry.partition("::")
        tree = ast.parse((ROOT / "tests" / file).read_text(encoding="utf-8"))
        tests = {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test")}
        assert tests and (not name or name in tests), entry


def test_the_quick_subset_runs_every_command():
    commands = {command.name or command.callback.__name__ for command in app.registered_commands}
    assert {"compute", "explain", "heatmap", "check", "init", "page", "extract"} <= commands
    source = "\n".join((ROOT / "tests" / entry.partition("::")[0]).read_text(encoding="utf-8") for entry in QUICK)
    assert [name for name in sorted(commands) if not re.search(rf"""[\[(,]\s*["']{name}["']""", source)] == []
