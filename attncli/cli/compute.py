"""attncli compute: every intermediate of a document, as tables, JSON, arrays or paste-ready text."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from attncli.cli.app import app
from attncli.cli.checks import head_index, only_present
from attncli.cli.language import choose
from attncli.cli.load import attend_within_memory, input_paths, load, read
from attncli.cli.only_help import ONLY_HELP
from attncli.cli.options import (
    Debug,
    DType,
    ExportOption,
    FileArg,
    HeadsOption,
    LangOption,
    LayerOption,
    MaskOption,
    OutputFormat,
    Precision,
    ScaleOption,
    ThemeOption,
    head_choice,
    output_format,
    output_path,
    overrides,
)
from attncli.cli.run import run
from attncli.cli.write import FEWER, check_export, emit, make_picture, render_text
from attncli.core.errors import AttnError


@app.command()
def compute(
    file: FileArg,
    format: Annotated[Optional[OutputFormat],
                      typer.Option("--format", "-f", case_sensitive=False, metavar="FORMAT",
                                   show_default="table, or what -o's extension says",
                                   help="table: Rich tables; json: the JSON of docs/format.md; "
                                        "markdown / latex: tables or matrix equations to paste; "
                                        "csv: the one matrix --only names, at full precision.")] = None,
    only: Annotated[Optional[list[str]],
                    typer.Option("--only",
                                 help=ONLY_HELP)] = None,
    precision: Precision = 4,
    head: Annotated[Optional[str], typer.Option("--head",
                                                help="Show one head's tables (counting from 1), "
                                                     "or all (the default).")] = None,
    full: Annotated[bool, typer.Option("--full", help="Show every row and column of large matrices.")] = False,
    scale: ScaleOption = None,
    mask: MaskOption = None,
    heads: HeadsOption = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", parser=output_path, metavar="FILE",
                                                   help="Write the result to this file (atomically) instead of "
                                                        "standard output. Its extension picks the format unless "
                                                        "--format is given: .json, .csv, .md, .tex, .txt (tables), "
                                                        ".svg / .html (the tables drawn), .npy / .npz (arrays); "
                                                        "any other, --format.")] = None,
    export: ExportOption = None,
    theme: ThemeOption = None,
    layer: LayerOption = None,
    emulate: Annotated[Optional[DType], typer.Option(
        "--emulate", case_sensitive=False,
        help="Show instead the eager computation in bf16, fp16 or fp32 that check --against budgets with "
             "(FlashAttention-2's: Q, K, V and dO rounded, S and the softmax in float32, P rounded …): "
             "head_outputs, lse, weights and, with gradient:, grad_kernel_queries, grad_kernel_keys, "
             "grad_values.")] = None,
    lang: LangOption = None,
    debug: Debug = False,
) -> None:
    """Compute attention for FILE and show every intermediate.

    [bold]Examples[/bold]

      attncli compute examples/illustrated.yaml
      attncli compute examples/bert_base.yaml --head 3 --precision 2
      attncli compute examples/two_heads.yaml --only W_Q --only b_Q --only Q
      attncli compute examples/illustrated.yaml --format json | jq '.weights[0][0]'
      attncli compute examples/two_heads.yaml --only output -o out.json
      cat examples/illustrated.yaml | attncli compute - --scale sqrt --mask causal
      attncli compute examples/causal.yaml -f latex --only weights -p 2
      attncli compute examples/two_heads.yaml --only weights --head 1 -o weights.csv
      attncli compute examples/illustrated.yaml --only weights --export weights.svg
      attncli compute examples/backward/kernel_qkv.json --emulate bf16 --only dV
      attncli compute examples/illustrated.yaml --lang zh
      attncli compute examples/stacked/two_layers.yaml --layer 2 --only weights
    """
    language = choose(lang)

    def action() -> None:
        from attncli.inputs.document import is_stacked
        from attncli.inputs.outline import outline

        keys, refused = _only_keys(only)  # (refused: perhaps a key of a linear: document, checked once it is read)
        chosen, medium, contradiction = output_format(format, output)
        binary, drawn = medium == "arrays", medium == "picture"
        selected = _checked_options(only, keys, refused, chosen, binary, contradiction, output, export, emulate, head)
        head_index(selected, None)
        changes = overrides(scale, mask, heads)
        doc = read(file, layer, changes, stacks=True)  # the options against what the document says, before any
        kind = "arrays" if binary else "picture" if drawn else chosen.value
        options = dict(emulate=emulate, precision=precision, full=full, head=selected, export=export, theme=theme,
                       lang=language)
        if is_stacked(doc.data):  # matrix is read (a stack of layers: all of them, chained)
            from attncli.cli.stack import compute_stack

            _raise(refused)
            compute_stack(file, doc, changes, keys, kind, output, options)
            return
        if _linear(file, doc, only, refused, kind, output, contradiction, options) or \
                _batch(file, doc, changes, keys, kind, output, options):  # linear: or layout: (a batch of sequences)
            return
        shape = outline(doc.data, changes)
        only_present(keys, shape.parts)
        head_index(selected, shape.heads)
        kind = output.suffix.lower() if binary else _written_as(chosen, full)

        def attention(spec):  # and against its shapes, before the attention
            head_index(selected, spec.heads)
            if emulate is not None:  # the eager computation reads the weights: the full computation
                from attncli.core.emulate import softmax_of_dots
                from attncli.plan import compute_in_full

                try:
                    softmax_of_dots(spec, "compute --emulate")
                except AttnError as e:
                    raise e.at(doc.name) from None
                return compute_in_full(spec, kind, "compute --emulate")
            return attend_within_memory(spec, keys, kind)

        trace = load(file, changes, doc=doc, compute=attention)
        if emulate is not None:
            from attncli.core.emulate import emulated_trace

            trace, keys = emulated_trace(trace, emulate.value, keys)
        inputs = input_paths(file, trace)
        if binary:
            from attncli.outputs.serialize import to_binary

            emit(to_binary(trace, keys, output.suffix.lower()), output, inputs)
        elif chosen is OutputFormat.json:
            from attncli.outputs.serialize import to_json

            emit(to_json(trace, keys), output, inputs)
        elif chosen in (OutputFormat.markdown, OutputFormat.latex, OutputFormat.csv):
            emit(_paste_ready(trace, chosen.value, keys, head_index(selected, trace.spec.heads), precision, full,
                              language),
                 output, inputs)
        else:
            from attncli.views.tables import View, compute_tables

            index = head_index(selected, trace.spec.heads)
            from attncli.inputs.stacked import layer_place  # (numpy: imported once the command runs)
            from attncli.outputs.titles import phrase

            named = phrase(language, "layer", i=layer) if layer_place(doc) else ""  # --layer N: "Layer N · …"
            tables = compute_tables(trace, View(precision, full, language), index, keys, layer=named)
            title = f"attncli compute {Path(file).name}" + (f" --layer {layer}" if named else "")
            picture = make_picture(lambda color: tables, export, title, theme, FEWER)
            if drawn:  # -o tables.svg: the tables drawn, as --export draws them
                emit(make_picture(lambda color: tables, output, title, theme, FEWER, "--output")[1], output, inputs,
                     picture)
            else:
                emit(render_text(tables, to_terminal=output is None), output, inputs, picture)  # both files or neither

    run(action, debug)




def _raise(refused: Optional[AttnError]) -> None:
    """--only's error, held until the document was read, for a document that is not a linear: one."""
    if refused is not None:
        raise refused


