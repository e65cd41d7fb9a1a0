"""``attncli init``'s comments: the ``starter`` table of the texts' files (``attncli/data/texts/en.json``, ``zh.json``)
in the language asked, written as YAML comments.

A text of several lines keeps its line breaks as the translator set them (``\\n`` in the file); each line becomes one
comment.  The numbers and names a comment states are its :meth:`str.format` fields, filled here by the starter.

>>> comment("two\\nlines", "  ")
['  # two', '  # lines']
>>> listed(words("en"), ["rotary positions", "attention sinks"])
["# As in today's models: rotary positions, attention sinks."]
>>> listed(words("zh"), ["旋转位置编码", "注意力汇"])
['# 与当今的模型一样：旋转位置编码、注意力汇。']
"""

from __future__ import annotations

import textwrap

from attncli.teach.texts import texts

WIDTH = 88  # columns of a comment that the starter wraps itself (a wide character takes two)


def words(lang: str) -> dict:
    """The starter's texts in ``lang``."""
    return texts(lang)["starter"]


def comment(text: str, indent: str = "", **fields: object) -> list[str]:
    """``text`` with its ``fields`` filled in (a brace the text shows is doubled, ``{{``), as comment lines, one per
    line of the text."""
    return [f"{indent}# {line}" for line in text.format(**fields).split("\n")]


def listed(t: dict, items: list[str]) -> list[str]:
    """The comment "As in today's models: …" over ``items``, at most WIDTH columns a line, later lines indented.

    Text whose list is joined with spaces (English) is broken at its spaces (:func:`textwrap.wrap`); a list joined
    without them (Chinese 、) is broken between its items only, counting a wide character as two columns."""
    sep = t["modern_sep"]
    if " " in sep:
        return textwrap.wrap("# " + t["modern"].format(items=sep.join(items)), WIDTH, subsequent_indent="#   ")
    from rich.cells import cell_len

    head, tail = t["modern"].format(items="\0").split("\0")
    lines = ["# " + head]
    for k, item in enumerate(items):
        item += tail if k == len(items) - 1 else sep
        if cell_len(lines[-1] + item) > WIDTH:
            lines.append("#   ")
        lines[-1] += item
    return lines
