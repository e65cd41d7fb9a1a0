"""The words of ``attncli explain``, ``check``, ``page`` and ``--why``: one JSON file per language.

``attncli/data/texts/en.json`` and ``zh.json`` hold the same ids (nested keys: ``texts(lang)["inputs"]["title"]``);
a sentence's placeholders are :meth:`str.format` fields (``{q}``, ``{d_k}`` …) filled by the code that prints it.
Besides explain's steps, a file holds ``check`` (the report), ``slips``, ``why``, ``page`` (the page's words),
``page_linear`` (those a linear: document's page says instead), ``page_grads`` (the page's notes beside a gradient),
and the linear steps' ``delta``, ``lightning`` and ``indexer``.  A language's file is read the first time one of its
texts is asked for, once per process; nothing reads ``zh.json`` unless Chinese is asked.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

LANGUAGES = ("en", "zh")
FOLDER = Path(__file__).resolve().parents[1] / "data" / "texts"


def path(lang: str) -> Path:
    """The file of ``lang``'s texts."""
    return FOLDER / f"{lang}.json"


def texts(lang: str = "en") -> dict:
    """The text table of ``lang`` (any language but zh: English)."""
    return _read("zh" if lang == "zh" else "en")


@cache
def _read(lang: str) -> dict:
    import orjson

    return orjson.loads(path(lang).read_bytes())
