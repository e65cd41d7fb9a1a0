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
import textwrap
from dataclasses import dataclass

from attncli.core.errors import AttnError, shape_str, shorten
from attncli.outputs.yamltext import escape_c1, yaml_string
from attncli.teach.starter_rope import rope_scaling_lines
from attncli.teach.starter_stages import GATE_COMMENT, qk_norm_lines, sinks_lines, temperature_lines

INITS = ("xavier", "kaiming", "normal", "uniform")
MASKS = ("none", "causal")
NORMS = ("rms", "layer")
INLINE_LIMIT = 1_000_000  # numbers --inline will write out
LABEL_BYTES = 128  # memory per token label while the document is built: the label, its place in two lines, the text
INLINE_BYTES = 96  # memory per number written out with --inline: its repr, its row's line, the text
RANDOM_LIMIT = 2**31  # cells of one random matrix (as attncli.inputs.matrices allows)
MAX_SEED = 2**63 - 8  # seeds --seed … --seed + 7 are written


@dataclass(frozen=True)
class Sizes:
    tokens: list[str]
    d_model: int
    d_k: int
    d_v: int
    heads: int
    context: int | None  # m context rows for cross-attention; None: self-attention
    kv_heads: int | None = None  # g key/value heads (grouped-query attention); None: as many as heads
    rope: bool | str = False  # True, or a rope.scaling type (init --rope-scaling)
    pre_norm: str | None = None  # rms or layer: normalise the inputs, and add the output back (residual)

    @property
    def g(self) -> int:
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def has_output(self) -> bool:
        """W_O mixes several heads, and maps the heads back to d_model when a pre-norm block's residual needs it."""
        return self.heads > 1 or (self.pre_norm is not None and self.heads * self.d_v != self.d_model)

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def m(self) -> int:
        return self.n if self.context is None else self.context


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
    _check_size(_shape_table(placeholder, count), count + (context or 0), inline)
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


def _shapes(s: Sizes) -> dict[str, tuple[int, int]]:
    return _shape_table(s, s.n)


