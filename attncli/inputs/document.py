"""Reading the input document: YAML or JSON text into plain Python values.

Only safe loading, and nothing in a document is ever executed: YAML is parsed
into events (libyaml's C parser when available) and built into lists, dicts,
strings and numbers here, with the YAML 1.2 core schema (so ``1e-3`` is a
number and ``yes`` is just a string).  Aliases, merge keys, duplicate keys,
every tag beyond the plain ``!!str``/``!!int``/``!!float``/``!!bool``/``!!null``/
``!!seq``/``!!map``, and nesting deeper than :data:`MAX_DEPTH` are refused as
soon as the parser reaches them, so an alias bomb or 100000 ``[`` is answered
at once.  JSON refuses duplicate keys and the non-standard ``NaN``/``Infinity``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from attncli.core.errors import AttnError, describe, quoted, shorten
from attncli.core.record import record
from attncli.inputs.reading import read_utf8, real_path

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024  # inline matrices beyond this belong in .npy/CSV files
MAX_DEPTH = 64  # lists and mappings inside each other; a document needs about 5
MAX_DIGITS = 400  # float64 ends near 1.8e308: longer integers are out of range before conversion


@record
class Document:
    """A document as read: its parsed ``data``, its name in messages and the folder its paths are relative to."""

    data: dict[str, Any]
    name: str  # how messages name the document: its path, or <stdin>
    folder: Path  # where relative matrix paths are resolved
    passed_on: str | None = None  # a stacked document's layer after the first: the key of the layer before it that
    # became these inputs (normalized, residual or output: attncli.computation.last_key)


def is_stacked(data: dict[str, Any]) -> bool:
    """Whether the document is a stack of layers (it has ``layers:``; :mod:`attncli.inputs.stacked` reads it)."""
    return "layers" in data


def is_linear(data: Any) -> bool:
    """Whether a document is a layer of delta-rule linear attention (it has ``linear:``; :mod:`attncli.inputs.linear`
    reads it). Here, not there: that module's import would be paid by every document (docs/speed.md, Start-up)."""
    return isinstance(data, dict) and "linear" in data


def is_batch(data: Any) -> bool:
    """Whether a document is a batch of sequences (it has ``layout:``; :mod:`attncli.inputs.batch` reads it)."""
    return isinstance(data, dict) and data.get("layout") is not None


class OutOfRange(float):
    """A number written in the document that float64 cannot hold (``1e999``): infinite, but named as written."""

    text: str

    def __new__(cls, text: str) -> OutOfRange:
        number = super().__new__(cls, "-inf" if text.lstrip().startswith("-") else "inf")
        number.text = text if len(text) <= 24 else f"{text[:10]}…{text[-4:]} ({len(text)} characters)"
        return number

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def read_document(path: str) -> Document:
    """Read a document from a path, or from standard input when ``path`` is ``-``."""
    if path == "":  # (as a Path, "." : the working folder)
        raise AttnError("document.document_s_file_name_empty",
                        "FILE")
    text, name = read_utf8(path, MAX_DOCUMENT_BYTES, "the document",
                           "put large matrices in .npy or CSV files and name them in the document")
    folder = Path.cwd() if path == "-" else real_path(Path(path)).parent
    data = parse_text(text, name, json_only=path.lower().endswith(".json"))
    return Document(data, name, folder)


def parse_text(text: str, name: str, json_only: bool = False) -> dict[str, Any]:
    """A document's text as a mapping: JSON when it is JSON, else YAML."""
    if not text.strip():
        raise AttnError("document.document_empty_expected_mapping_least", name)
    if json_only:
        data = _parse_json(text, name)
    elif _looks_like_json(text):
        try:
            data = _parse_json(text, name)
        except AttnError as json_error:  # YAML flow style can look like JSON: try YAML, keep this message if it fails
            try:
                data = _parse_yaml(text, name)
            except AttnError:
                raise json_error from None
    else:
        data = _parse_yaml(text, name)
    if data is None:
        raise AttnError("document.document_empty_expected_mapping_least", name)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a {type(data).__name__}"
        raise AttnError("document.top_level_expected_mapping_least", name, kind=kind)
    return data


def _looks_like_json(text: str) -> bool:
    # A JSON object has a double-quoted string as its first key; YAML flow style usually not.
    return re.match(r'\s*\{\s*("|\})', text) is not None


# ---------------------------------------------------------------- JSON


