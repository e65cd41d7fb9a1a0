"""attncli extract: one attention layer of a local Hugging Face model, on a sentence, as a document that computes it."""

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from attncli.cli.app import app
from attncli.cli.options import Debug, output_path
from attncli.cli.run import run
from attncli.core.errors import AttnError, visible

DOCUMENT_SUFFIXES = (".yaml", ".yml")


class Dtype(str, Enum):
    float64 = "float64"
    float32 = "float32"


class Stack(str, Enum):
    encoder = "encoder"
    decoder = "decoder"


@app.command("extract")
def extract_command(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="A model folder in the Hugging Face layout: config.json, .safetensors weights, tokenizer files (never downloaded).")],
    text: Annotated[str, typer.Option("--text", "-t", help="The sentence to run the model on.")],
    layer: Annotated[int, typer.Option("--layer", "-l", help="The layer to extract, counting from 0 as the model does.")],
    output: Annotated[Path, typer.Option("--output", "-o", parser=output_path, metavar="FILE.yaml", help="The document to write (atomically); the layer's inputs go to FILE.npy beside it.")],
    dtype: Annotated[Dtype, typer.Option("--dtype", help="float64: the model run in float64 throughout; float32: in its own float32 (agreement to 1e-4).")] = Dtype.float64,
    stack: Annotated[Optional[Stack], typer.Option("--stack", help="T5 only: the encoder's self-attention (default) or the decoder's.")] = None,
    debug: Debug = False,
) -> None:
    """Write one attention layer of a real model, on your sentence, as a document that computes it exactly.

    The document holds the tokens, the layer's input (an .npy beside it) and references into the checkpoint's own .safetensors for every weight (no copy). Before writing, extract computes it with attncli and compares it with the model's attention probabilities and outputs; it prints the agreement and refuses a document that does not reproduce the model (beyond 1e-8 in float64). Families: BERT, RoBERTa, DistilBERT, GPT-2, Llama, Mistral, Qwen2, T5, BLOOM. MODEL is a folder on this machine, never downloaded. Needs PyTorch and transformers: pip install 'attncli\\[models]'.

    [bold]Examples[/bold]

      attncli extract ./all-MiniLM-L6-v2 --text "The animal didn't cross the street" --layer 3 -o layer3.yaml
      attncli compute layer3.yaml --only weights
      attncli heatmap layer3.yaml --head all
      attncli extract ./t5-small --text "Hello there" --layer 0 --stack decoder -o dec0.yaml
    """

    def action() -> None:
        from attncli.outputs.files import check_destination, write_all

        if output.suffix.lower() not in DOCUMENT_SUFFIXES:
            raise AttnError("the document is YAML: give a name ending in .yaml (its inputs go beside it, as .npy)",
                            str(output))
        inputs = output.with_suffix(".npy")
        for path in (output, inputs):  # a folder that does not exist, a directory: said before the model is loaded
            check_destination(path, set())
        from attncli.models.extract import extract

        found = extract(model, text, layer, output, dtype.value, None if stack is None else stack.value)
        write_all([(inputs, found.inputs), (output, found.document)], found.files)  # both files or neither
        write_all([(None, _report(found, output, inputs).encode("utf-8"))], set())

    run(action, debug)


def _report(found, output: Path, inputs: Path) -> str:
    width = max(len(a.key) for a in found.agreement)
    lines = [found.summary, "The document reproduces the model (max |difference|):"]
    lines += [f"  {a.key:<{width}}  {a.difference:.1e}  {a.module}" for a in found.agreement]
    lines.append(f"Wrote {visible(str(output))} and {visible(str(inputs))}.")
    return "\n".join(lines) + "\n"