def _shape_table(s: Sizes, n: int) -> dict[str, tuple[int, int]]:
    """The shape of each matrix of the document, for ``n`` tokens."""
    m = n if s.context is None else s.context
    shapes = {"inputs": (n, s.d_model)}
    if s.context is not None:
        shapes["context"] = (m, s.d_model)
    shapes |= {"query": (s.d_model, s.heads * s.d_k), "key": (s.d_model, s.g * s.d_k),
               "value": (s.d_model, s.g * s.d_v)}
    if s.has_output:
        shapes["output"] = (s.heads * s.d_v, s.d_model)
    return shapes


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
    keys or more is above ``max_weight`` (see :func:`unsaturated`); ``lang``: its comments' language
    (zh: :mod:`attncli.teach.starter_zh`)."""
    options = dict(tokens=tokens, n=n, d_model=d_model, d_k=d_k, d_v=d_v, heads=heads, context=context, mask=mask,
                   init=init, seed=seed, inline=inline, kv_heads=kv_heads, rope=rope, pre_norm=pre_norm,
                   qk_norm=qk_norm, sinks=sinks, gate=gate, temperature=temperature)
    if not integers:
        return _in_language(_document(**options), lang)
    return _in_language(unsaturated(lambda attempt: _document(**options, integers=True, attempt=attempt),
                                    max_weight), lang)


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


def _in_language(text: str, lang: str) -> str:
    if lang == "zh":
        from attncli.teach.starter_zh import in_chinese

        return in_chinese(text)
    return text


def _document(tokens: str | None = None, n: int | None = None, d_model: int = 4, d_k: int | None = None,
              d_v: int | None = None, heads: int = 1, context: int | None = None, mask: str = "none",
              init: str = "xavier", seed: int = 0, inline: bool = False, kv_heads: int | None = None,
              rope: bool | str = False, pre_norm: str | None = None, qk_norm: str | None = None,
              integers: bool = False, sinks: bool = False, gate: bool = False, temperature: bool = False,
              attempt: int = 0) -> str:
    """The document's English text; ``attempt`` k > 0 draws the whole numbers again (see :func:`whole_numbers`)."""
    s = sizes(tokens, n, d_model, d_k, d_v, heads, context, mask, kv_heads, rope, pre_norm, inline or integers)
    _check_choices(qk_norm, init, seed)
    shapes = _shapes(s) | ({"gate": (s.d_model, s.heads * s.d_v)} if gate else {})
    seeds = {"inputs": seed, "query": seed + 1, "key": seed + 2, "value": seed + 3, "output": seed + 4,
             "context": seed + 5, "gate": seed + 7}
    kinds = {name: ("normal" if name in ("inputs", "context") else init) for name in shapes}

    def matrix(name: str, indent: str, comment: str) -> list[str]:
        spec = f"{{random: {kinds[name]}, seed: {seeds[name]}, shape: [{shapes[name][0]}, {shapes[name][1]}]}}"
        if integers:
            return [f"{indent}{name}:   # {comment + ', ' if comment else ''}whole numbers, for working by hand",
                    *(f"{indent}  - [{', '.join(str(x) for x in row)}]" for row in whole_numbers(
                        seeds[name], shapes[name], attempt, *((1, True) if name in ("query", "key") else (2, False))))]
        if not inline:
            return [f"{indent}{name + ':':<{7 if indent else 0}} {spec}{'   # ' + comment if comment else ''}"]
        from attncli.inputs.initialisers import random_matrix

        values = random_matrix({"random": kinds[name], "seed": seeds[name], "shape": list(shapes[name])}, None)
        lines = [f"{indent}{name}:   # {comment + ', ' if comment else ''}the numbers of {spec}"]
        return lines + [f"{indent}  - [{', '.join(repr(float(x)) for x in row)}]" for row in values]

    kind = "cross-attention" if s.context is not None else "self-attention"
    heads_text = f"{s.heads} head{'s' if s.heads > 1 else ''}"
    modern = [text for text, on in ((f"{s.g} key/value head{'s' if s.g > 1 else ''} shared by the query heads",
                                     s.kv_heads),
                                    ("rotary positions", s.rope),
                                    (f"{'RMSNorm' if s.pre_norm == 'rms' else 'LayerNorm'} "
                                     "before attention and the residual",
                                     s.pre_norm),
                                    ("queries and keys normalised (QK-norm)", qk_norm),
                                    ("attention sinks", sinks), ("an output gate", gate),
                                    ("a query temperature", temperature)) if on]
    lines = [
        f"# An attention document from `attncli init`: {kind}, {heads_text}. Edit anything, then",
        "#   attncli compute FILE     every intermediate, step by step",
        "#   attncli heatmap FILE     the attention weights as a picture",
        *(textwrap.wrap(f"# As in today's models: {', '.join(modern)}.", 88, subsequent_indent="#   ")
          if modern else []),
        f"# Sizes: n = {s.n} tokens{f', m = {s.m} context rows' if s.context else ''}, d_model = {s.d_model}, "
        f"h = {s.heads}{f', g = {s.g}' if s.kv_heads is not None else ''}, d_k = {s.d_k}, d_v = {s.d_v}.",
        "#",
        "# A matrix is written out as rows ([[1, 0], [0, 1]]), read from a file relative",
        "# to this document (.csv, .tsv, .txt, .npy), or drawn at random with a seed:",
        "# {random: KIND, seed: S, shape: [rows, columns]}, KIND one of normal, uniform,",
        "# xavier, kaiming (as torch.nn.init); the same seed always gives the same numbers.",
        "",
        "# Labels for the rows of inputs, one per token (one string is split on spaces,",
        "# or into characters when it has none).",
        f"tokens: [{', '.join(yaml_string(t) for t in s.tokens)}]",
        "",
        f"# X: one row per token, d_model = {s.d_model} numbers each.",
        *matrix("inputs", "", f"n × d_model = {s.n} × {s.d_model}" if not inline else "n × d_model"),
        "",
    ]
    if s.context is not None:
        lines += [
            "# Cross-attention: the keys and values come from this context (one row per",
            "# source token), the queries from the inputs. Delete both keys for self-attention.",
            f"context_tokens: [{', '.join(f'c{j}' for j in range(1, s.m + 1))}]",
            *matrix("context", "", "m × d_ctx"),
            "",
        ]
    if s.pre_norm is not None:
        lines += _pre_norm(s)
    source = "d_ctx" if s.context is not None else "d_model"
    kv = "g" if s.kv_heads is not None else "h"
    lines += [
        "# Heads: each weight's columns are split into this many equal blocks, head i",
        "# taking block i (the layout of PyTorch's in-projection and of BERT).",
        f"heads: {s.heads}",
        *([] if s.kv_heads is None else [
            "# Grouped-query attention: the keys and values have only this many heads, and",
            f"# query head i (from 0) uses key/value head i // (heads / kv_heads) = i // {s.heads // s.g}",
            "# (num_key_value_heads in Hugging Face; 1 is multi-query attention).",
            f"kv_heads: {s.g}",
        ]),
        "",
        "# Projections, d_in × d_out (row vectors: Q = X·W_Q, the transpose of PyTorch's",
        "# nn.Linear.weight). Leave one out to use the identity.",
        "weights:",
        *matrix("query", "  ", "d_model × h·d_k"),
        *matrix("key", "  ", f"{source} × {kv}·d_k"),
        *matrix("value", "  ", f"{source} × {kv}·d_v"),
    ]
    if "output" in shapes:
        lines += matrix("output", "  ", "h·d_v × d_out: mixes the concatenated heads")
    else:
        lines.append(f"  # output: {{random: {init}, seed: {seeds['output']}, "
                     f"shape: [{s.d_v}, {s.d_model}]}}   # optional: h·d_v × d_out")
    if gate:
        lines += GATE_COMMENT + matrix("gate", "  ", "d_model × h·d_v")
    lines += [
        "",
        f"# Optional biases, added after each product: vectors of length h·d_k (query), {kv}·d_k",
        f"# (key), {kv}·d_v (value) and d_out (output). For example:",
        "# bias:",
        f"#   query: {{random: normal, seed: {seed + 6}, shape: [{s.heads * s.d_k}], std: 0.02}}",
        "",
        "# Scores are multiplied by the scale before the softmax: sqrt (1/√d_k), none",
        "# (1), or a number.",
        *([f"# none here (--integers): whole scores stay whole; sqrt would multiply them by 1/√{s.d_k}.",
           "scale: none"] if integers else ["scale: sqrt"]),
        "",
        "# Which keys each query may attend to: none (all), causal (query i sees keys",
        "# 1 … i; needs n = m), or an n × m matrix of 1 (may attend) and 0 (masked).",
        f"mask: {mask}",
    ]
    if qk_norm is not None:
        lines += qk_norm_lines(qk_norm, s.d_k)
    if s.rope:
        lines += _rope(s)
    lines += (sinks_lines(s.heads) if sinks else []) + (temperature_lines() if temperature else [])
    if s.pre_norm is not None:
        lines += [
            "",
            "# A pre-norm block: the output is added back to the inputs as they were",
            "# before the norm, R = X + Y (the residual of Llama's decoder layer).",
            "residual: true",
        ]
    return "\n".join(lines) + "\n"


