"""The import contract: the folders are the layers, and imports only flow down.

    core      the maths on arrays (numpy and the standard library only)
    inputs    document, matrix files, random initialisers, the builder   -> core
    outputs   numbers and formulas as text, JSON and arrays, paste formats, files   -> core
    views     Rich tables, heat maps, pictures   -> outputs, core
    teach     explain, check, starter documents, texts   -> views, outputs, inputs, core
    models    real models (attncli extract): PyTorch and transformers, imported lazily   -> outputs, inputs, core
    plan      the memory plan: what a computation needs, whether to stream (numpy only)   -> core
    cli       one module per command   -> everything
    package   attncli/__init__.py, the Python API   -> plan, outputs, inputs, core

Every ``import`` is counted, also those inside functions (a lazy import is still a dependency), and so is a module a
string names for importlib, ``"attncli.core.variants.scale:SCALE_VARIANTS"`` (a stage's ``Lazy`` variants).

One door goes up, and only one: attncli/notebook.py (the package) may import the page's maker,
attncli.teach.page, inside its functions, so that what ``attncli.compute`` returns shows the explorable page in
a notebook (``_repr_html_``) and ``attncli.show`` opens it. No other module of the package may, and it may import
nothing else of teach or views; the core stays numpy-only.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "attncli"
ALLOWED = {
    "core": {"core"},
    "inputs": {"inputs", "core"},
    "outputs": {"outputs", "core"},
    "views": {"views", "outputs", "core"},
    "teach": {"teach", "views", "outputs", "inputs", "core"},
    "models": {"models", "outputs", "inputs", "core"},
    "plan": {"plan", "core"},
    "cli": {"cli", "teach", "views", "models", "plan", "outputs", "inputs", "core", "package"},
    "package": {"package", "plan", "core", "inputs", "outputs"},  # attncli/__init__.py: the Python API
    "main": {"cli"},  # attncli/__main__.py: python -m attncli
}
THIRD_PARTY = {  # what each layer may import from outside the standard library
    "core": {"numpy", "mkl_umath"},  # mkl_umath: the optional vectorised exp (attncli[fast-exp], core/exponential.py)
    "inputs": {"numpy", "yaml"},
    "outputs": {"numpy", "orjson"},
    "views": {"numpy", "rich", "resvg_py"},  # resvg_py: the optional .png pictures (attncli[png])
    "teach": {"numpy", "rich"},
    "models": {"numpy", "torch", "transformers"},  # (the extra, attncli[models]: imported inside functions only)
    "plan": {"numpy"},
    "cli": {"numpy", "rich", "typer", "click"},
    "package": {"numpy"},
    "main": set(),
}


DOORS = {("attncli/notebook.py", "attncli.teach.page")}  # (file, the one module it may import against the layers)


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[1:2] == ["__main__"]:
        return "main"
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else "package"


NAMED = re.compile(r"(attncli(?:\.\w+)+):\w+")  # "module:NAME", what importlib imports later (core.stage.Lazy)


def imports(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, relative imports resolved, and of every module a string names."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAMED.fullmatch(node.value):
            found.append((node.lineno, NAMED.fullmatch(node.value)[1]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - node.level + (path.name == "__init__.py")]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names] if base in ("attncli",) else [base]
            found += [(node.lineno, name) for name in names]
    return found


def violations(root: Path = PACKAGE) -> list[str]:
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    problems = []
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
        layer = layer_of(module)
        for line, name in imports(path, module):
            top = name.split(".")[0]
            where = f"{path.relative_to(root.parent)}:{line}"
            if top == "attncli":
                if name == "attncli.__version__" or name == "attncli":
                    continue
                if (str(path.relative_to(root.parent)), name) in DOORS:
                    continue
                target = layer_of(name)
                if target not in ALLOWED[layer]:
                    problems.append(f"{where}: {layer} imports {name} ({target})")
            elif top not in stdlib and top not in THIRD_PARTY[layer]:
                problems.append(f"{where}: {layer} imports {name}")
    return problems


def test_imports_flow_down():
    assert violations() == []


def test_the_contract_catches_a_wrong_import(tmp_path):
    """A copy of the package with one upward import (the core reaching for Rich tables) is refused."""
    copy = tmp_path / "attncli"
    for path in PACKAGE.rglob("*.py"):
        target = copy / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    attention = copy / "core" / "attention.py"
    attention.write_text(attention.read_text(encoding="utf-8") + "\nfrom attncli.views.tables import matrix_table\n")
    (copy / "core" / "stream.py").write_text("import yaml\n", encoding="utf-8")
    (copy / "core" / "named.py").write_text('WHERE = "attncli.teach.check.search:changes_of"\n', encoding="utf-8")
    init = copy / "__init__.py"  # the door is attncli/notebook.py's alone
    init.write_text(init.read_text(encoding="utf-8") + "\nfrom attncli.teach.page import page_html\n", encoding="utf-8")
    notebook = copy / "notebook.py"
    notebook.write_text(notebook.read_text(encoding="utf-8") + "\nfrom attncli.views.tables import View\n",
                        encoding="utf-8")
    found = violations(copy)
    assert any("attncli/__init__.py" in p and "package imports attncli.teach.page (teach)" in p for p in found), found
    assert any("attncli/notebook.py" in p and "package imports attncli.views.tables (views)" in p for p in found)
    assert not any("notebook.py" in p and "teach.page" in p for p in found), found
    assert any("core/attention.py" in p and "core imports attncli.views.tables (views)" in p for p in found), found
    assert any("core/stream.py:1: core imports yaml" in p for p in found), found
    assert any("core/named.py:1: core imports attncli.teach.check.search (teach)" in p for p in found), found


@pytest.mark.parametrize("package, absent", [
    ("attncli.core", ("yaml", "rich", "typer", "orjson")),
    ("attncli.plan", ("yaml", "rich", "typer", "orjson")),
    ("attncli.models.extract", ("torch", "transformers", "rich", "typer")),
    ("attncli.outputs.paste", ("rich", "typer", "yaml")),
    ("attncli", ("yaml", "rich", "typer")),
    ("attncli.notebook", ("yaml", "rich", "typer")),  # the page's maker is imported when a page is asked for
])
def test_importing_a_layer_loads_only_what_it_needs(package, absent):
    code = f"import sys, {package}; print(','.join(m for m in {absent!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            timeout=600).stdout.strip()
    assert loaded == "", f"importing {package} loads {loaded}"
