"""The wheel a user installs holds every module and data file, not just those an editable install finds."""

from __future__ import annotations

import re
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
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("attncli-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    source = ROOT / "attncli"
    wanted = {p.relative_to(ROOT).as_posix() for p in source.rglob("*.py") if "__pycache__" not in p.parts}
    wanted |= {p.relative_to(ROOT).as_posix() for p in (source / "data").glob("*.yaml")}
    wanted |= {p.relative_to(ROOT).as_posix() for p in (source / "views" / "page").glob("page.*")}  # its HTML, CSS, JS
    assert "attncli/views/page/page.js" in wanted
    assert "attncli/cli/compute.py" in wanted
    assert wanted <= names, sorted(wanted - names)
    from attncli import __version__

    assert wheel.name.startswith(f"attncli-{__version__}-")  # the version is written once, in attncli/__init__.py
    assert any(name.endswith(".dist-info/licenses/LICENSE") or name.endswith(".dist-info/LICENSE") for name in names)


def test_the_changelog_names_this_version_first():
    from attncli import __version__

    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## (\d+\.\d+\.\d+)", changelog, flags=re.M)
    assert versions and versions[0] == __version__, versions
    assert "MIT License" in (ROOT / "LICENSE").read_text()
