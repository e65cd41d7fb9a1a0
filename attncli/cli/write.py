"""Writing results: to standard output or atomically to ``-o``, with the ``--export`` picture;
the width to lay out for."""

import io
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from attncli.core.errors import AttnError

if TYPE_CHECKING:
    from attncli.outputs.files import Data

MIN_COLUMNS, MAX_COLUMNS = 20, 1000  # COLUMNS outside this makes no sense for tables: ignored below, clamped above


def console(file=None, record: bool = False, like_stdout: bool = False):
    """A Rich console: for standard output (as it is: colours, width), or plain and 200 wide into ``file``.

    ``like_stdout``: decides as for standard output, but writes into a buffer of its own (Rich
    writes to its file even while capturing, and a full disk must not fail there, before the write).
    """
    from rich.console import Console

    if file is None or like_stdout:
        return Console(file=_StandIn(sys.stdout) if like_stdout else None, highlight=False, soft_wrap=False,
                       width=terminal_width())
    return Console(file=file, highlight=False, color_system=None, width=200, record=record)


class _StandIn(io.StringIO):
    """Answers Rich's questions as standard output would (a terminal? which encoding?), and keeps what is written."""

    def __init__(self, real):
        super().__init__()
        self.real = real

    @property
    def encoding(self) -> str:
        return getattr(self.real, "encoding", None) or "utf-8"

    def isatty(self) -> bool:
        try:
            return self.real is not None and self.real.isatty()
        except (OSError, ValueError):
            return False


def columns() -> Optional[int]:
    """COLUMNS when it is a width to lay out for (at least 20, at most 1000), else None."""
    text = os.environ.get("COLUMNS", "").strip()
    if not text.isdigit() or int(text) < MIN_COLUMNS:
        return None
    return min(int(text), MAX_COLUMNS)


def terminal_width() -> Optional[int]:
    """The width for Rich: a sensible COLUMNS; without COLUMNS None (Rich asks the terminal, 80 off one); a
    nonsensical COLUMNS (0, 1, -5, abc) is ignored the same way, as Rich itself would take 0 or 1 at its word."""
    if "COLUMNS" not in os.environ or columns() is not None:
        return columns()
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd).columns
        except (OSError, ValueError):
            continue
        if width >= MIN_COLUMNS:
            return min(width, MAX_COLUMNS)
    return 80


def emit(data: "Data", output: Optional[Path], inputs: set[Path], picture: Optional[tuple[Path, bytes]] = None) -> None:
    """Write the finished result to ``output`` (None: standard output), and ``picture`` (--export) with it.

    Every byte, or the run fails with no file changed (attncli.outputs.files.write_all).
    """
    from attncli.outputs.files import write_all

    write_all(([picture] if picture is not None else []) + [(output, data)], inputs)


def refuse_existing(path: Path) -> None:
    """A document the user edits is never replaced silently: an existing file there needs ``--force``.

    A device or a FIFO (``/dev/stdout``, a pipe) is written, not replaced, and so is no reason to refuse.
    """
    import stat

    try:
        found = os.stat(path)
    except (OSError, ValueError):  # none there (or a name the writer will refuse with its reason)
        return
    if stat.S_ISREG(found.st_mode):
        raise AttnError("write.already_exists_give_force_replace", str(path))


def render_text(renderables: list, to_terminal: bool = False) -> bytes:
    """Render completely before writing anything: colours only for a terminal."""
    out = console(like_stdout=True) if to_terminal else console(io.StringIO())
    with out.capture() as captured:
        for item in renderables:
            out.print(item)
            out.print()
    return captured.get().encode("utf-8")


def check_export(export: Optional[Path], usable: bool, output: Optional[Path] = None) -> None:
    """Refuse a bad --export before anything is computed or written."""
    if export is None:
        return
    from attncli.views.picture import EXPORT_KINDS, PNG_NEEDS, png_ready

    if export.suffix.lower() not in EXPORT_KINDS:
        raise AttnError("write.expected_file_name_ending_svg", "--export")
    if export.suffix.lower() == ".png" and not png_ready():
        raise AttnError(PNG_NEEDS, "--export")
    if output is not None and output.suffix.lower() in (".npz", ".npy"):
        raise AttnError("write.saves_tables_terminal_shows_them",
                        "--export", name=output.name)
    if not usable:
        raise AttnError("write.works_format_table_only_saves", "--export")
    # (realpath: a link loop is no error here)
    if output is not None and os.path.realpath(output) == os.path.realpath(export):
        raise AttnError("write.same_file_output_choose_another", "--export")


FEWER = "--only KEY, --head N, or attncli heatmap for the weights"  # what shows less, for compute's picture too large


def make_picture(make: Callable[[bool], list], export: Optional[Path], title: str, theme=None, fewer: str = "",
                 where: str = "--export") -> Optional[tuple[Path, bytes]]:
    """``make(color)`` as --export asks (None without it): in colour (unless NO_COLOR) for .svg/.png/.html,
    shades for .txt.

    ``theme``: --theme (dark or light), or None for the kind's own default. A picture too large is refused before it
    is drawn, at ``where``; ``fewer``: the command's options that show less (``--only KEY, --head N``), for the message.
    """
    if export is None:
        return None
    from attncli.views.picture import picture

    suffix = export.suffix.lower()
    color = suffix != ".txt" and not os.environ.get("NO_COLOR")
    # the terminal's width (or COLUMNS); off a terminal 120: wide enough for BERT-sized tables, narrow enough for prose
    on_terminal = sys.stdout is not None and sys.stdout.isatty()
    width = console().width if on_terminal or columns() else 120
    return export, picture(make(color), suffix, width, title, theme.value if theme is not None else None, where, fewer)


def emit_tables(tables: list, output: Optional[Path], inputs: set[Path], title: str, options: dict, drawn: bool,
                fewer: str = FEWER) -> None:
    """Tables as text (or, ``drawn``: -o tables.svg, drawn as --export draws them), and options' --export picture:
    both files written or neither."""
    picture = make_picture(lambda color: tables, options["export"], title, options["theme"], fewer)
    if drawn:
        emit(make_picture(lambda color: tables, output, title, options["theme"], fewer, "--output")[1], output, inputs,
             picture)
    else:
        emit(render_text(tables, to_terminal=output is None), output, inputs, picture)
