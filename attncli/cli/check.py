"""attncli check: a learner's hand calculation (the document's ``answer:``) against the computed numbers."""

from typing import Annotated, Optional

import typer

from attncli.cli.app import app
from attncli.cli.language import choose
from attncli.cli.load import load, read
from attncli.cli.options import (
    Debug,
    DType,
    FileArg,
    HeadsOption,
    LangOption,
    LayerOption,
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
    lang: LangOption = None,
    against: Annotated[Optional[str], typer.Option(
        "--against", help="A kernel's result (.npz, .safetensors, or one .npy named by its key) holding any of "
                          "head_outputs, lse, grad_kernel_queries, grad_kernel_keys, grad_values, weights "
                          "(attncli's shapes or PyTorch's (1, heads, n, d)): each against the float64 truth, "
                          "within FlashAttention's budget or not (exit code 1). Needs --dtype.")] = None,
    dtype: Annotated[Optional[DType], typer.Option(
        "--dtype", case_sensitive=False, help="The precision the kernel computed in: bf16, fp16 or fp32.")] = None,
    scale: ScaleOption = None,
    mask: MaskOption = None,
    heads: HeadsOption = None,
    layer: LayerOption = None,
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

    [bold]Linear attention[/bold]: on a linear: document (docs/format.md Part 4) the answer may give any array compute writes for the layer (u, state, head_outputs, output …; query: and head: as above), and the recurrence's slips are named: the state decayed after the update, β left out, u = β·v, the state read transposed, q not scaled; lightning's decay made a growth.

    [bold]A kernel's result[/bold]: attncli check DOC --against RESULT --dtype bf16 compares each array of RESULT with the float64 truth of DOC (the dO the kernel used is the document's gradient, dH), against twice the error of an eager computation in that dtype (attncli compute DOC --emulate bf16 prints it) plus 2 units in the last place; outside it, the worst cell is named and the exit code is 1. One document is one batch element.

    """  # noqa: E501, RUF100  (Typer keeps a help paragraph's line breaks: one line each)
    language = choose(lang)
    wrong = False
    if against is not None or dtype is not None:
        run(lambda: _against(file, against, dtype, overrides(scale, mask, heads), format, layer, language),
            debug)
        if _OUTSIDE:
            raise typer.Exit(1)
        return

    def action() -> None:
        nonlocal wrong
        from attncli.core.errors import AttnError
        from attncli.plan import compute_in_full
        from attncli.teach.check.compare import check_tolerance, diagnose, read_answer
        from attncli.teach.check.view import check_json, check_report

        check_tolerance(tol)  # (the option parser lets nan through: every answer would be "correct")
        changes = overrides(scale, mask, heads)
        doc = read(file, layer, changes)
        if "answer" not in doc.data:
            raise AttnError("check.has_no_answer_section_check", doc.name)
        from attncli.inputs.document import is_linear

        if is_linear(doc.data):  # a layer of linear attention: its own recurrence and its own slips
            wrong = _linear(file, doc, changes, tol, language, format)
            return
        trace = load(file, changes, doc=doc, compute=lambda spec: compute_in_full(spec, "check", "check"))
        try:
            answer = read_answer(doc.data["answer"], trace, doc.folder)
        except AttnError as e:
            raise e.at(doc.name) from None
        report = diagnose(trace, answer, tol, language, source=file,
                          alternatives=_fed_raw_inputs(file, doc, changes, layer), layer=layer)
        spec = trace.spec
        if format is TableOrJson.json:
            emit(check_json(report, spec.tokens, spec.context_tokens, tol, language), None, set())
        else:
            shown = check_report(report, spec.tokens, spec.context_tokens, tol, language)
            emit(render_text([shown], to_terminal=True), None, set())
        wrong = not all(f.ok for f in report.findings)

    run(action, debug)
    if wrong:
        raise typer.Exit(1)


def _linear(file: str, doc, changes: dict, tol: float, language: str, format) -> bool:
    """check on a ``linear:`` document (teach/check/linear.py); True when something is wrong."""
    from attncli.core.errors import AttnError
    from attncli.core.linear import run as run_linear
    from attncli.inputs.linear import read_linear
    from attncli.teach.check.linear import diagnose_linear
    from attncli.teach.check.view import check_json, check_report

    for option in (name for name, value in changes.items() if value is not None):
        raise AttnError("check.replaces_softmax_attention_s_which",
                        f"--{option}", option=option)
    spec = read_linear(doc)
    try:
        trace = run_linear(spec)
        report = diagnose_linear(trace, doc.data["answer"], doc.folder, tol, language, file)
    except AttnError as e:
        raise (e.at(doc.name) if e.where is None or e.where in ("linear", "answer") or
               e.where.startswith("answer.") else e) from None
    if format is TableOrJson.json:
        emit(check_json(report, spec.tokens, spec.tokens, tol, language), None, set())
    else:
        emit(render_text([check_report(report, spec.tokens, spec.tokens, tol, language)], to_terminal=True), None,
             set())
    return not all(f.ok for f in report.findings)


def _fed_raw_inputs(file: str, doc, changes: dict, layer: int | None) -> tuple:
    """For ``--layer N`` past the first: the layer computed on the stack's own inputs X instead of the layer
    before's result, a slip check names as any other ((name, trace, words)); () otherwise."""
    from attncli.inputs.stacked import layer_index

    index = None if layer is None else layer_index(doc)
    if not index or file == "-" or doc.passed_on is None:
        return ()
    from attncli.core.errors import AttnError
    from attncli.core.pipeline import attend
    from attncli.inputs.builder import build_spec
    from attncli.inputs.document import read_document
    from attncli.inputs.stacked import layer_document

    stack = read_document(file)
    try:
        raw = attend(build_spec(layer_document(stack, index, stack.data["inputs"]), changes or None))
    except AttnError:  # (the stack's inputs do not fit this layer)
        return ()
    from attncli.teach.check.naming import FED_RAW_INPUTS

    return ((FED_RAW_INPUTS, raw, {"layer": index + 1, "passed": doc.passed_on}),)


