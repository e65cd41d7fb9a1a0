"""attncli compute and check --against on a batch of sequences (``layout:``, docs/format.md): each sequence
computed as its own document; tables titled ``Sequence i · ``, one JSON object per sequence."""

from pathlib import Path
from typing import Optional

from attncli.cli.load import input_paths, load
from attncli.cli.write import emit, make_picture, render_text
from attncli.core.errors import AttnError


def _traces(file: str, doc, changes: dict, compute) -> list:
    from attncli.inputs.batch import sequences

    try:
        documents = sequences(doc)
    except AttnError as e:  # the batch's own keys: the document is the place
        raise e.at(doc.name) from None
    return [load(file, changes, doc=one, compute=compute) for one in documents]


def compute_batch(file: str, doc, changes: dict, keys: Optional[list[str]], chosen: str, output: Optional[Path],
                  options: dict) -> None:
    """Every sequence's result as ``chosen`` (table, json, or .npz/.svg/.html/.txt by -o)."""
    from attncli.outputs.serialize import check_present
    from attncli.plan import compute_in_full

    if options["emulate"] is not None:
        raise AttnError("emulates one sequence's kernel; check --against judges a whole batch", "--emulate")
    if chosen in ("markdown", "latex", "csv") or chosen == "arrays" and output.suffix.lower() == ".npy":
        raise AttnError("writes one sequence's matrices: write the batch as JSON, tables or a .npz",
                        "--output" if chosen == "arrays" else f"--format {chosen}")
    kind = output.suffix.lower() if chosen == "arrays" else chosen
    traces = _traces(file, doc, changes, lambda spec: compute_in_full(spec, kind, "compute"))
    for i, trace in enumerate(traces):
        try:
            check_present(trace, keys)
        except AttnError as e:
            raise AttnError(f"{e.message} (batch[{i}] has none)", e.where) from None
    inputs = set().union(*(input_paths(file, trace) for trace in traces))
    if chosen == "arrays":
        from attncli.outputs.batch import batch_to_npz

        emit(batch_to_npz(traces, keys), output, inputs)
    elif chosen == "json":
        from attncli.outputs.batch import batch_to_json

        emit(batch_to_json(traces, doc.data["layout"], keys), output, inputs)
    else:
        _tables(file, traces, keys, output, inputs, options, chosen == "picture")


def _tables(file: str, traces: list, keys: Optional[list[str]], output: Optional[Path], inputs: set, options: dict,
            drawn: bool) -> None:
    from attncli.cli.checks import head_index
    from attncli.cli.compute import FEWER
    from attncli.outputs.titles import phrase
    from attncli.views.tables import View, compute_tables

    lang = options.get("lang", "en")
    view = View(options["precision"], options["full"], lang)
    tables = []
    for i, trace in enumerate(traces):
        tables += compute_tables(trace, view, head_index(options["head"], trace.spec.heads), keys,
                                 layer=phrase(lang, "sequence", i=i + 1))
    title = f"attncli compute {Path(file).name}"
    picture = make_picture(lambda color: tables, options["export"], title, options["theme"], FEWER)
    if drawn:
        emit(make_picture(lambda color: tables, output, title, options["theme"], FEWER, "--output")[1], output, inputs,
             picture)
    else:
        emit(render_text(tables, to_terminal=output is None), output, inputs, picture)


def against_batch(file: str, doc, changes: dict, results: dict, dtype: str, format: str, lang: str, compute) -> bool:
    """check --against on a batch: the kernel's arrays in the batch's layout, judged sequence by sequence; True
    when every array of every sequence is within its budget."""
    import json

    from attncli.cli.checks import verdict
    from attncli.inputs.batch import result_parts
    from attncli.outputs.titles import phrase
    from attncli.views.verdict import report, report_json

    traces = _traces(file, doc, changes, compute)
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
