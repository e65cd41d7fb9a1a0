"""Writing results: to standard output or atomically to ``-o``, and ``--export`` pictures."""

import io
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Optional

from attncli.core.errors import AttnError


def console(file=None, record: bool = False):
    from rich.console import Console

    if file is None:
        return Console(highlight=False, soft_wrap=False)
    return Console(file=file, highlight=False, color_system=None, width=200, record=record)


def emit(data: bytes, output: Optional[Path], inputs: set[Path]) -> None:
    """Write the finished result to ``output`` atomically, or to standard output."""
    if output is None:
        sys.stdout.buffer.write(data)
        return
    from attncli.outputs.files import write_atomic

    write_atomic(output, data, inputs)


def render_text(renderables: list, to_terminal: bool = False) -> bytes:
    """Render completely before writing anything: colours only for a terminal."""
    out = console() if to_terminal else console(io.StringIO())
    with out.capture() as captured:
        for item in renderables:
            out.print(item)
            out.print()
    return captured.get().encode("utf-8")


def check_export(export: Optional[Path], usable: bool, output: Optional[Path] = None) -> None:
    """Refuse a bad --export before anything is computed or written."""
    if export is None:
        return
    from attncli.views.picture import EXPORT_KINDS

    if export.suffix.lower() not in EXPORT_KINDS:
        raise AttnError("expected a file name ending in .svg, .html or .txt", "--export")
    if output is not None and output.suffix.lower() in (".npz", ".npy"):
        raise AttnError(f"saves tables as the terminal shows them, and -o {output.name} writes arrays instead", "--export")
    if not usable:
        raise AttnError("works with --format table only (it saves the tables as the terminal shows them)", "--export")
    if output is not None and output.resolve() == export.resolve():
        raise AttnError("is the same file as --output; choose another name", "--export")


def save_picture(make: Callable[[bool], list], export: Path, inputs: set[Path], title: str) -> None:
    """Save ``make(color)`` as --export asks: in colour (unless NO_COLOR) for .svg/.html, shades for .txt."""
    from attncli.outputs.files import write_atomic
    from attncli.views.picture import picture

    suffix = export.suffix.lower()
    color = suffix != ".txt" and not os.environ.get("NO_COLOR")
    # the terminal's width (or COLUMNS); off a terminal 120: wide enough for BERT-sized tables, narrow enough for prose
    width = console().width if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120
    write_atomic(export, picture(make(color), suffix, width, title), inputs)
