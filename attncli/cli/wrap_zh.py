"""Chinese help text broken into lines as Chinese is typeset: between any two characters, never before a closing
mark (，。）…) or after an opening one (（“), and at spaces (but not inside a [list] or {mapping}). Rich breaks lines
at spaces only, so a sentence of Chinese is one long word to it: cut short with … in a table's column.
:mod:`attncli.cli.help_zh` breaks the lines itself, at the widths Rich will give them.

>>> wrap("只显示一个头的表格（从 1 开始数），或 all 显示所有头（默认）。", 16).split("\\n")
['只显示一个头的表', '格（从 1 开始', '数），或 all 显', '示所有头（默', '认）。']
"""

from __future__ import annotations

import re

from rich.cells import cell_len

CJK = re.compile(r"[\u2e80-\u9fff\u3000-\u303f\uff00-\uffef]")
CLOSING = set("，。、；：！？）》」』】”’…·")  # no line starts with one of these
OPENING = set("（《「『【“‘")  # no line ends with one of these
TOKENS = re.compile(r"\[/?[a-z][a-z ]*\]|\\\[| +|[\u2e80-\u9fff\u3000-\u303f\uff00-\uffef…“”‘’]|[^ \[\\\u2e80-\u9fff"
                    r"\u3000-\u303f\uff00-\uffef…“”‘’]+|.")


def wrap(text: str, width: int) -> str:
    """``text`` with each line that holds Chinese broken to at most ``width`` cells (Rich markup tags take none);
    a line without Chinese (an example to copy) is left whole."""
    return "\n".join("\n".join(_lines(line, width)) if CJK.search(line) else line for line in text.split("\n"))


def _width(token: str) -> int:
    if token.startswith("[") and token.endswith("]") and len(token) > 2:
        return 0  # a markup tag
    return 1 if token == "\\[" else cell_len(token)


def _breaks_before(previous: str, token: str) -> bool:
    """May a line end between ``previous`` and ``token``?"""
    if token.startswith(" ") or previous.startswith(" "):
        return True
    if _width(previous) == 0 or _width(token) == 0 or token in CLOSING or previous in OPENING:
        return False
    return bool(CJK.fullmatch(token) or CJK.fullmatch(previous) or token in "“‘" or previous in "”’…")


def _lines(line: str, width: int) -> list[str]:
    """``line`` broken greedily; where a mark may not start a line, the break moves back to the last place allowed."""
    indent = line[:len(line) - len(line.lstrip(" "))]
    tokens = TOKENS.findall(line[len(indent):])
    lines: list[str] = []
    current: list[str] = []  # the tokens of the line being filled
    last = None  # the index in ``current`` of its last place to break
    depth = 0  # inside a [list] or {mapping} written out (one to copy whole: never broken)
    for i, token in enumerate(tokens):
        if current and i and depth == 0 and _breaks_before(tokens[i - 1], token):
            last = len(current)
        if _width(token):
            depth = max(0, depth + sum(token.count(c) for c in "[{") - sum(token.count(c) for c in "]}"))
        used = cell_len(indent) + sum(_width(t) for t in current)
        if current and last is not None and used + _width(token) > width:
            lines.append(indent + "".join(current[:last]).rstrip(" "))
            current, last = current[last:], None
            while current and current[0].startswith(" "):
                current.pop(0)
        if current or not token.startswith(" "):
            current.append(token)
    lines.append(indent + "".join(current).rstrip(" "))
    return lines
