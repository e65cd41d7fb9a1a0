"""attncli compute: every intermediate of a document, as tables, JSON, arrays or paste-ready text."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from attncli.cli.app import app
from attncli.cli.checks import head_index, only_present
from attncli.cli.language import choose
from attncli.cli.load import input_paths, progress_bar, read, warn_computed
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
from attncli.cli.write import check_export, emit, emit_tables
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
        keys, refused = _only_keys(only)  # (refused: perhaps a key of a linear: document, checked once it is read)
        chosen, medium, contradiction = output_format(format, output)
        binary, drawn = medium == "arrays", medium == "picture"
        selected = _checked_options(only, keys, refused, chosen, binary, contradiction, output, export, emulate, head)
        head_index(selected, None)
        changes = overrides(scale, mask, heads)
        doc = read(file, None, changes, stacks=True)  # FILE, read once; the options against what it says, before
        kind = "arrays" if binary else "picture" if drawn else chosen.value  # any matrix is read
        options = dict(emulate=emulate, precision=precision, full=full, head=selected, export=export, theme=theme,
                       lang=language)
        form = _form(doc.data, layer)
        if form == "linear":
            if contradiction is not None:
                raise contradiction
            from attncli.cli.linear import compute_linear

            return compute_linear(file, doc, only, kind, output, options)
        if form != "one":  # a stack of layers, or a batch of sequences: each computed in full
            _raise(refused)
            _refusal(form)(kind, output, options)
        priced = output.suffix.lower() if binary else _written_as(chosen, full) if form == "one" else kind

        def fits(parts, heads):  # --only and --head against the document's outline, then its Spec
            _raise(refused)
            if parts is not None:
                only_present(keys, parts)
            head_index(selected, heads)

        from attncli.computation import compute as computed

        done = computed(doc, layer=layer, only=keys, overrides=changes, kind=priced, caller="compute", streams=True,
                        emulate=None if emulate is None else emulate.value, check=fits, progress=progress_bar)
        warn_computed(done)
        inputs = set().union(*(input_paths(file, trace) for trace in done.traces))
        title = f"attncli compute {Path(file).name}"
        if form == "layers":
            from attncli.cli.stack import write_stack

            return write_stack(done.traces, done.keys, kind, output, inputs, title, options)
        if form == "batch":
            from attncli.cli.batch import write_batch

            return write_batch(done.traces, done.keys, doc.data["layout"], kind, output, inputs, title, options)
        named = "" if done.layers[0] is None else phrase_of(language, layer)  # --layer N: "Layer N · …"
        _write_one(done.traces[0], done.keys, chosen, binary, drawn, output, inputs,
                   title + (f" --layer {layer}" if named else ""), named, options)

    run(action, debug)


def phrase_of(language: str, layer: int) -> str:
    from attncli.outputs.titles import phrase

    return phrase(language, "layer", i=layer)


def _form(data, layer: Optional[int]) -> str:
    """What the document read is: layers (a stack, all of it), linear, batch (layout:), or one (a layer of a
    stack with --layer)."""
    from attncli.inputs.document import is_batch, is_linear, is_stacked

    if layer is not None:
        return "one"
    return "layers" if is_stacked(data) else "linear" if is_linear(data) else "batch" if is_batch(data) else "one"


def _refusal(form: str):
    """What a stack of layers, or a batch of sequences, cannot be written as (checked before it is computed)."""
    if form == "layers":
        from attncli.cli.stack import refuse
    else:
        from attncli.cli.batch import refuse
    return refuse


def _write_one(trace, keys, chosen: OutputFormat, binary: bool, drawn: bool, output: Optional[Path], inputs: set,
               title: str, named: str, options: dict) -> None:
    """One document's result (one layer's, ``named`` ``Layer N · ``) written as the options say."""
    if binary:
        from attncli.outputs.serialize import to_binary

        emit(to_binary(trace, keys, output.suffix.lower()), output, inputs)
    elif chosen is OutputFormat.json:
        from attncli.outputs.serialize import to_json

        emit(to_json(trace, keys), output, inputs)
    elif chosen in (OutputFormat.markdown, OutputFormat.latex, OutputFormat.csv):
        emit(_paste_ready(trace, chosen.value, keys, head_index(options["head"], trace.spec.heads),
                          options["precision"], options["full"], options["lang"]),
             output, inputs)
    else:
        from attncli.views.tables import View, compute_tables

        index = head_index(options["head"], trace.spec.heads)
        tables = compute_tables(trace, View(options["precision"], options["full"], options["lang"]), index, keys,
                                layer=named)
        emit_tables(tables, output, inputs, title, options, drawn)  # -o tables.svg: drawn, as --export draws them


def _raise(refused: Optional[AttnError]) -> None:
    """--only's error, held until the document was read, for a document that is not a linear: one."""
    if refused is not None:
        raise refused


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


def _check_format(only: Optional[list[str]], keys: Optional[list[str]], chosen: OutputFormat, binary: bool,
                  contradiction: Optional[Exception], output: Optional[Path], export: Optional[Path]) -> None:
    """--only, --format, -o and --export against each other, before the document is read."""
    if keys == [] and (binary or chosen is not OutputFormat.json):
        raise AttnError("compute.names_no_matrix_come_every",
                        "--only", only=', '.join(only))
    if contradiction is not None:
        raise contradiction
    check_export(export, chosen is OutputFormat.table and not binary, output)
    if chosen is OutputFormat.csv and (keys is None or len(keys) != 1):
        raise AttnError("compute.writes_one_matrix_name_one", "--format csv")


def _check_emulate(emulate: Optional[DType], keys: Optional[list[str]]) -> None:
    """--only with --emulate names only what the eager computation gives (else nothing would be shown)."""
    if emulate is None:
        return
    from attncli.core.emulate import KEYS

    other = [key for key in keys or [] if key not in KEYS]
    if other:
        raise AttnError("compute.emulate_gives_last_three_gradient", "--only", keys=', '.join(KEYS),
                        other=', '.join(other))


def _check_selection(selected: Optional[int], keys: Optional[list[str]], chosen: OutputFormat, binary: bool,
                     output: Optional[Path]) -> None:
    """--head and --only against what the format holds: JSON every head, a .npy one array, a CSV the heads it has."""
    if chosen is OutputFormat.json and selected is not None:
        raise AttnError("compute.head_selects_tables_json_pick")
    if binary and output.suffix.lower() == ".npy" and len(keys or []) != 1:
        raise AttnError("compute.npy_file_holds_one_array", "--output")
    if chosen is OutputFormat.csv and selected is not None:
        from attncli.outputs.blocks import PER_HEAD

        if keys[0] not in PER_HEAD:
            raise AttnError("compute.has_no_heads_leave_out", "--head", keys=keys[0])


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
