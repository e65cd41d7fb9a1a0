"""The command line: parse options, call the library, render, map errors to exit codes.

Exit codes: 0 success, 2 a problem with the document or the options (one
``Error: …`` line), 70 an internal error (a bug: ``--debug`` shows the
traceback), 130 interrupted with Ctrl-C.
"""

from __future__ import annotations

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

from attncli.errors import AttnError

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
    sys.stderr.write(message.replace("\n", " ") + "\n")
    raise typer.Exit(code)


def _quiet_broken_pipe() -> None:
    # The reader went away (`| head`): say nothing, and keep Python from complaining at exit.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise typer.Exit(0)


def warn(message: str) -> None:
    sys.stderr.write(f"Warning: {message}\n")


def load(file: str, overrides: dict | None = None, doc=None, compute=None):
    """Read (unless ``doc`` is given), validate and compute a document: the one path every command takes.

    ``compute(spec) -> Trace`` replaces :func:`attncli.attention.attend` (``compute`` streams large inputs).
    """
    from attncli.attention import attend
    from attncli.document import read_document
    from attncli.spec import build_spec

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
    from attncli.export import write_atomic

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
    """The full computation when its n × m matrices are wanted and fit, else block by block (attncli.stream)."""
    from attncli.attention import attend
    from attncli.stream import attend_streamed, block_count, plan

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


