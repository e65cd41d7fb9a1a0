"""The options several commands share, declared once so they read the same everywhere."""

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

ExportOption = Annotated[Optional[Path], typer.Option("--export", help="Also save what the terminal shows as a picture or page: FILE.svg, FILE.html or FILE.txt (atomically).")]
