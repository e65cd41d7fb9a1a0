"""attncli heatmap and attncli init."""

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from attncli.cli.common import (
    Debug,
    ExportOption,
    FileArg,
    Precision,
    _attend_within_memory,
    _check_export,
    _head_index,
    _save_picture,
    app,
    console,
    emit,
    input_paths,
    load,
    render_text,
    run,
)
from attncli.core.errors import AttnError


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

    One head is drawn large with its numbers; several heads as small multiples on one shared scale, shown in the legend, as many side by side as the terminal is wide. Masked cells are hatched (╱╱). Key labels too long for a cell become column numbers, named in a keys: line. Without colour (NO_COLOR set, or output into a pipe or file) cells are shaded ░ ▒ ▓ █ instead.

    [bold]Examples[/bold]

      attncli heatmap examples/causal.yaml
      attncli heatmap examples/bert_base.yaml --head all --export heads.svg
      attncli heatmap examples/two_heads.yaml --head 2 --of scores
    """

    def action() -> None:
        from attncli.views.heatmap import HeatMap

        _check_export(export, True)
        if head != "all" and not head.isdigit():
            raise AttnError(f"'{head}' is not a head number (1, 2, …) or all", "--head")
        trace = load(file, compute=lambda spec: _attend_within_memory(spec, [of.value], "table"))
        index = None if head == "all" else _head_index(int(head), trace.spec.heads)
        make = lambda color: [HeatMap(trace, of.value, index, full, color, precision)]  # noqa: E731
        if export is not None:
            inputs = input_paths(file, trace)
            _save_picture(make, export, inputs, f"attncli heatmap {Path(file).name}")
        color = console().color_system is not None  # a terminal that shows colour, and no NO_COLOR (as Rich decides)
        emit(render_text(make(color), to_terminal=True), None, set())

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

    The matrices are seeded random specs ({random: xavier, seed: 1, shape: [4, 4]}: short, and the same numbers every time); with --inline every number is written out, exactly the numbers the specs give. The inputs take --seed, the query, key, value and output weights the next seeds. Options that cannot go together (--mask causal with --context other than the number of tokens, --heads that does not divide --d-model without --d-k) are refused with exit code 2.

    [bold]Examples[/bold]

      attncli init --tokens "Evan's dog Riley" -o doc.yaml
      attncli init --tokens 我想吃酸菜鱼 --mask causal | attncli heatmap -
      attncli init --n 2 --context 3 --heads 2 --inline | attncli compute -
      attncli init --n 4 --d-model 6 --d-k 2 --d-v 3 --init kaiming --seed 7
    """

    def action() -> None:
        from attncli.teach.starter import document

        text = document(tokens, n, d_model, d_k, d_v, heads, context, mask.value, init.value, seed, inline)
        emit(text.encode("utf-8"), output, set())

    run(action, debug)
