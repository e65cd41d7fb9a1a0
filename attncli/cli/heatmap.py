"""attncli heatmap: the weights (or scores) of each head as a grid of coloured cells."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from attncli.cli.app import app
from attncli.cli.checks import head_index
from attncli.cli.language import choose
from attncli.cli.load import input_paths, load, read
from attncli.cli.options import (
    Debug,
    ExportOption,
    FileArg,
    HeadsOption,
    LangOption,
    LayerOption,
    MaskOption,
    Precision,
    ScaleOption,
    ThemeOption,
    bad_value,
    head_choice,
    overrides,
)
from attncli.cli.run import run
from attncli.cli.write import check_export, console, emit, make_picture, render_text
from attncli.core.errors import AttnError

DRAWN = ("weights", "scores", "scaled_scores", "score_bias", "grad_weights", "grad_scaled_scores",
         "differential_weights")  # n × m matrices
LINEAR_DRAWN = ("state", "final_state", "decayed_scores")  # a linear: document's: S after a token (d_k × d_v), n × n


def matrix_of(name: str) -> str:
    """``--of``: a matrix's JSON key, in any case, or its formula's name as ``compute --only`` takes it (``dZ``)."""
    from attncli.outputs.serialize import ALIASES, key_of

    if name in LINEAR_DRAWN or name in ("S", "S_n"):  # a linear: document's (docs/format.md Part 4)
        return {"S": "state", "S_n": "final_state"}.get(name, name)
    key = key_of(name) or key_of(name.lower())
    if key not in DRAWN:
        symbols = ", ".join(symbol for symbol, drawn in ALIASES.items() if drawn in DRAWN)
        raise bad_value("heatmap.not_drawn", name=repr(name), drawn=", ".join(map(repr, DRAWN)), symbols=symbols)
    return key


@app.command()
def heatmap(
    file: FileArg,
    head: Annotated[str, typer.Option("--head",
                                      help="One head (counting from 1), or all: "
                                           "every head side by side on one colour scale.")] = "all",
    of: Annotated[str, typer.Option("--of", metavar="MATRIX", callback=matrix_of,
                                    help="Which queries × keys matrix to draw: weights (A), scores (S), "
                                         "scaled_scores (Z), score_bias (B), or grad_weights (dA) and "
                                         "grad_scaled_scores (dZ), which need gradient: in the "
                                         "document, or differential_weights (W = A₁ − λ·A₂, a pair "
                                         "of heads'), which needs differential: in it; the JSON key "
                                         "or the formula's name, as compute --only takes them. "
                                         "A linear: document: state "
                                         "(S, its default; after the token --query names) or, "
                                         "lightning's, decayed_scores.")] = "weights",
    query: Annotated[Optional[str], typer.Option("--query", help="A linear: document's --of state: the token "
                                                 "after which S is drawn (1 … n or its label; default the last).")
                     ] = None,
    precision: Precision = 2,
    full: Annotated[bool, typer.Option("--full", help="Draw every row and column of large matrices.")] = False,
    scale: ScaleOption = None,
    mask: MaskOption = None,
    heads: HeadsOption = None,
    layer: LayerOption = None,
    export: ExportOption = None,
    theme: ThemeOption = None,
    lang: LangOption = None,
    debug: Debug = False,
) -> None:
    """Draw attention as a colour grid: query tokens down the side, key tokens across the top.

    One head is drawn large with its numbers; several heads as small multiples on one shared scale, shown in the legend, as many side by side as the terminal is wide. Masked cells are hatched (╱╱). Key labels too long for a cell become column numbers, named in a keys: line. Without colour (NO_COLOR set, or output into a pipe or file) cells are shaded ░ ▒ ▓ █ instead.

    [bold]Examples[/bold]

      attncli heatmap examples/causal.yaml
      attncli heatmap examples/bert_base.yaml --head all --export heads.svg
      attncli heatmap examples/two_heads.yaml --head 2 --of scores
      attncli heatmap examples/illustrated.yaml --scale sqrt --mask causal
      attncli heatmap examples/backward/grads.yaml --of grad_scaled_scores
      attncli heatmap examples/causal.yaml --lang zh
      attncli heatmap examples/linear/gated_delta.yaml --of state --query 3
    """  # noqa: E501, RUF100  (Typer keeps a help paragraph's line breaks: one line each)
    language = choose(lang)

    def action() -> None:
        from attncli.inputs.outline import outline
        from attncli.plan import compute_in_full
        from attncli.views.heatmap import HeatMap

        check_export(export, True)
        number = head_choice(head)
        head_index(number, None)
        changes = overrides(scale, mask, heads)
        doc = read(file, layer, changes)  # the options against what the document says, before any matrix is read
        from attncli.inputs.document import is_linear

        if is_linear(doc.data):
            from attncli.cli.linear import heatmap_linear

            heatmap_linear(file, doc, of, number, query, full, precision, language, export, theme)
            return
        if of in LINEAR_DRAWN or query is not None:
            raise AttnError("heatmap.draws_linear_document_s_state", "--of" if query is None else "--query")
        shape = outline(doc.data, changes)
        if of == "differential_weights" and doc.data.get("differential") is None:
            raise AttnError("heatmap.needs_differential_document_has_no", "--of")
        if of == "score_bias" and "score_bias" not in shape.parts:
            raise AttnError("heatmap.needs_score_bias_document_has_no", "--of")
        from attncli.inputs.stacked import layer_place  # (numpy: imported once the command runs)

        if of.startswith("grad_") and layer_place(doc):
            raise AttnError("heatmap.stack_layers_has_no_backward", "--of")
        if of.startswith("grad_") and doc.data.get("gradient") is None:
            raise AttnError("heatmap.needs_gradient_document_backward_pass", "--of", of=of)
        head_index(number, shape.heads)
        kind = "heatmap --full" if full else "heatmap"

        def attention(spec):  # and against its shapes, before the attention
            head_index(number, spec.heads)
            return compute_in_full(spec, kind, "heatmap")

        trace = load(file, changes, doc=doc, compute=attention)
        index = head_index(number, trace.spec.heads)
        from attncli.outputs.titles import phrase

        named = phrase(language, "layer", i=layer) if layer_place(doc) else ""  # --layer N: "Layer N · …"
        make = lambda color: [HeatMap(trace, of, index, full, color, precision, language, named)]  # noqa: E731
        picture = make_picture(make, export, f"attncli heatmap {Path(file).name}" + (f" --layer {layer}" if named
                                                                                    else ""), theme, "--head N")
        color = console().color_system is not None  # a terminal that shows colour, and no NO_COLOR (as Rich decides)
        emit(render_text(make(color), to_terminal=True), None, input_paths(file, trace), picture)

    run(action, debug)