def _reject_constant(value: str) -> Any:
    raise AttnError("document.not_valid_json_strict_json", value=quoted(value))


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise AttnError("document.duplicate_key", key=quoted(key))
        result[key] = value
    return result


def _json_float(text: str) -> float:
    value = float(text)
    return OutOfRange(text) if value in (float("inf"), float("-inf")) else value


def _parse_json(text: str, name: str) -> Any:
    import json

    try:
        hooks = {"parse_constant": _reject_constant, "parse_float": _json_float, "parse_int": _int}
        data = json.loads(text, object_pairs_hook=_unique_pairs, **hooks)
        if re.compile(_SURROGATE).search(text):
            _check_surrogates(data)
        return data
    except AttnError as e:
        raise e.at(name) from None
    except json.JSONDecodeError as e:
        raise AttnError("document.invalid_json_line_column", name, lineno=e.lineno, colno=e.colno,
                        msg=shorten(e.msg, 100)) from None
    except RecursionError:
        raise AttnError("document.nested_too_deeply_lists_mappings", name) from None


_SURROGATE = r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}"  # (compiled where it is used: only a JSON document needs it)


def _check_surrogates(data: Any) -> None:
    """A ``\\ud83d`` escape without its pair is no character: refused, as in YAML and UTF-8 text."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise AttnError("document.string_holds_half_utf_surrogate",
                                decode=quoted(item.encode('utf-8', 'backslashreplace').decode())) from None


# ---------------------------------------------------------------- YAML


_CORE = "tag:yaml.org,2002:"
_SCALAR_TAGS = ("str", "int", "float", "bool", "null")
_NULL = re.compile(r"~|null|Null|NULL|")
_BOOL = {v: True for v in ("true", "True", "TRUE")} | {v: False for v in ("false", "False", "FALSE")}
_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_SPECIAL = {".inf": "inf", ".Inf": "inf", ".INF": "inf", ".nan": "nan", ".NaN": "nan", ".NAN": "nan"}


def _parse_yaml(text: str, name: str) -> Any:
    """YAML, with large numeric flow matrices read by numpy (attncli.inputs.fastmatrix) when that is safe."""
    from attncli.inputs import fastmatrix

    lifted, arrays = fastmatrix.lift(text)
    if arrays:
        try:
            data = _parse_yaml_events(lifted, name)
        except AttnError:
            data = None  # the careful reading below names the problem
        if isinstance(data, dict) and fastmatrix.lower(data, arrays):
            return data
    return _parse_yaml_events(text, name)


def _parse_yaml_events(text: str, name: str) -> Any:
    import yaml

    parser = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)  # only its parser (events) is used
    try:
        return _build(parser, yaml)
    except AttnError as e:
        raise e.at(name) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        _refuse_deep_flow(text[: mark.index if mark else len(text)], name)  # libyaml stops deep flow itself
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise AttnError("document.invalid_yaml",
                        name, place=where, value=shorten(e.problem or e.context or 'cannot be read', 100)) from None
    except yaml.YAMLError as e:
        raise AttnError("document.invalid_yaml_2", name, splitlines=shorten(str(e).splitlines()[0], 100)) from None
    finally:
        parser.dispose()


# what the depth count passes over: a quoted scalar (where a scalar may begin), a comment; and what it counts
# (compiled where it is used, re keeping it: only a document the parser refuses needs it)
_FLOW = (r"""(?:(?<=^)|(?<=[\s\[{,:]))(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*')"""
         r"""|(?:(?<=^)|(?<=\s))#[^\n]*|[\[\]{}]""")


def _refuse_deep_flow(text: str, name: str) -> None:
    """Our message for flow lists and mappings nested over MAX_DEPTH, which libyaml may refuse before we see them.

    libyaml scans ahead in flow style and stops at its own limit (1000 in PyYAML 6.0.4) before the parser hands
    us the events that would reach ours (its scanner yields no token either). So when the parser fails, the
    brackets before the failure are counted, passing over comments and quoted scalars; our message is given if
    they went too deep. (A quote inside a plain scalar, as in don't, may hide brackets: then the parser's message
    stands, which is one clear line too.)
    """
    depth = 0
    for match in re.compile(_FLOW, re.M).finditer(text):
        bracket = match.group()
        if bracket in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, match.start()) + 1
                raise AttnError("document.line_nested_too_deeply_over",
                                name, line=line, max_depth=MAX_DEPTH)
        elif bracket in "]}":
            depth -= 1


def _build(parser: Any, yaml: Any) -> Any:
    """One document's events -> plain values, without recursion (each container is a frame on a stack)."""
    parser.get_event()  # StreamStart
    if parser.check_event(yaml.StreamEndEvent):
        return None
    parser.get_event()  # DocumentStart
    stack: list[list] = []  # frames [container, key (or _NO_KEY), line of the key]
    root: Any = None
    while True:
        event = parser.get_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.DocumentEndEvent):
            break
        if isinstance(event, yaml.AliasEvent):
            raise AttnError("document.line_yaml_aliases_not_allowed", line=line, anchor=shorten(event.anchor))
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            _open(stack, "seq" if isinstance(event, yaml.SequenceStartEvent) else "map", event.tag, line)
            continue
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            value = stack.pop()[0]
        else:  # a scalar
            value = _scalar(event, line)
        if not stack:
            root = value
            continue
        _place(stack[-1], value, line)
    if not parser.check_event(yaml.StreamEndEvent):
        raise AttnError("document.holds_several_yaml_documents_separated")
    return root


