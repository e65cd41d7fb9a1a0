"""attncli page: one HTML file to explore a document's attention in a browser, offline, in English and Chinese."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from attncli.cli.app import app
from attncli.cli.language import choose
from attncli.cli.load import input_paths, load, read
from attncli.cli.options import (
    LANG_HELP,
    Debug,
    FileArg,
    HeadsOption,
    Lang,
    LayerOption,
    MaskOption,
    ScaleOption,
    output_path,
    overrides,
)
from attncli.cli.run import run
from attncli.cli.write import emit


@app.command()
def page(
    file: FileArg,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", parser=output_path, metavar="FILE",
                                                   help="Write the page to this file (atomically) instead of "
                                                        "standard output.")] = None,
    precision: Annotated[int, typer.Option("--precision", "-p", min=0, max=17,
                                           help="Decimals shown in the page's tables and worked lines.")] = 4,
    lang: Annotated[Optional[Lang], typer.Option("--lang", case_sensitive=False, show_default=False,
                                                 help="The language the page opens in: en or zh (its switch shows "
                                                      "the other). " + LANG_HELP.removeprefix("Language: en or zh. "))
                    ] = None,
    scale: ScaleOption = None,
    mask: MaskOption = None,
    heads: HeadsOption = None,
    layer: LayerOption = None,
    debug: Debug = False,
) -> None:
    """Write an explorable page of FILE's attention: one HTML file that works offline.

    Every table of compute, head by head, the weights and scores in colour. Click any number (or reach it with Tab and the arrow keys and press Enter) to see where it comes from, written out with the document's numbers in explain's words; point at a token to light up its row and column everywhere; the eight steps of explain as a walkthrough; English and Chinese; light and dark. The file holds its own styles, script and data: it makes no network request.

    [bold]Examples[/bold]

      attncli page examples/illustrated.yaml -o page.html
      attncli page examples/causal.yaml -o causal.html --precision 2 --lang zh
      attncli page examples/bert_base.yaml -o bert.html
      attncli page examples/linear/gated_delta.yaml -o delta.html
    """  # noqa: E501, RUF100  (Typer keeps a help paragraph's line breaks: one line each)
    language = choose(lang)

    def action() -> None:
        import sys

        from attncli.core.errors import AttnError
        from attncli.plan import compute_in_full

        if output is not None and output.suffix.lower() not in (".html", ".htm"):  # before any work: nothing written
            raise AttnError("page.expected_file_name_ending_html", "--output")
        if output is None and sys.stdout is not None and sys.stdout.isatty():  # 100 KB of HTML is no use on a terminal
            raise AttnError("page.page_whole_html_file_write",
                            "--output")
        from attncli.teach.page import page_html

        changes = overrides(scale, mask, heads)
        doc = read(file, layer, changes)
        from attncli.inputs.document import is_linear

        if is_linear(doc.data):  # a layer of linear attention (docs/format.md Part 4)
            from attncli.cli.linear import page_linear

            return page_linear(file, doc, changes, precision, language, output)
        trace = load(file, changes, doc=doc, compute=lambda spec: compute_in_full(spec, "page", "page"))
        title = "attncli" if file == "-" else Path(file).name
        from attncli.inputs.stacked import layer_place  # (numpy: imported once the command runs)

        if layer_place(doc):  # a stacked document's layer: which one the page shows
            from attncli.outputs.titles import phrase

            title = phrase(language, "layer", i=layer) + title
        emit(page_html(trace, title, precision, language).encode("utf-8"), output, input_paths(file, trace))

    run(action, debug)
