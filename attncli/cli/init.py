"""attncli init: a commented starter document that computes as it is."""

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from attncli.cli.app import app
from attncli.cli.language import choose
from attncli.cli.options import Debug, LangOption, output_path
from attncli.cli.run import run
from attncli.cli.write import emit, refuse_existing


class InitKind(str, Enum):
    xavier = "xavier"
    kaiming = "kaiming"
    normal = "normal"
    uniform = "uniform"


class InitMask(str, Enum):
    none = "none"
    causal = "causal"


class InitScaling(str, Enum):
    linear = "linear"
    dynamic = "dynamic"
    llama3 = "llama3"
    yarn = "yarn"
    longrope = "longrope"


class InitNorm(str, Enum):
    rms = "rms"
    layer = "layer"


@app.command("init")
def init_command(
    tokens: Annotated[Optional[str], typer.Option("--tokens",
                                                  help="Token labels: words split on spaces, "
                                                       "or characters when there are none.")] = None,
    n: Annotated[Optional[int], typer.Option("--n", min=1,
                                             help="Number of tokens (without --tokens: labels x1 … xn; "
                                                  "default: Evan's dog Riley).")] = None,
    d_model: Annotated[int, typer.Option("--d-model", min=1, help="Width of each input row.")] = 4,
    d_k: Annotated[Optional[int], typer.Option("--d-k", min=1,
                                               help="Query/key width per head (default d_model / heads).")] = None,
    d_v: Annotated[Optional[int], typer.Option("--d-v", min=1, help="Value width per head (default d_k).")] = None,
    heads: Annotated[int, typer.Option("--heads", min=1,
                                       help="Number of heads (more than 1 adds an output projection).")] = 1,
    kv_heads: Annotated[Optional[int],
                        typer.Option("--kv-heads", min=1, metavar="G",
                                     help="Grouped-query attention: G key/value heads shared by the query heads "
                                          "(must divide --heads; 1 is multi-query).")] = None,
    rope: Annotated[bool, typer.Option("--rope",
                                       help="Rotary position embedding of the queries and keys "
                                            "(needs an even d_k).")] = False,
    rope_scaling: Annotated[Optional[InitScaling],
                            typer.Option("--rope-scaling", case_sensitive=False, metavar="TYPE",
                                         help="--rope with rope.scaling of this type (linear, dynamic, llama3, yarn, "
                                              "longrope), its parameters as a typical checkpoint has them.")] = None,
    pre_norm: Annotated[Optional[InitNorm],
                        typer.Option("--pre-norm", case_sensitive=False,
                                     help="Normalise the inputs before the projections (rms: Llama's RMSNorm; "
                                          "layer: LayerNorm) and add the output back (residual: true).")] = None,
    qk_norm: Annotated[Optional[InitNorm],
                       typer.Option("--qk-norm", case_sensitive=False,
                                    help="Normalise each head's queries and keys before the rotation (rms: Qwen3's "
                                         "q_norm/k_norm; layer: LayerNorm).")] = None,
    sinks: Annotated[bool, typer.Option("--sinks", help="Attention sinks (gpt-oss): one logit per query head "
                                                        "in each row's softmax, a key with no value.")] = False,
    gate: Annotated[bool, typer.Option("--gate", help="Qwen3-Next's output gate: weights.gate, "
                                                      "G = σ(X̂·W_G) times each head's output.")] = False,
    query_temperature: Annotated[bool, typer.Option("--query-temperature",
                                                    help="Llama 4's query temperature: query row i times "
                                                         "1 + attn_scale·ln(1 + ⌊(p_i + 1)/floor_scale⌋).")] = False,
    context: Annotated[Optional[int],
                       typer.Option("--context", min=1, metavar="M",
                                    help="Cross-attention: keys and values from M context rows.")] = None,
    mask: Annotated[InitMask, typer.Option("--mask", case_sensitive=False,
                                           help="none, or causal (needs as many keys as tokens).")] = InitMask.none,
    init: Annotated[InitKind, typer.Option("--init", case_sensitive=False, metavar="KIND",
                                           help="Initialiser of the weights: xavier, kaiming, normal or uniform "
                                                "(as torch.nn.init); inputs are normal.")] = InitKind.xavier,
    seed: Annotated[int, typer.Option("--seed", min=0, help="First seed; each matrix takes the next one.")] = 0,
    inline: Annotated[bool, typer.Option("--inline",
                                         help="Write every number out (exact floats) "
                                              "instead of seeded random specs.")] = False,
    integers: Annotated[bool, typer.Option("--integers",
                                           help="Write every matrix out in small whole numbers (−2 to 2, W_Q and "
                                                "W_K −1 to 1, from the seeds) instead of random floats, for "
                                                "working it out by hand: drawn again (W_Q and W_K sparser each "
                                                "time) until no weight is above --max-weight, so that the softmax "
                                                "is worth working out.")] = False,
    max_weight: Annotated[Optional[float], typer.Option(
        "--max-weight", min=0.0, max=1.0, metavar="P",
        help="With --integers: the largest weight a row may have (a row with one key to weigh, under a causal "
             "mask, is 1 whatever the draw). 1 keeps the first draw.", show_default="0.95")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", parser=output_path, metavar="FILE",
                                                   help="Write the document to this file (atomically) instead of "
                                                        "standard output; an existing file is refused unless "
                                                        "--force. A .json name gets the document as JSON "
                                                        "(without the comments).")] = None,
    force: Annotated[bool, typer.Option("--force",
                                        help="Replace the file -o names if it exists "
                                             "(it may be a document you edited).")] = False,
    lang: LangOption = None,
    debug: Debug = False,
) -> None:
    """Write a ready-to-edit, commented document (YAML; JSON for -o FILE.json) that computes as it is.

    The matrices are seeded random specs ({random: xavier, seed: 1, shape: [4,4]}: short, and the same numbers every time); with --inline every number is written out, exactly the numbers the specs give; with --integers every matrix is small whole numbers (−2 to 2), for working attention out by hand, drawn so that no weight of a row is above 0.95 (--max-weight) and the softmax step is worth doing. The inputs take --seed, the query, key, value and output weights the next seeds. --kv-heads, --rope, --pre-norm, --qk-norm, --sinks, --gate and --query-temperature add the keys of today's decoders (kv_heads, rope, pre_norm with residual: true, qk_norm, sinks, weights.gate, query_temperature). Options that cannot go together (--mask causal with --context other than the number of tokens, --heads that does not divide --d-model without --d-k, --kv-heads that does not divide --heads, --rope with an odd d_k) are refused with exit code 2.

    [bold]Examples[/bold]

      attncli init --tokens "Evan's dog Riley" -o riley.yaml
      attncli init --tokens 我想吃酸菜鱼 --mask causal | attncli heatmap -
      attncli init --n 2 --context 3 --heads 2 --inline | attncli compute -
      attncli init --tokens "a b c" --d-model 2 --integers | attncli compute -
      attncli init --n 4 --d-model 6 --d-k 2 --d-v 3 --init kaiming --seed 7
      attncli init --d-model 8 --heads 4 --kv-heads 2 --rope --pre-norm rms
      attncli init --heads 2 --qk-norm rms --sinks --gate --query-temperature
      attncli init --lang zh --tokens 我想吃酸菜鱼
    """  # noqa: E501, RUF100  (Typer keeps a help paragraph's line breaks: one line each)
    language = choose(lang)

    def action() -> None:
        from attncli.core.errors import AttnError
        from attncli.teach.starter import MAX_WEIGHT, as_json, document

        if max_weight is not None and not integers:
            raise AttnError("init.needs_integers_rule_which_whole", "--max-weight")

        text = document(tokens, n, d_model, d_k, d_v, heads, context, mask.value, init.value, seed, inline,
                        kv_heads, rope_scaling.value if rope_scaling else rope,
                        None if pre_norm is None else pre_norm.value,
                        qk_norm=None if qk_norm is None else qk_norm.value, integers=integers,
                        sinks=sinks, gate=gate, temperature=query_temperature, lang=language,
                        max_weight=MAX_WEIGHT if max_weight is None else max_weight)
        if output is not None and output.suffix.lower() == ".json":
            text = as_json(text)
        if output is not None and not force:
            refuse_existing(output)
        emit(text.encode("utf-8"), output, set())

    run(action, debug)
