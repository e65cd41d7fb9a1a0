"""What every command shares: the app, the one error handler, loading, writing and the common options.

Exit codes: 0 success, 2 a problem with the document or the options (one
``Error: …`` line), 70 an internal error (a bug: ``--debug`` shows the
traceback), 130 interrupted with Ctrl-C.
"""

import io
import os
import sys
import traceback
from collections.abc import Callable
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from attncli.core.errors import AttnError, visible

EXIT_USER, EXIT_INTERNAL, EXIT_INTERRUPTED = 2, 70, 130

app = typer.Typer(
    name="attncli",
    help="See every number of self-attention: Q, K, V, scores, softmax weights and outputs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    latex = "latex"
    csv = "csv"


def run(action: Callable[[], None], debug: bool) -> None:
    """Run ``action``; turn every failure into one line on stderr and an exit code."""
    try:
        action()
        sys.stdout.flush()
    except AttnError as e:
        _fail(f"Error: {e}", EXIT_USER)
    except KeyboardInterrupt:
        _fail("Interrupted.", EXIT_INTERRUPTED)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except typer.Exit:
        raise
    except Exception as e:  # a bug of ours: one line, unless --debug
        if debug:
            traceback.print_exc()
        else:
            detail = str(e).splitlines()[0][:200] if str(e) else ""
            sys.stderr.write(
                f"Internal error: {type(e).__name__}: {detail} (this is a bug in attncli; "
                "run again with --debug for the traceback)\n"
            )
        raise typer.Exit(EXIT_INTERNAL) from None


def _fail(message: str, code: int) -> None:
    sys.stderr.write(visible(message.replace("\n", " ")) + "\n")
    raise typer.Exit(code)


def _quiet_broken_pipe() -> None:
    # The reader went away (`| head`): say nothing, and keep Python from complaining at exit.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise typer.Exit(0)


def warn(message: str) -> None:
    sys.stderr.write(f"Warning: {visible(message)}\n")


def load(file: str, overrides: dict | None = None, doc=None, compute=None):
    """Read (unless ``doc`` is given), validate and compute a document: the one path every command takes.

    ``compute(spec) -> Trace`` replaces :func:`attncli.core.attention.attend` (``compute`` streams large inputs).
    """
    from attncli.core.attention import attend
    from attncli.inputs.document import read_document
    from attncli.inputs.builder import build_spec

    doc = doc or read_document(file)
    spec = build_spec(doc, overrides)
    try:
        trace = (compute or attend)(spec)
    except AttnError as e:  # overflow or memory: the document is the place to look
        raise (e.at(doc.name) if e.where is None else e) from None
    for i in trace.empty_queries:
        warn(f"query {i + 1} ('{spec.tokens[i]}') may attend to no key (its mask row is all 0); its weights and head output are 0")
    return trace


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
    from attncli.outputs.serialize import write_atomic

    write_atomic(output, data, inputs)


def render_text(renderables: list, to_terminal: bool = False) -> bytes:
    """Render completely before writing anything: colours only for a terminal."""
    out = console() if to_terminal else console(io.StringIO())
    with out.capture() as captured:
        for item in renderables:
            out.print(item)
            out.print()
    return captured.get().encode("utf-8")


def _attend_within_memory(spec, keys: Optional[list[str]], kind: str):
    """The full computation when its n × m matrices are wanted and fit, else block by block (attncli.core.stream)."""
    from attncli.core.attention import attend
    from attncli.core.stream import attend_streamed, block_count, plan

    choice = plan(spec, keys, kind)
    if not choice.stream:
        return attend(spec)
    if choice.left_out:
        warn(f"{choice.left_out}; --only output (or head_outputs) computes without them")
    seconds = 4 * spec.heads * spec.n * spec.m * spec.d_k / 50e9  # about 50 GFLOP/s
    with _progress(block_count(spec), show=seconds > 1.0) as advance:
        return attend_streamed(spec, advance)


@contextmanager
def _progress(total: int, show: bool):
    """A transient progress bar on standard error, only when that is a terminal; yields advance(k) or None."""
    if not show or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("attention, block by block"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("", total=total)
        yield lambda k: bar.advance(task, k)


def _head_index(head: Optional[int], heads: int) -> Optional[int]:
    if head is None:
        return None
    if not 1 <= head <= heads:
        raise AttnError(f"--head {head} is out of range: this document has heads 1 to {heads}")
    return head - 1


def _version(value: bool) -> None:
    if value:
        from attncli import __version__

        sys.stdout.write(f"attncli {__version__}\n")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")] = False,
) -> None:
    """See every number of self-attention: Q, K, V, scores, softmax weights and outputs.

    Start with [bold]attncli explain[/bold] for the eight steps on a built-in example, or
    [bold]attncli compute FILE[/bold] for your own matrices.
    """


FileArg = Annotated[str, typer.Argument(help="The document (YAML or JSON), or - to read it from standard input.", metavar="FILE")]
Precision = Annotated[int, typer.Option("--precision", "-p", min=0, max=17, help="Decimals shown in tables (JSON always has full precision).")]
Debug = Annotated[bool, typer.Option("--debug", help="Show the traceback of an internal error.")]
ExportOption = Annotated[Optional[Path], typer.Option("--export", help="Also save what the terminal shows as a picture or page: FILE.svg, FILE.html or FILE.txt (atomically).")]


def _check_export(export: Optional[Path], usable: bool, output: Optional[Path] = None) -> None:
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


def _save_picture(make: Callable[[bool], list], export: Path, inputs: set[Path], title: str) -> None:
    """Save ``make(color)`` as --export asks: in colour (unless NO_COLOR) for .svg/.html, shades for .txt."""
    from attncli.outputs.serialize import write_atomic
    from attncli.views.picture import picture

    suffix = export.suffix.lower()
    color = suffix != ".txt" and not os.environ.get("NO_COLOR")
    # the terminal's width (or COLUMNS); off a terminal 120: wide enough for BERT-sized tables, narrow enough for prose
    width = console().width if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120
    write_atomic(export, picture(make(color), suffix, width, title), inputs)


def input_paths(file: str, trace) -> set[Path]:
    """Every file the result was read from: an output may never replace one of them."""
    return set(trace.spec.files) | ({Path(file).resolve()} if file != "-" else set())
