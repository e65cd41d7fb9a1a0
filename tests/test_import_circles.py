"""No import circles among the package's modules, beside the layers' contract (tests/test_layers_contract.py).

Every ``import`` counts: at the top of a module, inside a function (a lazy import is still a dependency: the two
modules cannot be read, tested or moved apart) and under ``if TYPE_CHECKING:`` (a type names the other module's
idea), and so does a module a string names for importlib (``"attncli.core.variants.scale:SCALE_VARIANTS"``, a
stage's ``Lazy`` variants: imported later, still a dependency).  ``from attncli.x import y`` depends on the module
``attncli.x.y`` when there is one, else on ``attncli.x``; a module's own packages (``attncli.x`` for
``attncli.x.y``) are not counted, since Python runs them first anyway, unless it imports a name defined in them.
Each circle is given a direction: the lower module holds what both need.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

NAMED = re.compile(r"(attncli(?:\.\w+)+):\w+")  # "module:NAME", what importlib imports later (core.stage.Lazy)

PACKAGE = Path(__file__).resolve().parent.parent / "attncli"


def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its ``__init__.py``)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``module`` imports, anywhere in it."""
    out: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAMED.fullmatch(node.value):
            out |= {NAMED.fullmatch(node.value)[1]} & known.keys()
        elif isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    out.add(f"{base}.{alias.name}")  # a submodule
                elif base in known:
                    out.add(base)  # a name defined in that module
    return {other for other in out if other != module
            and not (module.startswith(f"{other}.") and _only_submodules(path, other, known))}


def _only_submodules(path: Path, package: str, known: dict[str, Path]) -> bool:
    """Whether every import of ``package`` in the file takes a submodule of it (no name of its ``__init__``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == package and not node.level:
            if any(f"{package}.{alias.name}" not in known for alias in node.names):
                return False
    return True


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {module: imported(module, path, known) for module, path in known.items()}


def test_no_import_circle_among_the_package_modules():
    found = circles(graph())
    assert not found, "import circles (give each a direction: what both need goes into the lower one): " + "; ".join(
        " <-> ".join(group) for group in found)


def test_the_circle_finder_finds_a_circle_and_a_self_contained_chain():
    """The finder itself, on a made-up graph: a → b → c → a is one circle, d → a is none."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("package, one, two", [
    ("pkg", "def f():\n    from pkg import two\n", "from pkg.one import f\n"),  # an import inside a function
    ("attncli", 'VARIANTS = Lazy("attncli.two:VARIANTS")\n', "from attncli.one import VARIANTS\n"),  # Lazy
], ids=["a function-level import", "a module named in a string"])
def test_a_lazy_import_counts(tmp_path, package, one, two):
    """A lazy import is an edge: two modules importing each other inside functions, or one naming the other as a
    stage's Lazy variants do ("module:NAME"), are a circle."""
    (tmp_path / "one.py").write_text(one)
    (tmp_path / "two.py").write_text(two)
    known = {f"{package}.one": tmp_path / "one.py", f"{package}.two": tmp_path / "two.py"}
    edges = {module: imported(module, path, known) for module, path in known.items()}
    assert edges == {f"{package}.one": {f"{package}.two"}, f"{package}.two": {f"{package}.one"}}
    assert circles(edges) == [[f"{package}.one", f"{package}.two"]]
