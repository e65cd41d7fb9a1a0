"""attncli compute on a ``linear:`` document (docs/format.md Part 4): read, compute once, render."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from attncli.core.errors import AttnError


def compute_linear(file: str, doc, only: Optional[list[str]], kind: str, output: Optional[Path], options: dict) -> None:
    """Read ``doc`` (a linear: document), compute it once and write it as ``kind``: table, json, picture or arrays
    (then ``output``'s extension says which)."""
    from attncli.cli.checks import head_index
    from attncli.cli.write import emit, emit_tables
    from attncli.core.linear import run
    from attncli.inputs.linear import read_linear
    from attncli.inputs.reading import real_path
    from attncli.outputs import linear as written
    from attncli.outputs.files import STDIN

    keys = written.linear_only(only)
    if kind in ("markdown", "latex", "csv"):
        raise AttnError("linear.not_written_linear_document_yet",
                        "--format", kind=kind)
    if options["emulate"] is not None:
        raise AttnError("linear.emulates_softmax_attention_s_eager",
                        "--emulate")
    if kind == "json" and options["head"] is not None:
        raise AttnError("compute.head_selects_tables_json_pick")
    if kind == "arrays" and output.suffix.lower() == ".npy" and len(keys or []) != 1:
        raise AttnError("compute.npy_file_holds_one_array", "--output")
    spec = read_linear(doc)
    index = head_index(options["head"], spec.value_heads)
    try:
        trace = run(spec, keep_state=written.keeps_state(keys), keep_chunks="chunk_states" in (keys or []),
                    keep_scores="decayed_scores" in (keys or []))
    except AttnError as e:
        raise (e.at(doc.name) if e.where is None or e.where == "linear" else e) from None
    inputs = set(spec.files) | ({real_path(Path(file))} if file != "-" else {STDIN})
    if kind == "arrays":
        emit(written.to_binary(trace, keys, output.suffix.lower()), output, inputs)
    elif kind == "json":
        emit(written.to_json(trace, keys), output, inputs)
    else:
        from attncli.cli.language import current
        from attncli.views.linear import linear_tables
        from attncli.views.tables import View

        written.kept(trace, keys)  # every key --only names exists
        tables = linear_tables(trace, View(options["precision"], options["full"], current()), index, keys)
        title = f"attncli compute {Path(file).name}"
        emit_tables(tables, output, inputs, title, options, kind == "picture", FEWER)


FEWER = "--only KEY or --head N"  # what shows less, for a picture too large


def explain_linear(doc, query: Optional[str], head: Optional[int], step: str, why: bool, lang: str, precision: int,
                   as_json: bool, export: Optional[Path], theme) -> None:
    """attncli explain on a linear: document: the delta rule's step for one token and one value head (each head
    in turn with --head all)."""
    from attncli.cli.checks import head_index, query_index
    from attncli.cli.write import emit, make_picture, render_text
    from attncli.core.linear import run
    from attncli.inputs.linear import read_linear
    from attncli.teach.explain.delta import delta_step
    from attncli.teach.explain.lightning import lightning_step

    if why or step != "all":
        raise AttnError("linear.linear_document_has_one_step",
                        "--why" if why else "--step")
    spec = read_linear(doc)
    heads = range(spec.value_heads) if head is None else [head_index(head, spec.value_heads)]
    t = query_index(query, spec.tokens) if query is not None else min(1, spec.n - 1)  # (the first with an S to decay)
    try:
        trace = run(spec, keep_state=False)
    except AttnError as e:
        raise (e.at(doc.name) if e.where is None or e.where == "linear" else e) from None
    step_of = lightning_step if spec.kind == "lightning" else delta_step
    steps = [(j, step_of(trace, t, j, lang, precision)) for j in heads]
    if as_json:
        from attncli.outputs.linear import explained_json

        header = {"query": t + 1, "token": spec.tokens[t], "head": heads[0] + 1 if head is not None else "all",
                  "lang": lang}
        emit(explained_json(header, steps), None, set())
        return
    from rich.text import Text

    from attncli.outputs.numbers import dims
    from attncli.views.tables import View, matrix_table

    view = View(precision, lang=lang)
    items = []
    for _, lines in steps:
        for text, m in lines:
            items.append(Text(text, style="bold" if m is None and not items else ""))
            if m is not None:
                items.append(matrix_table("S", m, [f"k{i}" for i in range(1, spec.d_k + 1)], dims(spec.d_v), view))
        items.append(Text(""))
    emit(render_text(items, to_terminal=True), None, set(),
         make_picture(lambda color: items, export, "attncli explain", theme, "--head N"))


def heatmap_linear(file: str, doc, of: str, number: Optional[int], query: Optional[str], full: bool, precision: int,
                   lang: str, export: Optional[Path], theme) -> None:
    """attncli heatmap on a linear: document: S after one token (``--of state``, the default) or lightning's
    decayed scores, per value head (``number`` counted from 1, or None: all)."""
    from attncli.cli.checks import head_index, query_index
    from attncli.cli.write import console, emit, make_picture, render_text
    from attncli.core.linear import run
    from attncli.inputs.linear import read_linear
    from attncli.views.linear_heatmap import LinearHeatMap

    of = {"weights": "state", "final_state": "state"}.get(of, of)  # (weights: the command's default)
    spec = read_linear(doc)
    if of == "decayed_scores" and spec.kind != "lightning":
        raise AttnError("linear.belongs_lightning_attention_kind_lightning", "--of")
    if query is not None and of != "state":
        raise AttnError("linear.picks_token_state_leave_out", "--query")
    index = head_index(number, spec.value_heads)
    t = query_index(query, spec.tokens) if query is not None else spec.n - 1
    try:
        trace = run(spec, keep_state=of == "state", keep_scores=of == "decayed_scores")
    except AttnError as e:
        raise (e.at(doc.name) if e.where is None or e.where == "linear" else e) from None
    make = lambda color: [LinearHeatMap(trace, of, t, index, full, color, precision, lang)]  # noqa: E731
    picture = make_picture(make, export, f"attncli heatmap {Path(file).name}", theme, "--head N")
    color = console().color_system is not None
    emit(render_text(make(color), to_terminal=True), None, set(spec.files), picture)


def page_linear(file: str, doc, changes: dict, precision: int, lang: str, output: Optional[Path]) -> None:
    """attncli page on a linear: document: compute's tables and, per token and value head shown, explain's step."""
    from attncli.cli.write import emit
    from attncli.core.linear import run
    from attncli.inputs.linear import read_linear
    from attncli.inputs.reading import real_path
    from attncli.outputs.files import STDIN
    from attncli.teach.page.linear import linear_page_html

    for option in (name for name, value in changes.items() if value is not None):
        raise AttnError("check.replaces_softmax_attention_s_which",
                        f"--{option}", option=option)
    spec = read_linear(doc)
    try:
        trace = run(spec, keep_state=False)
    except AttnError as e:
        raise (e.at(doc.name) if e.where is None or e.where == "linear" else e) from None
    title = "attncli" if file == "-" else Path(file).name
    inputs = set(spec.files) | ({real_path(Path(file))} if file != "-" else {STDIN})
    emit(linear_page_html(trace, title, precision, lang).encode("utf-8"), output, inputs)
