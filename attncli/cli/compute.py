"""attncli compute: every intermediate of a document, as tables, JSON, arrays or paste-ready text."""

import difflib
import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from attncli.cli.app import app
from attncli.cli.load import attend_within_memory, head_index, input_paths, load
from attncli.cli.options import Debug, ExportOption, FileArg, OutputFormat, Precision, ThemeOption, output_path
from attncli.cli.run import run
from attncli.cli.write import check_export, emit, make_picture, render_text
from attncli.core.errors import AttnError, shorten


@app.command()
def compute(
    file: FileArg,
    format: Annotated[OutputFormat, typer.Option("--format", "-f", help="table: Rich tables; json: the JSON of docs/format.md; markdown / latex: tables or bmatrix equations to paste; csv: the one matrix --only names, at full precision.")] = OutputFormat.table,
    only: Annotated[Optional[list[str]], typer.Option("--only", help="Keep just this key (repeatable): inputs, positional, normalized_inputs, context, queries, keys, values, queries_rotated, keys_rotated, scores, scaled_scores, weights, head_outputs, output, normalized_output, residual, normalized; the projections, shown only when named: weight_query, weight_key, weight_value, weight_output, bias_query, bias_key, bias_value, bias_output. Or the formula's name, in any case: X, P, C, W_Q, b_Q, Q, W_K, K, W_V, V, Q′ (or Q'), K′, S (scores), Z (scaled), A (weights), H, W_O, b_O, Y (output), R, N.")] = None,
    precision: Precision = 4,
    head: Annotated[Optional[int], typer.Option("--head", help="Show one head's tables (counting from 1).")] = None,
    full: Annotated[bool, typer.Option("--full", help="Show every row and column of large matrices.")] = False,
    scale: Annotated[Optional[str], typer.Option("--scale", help="Replace the document's scale: sqrt, none or a number.")] = None,
    mask: Annotated[Optional[str], typer.Option("--mask", help="Replace the document's mask: none, causal or a matrix file.")] = None,
    heads: Annotated[Optional[int], typer.Option("--heads", min=1, help="Replace the document's number of heads.")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", parser=output_path, metavar="FILE", help="Write the result to this file (atomically) instead of standard output; .npz/.npy write binary arrays.")] = None,
    export: ExportOption = None,
    theme: ThemeOption = None,
    debug: Debug = False,
) -> None:
    """Compute attention for FILE and show every intermediate.

    [bold]Examples[/bold]

      attncli compute examples/illustrated.yaml
      attncli compute examples/bert_base.yaml --head 3 --precision 2
      attncli compute examples/two_heads.yaml --only W_Q --only b_Q --only Q
      attncli compute doc.yaml --format json | jq '.weights[0][0]'
      attncli compute doc.yaml --format json --only output -o out.json
      cat doc.json | attncli compute - --scale none --mask causal
      attncli compute doc.yaml --format latex --only weights --precision 2
      attncli compute doc.yaml --format csv --only weights --head 1 > weights.csv
      attncli compute doc.yaml --only weights --export weights.svg
    """

    def action() -> None:
        from attncli.outputs.serialize import check_only

        keys = check_only(only)
        binary = output is not None and output.suffix.lower() in (".npz", ".npy")
        if keys == [] and (binary or format is not OutputFormat.json):
            raise AttnError(f"names no matrix ({', '.join(only)} come with every JSON); name one, e.g. --only weights", "--only")
        check_export(export, format is OutputFormat.table and not binary, output)
        if format is OutputFormat.csv and (keys is None or len(keys) != 1):
            raise AttnError("writes one matrix: name it with one --only, e.g. --only weights", "--format csv")
        if mask not in (None, "none", "causal"):
            if not os.path.lexists(mask):  # a name there is the reader's to check (a loop of links, a folder, a long name)
                close = difflib.get_close_matches(mask.lower()[:100], ("none", "causal"), n=1, cutoff=0.6)
                hint = f" (did you mean '{close[0]}'?)" if close else " (no such file)"
                raise AttnError(f"{shorten(mask)!r} is not none, causal or a mask file{hint}", "--mask")
            mask_value: Optional[str] = os.path.abspath(mask)  # a file: relative to the working directory
        else:
            mask_value = mask
        kind = output.suffix.lower() if binary else format.value + (" --full" if full and format.value in ("table", "markdown", "latex") else "")
        trace = load(file, {"scale": scale, "mask": mask_value, "heads": heads}, compute=lambda spec: attend_within_memory(spec, keys, kind))
        inputs = input_paths(file, trace)
        if binary:
            from attncli.outputs.serialize import to_binary

            emit(to_binary(trace, keys, output.suffix.lower()), output, inputs)
        elif format is OutputFormat.json:
            from attncli.outputs.serialize import to_json

            if head is not None:
                raise AttnError("--head selects tables; for JSON pick a head with jq, e.g. jq '.weights[0]'")
            emit(to_json(trace, keys), output, inputs)
        elif format in (OutputFormat.markdown, OutputFormat.latex, OutputFormat.csv):
            emit(_paste_ready(trace, format.value, keys, head_index(head, trace.spec.heads), precision, full), output, inputs)
        else:
            from attncli.views.tables import View, compute_tables

            index = head_index(head, trace.spec.heads)
            tables = compute_tables(trace, View(precision, full), index, keys)
            picture = make_picture(lambda color: tables, export, f"attncli compute {Path(file).name}", theme)
            emit(render_text(tables, to_terminal=output is None), output, inputs, picture)  # both files or neither

    run(action, debug)


def _paste_ready(trace, kind: str, keys: Optional[list[str]], head: Optional[int], precision: int, full: bool) -> bytes:
    """--format markdown, latex or csv."""
    from attncli.outputs import paste as formats

    if kind == "csv":
        return formats.to_csv(trace, keys[0], head).encode("utf-8")
    write = formats.to_markdown if kind == "markdown" else formats.to_latex
    return write(trace, precision, full, head, keys).encode("utf-8")
