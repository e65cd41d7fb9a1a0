"""Every matrix a result shows, in the order a person computes them, with its name and formula.

Tables, Markdown, LaTeX and CSV all show this one list, made from the stage list
(:mod:`attncli.core.stages`: each quantity's title, formula as text and LaTeX, and shape),
so a new quantity appears in every view when a stage has it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from attncli.core.stage import Quantity
from attncli.core.stages import QUANTITIES, STAGES, in_order
from attncli.core.trace import Trace
from attncli.outputs.numbers import dims
from attncli.outputs.titles import formula, phrase, title

PER_HEAD = tuple(key for key, q in QUANTITIES.items() if q.per_head)  # a matrix per head (head axis first)
KV_KEYS = tuple(key for key, q in QUANTITIES.items() if q.per_kv_head)  # one per key/value head
ON_REQUEST = ("lse",)  # in every JSON, but a table only when --only names it (a number for kernels, not for reading)


@dataclass(frozen=True)
class Block:
    """One matrix to show: its name, its formula as text and as LaTeX, and its labels."""

    key: str  # the JSON key
    name: str  # "Head 2 · Queries"
    text: str  # "Q = X·W_Q + b_Q"
    latex: str  # "Q^{(2)} = X W_Q^{(2)} + b_Q^{(2)}"
    matrix: np.ndarray
    rows: list[str]
    columns: list[str]
    masked: np.ndarray | None = None  # True = masked (scaled scores only)
    title: str = ""  # the table's title, when it is not "name  text"

    @property
    def heading(self) -> str:
        """The title of the table: ``Head 2 · Queries  Q = X·W_Q + b_Q``."""
        return self.title or f"{self.name}  {self.text}"


def blocks(trace: Trace, head: int | None = None, only: list[str] | None = None, lang: str = "en") -> list[Block]:
    """Every matrix of ``attncli compute``, in the order of the stage list; ``head`` (0-based) keeps one query head;
    the names in ``lang`` (en or zh: :mod:`attncli.outputs.titles`).

    The arrays without heads made before the scores come first (X, X̂, C, the rotary frequencies, τ), then each
    head's (W_Q, b_Q, Q …, H), then the rest.  With grouped-query heads, each key/value head's K and V come once,
    before the first query head that uses it, titled with the query heads that share it.  A projection's matrices,
    and lse, only when ``only`` names them.
    """
    from attncli.outputs.serialize import array_of, check_present

    check_present(trace, only)  # --only bias_query without a bias.query is an error, in every format
    wanted = set(only or ())
    shown = [q for q in in_order(trace.spec)
             if (not (q.parameter or q.key in ON_REQUEST) or q.key in wanted) and array_of(trace, q.key) is not None]
    early = {q.key for stage in STAGES if stage.part == "before" for q in stage.writes}  # made before the scores
    found = [b for q in shown if not q.per_head and q.key in early for b in _whole(trace, q, lang)]
    for h in range(trace.spec.heads) if head is None else [head]:
        found += [b for q in shown if q.per_head for b in _of_head(trace, q, h, head is not None, lang)]
    found += [b for q in shown if not q.per_head and q.key not in early for b in _whole(trace, q, lang, head)]
    found = [b for b in found if only is None or b.key in only]
    if trace.emulated is None:
        return found
    mark = phrase(lang, "emulated", dtype=trace.emulated)  # compute --emulate: every title says so (JSON: "emulate")
    return [replace(b, name=b.name + mark, title=b.title and b.title.replace(b.name, b.name + mark, 1))
            for b in found]


def _whole(trace: Trace, q: Quantity, lang: str, head: int | None = None) -> list[Block]:
    """The block of an array with no heads (X, X̂, C, Y, R …); the positional encoding shows X + P after P.  A
    differential pair's arrays (λ, W, O, Ô) are a block per pair, only the pair of query ``head`` when one is chosen."""
    from attncli.outputs.serialize import array_of

    spec, matrix = trace.spec, array_of(trace, q.key)
    if q.key == "positional":
        name = spec.positional_name
        return [Block("positional", phrase(lang, "positional", name=name), "P", "P", matrix, spec.tokens,
                      dims(matrix.shape[1]), title=phrase(lang, "positional_title", name=name)),
                Block("positional", phrase(lang, "with_positions"), "X + P", "X + P", spec.embedded, spec.tokens,
                      dims(spec.embedded.shape[1]))]
    if q.shape == "p" or q.shape.startswith("p "):  # differential attention: pair p is heads p and p + h/2
        return _of_pairs(q, matrix, spec, lang, head)
    if matrix.ndim == 3:  # a weight's gradient, given per head as the weight was (h × d_in × d): a block a head
        return [_block(q, phrase(lang, "head", h=h + 1) + title(q.key, q.title, lang), matrix[h], spec,
                       lambda s, h=h: f"{s}^{{({h + 1})}}", lang=lang) for h in range(matrix.shape[0])]
    masked = np.isneginf(matrix) if q.masked else None  # the indexer's I: −inf where the document's mask says no
    return [_block(q, title(q.key, q.title, lang), matrix, spec, lambda s: s, masked, lang=lang)]