@app.command()
def compute(
    file: FileArg,
    format: Annotated[OutputFormat, typer.Option("--format", "-f", help="table: Rich tables; json: the JSON of FORMAT.md; markdown / latex: tables or bmatrix equations to paste; csv: the one matrix --only names, at full precision.")] = OutputFormat.table,
    only: Annotated[Optional[list[str]], typer.Option("--only", help="Keep just this key (repeatable): inputs, queries, keys, values, scores, scaled_scores, weights, head_outputs, output, context.")] = None,
    precision: Precision = 4,
    head: Annotated[Optional[int], typer.Option("--head", help="Show one head's tables (counting from 1).")] = None,
    full: Annotated[bool, typer.Option("--full", help="Show every row and column of large matrices.")] = False,
    scale: Annotated[Optional[str], typer.Option("--scale", help="Replace the document's scale: sqrt, none or a number.")] = None,
    mask: Annotated[Optional[str], typer.Option("--mask", help="Replace the document's mask: none, causal or a matrix file.")] = None,
    heads: Annotated[Optional[int], typer.Option("--heads", min=1, help="Replace the document's number of heads.")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the result to this file (atomically) instead of standard output; .npz/.npy write binary arrays.")] = None,
    export: ExportOption = None,
    debug: Debug = False,
) -> None:
    """Compute attention for FILE and show every intermediate.

    [bold]Examples[/bold]

      attncli compute examples/illustrated.yaml
      attncli compute examples/bert_base.yaml --head 3 --precision 2
      attncli compute doc.yaml --format json | jq '.weights[0][0]'
      attncli compute doc.yaml --format json --only output -o out.json
      cat doc.json | attncli compute - --scale none --mask causal
      attncli compute doc.yaml --format latex --only weights --precision 2
      attncli compute doc.yaml --format csv --only weights --head 1 > weights.csv
      attncli compute doc.yaml --only weights --export weights.svg
    """

    def action() -> None:
        from attncli.export import check_only

        keys = check_only(only)
        _check_export(export, format is OutputFormat.table and not (output is not None and output.suffix.lower() in (".npz", ".npy")), output)
        if format is OutputFormat.csv and (keys is None or len(keys) != 1):
            raise AttnError("writes one matrix: name it with one --only, e.g. --only weights", "--format csv")
        if mask not in (None, "none", "causal"):
            mask_value: Optional[str] = str(Path(mask).resolve())  # a file: relative to the working directory
        else:
            mask_value = mask
        binary = output is not None and output.suffix.lower() in (".npz", ".npy")
        kind = output.suffix.lower() if binary else format.value
        trace = load(file, {"scale": scale, "mask": mask_value, "heads": heads}, compute=lambda spec: _attend_within_memory(spec, keys, kind))
        inputs = set(trace.spec.files) | ({Path(file).resolve()} if file != "-" else set())
        if binary:
            from attncli.export import to_binary

            emit(to_binary(trace, keys, output.suffix.lower()), output, inputs)
        elif format is OutputFormat.json:
            from attncli.export import to_json

            if head is not None:
                raise AttnError("--head selects tables; for JSON pick a head with jq, e.g. jq '.weights[0]'")
            emit(to_json(trace, keys), output, inputs)
        elif format in (OutputFormat.markdown, OutputFormat.latex, OutputFormat.csv):
            emit(_paste_ready(trace, format.value, keys, _head_index(head, trace.spec.heads), precision, full), output, inputs)
        else:
            from attncli.render import View, compute_tables

            index = _head_index(head, trace.spec.heads)
            tables = compute_tables(trace, View(precision, full), index, keys)
            if export is not None:
                _save_picture(lambda color: tables, export, inputs, f"attncli compute {Path(file).name}")
            emit(render_text(tables, to_terminal=output is None), output, inputs)

    run(action, debug)


@app.command()
def check(
    file: FileArg,
    tol: Annotated[float, typer.Option("--tol", min=0.0, help="Absolute tolerance per cell (the default suits answers rounded to 2 decimals).")] = 0.005,
    debug: Debug = False,
) -> None:
    """Check a hand calculation: compare the document's [bold]answer:[/bold] section with the computed numbers.

    Each answered quantity is marked correct or wrong; for a wrong one you see the first wrong
    cell, the expected and the given value, and a hint when the mistake has a known shape
    (scaling forgotten or doubled, softmax over the wrong axis, K not transposed, weights
    applied as W·x, heads split wrongly, rounding too early). Exit code 0: all correct;
    1: something is wrong; 2: the document itself cannot be used.

    [bold]Example[/bold] (in the document):

      answer:
        query: 1                  # optional: just this query's row
        scores: [2, 4, 4]
        weights: [0.06, 0.47, 0.47]

      attncli check homework.yaml --tol 0.01
    """
    wrong = False

    def action() -> None:
        nonlocal wrong
        from attncli.check import check as check_answer, read_answer
        from attncli.document import read_document
        from attncli.errors import AttnError as _AttnError
        from attncli.render import check_report

        doc = read_document(file)
        if "answer" not in doc.data:
            raise _AttnError("has no 'answer:' section to check (see attncli check --help)", doc.name)
        trace = load(file, doc=doc)
        try:
            answer = read_answer(doc.data["answer"], trace, doc.folder)
        except _AttnError as e:
            raise e.at(doc.name) from None
        findings = check_answer(trace, answer, tol)
        spec = trace.spec
        emit(render_text([check_report(findings, spec.tokens, spec.context_tokens, tol)], to_terminal=True), None, set())
        wrong = not all(f.ok for f in findings)

    run(action, debug)
    if wrong:
        raise typer.Exit(1)


class Quantity(str, Enum):
    weights = "weights"
    scores = "scores"
    scaled_scores = "scaled_scores"


@app.command()
def heatmap(
    file: FileArg,
    head: Annotated[str, typer.Option("--head", help="One head (counting from 1), or all: every head side by side on one colour scale.")] = "all",
    of: Annotated[Quantity, typer.Option("--of", help="Which queries × keys matrix to draw.")] = Quantity.weights,
    precision: Precision = 2,
    full: Annotated[bool, typer.Option("--full", help="Draw every row and column of large matrices.")] = False,
    export: ExportOption = None,
    debug: Debug = False,
) -> None:
    """Draw attention as a colour grid: query tokens down the side, key tokens across the top.

    One head is drawn large with its numbers; several heads as small multiples on one
    shared scale, shown in the legend. Masked cells are hatched (╱╱). Without colour
    (NO_COLOR set, or output into a pipe or file) cells are shaded ░ ▒ ▓ █ instead.

    [bold]Examples[/bold]

      attncli heatmap examples/causal.yaml
      attncli heatmap examples/bert_base.yaml --head all --export heads.svg
      attncli heatmap examples/two_heads.yaml --head 2 --of scores
    """

    def action() -> None:
        from attncli.heatmap import HeatMap

        _check_export(export, True)
        if head != "all" and not head.isdigit():
            raise AttnError(f"'{head}' is not a head number (1, 2, …) or all", "--head")
        trace = load(file, compute=lambda spec: _attend_within_memory(spec, [of.value], "table"))
        index = None if head == "all" else _head_index(int(head), trace.spec.heads)
        make = lambda color: [HeatMap(trace, of.value, index, full, color, precision)]  # noqa: E731
        if export is not None:
            inputs = set(trace.spec.files) | ({Path(file).resolve()} if file != "-" else set())
            _save_picture(make, export, inputs, f"attncli heatmap {Path(file).name}")
        emit(render_text(make(sys.stdout.isatty() and not os.environ.get("NO_COLOR")), to_terminal=True), None, set())

    run(action, debug)


class InitKind(str, Enum):
    xavier = "xavier"
    kaiming = "kaiming"
    normal = "normal"
    uniform = "uniform"


class InitMask(str, Enum):
    none = "none"
    causal = "causal"


@app.command("init")
def init_command(
    tokens: Annotated[Optional[str], typer.Option("--tokens", help="Token labels: words split on spaces, or characters when there are none.")] = None,
    n: Annotated[Optional[int], typer.Option("--n", min=1, help="Number of tokens (without --tokens: labels x1 … xn; default: Evan's dog Riley).")] = None,
    d_model: Annotated[int, typer.Option("--d-model", min=1, help="Width of each input row.")] = 4,
    d_k: Annotated[Optional[int], typer.Option("--d-k", min=1, help="Query/key width per head (default d_model / heads).")] = None,
    d_v: Annotated[Optional[int], typer.Option("--d-v", min=1, help="Value width per head (default d_k).")] = None,
    heads: Annotated[int, typer.Option("--heads", min=1, help="Number of heads (more than 1 adds an output projection).")] = 1,
    context: Annotated[Optional[int], typer.Option("--context", min=1, metavar="M", help="Cross-attention: keys and values from M context rows.")] = None,
    mask: Annotated[InitMask, typer.Option("--mask", help="none, or causal (needs as many keys as tokens).")] = InitMask.none,
    init: Annotated[InitKind, typer.Option("--init", help="Initialiser of the weights (as torch.nn.init); inputs are normal.")] = InitKind.xavier,
    seed: Annotated[int, typer.Option("--seed", min=0, help="First seed; each matrix takes the next one.")] = 0,
    inline: Annotated[bool, typer.Option("--inline", help="Write every number out (exact floats) instead of seeded random specs.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the document to this file (atomically) instead of standard output.")] = None,
    debug: Debug = False,
) -> None:
    """Write a ready-to-edit, commented document (YAML) that computes as it is.

    [bold]Examples[/bold]

      attncli init --tokens "Evan's dog Riley" -o doc.yaml
      attncli init --tokens 我想吃酸菜鱼 --d-model 8 --heads 2 --mask causal
      attncli init --n 2 --context 3 --inline | attncli compute -
    """

    def action() -> None:
        from attncli.init import document

        text = document(tokens, n, d_model, d_k, d_v, heads, context, mask.value, init.value, seed, inline)
        emit(text.encode("utf-8"), output, set())

    run(action, debug)


def _check_export(export: Optional[Path], usable: bool, output: Optional[Path] = None) -> None:
    """Refuse a bad --export before anything is computed or written."""
    if export is None:
        return
    if export.suffix.lower() not in (".svg", ".html", ".htm", ".txt"):
        raise AttnError("expected a file name ending in .svg, .html or .txt", "--export")
    if not usable:
        raise AttnError("works with --format table only (it saves the tables as the terminal shows them)", "--export")
    if output is not None and output.resolve() == export.resolve():
        raise AttnError("is the same file as --output; choose another name", "--export")


def _save_picture(make: Callable[[bool], list], export: Path, inputs: set[Path], title: str) -> None:
    """Save ``make(color)`` as --export asks: in colour (unless NO_COLOR) for .svg/.html, shades for .txt."""
    from attncli.export import write_atomic
    from attncli.heatmap import picture

    suffix = export.suffix.lower()
    color = suffix != ".txt" and not os.environ.get("NO_COLOR")
    width = console().width if sys.stdout.isatty() else 200
    write_atomic(export, picture(make(color), suffix, width, title), inputs)


def _paste_ready(trace, kind: str, keys: Optional[list[str]], head: Optional[int], precision: int, full: bool) -> bytes:
    """--format markdown, latex or csv."""
    from attncli import formats

    if kind == "csv":
        return formats.to_csv(trace, keys[0], head).encode("utf-8")
    write = formats.to_markdown if kind == "markdown" else formats.to_latex
    return write(trace, precision, full, head, keys).encode("utf-8")


def main() -> None:
    app()
