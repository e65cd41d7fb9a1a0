"""docs/development.md names every module of the package, so that a change finds its room there.

A module ``attncli/<folder>/<name>.py`` is named when one line of the document holds its folder as written there
(``core/``, ``teach/check/``) and its file name in backticks (`` `stages.py` ``), or its whole path
(`` `core/stages.py` ``); a top-level module (``notebook.py``) by its name in backticks; a package's
``__init__.py`` by its folder (`` `teach/page/` ``) or its own path.  The files the document names must exist.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "attncli"
DOC = ROOT / "docs" / "development.md"


def named(relative: str, lines: list[str]) -> bool:
    folder, _, name = relative.rpartition("/")
    if f"`{relative}`" in "\n".join(lines) or (folder and f"`{folder}/{name}" in "\n".join(lines)):
        return True
    if name == "__init__.py":
        return any(f"`{folder}/`" in line or f"`{folder}/" in line for line in lines) if folder else \
            any("`__init__.py`" in line for line in lines)
    if not folder:
        return any(f"`{name}`" in line for line in lines)
    return any(f"{folder}/" in line and re.search(rf"[`/]{re.escape(name)}`", line) for line in lines)


def modules() -> list[str]:
    return sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py"))


def test_every_package_module_is_named_in_the_development_doc():
    lines = DOC.read_text(encoding="utf-8").splitlines()
    missing = [module for module in modules() if not named(module, lines)]
    assert not missing, f"docs/development.md does not name {len(missing)} modules: {', '.join(missing)}"


def test_the_paths_the_development_doc_gives_exist():
    """Every ``folder/name.py`` path written out in the document is a file of the package (or of the repository)."""
    text = DOC.read_text(encoding="utf-8")
    paths = set(re.findall(r"`((?:[a-z_]+/)+[a-z_0-9]+\.py)`", text))
    files = [path.relative_to(ROOT).as_posix() for path in ROOT.glob("**/*.py") if ".venv" not in path.parts]
    gone = [p for p in sorted(paths) if not any(f == p or f.endswith(f"/{p}") for f in files)]
    assert not gone, gone


def test_the_rule_accepts_a_row_and_refuses_a_module_left_out():
    lines = ["| `core/positions.py`, `scores.py` | … |", "| `teach/check/` (`answer.py`) | … |", "`notebook.py`"]
    assert named("core/scores.py", lines) and named("teach/check/answer.py", lines) and named("notebook.py", lines)
    assert named("teach/check/__init__.py", lines)
    assert not named("core/stages.py", lines) and not named("views/scores.py", lines)
