"""``attncli init``'s document written out for sizes already checked (:func:`attncli.teach.starter.sizes`): its keys
and matrices, and its comments in the language asked, each from an id of the ``starter`` table of the texts' files
(:mod:`attncli.teach.starter_words`)."""

from __future__ import annotations

from dataclasses import dataclass

from attncli.outputs.yamltext import yaml_string
from attncli.teach.starter_rope import rope_scaling_lines
from attncli.teach.starter_stages import gate_comment, qk_norm_lines, sinks_lines, temperature_lines
from attncli.teach.starter_words import comment, listed, words


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


def shape_table(s: Sizes, n: int) -> dict[str, tuple[int, int]]:
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


@dataclass(frozen=True)
class Choices:
    """What ``init`` was asked for besides the sizes (checked by :mod:`attncli.teach.starter`)."""
    mask: str = "none"
    init: str = "xavier"
    seed: int = 0
    inline: bool = False
    qk_norm: str | None = None
    integers: bool = False
    sinks: bool = False
    gate: bool = False
    temperature: bool = False
    attempt: int = 0  # k > 0: the whole numbers drawn again (see whole_numbers)
    lang: str = "en"  # the comments' language


def text(s: Sizes, c: Choices) -> str:
    """The document's text."""
    t = words(c.lang)
    shapes = shape_table(s, s.n) | ({"gate": (s.d_model, s.heads * s.d_v)} if c.gate else {})
    matrix = _matrices(shapes, c)
    lines = _head(s, c, t) + matrix("inputs", "", f"n × d_model = {s.n} × {s.d_model}" if not c.inline
                                    else "n × d_model") + [""]
    if s.context is not None:
        lines += [*comment(t["context"]), f"context_tokens: [{', '.join(f'c{j}' for j in range(1, s.m + 1))}]",
                  *matrix("context", "", "m × d_ctx"), ""]
    if s.pre_norm is not None:
        lines += _pre_norm(s, t)
    lines += _weights(s, c, t, matrix, "output" in shapes) + _settings(s, c, t)
    if c.qk_norm is not None:
        lines += qk_norm_lines(c.qk_norm, s.d_k, t)
    if s.rope:
        lines += _rope(s, t)
    lines += (sinks_lines(s.heads, t) if c.sinks else []) + (temperature_lines(t) if c.temperature else [])
    if s.pre_norm is not None:
        lines += ["", *comment(t["residual"]), "residual: true"]
    return "\n".join(lines) + "\n"


def _matrices(shapes: dict[str, tuple[int, int]], c: Choices):
    """``matrix(name, indent, note)``: the lines of one matrix, a random spec, or its numbers written out."""
    t = words(c.lang)
    seeds = {"inputs": c.seed, "query": c.seed + 1, "key": c.seed + 2, "value": c.seed + 3, "output": c.seed + 4,
             "context": c.seed + 5, "gate": c.seed + 7}
    kinds = {name: ("normal" if name in ("inputs", "context") else c.init) for name in shapes}

    def matrix(name: str, indent: str, note: str) -> list[str]:
        spec = f"{{random: {kinds[name]}, seed: {seeds[name]}, shape: [{shapes[name][0]}, {shapes[name][1]}]}}"
        if c.integers:
            largest, sparse = (1, True) if name in ("query", "key") else (2, False)
            rows = whole_numbers(seeds[name], shapes[name], c.attempt, largest, sparse)
            return [f"{indent}{name}:   # {t['whole'].format(comment=note)}",
                    *(f"{indent}  - [{', '.join(str(x) for x in row)}]" for row in rows)]
        if not c.inline:
            return [f"{indent}{name + ':':<{7 if indent else 0}} {spec}   # {note}"]
        from attncli.inputs.initialisers import random_matrix

        values = random_matrix({"random": kinds[name], "seed": seeds[name], "shape": list(shapes[name])}, None)
        lines = [f"{indent}{name}:   # {t['numbers_of'].format(comment=note, spec=spec)}"]
        return lines + [f"{indent}  - [{', '.join(repr(float(x)) for x in row)}]" for row in values]

    return matrix


