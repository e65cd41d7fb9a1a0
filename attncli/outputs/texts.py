"""The words of ``attncli explain``, ``check``, ``page``, ``--why`` and ``init``'s comments, and of the tables' titles
and the heat maps: one JSON file per language (read here, below the views and the teaching layer, which both print
from it; :mod:`attncli.teach.texts` gives the same functions to the teaching code).

``attncli/data/texts/en.json`` and ``zh.json`` hold the same ids (nested keys: ``texts(lang)["inputs"]["title"]``);
a sentence's placeholders are :meth:`str.format` fields (``{q}``, ``{d_k}`` …) filled by the code that prints it.
Besides explain's steps, a file holds ``check`` (the report), ``slips``, ``why``, ``page`` (the page's words),
``page_linear`` (those a linear: document's page says instead), ``page_grads`` (the page's notes beside a gradient),
the linear steps' ``delta``, ``lightning`` and ``indexer``, ``starter`` (``init``'s comments), ``titles`` (the
tables' titles: :mod:`attncli.outputs.titles`), ``views`` (the heat maps' and the notices' words:
:mod:`attncli.views.words`) and ``views_linear`` (a ``linear:`` document's heat map).  A language's file is read
the first time one of its texts is asked for, once per process (compute's tables in English too, for the words around
a title); nothing reads ``zh.json`` unless Chinese is asked.  The standard library's json
reads them (0.3 to 0.4 ms a file), as every run that prints them imports it anyway (Rich does); orjson would add its
own import (0.8 ms) to a run of ``explain`` that has no other use for it, to save 0.2 ms of parsing.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from attncli.core.messages import LANGUAGES  # (a file each in FOLDER: tests/test_text_catalogue.py)

FOLDER = Path(__file__).resolve().parents[1] / "data" / "texts"


def path(lang: str) -> Path:
    """The file of ``lang``'s texts."""
    return FOLDER / f"{lang}.json"


def texts(lang: str = "en") -> dict:
    """The text table of ``lang`` (a language without a file: English)."""
    return _read(lang if lang in LANGUAGES else "en")


@cache
def _read(lang: str) -> dict:
    return json.loads(path(lang).read_bytes())
