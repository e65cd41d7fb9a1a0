"""attncli explain: the eight steps of attention, for one query, in English or Chinese."""

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from attncli.cli.app import app
from attncli.cli.load import attend_in_full, head_index, input_paths, load
from attncli.cli.options import Debug, ExportOption, Precision, ThemeOption, whole_number
from attncli.cli.run import run
from attncli.cli.write import check_export, emit, make_picture, render_text
from attncli.core.errors import AttnError, quoted, shorten

BUILTIN = "data/illustrated.yaml"


class Lang(str, Enum):
    en = "en"
    zh = "zh"


class ExplainFormat(str, Enum):
    table = "table"
    json = "json"


@app.command()
def explain(
    file: Annotated[Optional[str], typer.Argument(help="The document (YAML or JSON), or - for standard input; without it, the built-in illustrated example.", metavar="FILE")] = None,
    step: Annotated[str, typer.Option("--step", "-s", help="Which step: 1 to 8, all (the default), or the extra steps positional / pre_norm / rope / add_norm / residual when the document uses them.")] = "all",
    query: Annotated[Optional[str], typer.Option("--query", "-q", help="The query to follow: a number counting from 1, or a token label (default: the first).")] = None,
    head: Annotated[Optional[int], typer.Option("--head", help="The head to follow, counting from 1 (default: 1).")] = None,
    lang: Annotated[Lang, typer.Option("--lang", help="Language of the explanations: en or zh.")] = Lang.en,
    format: Annotated[ExplainFormat, typer.Option("--format", "-f", help="table: text and Rich tables; json: one JSON object.")] = ExplainFormat.table,
    precision: Precision = 4,
    why: Annotated[bool, typer.Option("--why", help="Instead of the steps: why queries and keys? Averaging, symmetric relevance, query–key relevance, softmax — on your numbers.")] = False,
    export: ExportOption = None,
    theme: ThemeOption = None,
    debug: Debug = False,
) -> None:
    """Explain attention step by step, with the numbers of FILE (or of the built-in example).

    The eight steps: 1 inputs, 2 weights, 3 queries/keys/values, 4 scores (each dot product
    written out), 5 softmax, 6 weighted values, 7 their sum (the output), 8 every query at once.

    Extra steps, only when the document uses them: [bold]positional[/bold] (after step 1),
    [bold]pre_norm[/bold] (before step 3), [bold]rope[/bold] (after step 3) and
    [bold]add_norm[/bold] or [bold]residual[/bold] (after step 8). With an [bold]answer:[/bold]
    section, the step where the answer first goes wrong is marked.

    [bold]Examples[/bold]

      attncli explain --step 4
      attncli explain --step 5 --query 2 --lang zh
      attncli explain examples/two_heads.yaml --head 2 --step 8
      attncli explain examples/cross_attention.yaml --query am
      attncli explain --why
      attncli explain --step 4 --format json | jq '.numbers.scores.values'
      attncli explain --export steps.html
    """

    def action() -> None:
        check_export(export, format is ExplainFormat.table)
        if why and step != "all":
            raise AttnError("shows its own four stages; leave out --step", "--why")
        doc, builtin = _document(file)
        kind = ("why" if why else "explain") + (" json" if format is ExplainFormat.json else "")
        command = "explain" + (" --why" if why else "") + (" --format json" if format is ExplainFormat.json else "")
        trace = load(doc.name, doc=doc, compute=lambda spec: attend_in_full(spec, kind, command))
        spec = trace.spec
        from attncli.teach.explain import Focus
        from attncli.teach.explain import steps as all_steps
        from attncli.teach.explain_view import renderables, to_json
        from attncli.teach.texts import texts
        from attncli.teach.why import mark_mistake, why_steps
        from attncli.views.tables import View

        h = head_index(head, spec.heads) or 0
        focus = Focus(_query_index(query, spec.tokens), h, lang.value, precision, builtin)
        if why:
            try:
                chosen = why_steps(trace, focus)
            except AttnError as e:  # a stage overflows: the document's numbers are at fault
                raise e.at(doc.name) from None
        else:
            chosen = _choose(all_steps(trace, focus), step)
            if "answer" in doc.data:
                chosen = mark_mistake(chosen, _findings(doc, trace), trace, lang.value)
        if format is ExplainFormat.json:
            header = {"query": focus.query + 1, "token": spec.tokens[focus.query], "head": h + 1, "lang": lang.value}
            emit(to_json(chosen, header, one=len(chosen) == 1 and not why), None, set())
            return
        t = texts(lang.value)
        items = renderables(chosen, t, View(precision))
        inputs = set() if file is None else input_paths(file, trace)
        emit(render_text(items, to_terminal=True), None, inputs, make_picture(lambda color: items, export, "attncli explain", theme))

    run(action, debug)


def _document(file: Optional[str]):
    """The document to explain, and whether it is the built-in illustrated example."""
    from importlib.resources import as_file, files

    from attncli.inputs.document import read_document

    resource = files("attncli").joinpath(BUILTIN)
    if file is None:
        with as_file(resource) as path:
            return read_document(str(path)), True
    doc = read_document(file)
    builtin = file != "-" and Path(file).is_file() and Path(file).read_bytes() == resource.read_bytes()
    return doc, builtin


def _query_index(query: Optional[str], tokens: list[str]) -> int:
    """--query: a number from 1 to n, or one of the token labels; 0-based."""
    if query is None:
        return 0
    i = whole_number(query)
    if i is not None:
        if not 1 <= i <= len(tokens):
            raise AttnError(f"{shorten(query.strip())} is out of range: this document has queries 1 to {len(tokens)}", "--query")
        return i - 1
    if query in tokens:
        return tokens.index(query)
    shown = ", ".join(shorten(t, 20) for t in tokens[:12]) + (", …" if len(tokens) > 12 else "")
    raise AttnError(f"{quoted(query)} is neither a query number (1 to {len(tokens)}) nor a token ({shown})", "--query")


def _choose(steps: list, step: str) -> list:
    """--step: all, 1 … 8, or the name of an extra step this document has."""
    if step == "all":
        return steps
    extras = [s.number for s in steps if isinstance(s.number, str)]
    valid = "1 to 8" + "".join(f", {name}" for name in extras) + " or all"
    number = whole_number(step)
    if number is not None:
        if not 1 <= number <= 8:
            raise AttnError(f"{shorten(step.strip())} is out of range: the steps are {valid}", "--step")
        return [s for s in steps if s.number == number]
    if step in extras:
        return [s for s in steps if s.number == step]
    from attncli.teach.explain import NEEDS

    if step == "residual" and "add_norm" in extras:
        raise AttnError(f"the residual is part of step add_norm here (R = X + Y, then LayerNorm); the steps here are {valid}",
                        "--step")
    if step in NEEDS:
        raise AttnError(f"'{step}' needs {NEEDS[step]} in the document; the steps here are {valid}", "--step")
    raise AttnError(f"unknown step {quoted(step)}: the steps are {valid}", "--step")


def _findings(doc, trace) -> list:
    """The learner's answer compared with the computation (attncli check's findings)."""
    from attncli.teach.check import check, read_answer

    try:
        answer = read_answer(doc.data["answer"], trace, doc.folder)
    except AttnError as e:
        raise e.at(doc.name) from None
    return check(trace, answer)
