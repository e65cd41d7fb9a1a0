"""The wheel a user installs holds every module and data file, not just those an editable install finds."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow  # fuzz, property and subprocess suites: `pytest -m 'not slow'` skips them


def test_the_wheel_holds_every_module_and_data_file(tmp_path):
    tree = tmp_path / "tree"  # a clean copy: setuptools would reuse a stale build/ folder
    ignore = shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__", ".venv", "tests", "benchmarks")
    shutil.copytree(ROOT, tree, ignore=ignore)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(tree), "--no-deps", "-q", "-w", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("attncli-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    source = ROOT / "attncli"
    wanted = {p.relative_to(ROOT).as_posix() for p in source.rglob("*.py") if "__pycache__" not in p.parts}
    wanted |= {p.relative_to(ROOT).as_posix() for p in (source / "data").glob("*.yaml")}
    assert "attncli/cli/compute.py" in wanted
    assert wanted <= names, sorted(wanted - names)
