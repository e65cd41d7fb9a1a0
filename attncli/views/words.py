"""The words of the heat maps and of the command line's notices, in each language: the texts' table ``views``
(``attncli/data/texts/en.json``, ``zh.json``).

Each entry is a format string; :func:`words` gives a language's table (English for any other).  The Chinese uses
the seeds' terms (查询, 键, 值, 得分, 缩放, 注意力权重) and 键值头 for a key/value head.

>>> words("zh")["sizes"].format(n=3, m=4)
'3 个查询 × 4 个键'
"""

from __future__ import annotations

from attncli.outputs.texts import texts


def words(lang: str) -> dict[str, str]:
    """The table of ``lang`` (English for a language without a file)."""
    return texts(lang)["views"]