def whole_numbers(seed: int, shape: tuple[int, int], attempt: int = 0, largest: int = 2,
                  sparse: bool = False) -> list[list[int]]:
    """Small whole numbers, −largest … largest, the same for the same seed and attempt: a matrix a learner can
    multiply by hand (attempt 0 draws from the seed alone, a later attempt from the pair).  ``sparse``: a share
    min(0.97, attempt / 250) of the entries set to 0, so that later attempts give smaller scores (W_Q and W_K of a
    wide document, whose first draws saturate the softmax).

    >>> whole_numbers(0, (2, 3))
    [[2, 1, 0], [-1, -1, -2]]
    """
    import numpy as np

    rng = np.random.default_rng(seed if attempt == 0 else [seed, attempt])
    drawn = rng.integers(-largest, largest + 1, size=shape)
    if sparse and attempt:
        drawn[rng.random(shape) < min(0.97, attempt / 250)] = 0
    return drawn.tolist()


def _pre_norm(s: Sizes) -> list[str]:
    rms = s.pre_norm == "rms"
    formula = "γ ⊙ x / √(mean(x²) + ε)" if rms else "γ ⊙ (x − mean) / √(var + ε) + β"
    lines = [
        f"# Normalise each input row before the projections: {formula}",
        "# (Llama's input_layernorm is RMSNorm; GPT-2's ln_1 is LayerNorm).",
        "# The queries are projected from the normalised rows; the keys and values from the"
        + (" context, as it is." if s.context is not None else "m too."),
        "pre_norm:",
        f"  kind: {s.pre_norm}",
        f"  eps: {'1e-6' if rms else '1e-5'}   # ε "
        f"({'rms_norm_eps' if rms else 'layer_norm_eps'} in Hugging Face configurations)",
        f"  # gamma: [...]   # d_model = {s.d_model} numbers, default ones (Gemma stores γ − 1: add 1)",
    ]
    if not rms:
        lines.append(f"  # beta: [...]    # d_model = {s.d_model} numbers, default zeros")
    return lines + [""]


def _rope(s: Sizes) -> list[str]:
    return [
        "",
        "# Rotary position embedding: each query and key (never a value) is turned, pair",
        "# of dimensions by pair, by its position times a frequency θ^(−2i/d_k). base is θ",
        "# (rope_theta); style half pairs dimension i with i + d_k/2 (Hugging Face's",
        "# rotate_half), interleaved pairs 2i with 2i + 1 (GPT-J, RoFormer). Positions are",
        "# 0 … n − 1 unless positions: [...] says otherwise.",
        "rope:",
        "  base: 10000",
        "  style: half",
        f"  # dims: {s.d_k}   # rotate only the first dims of each head (partial rotary); default d_k",
    ] + (rope_scaling_lines(s.rope, s.d_k // 2) if isinstance(s.rope, str) else [])


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
