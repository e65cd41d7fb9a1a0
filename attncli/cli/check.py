"""attncli check: a learner's hand calculation (the document's ``answer:``) against the computed numbers."""

from typing import Annotated

import typer

from attncli.cli.app import app
from attncli.cli.load import load, read
from attncli.cli.options import (
    Debug,
    FileArg,
    HeadsOption,
    Lang,
    LangOption,
    MaskOption,
    ScaleOption,
    TableOrJson,
    overrides,
)
from attncli.cli.run import run
from attncli.cli.write import emit, render_text


@app.command()
def check(
    file: FileArg,
    tol: Annotated[float, typer.Option("--tol", min=0.0,
                                       help="Absolute tolerance per cell (the default suits answers rounded "
                                            "to 2 decimals).")] = 0.005,
    format: Annotated[TableOrJson,
                      typer.Option("--format", "-f", case_sensitive=False,
                                   help="table: the report as text; json: one JSON object with a list of findings "
                                        "(docs/tutorial.md, 'Checking a hand calculation').")] = TableOrJson.table,
    lang: LangOption = Lang.en,
    scale: ScaleOption = None,
    mask: MaskOption = None,
    heads: HeadsOption = None,
    debug: Debug = False,
) -> None:
    """Check a hand calculation: compare the document's [bold]answer:[/bold] section with the computed numbers.

    Each answered quantity is marked correct or wrong; for a wrong one you see the first wrong cell, the expected and the given value, and a hint naming the slip: each slip a teacher sees (the scale left out or added, K not transposed, softmax down the columns, the sum left undivided, a weighted value left out, the keys instead of the values, W_O or the biases left out, the mask misapplied, weights rounded too early, the RoPE slips …) is tried on every quantity given, so a slip of step 3 is named from the output alone. A one-row answer without query: is compared with every row. Exit code 0: all correct; 1: something is wrong; 2: the document itself cannot be used. --scale, --mask and --heads replace the document's, as in compute; --format json gives the findings as JSON; --lang zh writes every line in Chinese.

    [bold]Example[/bold] (in the document):

      answer:
        query: 1                  # optional: just this query's row
        scores: [2, 4, 4]
        weights: [0.06, 0.47, 0.47]

      attncli check examples/check/homework.yaml
      attncli check examples/check/homework.yaml --tol 0.01 --lang zh
      attncli check examples/check/homework.yaml -f json | jq '.findings[].ok'

    """  # noqa: E501, RUF100  (Typer keeps a help paragraph's line breaks: one line each)
    wrong = False

    def action() -> None:
        nonlocal wrong
        from attncli.core.errors import AttnError
        from attncli.plan import compute_in_full
        from attncli.teach.check.compare import check_tolerance, diagnose, read_answer
        from attncli.teach.check.view import check_json, check_report

        check_tolerance(tol)  # (the option parser lets nan through: every answer would be "correct")
        changes = overrides(scale, mask, heads)
        doc = read(file)
        if "answer" not in doc.data:
            raise AttnError("has no 'answer:' section to check (see attncli check --help)", doc.name)
        trace = load(file, changes, doc=doc, compute=lambda spec: compute_in_full(spec, "check", "check"))
        try:
            answer = read_answer(doc.data["answer"], trace, doc.folder)
        except AttnError as e:
            raise e.at(doc.name) from None
        report = diagnose(trace, answer, tol, lang.value)
        spec = trace.spec
        if format is TableOrJson.json:
            emit(check_json(report, spec.tokens, spec.context_tokens, tol, lang.value), None, set())
        else:
            shown = check_report(report, spec.tokens, spec.context_tokens, tol, lang.value)
            emit(render_text([shown], to_terminal=True), None, set())
        wrong = not all(f.ok for f in report.findings)

    run(action, debug)
    if wrong:
        raise typer.Exit(1)