_NO_KEY = object()


def _open(stack: list[list], kind: str, tag: str | None, line: int) -> None:
    """A list (``seq``) or mapping (``map``) begins: checked, then a new frame on the stack."""
    _check_tag(tag, (kind,), line)
    if len(stack) >= MAX_DEPTH:
        raise AttnError("document.line_nested_too_deeply_over", line=line, max_depth=MAX_DEPTH)
    if stack and isinstance(stack[-1][0], dict) and stack[-1][1] is _NO_KEY:
        raise AttnError("document.line_keys_must_names_not", line=line, value='list' if kind == 'seq' else 'mapping')
    stack.append([[] if kind == "seq" else {}, _NO_KEY, line])


def _place(frame: list, value: Any, line: int) -> None:
    """A finished value into its frame's container: a list's next item, a mapping's key, or that key's value."""
    container = frame[0]
    if isinstance(container, list):
        container.append(value)
    elif frame[1] is _NO_KEY:
        _check_key(value, container, line)
        frame[1], frame[2] = value, line
    else:
        container[frame[1]] = value
        frame[1] = _NO_KEY


def _check_key(key: Any, mapping: dict, line: int) -> None:
    if not isinstance(key, str):
        raise AttnError("document.line_keys_must_names_not_2", line=line, key=describe(key))
    if key == "<<":
        raise AttnError("document.line_yaml_merge_keys_not", line=line)
    if key in mapping:
        raise AttnError("document.line_duplicate_key", line=line, key=quoted(key))


def _check_tag(tag: str | None, allowed: tuple[str, ...], line: int) -> str | None:
    """The core tag's short name (``int``), None for no tag; any other tag is refused."""
    if tag is None or tag == "!":
        return None
    if tag.startswith(_CORE) and tag[len(_CORE):] in allowed:
        return tag[len(_CORE):]
    shown = "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag
    raise AttnError("document.line_tag_not_allowed_attncli", line=line, shown=shorten(shown))


def _scalar(event: Any, line: int) -> Any:
    tag = _check_tag(event.tag, _SCALAR_TAGS, line)
    text = event.value
    if tag is None:
        if not event.implicit[0] or event.style:  # quoted, or a block literal: text
            return text
        return _resolve(text)
    if tag == "str":
        return text
    value = _resolve(text)
    expected = {"int": int, "float": float, "bool": bool, "null": type(None)}[tag]
    if tag == "float" and type(value) is int:
        value = float(value)
    if not isinstance(value, expected) or (tag == "int" and isinstance(value, bool)):
        raise AttnError("document.line_not_valid", line=line, text=shorten(text), tag=tag)
    return value


def _resolve(text: str) -> Any:
    """A plain scalar by the YAML 1.2 core schema."""
    if _NULL.fullmatch(text):
        return None
    if text in _BOOL:
        return _BOOL[text]
    if _INT.fullmatch(text):
        return _int(text)
    if _FLOAT.fullmatch(text):
        return _json_float(text)
    special = _SPECIAL.get(text.lstrip("+-"))
    if special and (special == "inf" or text[0] == "."):
        return float(("-" if text[0] == "-" else "") + special)
    return text


def _int(text: str) -> int | float:
    if text.startswith(("0o", "0x")):
        return int(text, 0) if len(text) <= MAX_DIGITS else OutOfRange(text)
    return int(text) if len(text) <= MAX_DIGITS else OutOfRange(text)
