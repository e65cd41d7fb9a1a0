"""The options several commands share, declared once so they read the same everywhere."""

import os
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


ExportOption = Annotated[Optional[Path], typer.Option("--export", parser=output_path, metavar="FILE", help="Also save what the terminal shows as a picture or page: FILE.svg, FILE.html or FILE.txt (atomically).")]