def _batch(file: str, doc, changes: dict, keys: Optional[list[str]], kind: str, output: Optional[Path],
           options: dict) -> bool:
    """A batch of sequences (layout:), each computed as its own document, and written; False for any other."""
    from attncli.inputs.batch import is_batch

    if not is_batch(doc.data):
        return False
    from attncli.cli.batch import compute_batch

    compute_batch(file, doc, changes, keys, kind, output, options)
    return True


def _only_keys(only: Optional[list[str]]) -> tuple[Optional[list[str]], Optional[AttnError]]:
    """--only checked as the keys of attention's result; a name it does not know is kept as the error to raise
    unless the document turns out to be a linear: document (whose result has other keys)."""
    from attncli.outputs.serialize import check_only

    try:
        return check_only(only), None
    except AttnError as error:
        return None, error


def _checked_options(only, keys, refused, chosen, binary, contradiction, output, export, emulate, head):
    """The options against each other, before the document is read -> --head's choice. (--only names that only a
    linear: document's result may have are checked once it is read.)"""
    if refused is None:
        _check_format(only, keys, chosen, binary, contradiction, output, export)
        _check_emulate(emulate, keys)
    selected = head_choice(head)
    if refused is None:
        _check_selection(selected, keys, chosen, binary, output)
    return selected


