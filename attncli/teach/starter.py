"""``attncli init``: a ready-to-edit, commented document that always computes.

Matrices are seeded random specs by default (short, and the same numbers every
time), or written out in full (``inline``) with every float's exact ``repr``, so
the written numbers are the ones a random spec with that seed would give.

>>> print(document(tokens="a b", d_model=2).splitlines()[-1])
mask: none
>>> print(as_json("weights: {query: [[1, 2.5]]}\\nheads: 1\\n"), end="")
{
  "weights": {"query": [[1, 2.5]]},
  "heads": 1
}
"""

from __future__ import annotations

import json
import math
import re

from attncli.core.errors import AttnError, shape_str, shorten
from attncli.outputs.yamltext import escape_c1
from attncli.teach.starter_document import Choices, Sizes, shape_table, text

INITS = ("xavier", "kaiming", "normal", "uniform")
MASKS = ("none", "causal")
NORMS = ("rms", "layer")
INLINE_LIMIT = 1_000_000  # numbers --inline will write out
LABEL_BYTES = 128  # memory per token label while the document is built: the label, its place in two lines, the text
INLINE_BYTES = 96  # memory per number written out with --inline: its repr, its row's line, the text
RANDOM_LIMIT = 2**31  # cells of one random matrix (as attncli.inputs.matrices allows)
MAX_SEED = 2**63 - 8  # seeds --seed … --seed + 7 are written


def sizes(tokens: str | None = None, n: int | None = None, d_model: int = 4, d_k: int | None = None,
          d_v: int | None = None, heads: int = 1, context: int | None = None, mask: str = "none",
          kv_heads: int | None = None, rope: bool | str = False, pre_norm: str | None = None, inline: bool = False
          ) -> Sizes:
    """Check the options together, sizes before anything is built; every problem names the option to change."""
    _check_each(n, d_model, d_k, d_v, heads, context, kv_heads, mask, pre_norm)
    labels = _labels(tokens, n) if tokens is not None else []
    count = len(labels) if tokens is not None else n or 3
    if d_k is None and d_model % heads:
        raise AttnError("starter.d_model_not_divisible_heads_give", "--heads", d_model=shorten(d_model),
                        heads=shorten(heads))
    d_k = d_k or d_model // heads
    if rope and d_k % 2:
        raise AttnError("starter.turns_pairs_dimensions_so_each", "--rope", d_k=d_k)
    m = count if context is None else context
    if mask == "causal" and m != count:
        raise AttnError("starter.needs_many_keys_queries_but", "--mask causal", context=shorten(context),
                        context_2=shorten(context), count=count)
    placeholder = Sizes([], d_model, d_k, d_v or d_k, heads, context, kv_heads, bool(rope), pre_norm)
    _check_size(shape_table(placeholder, count), count + (context or 0), inline)
    if tokens is None:
        labels = [f"x{i}" for i in range(1, count + 1)] if n is not None else ["Evan's", "dog", "Riley"]
    return Sizes(labels, d_model, d_k, d_v or d_k, heads, context, kv_heads, rope or False, pre_norm)


