"""``attncli init``: a ready-to-edit, commented document that always computes.

Matrices are seeded random specs by default (short, and the same numbers every
time), or written out in full (``inline``) with every float's exact ``repr``, so
the written numbers are the ones a random spec with that seed would give.

>>> print(document(tokens="a b", d_model=2).splitlines()[-1])
mask: none
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from attncli.core.errors import AttnError, shape_str, shorten

INITS = ("xavier", "kaiming", "normal", "uniform")
MASKS = ("none", "causal")
INLINE_LIMIT = 1_000_000  # numbers --inline will write out
RANDOM_LIMIT = 2**31  # cells of one random matrix (as attncli.inputs.matrices allows)
MAX_SEED = 2**63 - 7  # seeds --seed … --seed + 6 are written
_PLAIN = re.compile(r"[^\s\-?:,\[\]{}#&*!|>'\"%@`][^,\[\]{}#:]*")
_RESERVED = {"null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", ".nan", ".inf", "-.inf"}


@dataclass(frozen=True)
class Sizes:
    tokens: list[str]
    d_model: int
    d_k: int
    d_v: int
    heads: int
    context: int | None  # m context rows for cross-attention; None: self-attention

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def m(self) -> int:
        return self.n if self.context is None else self.context


def sizes(tokens: str | None = None, n: int | None = None, d_model: int = 4, d_k: int | None = None,
          d_v: int | None = None, heads: int = 1, context: int | None = None, mask: str = "none") -> Sizes:
    """Check the options together; every problem names the option to change."""
    for name, value in (("--n", n), ("--d-model", d_model), ("--d-k", d_k), ("--d-v", d_v), ("--heads", heads), ("--context", context)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise AttnError(f"{value!r} is not a whole number ≥ 1", name)
    if mask not in MASKS:
        raise AttnError(f"{shorten(mask)!r} is not one of {', '.join(MASKS)}", "--mask")
    if n is not None and n * d_model > RANDOM_LIMIT:  # before n labels are made
        raise AttnError(f"a {shape_str((n, d_model))} matrix of inputs is too large to generate (more than 2^31 numbers)", "--n")
    if tokens is not None:
        try:
            tokens.encode("utf-8")
        except UnicodeEncodeError:  # bytes that are not UTF-8 on the command line (Python keeps them as surrogates)
            raise AttnError("is not valid UTF-8 text", "--tokens") from None
        labels = tokens.split() if re.search(r"\s", tokens.strip()) else list(tokens.strip())
        if not labels:
            raise AttnError("is empty; give the words (split on spaces) or characters to label", "--tokens")
        if n is not None and n != len(labels):
            shown = ", ".join(shorten(label, 20) for label in labels[:8]) + (", …" if len(labels) > 8 else "")
            raise AttnError(f"is {shorten(n)} but --tokens gives {len(labels)} tokens ({shown})", "--n")
    else:
        labels = [f"x{i}" for i in range(1, (n or 3) + 1)] if n is not None else ["Evan's", "dog", "Riley"]
    if d_k is None and d_model % heads:
        raise AttnError(f"d_model {shorten(d_model)} is not divisible by {shorten(heads)} heads; give --d-k (the width of each head) "
                        "or a --d-model that divides", "--heads")
    d_k = d_k or d_model // heads
    s = Sizes(labels, d_model, d_k, d_v or d_k, heads, context)
    if mask == "causal" and s.m != s.n:
        raise AttnError(f"needs as many keys as queries, but --context {shorten(context)} gives {shorten(context)} keys for {s.n} tokens",
                        "--mask causal")
    for name, shape in _shapes(s).items():
        if math.prod(shape) > RANDOM_LIMIT:
            option = {"inputs": "--n", "context": "--context"}.get(name, "--d-model")
            raise AttnError(f"a {shape_str(shape)} matrix is too large to generate (more than 2^31 numbers)", option)
    return s


def _shapes(s: Sizes) -> dict[str, tuple[int, int]]:
    shapes = {"inputs": (s.n, s.d_model)}
    if s.context is not None:
        shapes["context"] = (s.m, s.d_model)
    shapes |= {"query": (s.d_model, s.heads * s.d_k), "key": (s.d_model, s.heads * s.d_k), "value": (s.d_model, s.heads * s.d_v)}
    if s.heads > 1:
        shapes["output"] = (s.heads * s.d_v, s.d_model)
    return shapes


def document(tokens: str | None = None, n: int | None = None, d_model: int = 4, d_k: int | None = None,
             d_v: int | None = None, heads: int = 1, context: int | None = None, mask: str = "none",
             init: str = "xavier", seed: int = 0, inline: bool = False) -> str:
    """The commented YAML document for these options (see ``attncli init --help``)."""
    s = sizes(tokens, n, d_model, d_k, d_v, heads, context, mask)
    if init not in INITS:
        raise AttnError(f"{shorten(init)!r} is not one of {', '.join(INITS)}", "--init")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise AttnError(f"{seed!r} is not a whole number ≥ 0", "--seed")
    if seed > MAX_SEED:  # the bias example takes seed + 6; a document's seeds stay below 2^63
        raise AttnError(f"{shorten(seed)} is too large: the seeds of the matrices must stay below 2^63, so at most {MAX_SEED}", "--seed")
    shapes = _shapes(s)
    if inline and sum(math.prod(shape) for shape in shapes.values()) > INLINE_LIMIT:
        raise AttnError(f"would write more than {INLINE_LIMIT:,} numbers; leave out --inline for seeded random specs", "--inline")
    seeds = {"inputs": seed, "query": seed + 1, "key": seed + 2, "value": seed + 3, "output": seed + 4, "context": seed + 5}
    kinds = {name: ("normal" if name in ("inputs", "context") else init) for name in shapes}

    def matrix(name: str, indent: str, comment: str) -> list[str]:
        spec = f"{{random: {kinds[name]}, seed: {seeds[name]}, shape: [{shapes[name][0]}, {shapes[name][1]}]}}"
        if not inline:
            return [f"{indent}{name + ':':<{7 if indent else 0}} {spec}{'   # ' + comment if comment else ''}"]
        from attncli.inputs.initialisers import random_matrix

        values = random_matrix({"random": kinds[name], "seed": seeds[name], "shape": list(shapes[name])}, None)
        lines = [f"{indent}{name}:   # {comment + ', ' if comment else ''}the numbers of {spec}"]
        return lines + [f"{indent}  - [{', '.join(repr(float(x)) for x in row)}]" for row in values]

    kind = "cross-attention" if s.context is not None else "self-attention"
    heads_text = f"{s.heads} head{'s' if s.heads > 1 else ''}"
    lines = [
        f"# An attention document from `attncli init`: {kind}, {heads_text}. Edit anything, then",
        "#   attncli compute FILE     every intermediate, step by step",
        "#   attncli heatmap FILE     the attention weights as a picture",
        f"# Sizes: n = {s.n} tokens{f', m = {s.m} context rows' if s.context else ''}, d_model = {s.d_model}, "
        f"h = {s.heads}, d_k = {s.d_k}, d_v = {s.d_v}.",
        "#",
        "# A matrix is written out as rows ([[1, 0], [0, 1]]), read from a file relative",
        "# to this document (.csv, .tsv, .txt, .npy), or drawn at random with a seed:",
        "# {random: KIND, seed: S, shape: [rows, columns]}, KIND one of normal, uniform,",
        "# xavier, kaiming (as torch.nn.init); the same seed always gives the same numbers.",
        "",
        "# Labels for the rows of inputs, one per token (one string is split on spaces,",
        "# or into characters when it has none).",
        f"tokens: [{', '.join(_yaml_str(t) for t in s.tokens)}]",
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
    source = "d_ctx" if s.context is not None else "d_model"
    lines += [
        "# Heads: each weight's columns are split into this many equal blocks, head i",
        "# taking block i (the layout of PyTorch's in-projection and of BERT).",
        f"heads: {s.heads}",
        "",
        "# Projections, d_in × d_out (row vectors: Q = X·W_Q, the transpose of PyTorch's",
        "# nn.Linear.weight). Leave one out to use the identity.",
        "weights:",
        *matrix("query", "  ", "d_model × h·d_k"),
        *matrix("key", "  ", f"{source} × h·d_k"),
        *matrix("value", "  ", f"{source} × h·d_v"),
    ]
    if "output" in shapes:
        lines += matrix("output", "  ", "h·d_v × d_out: mixes the concatenated heads")
    else:
        lines.append(f"  # output: {{random: {init}, seed: {seeds['output']}, shape: [{s.d_v}, {s.d_model}]}}   # optional: h·d_v × d_out")
    lines += [
        "",
        "# Optional biases, added after each product: vectors of length h·d_k (query,",
        "# key), h·d_v (value) and d_out (output). For example:",
        "# bias:",
        f"#   query: {{random: normal, seed: {seed + 6}, shape: [{s.heads * s.d_k}], std: 0.02}}",
        "",
        "# Scores are multiplied by the scale before the softmax: sqrt (1/√d_k), none",
        "# (1), or a number.",
        "scale: sqrt",
        "",
        "# Which keys each query may attend to: none (all), causal (query i sees keys",
        "# 1 … i; needs n = m), or an n × m matrix of 1 (may attend) and 0 (masked).",
        f"mask: {mask}",
    ]
    return "\n".join(lines) + "\n"


def _yaml_str(text: str) -> str:
    """A token as YAML: plain when that reads back as the same string, else double-quoted."""
    plain = _PLAIN.fullmatch(text) and text == text.strip() and text.lower() not in _RESERVED and not _numeric(text)
    if plain and text.isprintable():
        return text
    import json

    # a JSON string is a YAML double-quoted scalar; DEL and the C1 controls, which JSON leaves raw, escaped too
    # (YAML refuses them raw, and a terminal showing the document would act on them)
    return re.sub("[\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


def _numeric(text: str) -> bool:
    try:
        float(text.replace("_", ""))
    except ValueError:
        return bool(re.fullmatch(r"[-+]?(0x[0-9a-fA-F]+|0o[0-7]+|\.inf|\.nan)", text, re.I))
    return True