def _linear(file: str, doc, only: Optional[list[str]], refused: Optional[AttnError], kind: str,
            output: Optional[Path], contradiction: Optional[Exception], options: dict) -> bool:
    """A linear: document (docs/format.md Part 4) computed and written; False for any other document (whose
    --only, if ``refused``, is an error)."""
    from attncli.inputs.linear import is_linear

    if not is_linear(doc.data):
        if refused is not None:
            raise refused
        return False
    if contradiction is not None:
        raise contradiction
    from attncli.cli.linear import compute_linear

    compute_linear(file, doc, only, kind, output, options)
    return True



def _check_format(only: Optional[list[str]], keys: Optional[list[str]], chosen: OutputFormat, binary: bool,
                  contradiction: Optional[Exception], output: Optional[Path], export: Optional[Path]) -> None:
    """--only, --format, -o and --export against each other, before the document is read."""
    if keys == [] and (binary or chosen is not OutputFormat.json):
        raise AttnError(f"names no matrix ({', '.join(only)} come with every JSON); name one, e.g. --only weights",
                        "--only")
    if contradiction is not None:
        raise contradiction
    check_export(export, chosen is OutputFormat.table and not binary, output)
    if chosen is OutputFormat.csv and (keys is None or len(keys) != 1):
        raise AttnError("writes one matrix: name it with one --only, e.g. --only weights", "--format csv")


def _check_emulate(emulate: Optional[DType], keys: Optional[list[str]]) -> None:
    """--only with --emulate names only what the eager computation gives (else nothing would be shown)."""
    if emulate is None:
        return
    from attncli.core.emulate import KEYS

    other = [key for key in keys or [] if key not in KEYS]
    if other:
        raise AttnError(f"--emulate gives {', '.join(KEYS)} (the last three with gradient:), not "
                        f"{', '.join(other)}", "--only")


def _check_selection(selected: Optional[int], keys: Optional[list[str]], chosen: OutputFormat, binary: bool,
                     output: Optional[Path]) -> None:
    """--head and --only against what the format holds: JSON every head, a .npy one array, a CSV the heads it has."""
    if chosen is OutputFormat.json and selected is not None:
        raise AttnError("--head selects tables; for JSON pick a head with jq, e.g. jq '.weights[0]'")
    if binary and output.suffix.lower() == ".npy" and len(keys or []) != 1:
        raise AttnError("a .npy file holds one array: choose it with --only, e.g. --only output", "--output")
    if chosen is OutputFormat.csv and selected is not None:
        from attncli.outputs.blocks import PER_HEAD

        if keys[0] not in PER_HEAD:
            raise AttnError(f"'{keys[0]}' has no heads; leave out --head", "--head")


def _written_as(chosen: OutputFormat, full: bool) -> str:
    """The text format the memory plan prices: with " --full" where it shows every row and column."""
    return chosen.value + (" --full" if full and chosen.value in ("table", "markdown", "latex") else "")


def _paste_ready(trace, kind: str, keys: Optional[list[str]], head: Optional[int], precision: int, full: bool,
                 lang: str) -> bytes:
    """--format markdown, latex or csv (the titles of the first two in ``lang``)."""
    from attncli.outputs import paste as formats

    if kind == "csv":
        return formats.to_csv(trace, keys[0], head).encode("utf-8")
    write = formats.to_markdown if kind == "markdown" else formats.to_latex
    return write(trace, precision, full, head, keys, lang).encode("utf-8")
