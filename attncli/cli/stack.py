"""attncli compute on a stacked document (``layers:``) without --layer: every layer, chained (docs/layers.md)."""

from pathlib import Path
from typing import Any, Optional

from attncli.cli.write import emit, emit_tables
from attncli.core.errors import AttnError


def write_stack(traces: tuple, keys: Optional[list[str]], chosen: str, output: Optional[Path], inputs: set,
                title: str, options: dict) -> None:
    """Write every layer's result (:func:`attncli.computation.compute`'s Traces, in order) as ``chosen`` (table,
    json, or .npz/.svg/.html/.txt by -o): tables titled with their layer, one JSON object per layer
    (docs/layers.md)."""
    if chosen == "arrays":
        from attncli.outputs.stacked import stack_to_npz

        emit(stack_to_npz(list(traces), keys), output, inputs)
    elif chosen == "json":
        from attncli.outputs.stacked import stack_to_json

        emit(stack_to_json(list(traces), keys), output, inputs)
    else:
        _tables(title, list(traces), keys, output, inputs, options, chosen == "picture")


def refuse(chosen: str, output: Optional[Path], options: dict) -> None:
    """What a stack of layers cannot be written as: one of its layers can (--layer N)."""
    if options["emulate"] is not None:
        raise AttnError("stack.emulates_one_layer_s_kernel", "--emulate")
    if chosen in ("markdown", "latex", "csv"):
        raise AttnError("stack.writes_one_layer_s_matrices", f"--format {chosen}")
    if chosen == "arrays" and output.suffix.lower() == ".npy":
        raise AttnError("stack.npy_file_holds_one_array", "--output")


def _tables(title: str, traces: list, keys: Optional[list[str]], output: Optional[Path], inputs: set, options: dict,
            drawn: bool) -> None:
    """Each layer's tables, each title starting ``Layer i · ``, then the stack's output (not with --only)."""
    from attncli.outputs.numbers import dims
    from attncli.outputs.stacked import stack_output
    from attncli.outputs.titles import phrase
    from attncli.views.tables import matrix_table

    tables, view = tables_of(traces, keys, options, "layer")
    if keys is None:  # with --only, only what was asked
        result = stack_output(traces)
        tables.append(matrix_table(phrase(view.lang, "stack_output", n=len(traces)), result,
                                   traces[0].spec.tokens, dims(result.shape[1]), view))
    emit_tables(tables, output, inputs, title, options, drawn)


def tables_of(traces: list, keys: Optional[list[str]], options: dict, each: str) -> tuple[list, Any]:
    """Each Trace's tables, every title starting ``Layer i · `` (``each``: ``"layer"``) or ``Sequence i · ``
    (``"sequence"``), and the View they were made with."""
    from attncli.cli.checks import head_index
    from attncli.outputs.titles import phrase
    from attncli.views.tables import View, compute_tables

    lang = options.get("lang", "en")
    view = View(options["precision"], options["full"], lang)
    tables = []
    for i, trace in enumerate(traces):
        index = head_index(options["head"], trace.spec.heads)
        tables += compute_tables(trace, view, index, keys, layer=phrase(lang, each, i=i + 1))
    return tables, view
