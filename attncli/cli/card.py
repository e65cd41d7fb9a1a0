"""attncli card: one document's attention as the arguments of PyTorch SDPA, FlexAttention, FlashAttention, Hugging
Face's masks, JAX and FlashInfer."""

from enum import Enum
from typing import Annotated, Optional

import typer

from attncli.cli.app import app
from attncli.cli.language import choose
from attncli.cli.load import read
from attncli.cli.options import (
    Debug,
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
from attncli.cli.write import emit


class Library(str, Enum):
    sdpa = "sdpa"
    flex = "flex"
    flash = "flash"
    hf = "hf"
    jax = "jax"
    flashinfer = "flashinfer"


@app.command()
def card(
    file: FileArg,
    format: Annotated[TableOrJson, typer.Option("--format", "-f", case_sensitive=False,
                                                help="table: the card as text; json: one object (docs/kernels.md).")
                      ] = TableOrJson.table,
    library: Annotated[Optional[list[Library]], typer.Option(
        "--library", "-l", case_sensitive=False, metavar="NAME",
        help="Show only this library (repeatable): sdpa, flex (FlexAttention), flash (FlashAttention), hf (Hugging "
             "Face's masks), jax, flashinfer.")] = None,
    scale: ScaleOption = None,
    mask: MaskOption = None,
    heads: HeadsOption = None,
    layer: LayerOption = None,
    lang: LangOption = None,
    debug: Debug = False,
) -> None:
    """Print the arguments that give FILE's attention in six kernel libraries, with each one's lse base.

    Starting from Q, K and V as a kernel receives them (attncli's kernel_queries, kernel_keys and values, saved with the -o command the card prints first), each library's lines compute the same attention: PyTorch's scaled_dot_product_attention, FlexAttention's score_mod and mask_mod, FlashAttention's flash_attn_func (causal, window_size, softcap, alibi_slopes), Hugging Face's mask functions, JAX's dot_product_attention and FlashInfer's single_prefill_with_kv_cache. Where a library cannot say what the document says (a soft cap in SDPA, a top-left causal mask with n ≠ m in FlashAttention), the card says so instead of guessing.

    [bold]Examples[/bold]

      attncli card examples/sliding_window.yaml
      attncli card examples/alibi.yaml --library flash --library flex
      attncli card examples/padding.yaml -f json | jq -c '.libraries[].equivalent'
    """  # noqa: E501, RUF100  (Typer keeps a help paragraph's line breaks: one line each)
    language = choose(lang)

    def action() -> None:
        from pathlib import Path

        from attncli.core.errors import AttnError
        from attncli.inputs.builder import build_spec
        from attncli.inputs.stacked import top_level_place
        from attncli.outputs.card import card as make_card

        chosen = [name.value for name in library or []]
        changes = overrides(scale, mask, heads)
        doc = read(file, layer, changes)
        try:
            spec = build_spec(doc, changes)
        except AttnError as e:
            raise top_level_place(e, doc) from None
        try:
            c = make_card(spec)
        except AttnError as e:
            raise e.at(doc.name) from None
        if chosen:
            c = type(c)(c.export, c.setup, [e for e in c.entries if e.key in chosen], c.facts)
        name = "-" if file == "-" else Path(file).name
        if format is TableOrJson.json:
            from attncli.outputs.card import card_json

            emit(card_json(c, file, language), None, set())
        else:
            _print(c, name, file, language)

    run(action, debug)


def _print(c, name: str, path: str, language: str) -> None:
    from attncli.cli.write import console
    from attncli.views.card import card_lines

    out = console(like_stdout=True)  # rendered whole before a byte is written
    with out.capture() as captured:
        for text, code in card_lines(c, name, path, language):
            out.print(text, soft_wrap=code, highlight=False)
    emit(captured.get().encode("utf-8"), None, set())