def _of_pairs(q: Quantity, matrix: np.ndarray, spec, lang: str, head: int | None) -> list[Block]:
    """A block per pair of heads of W, O, Ô (p × n × …); λ (p) as one row, a column a pair.  With a chosen query
    ``head`` (0-based), only the pairs it has a part in: the pair its softmax belongs to (pair k + 1 is heads k + 1
    and k + h/2 + 1) and the pair whose numbers its head output shows (H's heads 2k + 1 and 2k + 2)."""
    half = spec.heads // 2
    pairs = range(matrix.shape[0]) if head is None else sorted({head % half, head // 2})
    name = lambda k: phrase(lang, "pair", p=k + 1, a=k + 1, b=k + half + 1)  # noqa: E731
    if matrix.ndim == 1:  # λ: one number a pair
        if head is None:
            return [_block(q, title(q.key, q.title, lang), matrix, spec, lambda s: s, lang=lang)]
        return [replace(_block(q, title(q.key, q.title, lang), matrix[pairs], spec, lambda s: s, lang=lang),
                        columns=[str(k + 1) for k in pairs])]
    return [_block(q, name(k) + title(q.key, q.title, lang), matrix[k], spec, lambda s, k=k: f"{s}^{{({k + 1})}}",
                   lang=lang) for k in pairs]


def _of_head(trace: Trace, q: Quantity, h: int, chosen: bool, lang: str) -> list[Block]:
    """The block of query head h (0-based) of a per-head array; of its key/value head for K, V, K′, W_K … (once per
    group of query heads, unless the head was ``chosen``)."""
    from attncli.outputs.serialize import array_of

    spec = trace.spec
    h_all, g = spec.heads, spec.kv_heads
    group = h_all // g
    prefix = phrase(lang, "head", h=h + 1) if h_all > 1 else ""
    up = (lambda s: f"{s}^{{({h + 1})}}") if h_all > 1 else (lambda s: s)
    if q.per_kv_head and g < h_all:
        if h % group and not chosen:
            return []  # shown with the first query head of its group
        j = h // group
        prefix = phrase(lang, "kv_head", j=j + 1, a=j * group + 1, b=(j + 1) * group)
        up = lambda s: f"{s}^{{[{j + 1}]}}"  # noqa: E731
        h = j
    return [_block(q, f"{prefix}{title(q.key, q.title, lang)}", array_of(trace, q.key)[h], spec, up,
                   None if not q.masked or spec.allowed is None else ~spec.allowed[h], lang)]


def _block(q: Quantity, name: str, matrix: np.ndarray, spec, up, masked: np.ndarray | None = None,
           lang: str = "en") -> Block:
    """One matrix with its rows and columns labelled from its shape: tokens, context tokens or dimensions; the
    words of its formula in ``lang``."""
    text = formula(q.text(spec), lang)
    title = f"{name}  {text}{formula(q.note(spec), lang)}" if q.note is not None and q.note(spec) else ""
    if matrix.ndim == 1 and q.shape.endswith(" n"):  # one number per query of a head (σ, lse): a column beside them
        column = matrix.reshape(-1, 1)  # lse is −inf for a query with no key: no number, as JSON's null
        return Block(q.key, name, text, q.latex(spec, up), column, spec.tokens, [q.symbol], np.isneginf(column), title)
    if matrix.ndim <= 1:  # a bias, the rotary frequencies, one number per token (τ): one row (a number: one cell)
        columns = spec.tokens if q.shape == "n" else dims(matrix.size)
        row = q.symbol or q.text(spec).split(" = ")[0]  # (a vector without a symbol of its own: dγ = dL/dγ's dγ)
        return Block(q.key, name, text, q.latex(spec, up), matrix.reshape(1, -1), [row], columns, title=title)
    axes = q.shape.split()[-2:]
    if len(axes) < 2:  # one vector a head where the quantity is one vector (qk_norm's γ per head, its gradient)
        axes = ["h", *axes]
    labels = {"n": spec.tokens, "m": spec.context_tokens, "h": [f"head {i}" for i in dims(matrix.shape[0])]}
    rows = labels.get(axes[0]) or dims(matrix.shape[0])
    columns = labels.get(axes[1]) or dims(matrix.shape[1])
    return Block(q.key, name, text, q.latex(spec, up), matrix, rows, columns, masked, title)