def _head(s: Sizes, c: Choices, t: dict) -> list[str]:
    """The comments at the top (what the document is, its sizes, how a matrix is written), and the tokens."""
    kind = t["kind"]["cross" if s.context is not None else "self"]
    heads = t["heads"]["many" if s.heads > 1 else "one"].format(n=s.heads)
    modern = _modern(s, c, t["modern_items"])
    dims = ", ".join([f"d_model = {s.d_model}", f"h = {s.heads}", *([f"g = {s.g}"] if s.kv_heads is not None else []),
                      f"d_k = {s.d_k}", f"d_v = {s.d_v}"])
    context = t["sizes_context"].format(m=s.m) if s.context else ""
    return [
        *comment(t["title"], kind=kind, heads=heads),
        f"#   attncli compute FILE     {t['compute']}",
        f"#   attncli heatmap FILE     {t['heatmap']}",
        *(listed(t, modern) if modern else []),
        *comment(t["sizes"], n=s.n, context=context, dims=dims),
        "#",
        *comment(t["matrices"]),
        "",
        *comment(t["tokens"]),
        f"tokens: [{', '.join(yaml_string(token) for token in s.tokens)}]",
        "",
        *comment(t["inputs"], d_model=s.d_model),
    ]


def _modern(s: Sizes, c: Choices, items: dict) -> list[str]:
    """The items of "As in today's models: …", those of today's stages the document has."""
    kv = items["kv_heads_many" if s.g > 1 else "kv_heads_one"].format(g=s.g)
    norm = items["pre_norm"].format(norm="RMSNorm" if s.pre_norm == "rms" else "LayerNorm")
    return [text for text, on in ((kv, s.kv_heads), (items["rope"], s.rope), (norm, s.pre_norm),
                                  (items["qk_norm"], c.qk_norm), (items["sinks"], c.sinks), (items["gate"], c.gate),
                                  (items["temperature"], c.temperature)) if on]


def _weights(s: Sizes, c: Choices, t: dict, matrix, output: bool) -> list[str]:
    """The heads (and key/value heads), and the projections' weights."""
    source = "d_ctx" if s.context is not None else "d_model"
    kv = "g" if s.kv_heads is not None else "h"
    lines = [*comment(t["heads_split"]), f"heads: {s.heads}"]
    if s.kv_heads is not None:
        lines += [*comment(t["kv_heads"], ratio=s.heads // s.g), f"kv_heads: {s.g}"]
    lines += ["", *comment(t["projections"]), "weights:", *matrix("query", "  ", "d_model × h·d_k"),
              *matrix("key", "  ", f"{source} × {kv}·d_k"), *matrix("value", "  ", f"{source} × {kv}·d_v")]
    if output:
        lines += matrix("output", "  ", t["output"])
    else:
        lines.append(f"  # output: {{random: {c.init}, seed: {c.seed + 4}, "
                     f"shape: [{s.d_v}, {s.d_model}]}}   # {t['output_optional']}")
    if c.gate:
        lines += gate_comment(t) + matrix("gate", "  ", "d_model × h·d_v")
    return lines


def _settings(s: Sizes, c: Choices, t: dict) -> list[str]:
    """The biases (an example, commented out), the scale and the mask."""
    kv = "g" if s.kv_heads is not None else "h"
    return [
        "",
        *comment(t["biases"], kv=kv),
        "# bias:",
        f"#   query: {{random: normal, seed: {c.seed + 6}, shape: [{s.heads * s.d_k}], std: 0.02}}",
        "",
        *comment(t["scale"]),
        *([*comment(t["scale_integers"], d_k=s.d_k), "scale: none"] if c.integers else ["scale: sqrt"]),
        "",
        *comment(t["mask"]),
        f"mask: {c.mask}",
    ]


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


def _pre_norm(s: Sizes, t: dict) -> list[str]:
    rms = s.pre_norm == "rms"
    formula = "γ ⊙ x / √(mean(x²) + ε)" if rms else "γ ⊙ (x − mean) / √(var + ε) + β"
    lines = [
        *comment(t["pre_norm"], formula=formula),
        *comment(t["pre_norm_context" if s.context is not None else "pre_norm_self"]),
        "pre_norm:",
        f"  kind: {s.pre_norm}",
        f"  eps: {'1e-6' if rms else '1e-5'}   # {t['eps'].format(name='rms_norm_eps' if rms else 'layer_norm_eps')}",
        f"  # gamma: [...]   # {t['gamma'].format(d_model=s.d_model)}",
    ]
    if not rms:
        lines.append(f"  # beta: [...]    # {t['beta'].format(d_model=s.d_model)}")
    return lines + [""]


def _rope(s: Sizes, t: dict) -> list[str]:
    return [
        "",
        *comment(t["rope"]),
        "rope:",
        "  base: 10000",
        "  style: half",
        f"  # dims: {s.d_k}   # {t['rope_dims']}",
    ] + (rope_scaling_lines(s.rope, s.d_k // 2, t) if isinstance(s.rope, str) else [])
