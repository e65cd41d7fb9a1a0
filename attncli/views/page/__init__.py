"""The explorable page as one HTML file: our own styles and script (``page.css``, ``page.js`` beside this module)
and the data of :func:`attncli.teach.page.page_data`, all inline; no font, script or picture is fetched.

The script draws the tables from the data when the page opens, so that a large document's page stays small.
"""

from __future__ import annotations

import json
import re
from html import escape
from importlib.resources import files

__all__ = ["render"]


def asset(name: str) -> str:
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


def script_json(data: dict) -> str:
    """``data`` as JSON that cannot end the ``<script>`` element it sits in (``</`` and ``<!--`` escaped as JSON
    escapes, which read back the same)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "\\u003c!--")


def render(data: dict) -> str:
    """The page: ``data`` (see :func:`attncli.teach.page.page_data`) with the styles and the script."""
    parts = {"title": escape(data["title"]), "css": asset("page.css"), "js": asset("page.js"),
             "data": script_json(data)}
    return re.sub(r"\{\{(\w+)\}\}", lambda m: parts[m.group(1)], asset("page.html"))  # one pass: nothing re-read