_OUTSIDE: list[bool] = []  # set by _against when an array is outside its budget


def _against(file: str, against: str | None, dtype: DType | None, changes: dict,
             format: TableOrJson = TableOrJson.table, layer: int | None = None, lang: str = "en") -> None:
    """``check --against RESULT --dtype D``: the verdict on a kernel's result (its text in ``lang``)."""
    from attncli.core.emulate import KEYS, softmax_of_dots
    from attncli.core.errors import AttnError
    from attncli.inputs.result import read_result
    from attncli.plan import compute_in_full
    from attncli.views.verdict import report, report_json

    if against is None or dtype is None:
        raise AttnError("check.against_dtype_go_together_kernel",
                        "--against" if against is None else "--dtype")
    results = read_result(against, KEYS)
    doc = read(file, layer, changes)

    def attention(spec):  # a softmax of dot-product scores, or no verdict: refused before the computation
        try:
            softmax_of_dots(spec, "check --against")
        except AttnError as e:
            raise e.at(doc.name) from None
        return compute_in_full(spec, "check", "check")

    from attncli.inputs.document import is_batch

    if is_batch(doc.data):
        from attncli.cli.batch import against_batch

        _OUTSIDE[:] = [] if against_batch(doc, changes, results, dtype.value, format.value, lang,
                                          attention) else [True]
        return
    from attncli.cli.checks import verdict

    trace = load(file, changes, doc=doc, compute=attention)
    findings = verdict(trace, results, dtype.value, file)
    tokens = (trace.spec.tokens, trace.spec.context_tokens)
    if format is TableOrJson.json:
        emit(report_json(findings, dtype.value, *tokens), None, set())
    else:
        emit(render_text(report(findings, dtype.value, *tokens, lang), to_terminal=True), None, set())
    _OUTSIDE[:] = [True] if not all(f.within for f in findings) else []

