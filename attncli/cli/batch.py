"""attncli compute and check --against on a batch of sequences (``layout:``, docs/format.md): each sequence
computed as its own document; tables titled ``Sequence i · ``, one JSON object per sequence."""

from pathlib import Path
from typing import Optional

from attncli.cli.write import emit, emit_tables, render_text
from attncli.core.errors import AttnError


def refuse(chosen: str, output: Optional[Path], options: dict) -> None:
    """What a batch of sequences cannot be written as: one of its sequences can."""
    if options["emulate"] is not None:
        raise AttnError("batch.emulates_one_sequence_s_kernel", "--emulate")
    if chosen in ("markdown", "latex", "csv") or chosen == "arrays" and output.suffix.lower() == ".npy":
        raise AttnError("batch.writes_one_sequence_s_matrices",
                        "--output" if chosen == "arrays" else f"--format {chosen}")


def write_batch(traces: tuple, keys: Optional[list[str]], layout: str, chosen: str, output: Optional[Path],
                inputs: set, title: str, options: dict) -> None:
    """Every sequence's result (:func:`attncli.computation.compute`'s Traces) as ``chosen`` (table, json, or
    .npz/.svg/.html/.txt by -o)."""
    if chosen == "arrays":
        from attncli.outputs.batch import batch_to_npz

        emit(batch_to_npz(list(traces), keys), output, inputs)
    elif chosen == "json":
        from attncli.outputs.batch import batch_to_json

        emit(batch_to_json(list(traces), layout, keys), output, inputs)
    else:
        from attncli.cli.stack import tables_of

        tables, _ = tables_of(list(traces), keys, options, "sequence")  # titled Sequence i · …
        emit_tables(tables, output, inputs, title, options, chosen == "picture")


def against_batch(doc, changes: dict, results: dict, dtype: str, format: str, lang: str, compute) -> bool:
    """check --against on a batch: the kernel's arrays in the batch's layout, judged sequence by sequence; True
    when every array of every sequence is within its budget."""
    import json

    from attncli.cli.checks import verdict
    from attncli.cli.load import warn_unseen
    from attncli.computation import sequences
    from attncli.inputs.batch import result_parts
    from attncli.outputs.titles import phrase
    from attncli.views.verdict import report, report_json

    traces = sequences(doc, changes, compute)
    for trace in traces:
        warn_unseen(trace)
    parts = {key: result_parts(doc.data, key, array, len(traces)) for key, array in results.items()}
    found = [verdict(trace, {key: parts[key][i] for key in parts}, dtype, f"{doc.name} batch[{i}]")
             for i, trace in enumerate(traces)]
    within = all(f.within for one in found for f in one)
    if format == "json":
        each = [json.loads(report_json(one, dtype, t.spec.tokens, t.spec.context_tokens)) for one, t in
                zip(found, traces)]
        body = {"dtype": dtype, "within": within, "layout": doc.data["layout"], "batch": each}
        emit((json.dumps(body, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"), None, set())
    else:
        from rich.text import Text

        shown = []
        for i, (one, trace) in enumerate(zip(found, traces)):
            shown += [Text(phrase(lang, "sequence", i=i + 1).rstrip(" ·"), style="bold"),
                      *report(one, dtype, trace.spec.tokens, trace.spec.context_tokens, lang)]
        emit(render_text(shown, to_terminal=True), None, set())
    return within
