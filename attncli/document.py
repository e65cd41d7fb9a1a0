"""Reading the input document: YAML or JSON text into plain Python values.

Only safe loading: YAML is read with a loader that knows the YAML 1.2 core
schema (so ``1e-3`` is a number and ``yes`` is just a string), refuses
aliases, merge keys, duplicate keys and every ``!!python`` tag, and nothing in
a document is ever executed.  JSON refuses duplicate keys and the non-standard
``NaN``/``Infinity`` constants.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attncli.errors import AttnError

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024  # inline matrices beyond this belong in .npy/CSV files


@dataclass(frozen=True)
class Document:
    data: dict[str, Any]
    name: str  # how messages name the document: its path, or <stdin>
    folder: Path  # where relative matrix paths are resolved


def read_document(path: str) -> Document:
    """Read a document from a path, or from standard input when ``path`` is ``-``."""
    if path == "-":
        raw = sys.stdin.buffer.read(MAX_DOCUMENT_BYTES + 1)
        name, folder = "<stdin>", Path.cwd()
    else:
        name, folder = path, Path(path).resolve().parent
        raw = _read_file_bytes(Path(path), MAX_DOCUMENT_BYTES)
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise AttnError(
            f"document is larger than {MAX_DOCUMENT_BYTES // 2**20} MiB; "
            "put large matrices in .npy or CSV files and name them in the document",
            name,
        )
    text = decode_utf8(raw, name)
    data = parse_text(text, name, json_only=path.lower().endswith(".json"))
    return Document(data, name, folder)


def _read_file_bytes(path: Path, limit: int) -> bytes:
    try:
        if not path.exists():
            raise AttnError("no such file", str(path))
        if path.is_dir():
            raise AttnError("is a directory, not a file", str(path))
        if not path.is_file():
            raise AttnError("is not a regular file (a device, pipe or socket)", str(path))
        with path.open("rb") as f:
            return f.read(limit + 1)
    except PermissionError:
        raise AttnError("permission denied", str(path)) from None
    except OSError as e:
        raise AttnError(f"cannot be read ({e.strerror or e})", str(path)) from None


def decode_utf8(raw: bytes, name: str) -> str:
    if b"\x00" in raw[:8192]:
        raise AttnError("is binary, not UTF-8 text", name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise AttnError(f"invalid UTF-8 at byte {e.start} (line {line})", name) from None
    return text.removeprefix("\ufeff")


def parse_text(text: str, name: str, json_only: bool = False) -> dict[str, Any]:
    if not text.strip():
        raise AttnError("the document is empty (expected a mapping with at least 'inputs')", name)
    if json_only or text.lstrip().startswith("{") and _looks_like_json(text):
        data = _parse_json(text, name)
    else:
        data = _parse_yaml(text, name)
    if data is None:
        raise AttnError("the document is empty (expected a mapping with at least 'inputs')", name)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a {type(data).__name__}"
        raise AttnError(f"the top level is {kind}; expected a mapping with at least 'inputs'", name)
    return data


def _looks_like_json(text: str) -> bool:
    # A JSON object has a double-quoted string as its first key; YAML flow style usually not.
    return re.match(r'\s*\{\s*("|\})', text) is not None


def _reject_constant(value: str) -> Any:
    raise AttnError(f"'{value}' is not valid JSON (strict JSON has no NaN or Infinity)")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise AttnError(f"duplicate key '{key}'")
        result[key] = value
    return result


def _parse_json(text: str, name: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_reject_constant)
    except AttnError as e:
        raise e.at(name) from None
    except json.JSONDecodeError as e:
        raise AttnError(f"invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}", name) from None
    except RecursionError:
        raise AttnError("is nested too deeply", name) from None


def _parse_yaml(text: str, name: str) -> Any:
    import yaml

    loader = _loader_class()(text)
    try:
        if loader.check_node() is False:  # an empty stream
            return None
        node = loader.get_node()
        if loader.check_node():
            raise AttnError("holds several YAML documents (separated by ---); give one", name)
        return loader.construct_document(node)
    except AttnError as e:
        raise e if e.where and e.where.startswith(name) else e.at(name) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = e.problem or e.context or "invalid YAML"
        if isinstance(e, yaml.constructor.ConstructorError) and "tag" in problem:
            found = re.search(r"'([^']*)'", problem)
            tag = found.group(1).replace("tag:yaml.org,2002:", "!!") if found else "?"
            problem = f"the tag {tag} is not allowed (attncli reads plain data only)"
        raise AttnError(f"invalid YAML at {where}{problem}", name) from None
    except yaml.YAMLError as e:
        raise AttnError(f"invalid YAML: {e}", name) from None
    except RecursionError:
        raise AttnError("is nested too deeply", name) from None
    finally:
        loader.dispose()


_LOADER = None

# The YAML 1.2 core schema: what JSON and every other modern YAML reader agree on.
_RESOLVERS = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", "~nN"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
]


def _loader_class():
    """A safe loader (libyaml's C parser when available) with the YAML 1.2 core schema."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        yaml_implicit_resolvers: dict = {}

        def construct_object(self, node, deep=False):
            if node in self.constructed_objects or node in self.recursive_objects:
                raise AttnError(
                    f"YAML aliases (*name) are not allowed (anchor on line {node.start_mark.line + 1})"
                )
            return super().construct_object(node, deep=deep)

        def construct_mapping(self, node, deep=False):
            if not isinstance(node, yaml.MappingNode):
                return super().construct_mapping(node, deep=deep)
            mapping: dict = {}
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if not isinstance(key, str):
                    raise AttnError(f"keys must be names, not {key!r} (line {line})")
                if key in mapping:
                    raise AttnError(f"duplicate key '{key}' (line {line})")
                mapping[key] = self.construct_object(value_node, deep=deep)
            return mapping

    Loader.yaml_implicit_resolvers = {}
    for tag, pattern, first in _RESOLVERS:
        Loader.add_implicit_resolver(tag, re.compile(pattern), list(first))
    Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)
    Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    _LOADER = Loader
    return Loader


def _construct_float(loader, node) -> float:
    value = loader.construct_scalar(node)
    lowered = value.lower()
    if lowered.endswith(("inf", "nan")):
        return float(lowered.replace(".", ""))
    return float(value)


def _construct_int(loader, node) -> int:
    value = loader.construct_scalar(node)
    return int(value, 0) if value.startswith(("0o", "0x")) else int(value)

