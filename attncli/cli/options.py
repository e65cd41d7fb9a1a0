"""The options several commands share, declared once so they read the same everywhere."""

import os
import re
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    latex = "latex"
    csv = "csv"


FileArg = Annotated[str, typer.Argument(help="The document (YAML or JSON), or - to read it from standard input.", metavar="FILE")]

Precision = Annotated[int, typer.Option("--precision", "-p", min=0, max=17, help="Decimals shown in tables (JSON always has full precision).")]

Debug = Annotated[bool, typer.Option("--debug", help="Show the traceback of an internal error.")]


def output_path(text: str) -> Path:
    """An output file's name as given: one that names a folder (``results/``, ``.``) is refused before any work."""
    if text == "":
        raise typer.BadParameter("is empty; give a file name")
    if text.endswith(("/", os.sep)) or os.path.basename(text) in (".", ".."):
        why = " (it ends in /)" if text.endswith(("/", os.sep)) else ""
        raise typer.BadParameter(f"{text!r} names a folder{why}; give a file name")
    return Path(text)


ExportOption = Annotated[Optional[Path], typer.Option("--export", parser=output_path, metavar="FILE", help="Also save what the terminal shows as a picture or page: FILE.svg, FILE.png (needs attncli[png]), FILE.html or FILE.txt (atomically).")]


class Theme(str, Enum):
    dark = "dark"
    light = "light"


ThemeOption = Annotated[Optional[Theme], typer.Option("--theme", help="The look of an --export picture: dark, a terminal window (the default for .svg and .png), or light, black on white with no frame, for slides and papers (the default for .html).")]


def whole_number(text: str) -> int | None:
    """An option's text as a whole number (``3``, `` 3``, ``-1``), or None: ASCII digits only.

    str.isdigit() also accepts ``²`` and ``３``, which int() refuses or reads; a number of
    more than 18 digits is read as ±10^18 (out of every range, and int() refuses 4300 digits).
    """
    match = re.fullmatch(r"\s*([-+]?)([0-9]+)\s*", text, re.ASCII)
    if match is None:
        return None
    sign, digits = match.groups()
    number = int(digits) if len(digits) <= 18 else 10**18
    return -number if sign == "-" else number
