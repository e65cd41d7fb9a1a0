"""attncli extract: one attention layer of a local Hugging Face model, on a sentence, as a document that computes it."""

import re
import shutil
import sys
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.cells import cell_len

from attncli.cli.app import app
from attncli.cli.language import choose
from attncli.cli.options import Debug, LangOption, output_path
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
    model: Annotated[str, typer.Argument(metavar="MODEL",
                                         help="A model folder in the Hugging Face layout: config.json, .safetensors "
                                              "weights, tokenizer files (never downloaded).")],
    text: Annotated[Optional[str], typer.Option("--text", "-t",
                                                help="The sentence to run the model on (or --text-file).")] = None,
    text_file: Annotated[Optional[str],
                         typer.Option("--text-file", metavar="FILE",
                                      help="Read the sentence from this UTF-8 text file, or from standard input for - "
                                           "(one command-line argument holds at most 128 KiB on Linux); its final "
                                           "line break is not part of the sentence.")] = None,
    layer: Annotated[int, typer.Option("--layer", "-l",
                                       help="The layer to extract, counting from 0 as the model does.")] = ...,
    output: Annotated[Path, typer.Option("--output", "-o", parser=output_path, metavar="FILE.yaml",
                                         help="The document to write (atomically); "
                                              "the layer's inputs go to FILE.npy beside it.")] = ...,
    dtype: Annotated[Dtype, typer.Option("--dtype",
                                         help="float64: the model run in float64 throughout; float32: in its own "
                                              "float32 (agreement to 1e-4).")] = Dtype.float64,
    stack: Annotated[Optional[Stack], typer.Option("--stack",
                                                   help="T5 only: the encoder's self-attention (default) "
                                                        "or the decoder's.")] = None,
    lang: LangOption = None,
    debug: Debug = False,
) -> None:
    """Write one attention layer of a real model, on your sentence, as a document that computes it exactly.

    The document holds the tokens, the layer's input (an .npy beside it) and references into the checkpoint's own .safetensors for every weight (no copy). Before writing, extract computes it with attncli and compares it with the model's attention probabilities and outputs; it prints the agreement and refuses a document that does not reproduce the model (beyond 1e-8 in float64). Families: BERT, RoBERTa, DistilBERT, GPT-2, Llama, Mistral, Qwen2, Qwen3, Gemma 3, T5, BLOOM and more (docs/real-models.md lists them). MODEL is a folder on this machine, never downloaded. Needs PyTorch and transformers: pip install 'attncli\\[models]'.

    [bold]Examples[/bold]

      attncli extract ./minilm -t "The animal didn't cross" -l 3 -o layer3.yaml
      attncli compute layer3.yaml --only weights
      attncli heatmap layer3.yaml --head all
      attncli extract ./t5-small -t "Hi there" --stack decoder -l 0 -o dec0.yaml
      attncli extract ./gpt2 --text-file chapter.txt --layer 11 -o gpt2-11.yaml
    """  # noqa: E501, RUF100  (Typer keeps a help paragraph's line breaks: one line each)
    language = choose(lang)

    def action() -> None:
        from attncli.outputs.files import check_destination, write_all

        if output.suffix.lower() not in DOCUMENT_SUFFIXES:
            raise AttnError("extract.document_yaml_give_name_ending",
                            str(output))
        if text is None and text_file is None:
            raise AttnError("extract.missing_give_sentence_text_text",
                            "--text")
        if text is not None and text_file is not None:
            raise AttnError("extract.text_both_give_sentence_give", "--text-file")
        inputs = output.with_suffix(".npy")
        for path in (output, inputs):  # a folder that does not exist, a directory: said before the model is loaded
            check_destination(path, set())
        sentence, source = (text, "--text") if text_file is None else _sentence(text_file)
        from attncli.models.extract import extract

        progress = Progress(language)
        try:
            found = extract(model, sentence, layer, output, dtype.value, None if stack is None else stack.value, source,
                            progress)
            progress("writing the document")
            write_all([(inputs, found.inputs), (output, found.document)], found.files)  # both files or neither
        finally:
            progress("")  # the line cleared, before the report or an error
        write_all([(None, _report(found, output, inputs, language).encode("utf-8"))], set())

    run(action, debug)


class Progress:
    """What extract is doing, on one line of standard error that each step replaces (as pip shows its progress):
    only on a terminal, never into a pipe or a file. ``progress("")`` clears it. In ``lang`` (the steps are told in
    English: :data:`STEPS_ZH` gives them in Chinese)."""

    def __init__(self, lang: str = "en") -> None:
        self.lang = lang
        self.stream = sys.stderr if sys.stderr is not None and sys.stderr.isatty() else None
        self.shown = 0
        self.start = time.monotonic()

    def __call__(self, step: str) -> None:
        if self.stream is None:
            return
        room = shutil.get_terminal_size().columns - 1  # never wrapped: \r returns to the line's start
        line = f"extract: {in_language(step, self.lang)}… {time.monotonic() - self.start:.0f} s" if step else ""
        while cell_len(line) > room:  # (a Chinese character takes two columns)
            line = line[:-1]
        self.stream.write("\r" + " " * self.shown + "\r" + line)
        self.stream.flush()
        self.shown = cell_len(line)


STEPS_ZH = {  # attncli.models.extract's steps, as it tells them, in Chinese
    r"importing PyTorch and transformers": "正在导入 PyTorch 和 transformers",
    r"loading the tokenizer": "正在加载分词器",
    r"loading the model in (\w+)": r"正在以 \1 加载模型",
    r"running the model on (\d+) tokens": r"正在用 \1 个词元运行模型",
    r"computing the document and comparing it with the model": "正在计算文档并与模型比较",
    r"writing the document": "正在写入文档",
}


def in_language(step: str, lang: str) -> str:
    """One of extract's steps in ``lang`` (a step not in :data:`STEPS_ZH` as it is told)."""
    if lang == "zh":
        for english, chinese in STEPS_ZH.items():
            if re.fullmatch(english, step):
                return re.sub(english, chinese, step)
    return step


MAX_TEXT_BYTES = 1 << 20  # 1 MiB of text is hundreds of thousands of tokens: more positions than any model has


def _sentence(path: str) -> tuple[str, str]:
    """--text-file: the sentence (without its final line break) and the name errors about it give."""
    from attncli.inputs.reading import read_utf8

    text, name = read_utf8(path, MAX_TEXT_BYTES, "text", "no model takes that many tokens: give a shorter sentence")
    return text.removesuffix("\n").removesuffix("\r"), name


def _report(found, output: Path, inputs: Path, lang: str = "en") -> str:
    from attncli.views.words import words

    said = words(lang)
    width = max(len(a.key) for a in found.agreement)
    lines = [found.summary, said["reproduces"]]
    lines += [f"  {a.key:<{width}}  {a.difference:.1e}  {a.module}" for a in found.agreement]
    lines.append(said["wrote"].format(document=visible(str(output)), inputs=visible(str(inputs))))
    return "\n".join(lines) + "\n"
