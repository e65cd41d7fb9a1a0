"""The messages of every ``AttnError(...)`` in the package, read from the source with :mod:`ast` (for the tests).

A message argument becomes a template as :mod:`attncli.cli.messages` reads them: its literal text, ``{}`` for
each replacement field (or any other expression joined in with ``+``), both templates of a conditional expression,
a module constant's value. An argument it cannot read (a variable, a re-raised ``e.message``) is returned as None.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3]  # the folder that holds attncli/
RAISED = ("AttnError", "ArgumentError")  # the error type, and the Python API's subclass of it


def templates(node: ast.AST, constants: dict[str, ast.AST]) -> list[str] | None:
    """The message templates ``node`` can produce, or None when it is not written out where it is raised."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value.replace("{", "{{").replace("}", "}}")]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value.replace("{", "{{").replace("}", "}}") if isinstance(v, ast.Constant) else "{}"
                        for v in node.values)]
    if isinstance(node, ast.IfExp):
        body, orelse = templates(node.body, constants), templates(node.orelse, constants)
        return None if body is None or orelse is None else body + orelse
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = templates(node.left, constants) or ["{}"]
        right = templates(node.right, constants) or ["{}"]
        return [a + b for a in left for b in right]
    if isinstance(node, ast.Name) and node.id in constants:
        return templates(constants[node.id], constants)
    return None


def raise_sites(package: Path = PACKAGE) -> list[tuple[str, int, list[str] | None, str]]:
    """(file, line, templates or None, the argument's source) for every ``AttnError(...)`` call (and its subclass
    ``ArgumentError(...)``, the Python API's, :mod:`attncli.kernel_arrays`)."""
    sites = []
    for path in sorted((package / "attncli").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign)
                     for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in RAISED:
                argument = node.args[0] if node.args else node.keywords[0].value
                sites.append((str(path.relative_to(package)), node.lineno, templates(argument, constants),
                              ast.unparse(argument)))
    return sites
