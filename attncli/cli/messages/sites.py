"""The message ids of every ``AttnError(...)`` in the package, read from the source with :mod:`ast` (for the tests).

A raise site names its message by id (``AttnError("matrices.is_empty", where)``): a string, a conditional between
two, or a module constant holding one or a mapping of them. An argument that is none of these (an id taken from
another error, ``e.id``) is returned as None, with its source.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3]  # the folder that holds attncli/
RAISED = ("AttnError", "ArgumentError")  # the error type, and the Python API's subclass of it
SAID = ("said", "self._refuse")  # the command line's own lines (cli/run.py, cli/messages), a picture's refusal


def ids(node: ast.AST, constants: dict[str, ast.AST]) -> list[str] | None:
    """The message ids ``node`` can be, or None when it does not name them where it is raised."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        body, orelse = ids(node.body, constants), ids(node.orelse, constants)
        return None if body is None or orelse is None else body + orelse
    if isinstance(node, ast.Name) and node.id in constants:
        return ids(constants[node.id], constants)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in constants:
        table = constants[node.value.id]
        if isinstance(table, ast.Dict):
            found = [ids(v, constants) for v in table.values]
            return None if None in found else [id for each in found for id in each]
    if isinstance(node, ast.Dict):
        return [v.value for v in node.values if isinstance(v, ast.Constant)]
    return None


def _constants(tree: ast.Module) -> dict[str, ast.AST]:
    """The names assigned in ``tree`` (at any depth: a function's table of ids too) and their values."""
    return {t.id: n.value for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets
            if isinstance(t, ast.Name)}


def strings(package: Path = PACKAGE) -> set[str]:
    """Every string constant written in the package's code (an id is used when it is one of them)."""
    return {node.value for path in (package / "attncli").rglob("*.py")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def raise_sites(package: Path = PACKAGE) -> list[tuple[str, int, list[str] | None, str]]:
    """(file, line, ids or None, the argument's source) for every ``AttnError(...)`` call (and its subclass
    ``ArgumentError(...)``, the Python API's, :mod:`attncli.kernel_arrays`) and every line the command line says
    by id."""
    sites = []
    for path in sorted((package / "attncli").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = _constants(tree)
        for node in ast.walk(tree):
            name = ast.unparse(node.func) if isinstance(node, ast.Call) else ""
            said = name in SAID and (name != "said" or path.parent.name in ("cli", "messages"))
            if (said or name.rpartition(".")[2] in RAISED) and node.args:
                argument = node.args[0]
                sites.append((str(path.relative_to(package)), node.lineno, ids(argument, constants),
                              ast.unparse(argument)))
    return sites
