"""attncli explain: the eight steps of attention, for one query, in English or Chinese."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from attncli.cli.app import app
from attncli.cli.checks import extra_steps, head_index, query_index, step_choice
from attncli.cli.language import choose
from attncli.cli.load import input_paths, load
from attncli.cli.options import (
    Debug,
    ExportOption,
    HeadsOption,
    LangOption,
    LayerOption,
    MaskOption,
    Precision,
    ScaleOption,
    TableOrJson,
    ThemeOption,
    head_choice,
    overrides,
    whole_number,
)
from attncli.cli.run import run
from attncli.cli.write import check_export, emit, make_picture, render_text
from attncli.core.errors import AttnError

BUILTIN = "data/illustrated.yaml"


@app.command()
def explain(
    file: Annotated[Optional[str],
                    typer.Argument(help="The document (YAML or JSON), or - for standard input; without it, the "
                                        "built-in illustrated example.", metavar="FILE")] = None,
    step: Annotated[str, typer.Option("--step", "-s",
                                      help="Which step: 1 to 8, all (the default), or the extra steps "
                                           "positional / pre_norm / qk_norm / rope / add_norm / residual when the "
                                           "document uses them.")] = "all",
    query: Annotated[Optional[str], typer.Option("--query", "-q",
                                                 help="The query to follow: a number counting from 1, "
                                                      "or a token label (default: the first that may see two "
                                                      "keys or more).")] = None,
    head: Annotated[Optional[str], typer.Option("--head",
                                                help="The head to follow, counting from 1 (default: 1), "
                                                     "or all: the steps of each head in turn.")] = None,
    lang: LangOption = None,
    format: Annotated[TableOrJson,
                      typer.Option("--format", "-f", case_sensitive=False,
                                   help="table: text and Rich tables; json: one JSON object.")] = TableOrJson.table,
    precision: Precision = 4,
    why: Annotated[bool, typer.Option("--why",
                                      help="Instead of the steps: why queries and keys? Averaging, symmetric "
                                           "relevance, query–key relevance, softmax — on your numbers.")] = False,
    scale: ScaleOption = None,
    mask: MaskOption = None,
    heads: HeadsOption = None,
    layer: LayerOption = None,
    export: ExportOption = None,
    theme: ThemeOption = None,
    debug: Debug = False,
) -> None:
    """Explain attention step by step, with the numbers of FILE (or of the built-in example).

    The eight steps: 1 inputs, 2 weights, 3 queries/keys/values, 4 scores (each dot product written out), 5 softmax, 6 weighted values, 7 their sum (the output), 8 every query at once.

    Extra steps, only when the document uses them: [bold]positional[/bold] (after step 1), [bold]pre_norm[/bold] (before step 3), [bold]qk_norm[/bold] (after step 3, or after rope), [bold]rope[/bold] (after step 3) and [bold]add_norm[/bold] or [bold]residual[/bold] (after step 8). With an [bold]answer:[/bold] section, the step where the answer first goes wrong is marked.

    [bold]Examples[/bold]

      attncli explain --step 4
      attncli explain --step 5 --query 2 --lang zh
      attncli explain examples/two_heads.yaml --head 2 --step 8
      attncli explain examples/cross_attention.yaml --query am
      attncli explain --why
      attncli explain --step 4 --format json | jq '.numbers.scores.values'
      attncli explain examples/two_heads.yaml --head all --step 4
      attncli explain --scale sqrt --step 5
      attncli explain --export steps.html
    """  # noqa: E501, RUF100  (Typer keeps a help paragraph's line breaks: one line each)
    language = choose(lang)

    def action() -> None:
        from attncli.inputs.outline import outline
        from attncli.plan import compute_in_full

        check_export(export, format is TableOrJson.table)
        if why and step != "all":
            raise AttnError("explain.shows_own_stages_e_leave", "--why")
        chosen_head = head_choice(head) if head is not None else 1  # None: every head
        step_choice(step, None)
        head_index(chosen_head, None)
        query_index(query, None)
        changes = overrides(scale, mask, heads)
        doc, builtin = _document(file, layer, changes)
        builtin = builtin and not any(value is not None for value in changes.values())  # (its notes say scale: none)
        if _linear(doc, query, chosen_head, step, why, language, precision, format, export, theme):
            return
        shape = outline(doc.data, changes)  # the options against what the document says, before any matrix is read
        from attncli.inputs.stacked import layer_place  # (numpy: imported once the command runs)

        if step == "backward" and layer_place(doc):  # a stacked document's layer (gradient: is refused in a stack)
            raise AttnError("explain.stack_layers_has_no_backward", "--step")
        step_choice(step, extra_steps(shape.parts))
        head_index(chosen_head, shape.heads)
        query_index(query, shape.tokens)
        kind = ("why" if why else "explain") + (" json" if format is TableOrJson.json else "")
        command = "explain" + (" --why" if why else "") + (" --format json" if format is TableOrJson.json else "")

        def attention(spec):  # and against its shapes, before the attention
            if spec.given_qkv is not None:
                raise AttnError("explain.gives_queries_keys_values_directly", doc.name)
            head_index(chosen_head, spec.heads)
            query_index(query, spec.tokens)
            return compute_in_full(spec, kind, command)

        trace = load(doc.name, changes, doc=doc, compute=attention)
        spec = trace.spec
        from attncli.teach.explain.facts import default_query
        from attncli.teach.explain.view import renderables, to_json
        from attncli.teach.explain.walkthrough import Focus
        from attncli.teach.texts import texts
        from attncli.views.tables import View

        followed = range(spec.heads) if chosen_head is None else [head_index(chosen_head, spec.heads)]
        index = query_index(query, spec.tokens) if query is not None else default_query(trace, followed[0])
        focus = Focus(index, followed[0], language, precision, builtin, defaulted=query is None and index != 0,
                      asked=query is not None, layer=None if doc.passed_on is None else (layer, doc.passed_on))
        if step == "backward":  # the query it follows, in the JSON header too (one that sees two keys, if not asked)
            from dataclasses import replace

            from attncli.teach.explain.backward import followed_query

            focus = replace(focus, query=followed_query(trace, focus))
        chosen = _every_head(doc, trace, focus, followed, why, step)
        if format is TableOrJson.json:
            header = {"query": focus.query + 1, "token": spec.tokens[focus.query],
                      "head": focus.head + 1 if chosen_head is not None else "all", "lang": language}
            emit(to_json(chosen, header, one=len(chosen) == 1 and not why), None, set())
            return
        t = texts(language)
        items = renderables(chosen, t, View(precision, lang=language))
        inputs = set() if file is None else input_paths(file, trace)
        emit(render_text(items, to_terminal=True), None, inputs,
             make_picture(lambda color: items, export, "attncli explain", theme, "--step N, --head N"))

    run(action, debug)


def _linear(doc, query, head, step, why, language, precision, format, export, theme) -> bool:
    """A linear: document (docs/format.md Part 4): the delta rule's step explained; False for any other."""
    from attncli.inputs.document import is_linear

    if not is_linear(doc.data):
        return False
    from attncli.cli.linear import explain_linear

    explain_linear(doc, query, head, step, why, language, precision, format is TableOrJson.json, export, theme)
    return True