def _check_each(n: int | None, d_model: int, d_k: int | None, d_v: int | None, heads: int, context: int | None,
                kv_heads: int | None, mask: str, pre_norm: str | None) -> None:
    """The options one by one: whole numbers ≥ 1, a known mask and norm, key/value heads that divide the heads."""
    for name, value in (("--n", n), ("--d-model", d_model), ("--d-k", d_k), ("--d-v", d_v), ("--heads", heads),
                        ("--context", context), ("--kv-heads", kv_heads)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise AttnError("starter.not_whole_number_2", name, value=value)
    if mask not in MASKS:
        raise AttnError("starter.not_one", "--mask", mask=shorten(mask), masks=', '.join(MASKS))
    if pre_norm is not None and pre_norm not in NORMS:
        raise AttnError("starter.not_one", "--pre-norm", mask=shorten(pre_norm), masks=', '.join(NORMS))
    if kv_heads is not None and heads % kv_heads:
        raise AttnError("starter.does_not_divide_heads_each", "--kv-heads", kv_heads=kv_heads, heads=heads)


def _labels(tokens: str, n: int | None) -> list[str]:
    """--tokens as labels (words, or characters when there is no space), as many as --n says if it is given."""
    try:
        tokens.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8 on the command line (Python keeps them as surrogates)
        raise AttnError("starter.not_valid_utf_text", "--tokens") from None
    labels = tokens.split() if re.search(r"\s", tokens.strip()) else list(tokens.strip())
    if not labels:
        raise AttnError("starter.empty_give_words_split_spaces", "--tokens")
    if n is not None and n != len(labels):
        shown = ", ".join(shorten(label, 20) for label in labels[:8]) + (", …" if len(labels) > 8 else "")
        raise AttnError("starter.but_tokens_gives_tokens", "--n", n=shorten(n), count=len(labels), shown=shown)
    return labels


def _check_size(shapes: dict[str, tuple[int, int]], labels: int, inline: bool) -> None:
    """Refuse a document too large to write before any of it is built (its labels, its numbers)."""
    for name, shape in shapes.items():
        if math.prod(shape) > RANDOM_LIMIT:
            option = {"inputs": "--n", "context": "--context"}.get(name, "--d-model")
            raise AttnError("starter.matrix_too_large_generate_more", option, shape=shape_str(shape))
    if inline and sum(math.prod(shape) for shape in shapes.values()) > INLINE_LIMIT:
        raise AttnError("starter.would_write_more_than_numbers",
                        "--inline", inline_limit=INLINE_LIMIT)
    from attncli.core.memory import ensure_fits

    numbers = sum(math.prod(shape) for shape in shapes.values()) if inline else 0
    ensure_fits(LABEL_BYTES * labels + INLINE_BYTES * numbers, f"a document of {labels:,} labels", "--n")


def _check_choices(qk_norm: str | None, init: str, seed: int) -> None:
    """--qk-norm, --init and --seed, each a clear error naming its option."""
    if qk_norm is not None and qk_norm not in NORMS:
        raise AttnError("starter.not_one", "--qk-norm", mask=shorten(qk_norm), masks=', '.join(NORMS))
    if init not in INITS:
        raise AttnError("starter.not_one", "--init", mask=shorten(init), masks=', '.join(INITS))
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise AttnError("starter.not_whole_number", "--seed", seed=seed)
    if seed > MAX_SEED:  # the gate takes seed + 7; a document's seeds stay below 2^63
        raise AttnError("starter.too_large_seeds_matrices_must", "--seed", seed=shorten(seed), max_seed=MAX_SEED)


MAX_WEIGHT = 0.95  # init --integers: no row's largest weight above this (1: the first draw, whatever it gives)
ATTEMPTS = 1000  # draws tried before the sizes are said to be too large for whole numbers


def document(tokens: str | None = None, n: int | None = None, d_model: int = 4, d_k: int | None = None,
             d_v: int | None = None, heads: int = 1, context: int | None = None, mask: str = "none",
             init: str = "xavier", seed: int = 0, inline: bool = False, kv_heads: int | None = None,
             rope: bool | str = False, pre_norm: str | None = None, qk_norm: str | None = None,
             integers: bool = False, sinks: bool = False, gate: bool = False, temperature: bool = False,
             lang: str = "en", max_weight: float = MAX_WEIGHT) -> str:
    """The commented YAML document for these options (see ``attncli init --help``); ``integers``: every matrix
    written out in whole numbers (seeded), for working it out by hand, drawn again until no weight of a row with two
    keys or more is above ``max_weight`` (see :func:`unsaturated`); ``lang``: its comments' language (their texts:
    the ``starter`` table of ``attncli/data/texts/<lang>.json``)."""
    s = sizes(tokens, n, d_model, d_k, d_v, heads, context, mask, kv_heads, rope, pre_norm, inline or integers)
    _check_choices(qk_norm, init, seed)
    choices = dict(mask=mask, init=init, seed=seed, inline=inline, qk_norm=qk_norm, sinks=sinks, gate=gate,
                   temperature=temperature, lang=lang)
    if not integers:
        return text(s, Choices(**choices))
    return unsaturated(lambda attempt: text(s, Choices(**choices, integers=True, attempt=attempt)), max_weight)


def unsaturated(draw, max_weight: float) -> str:
    """The first of ``draw(0)``, ``draw(1)`` … whose every row with two keys or more to weigh keeps its largest
    weight at ``max_weight`` or below (with sinks, the sink's share counts as a weight): a softmax worth working out
    by hand, not a row of 1 and 0s. Refused in one line when none of ATTEMPTS draws does."""
    from pathlib import Path

    import numpy as np

    from attncli.core.pipeline import attend
    from attncli.inputs.builder import build_spec
    from attncli.inputs.document import Document, parse_text

    for attempt in range(ATTEMPTS if max_weight < 1 else 1):
        text = draw(attempt)
        if attempt == 0 and max_weight < 1:
            keys = _keys_of(text)
            if max_weight * keys < 1:  # m weights summing to 1: one is at least 1/m
                raise AttnError("starter.row_over_keys_has_weight", "--max-weight", max_weight=max_weight, keys=keys,
                                keys_2=keys, value=1 / keys)
        trace = attend(build_spec(Document(parse_text(text, "<init>"), "<init>", Path.cwd())))
        weights = trace.weights if trace.sink_weights is None else np.concatenate(
            [trace.weights, trace.sink_weights[..., None]], axis=-1)
        allowed = np.ones(trace.weights.shape, dtype=bool) if trace.spec.allowed is None else trace.spec.allowed
        rows = allowed.sum(axis=-1) + (trace.sink_weights is not None) >= 2  # (h, n) rows with a choice to make
        if max_weight >= 1 or not rows.any() or weights.max(axis=-1)[rows].max() <= max_weight:
            return text
    raise AttnError("starter.no_draw_whole_numbers_keeps", "--integers", attempts=ATTEMPTS, max_weight=max_weight)


def _keys_of(text: str) -> int:
    """m, the keys every query may weigh at most (the rows of the context, or of the inputs)."""
    from attncli.inputs.document import parse_text

    data = parse_text(text, "<init>")
    return len(data.get("context") or data["inputs"])


def as_json(text: str) -> str:
    """The document ``text`` (YAML) as JSON, for ``init -o doc.json``: the same keys and numbers (every float's exact
    ``repr``), a matrix row to a line; JSON has no comments, so the explanations are left out.  DEL and the C1
    controls, which JSON leaves raw, are escaped as in the YAML (:func:`attncli.outputs.yamltext.yaml_string`);
    they occur only in strings."""
    from attncli.inputs.document import parse_text

    return escape_c1(_json(parse_text(text, "<init>"), "")) + "\n"


def _json(value: object, indent: str) -> str:
    inner = indent + "  "
    if isinstance(value, dict):
        flat = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        if len(flat) <= 72 and not any(isinstance(item, dict) for item in value.values()):
            return flat  # a short random spec or setting on one line
        items = [f"{inner}{json.dumps(key, ensure_ascii=False)}: {_json(item, inner)}" for key, item in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}" if items else "{}"
    if isinstance(value, list) and any(isinstance(item, (list, dict)) for item in value):
        return "[\n" + ",\n".join(inner + _json(item, inner) for item in value) + f"\n{indent}]"
    return json.dumps(value, ensure_ascii=False)