PER_HEAD = (2, 3, "rope", 4, 5, 6, 7)  # the steps that follow one head; the others are the same for every head


def _every_head(doc, trace, focus, followed, why: bool, step: str) -> list:
    """The chosen steps for each followed head: with several (--head all), the steps that follow one head are
    repeated for each, their titles naming it, among the steps every head shares (which come once)."""
    import dataclasses

    from attncli.teach.explain.walkthrough import steps as all_steps
    from attncli.teach.texts import texts
    from attncli.teach.why.stages import mark_mistake, why_steps

    runs = []
    for h in followed:
        here = dataclasses.replace(focus, head=h)
        if why:
            try:
                runs.append(why_steps(trace, here))
            except AttnError as e:  # a stage overflows: the document's numbers are at fault
                raise e.at(doc.name) from None
        else:
            runs.append(_choose(all_steps(trace, here), step))
    own = [k for k, s in enumerate(runs[0]) if why or s.number in PER_HEAD]
    if len(runs) == 1 or not own:
        tagged = [(None, s) for s in runs[0]]
    else:
        t = texts(focus.lang)
        named = lambda s, h: dataclasses.replace(s, title=t["of_head"].format(title=s.title, head=h + 1))  # noqa: E731
        first, last = own[0], own[-1]
        tagged = [(None, s) for s in runs[0][:first]]
        tagged += [(followed[0] if k in own else None, named(s, followed[0]) if k in own else s)
                   for k, s in enumerate(runs[0][first:last + 1], start=first)]
        tagged += [(h, named(run_h[k], h)) for h, run_h in zip(followed[1:], runs[1:]) for k in own]
        tagged += [(None, s) for s in runs[0][last + 1:]]
    if why or "answer" not in doc.data:
        return [s for _, s in tagged]
    findings, answer_head = _findings(doc, trace, focus.lang)
    mine = lambda h: h is None or len(runs) == 1 or h == (answer_head or 0)  # noqa: E731  (the head the answer is for)
    marked = iter(mark_mistake([s for h, s in tagged if mine(h)], findings, trace, focus.lang))
    return [next(marked) if mine(h) else s for h, s in tagged]


def _document(file: Optional[str], layer: Optional[int] = None, changes: Optional[dict] = None):
    """The document to explain, and whether it is the built-in illustrated example."""
    from importlib.resources import as_file, files

    from attncli.cli.load import read
    from attncli.inputs.document import read_document

    resource = files("attncli").joinpath(BUILTIN)
    if file is None:
        with as_file(resource) as path:
            return read_document(str(path)), True
    doc = read(file, layer, changes)
    builtin = file != "-" and Path(file).is_file() and Path(file).read_bytes() == resource.read_bytes()
    return doc, builtin


def _choose(steps: list, step: str) -> list:
    """--step (checked already: attncli.cli.checks.step_choice): all, 1 … 8, or the name of an extra step."""
    if step == "all":
        return steps
    number = whole_number(step)
    return [s for s in steps if s.number == (step if number is None else number)]


def _findings(doc, trace, lang: str) -> tuple[list, Optional[int]]:
    """The learner's answer compared with the computation (attncli check's findings), and the head it is for."""
    from attncli.teach.check.compare import check, read_answer

    try:
        answer = read_answer(doc.data["answer"], trace, doc.folder)
    except AttnError as e:
        raise e.at(doc.name) from None
    return check(trace, answer, lang=lang), answer.head
