"""Heat maps of the n × m attention matrices.

Query tokens run down the side, key tokens across the top.  On a terminal each
cell is coloured on the scale of :mod:`attncli.views.colours` (the one the
tables of ``compute`` use, readable on dark and light backgrounds); without colour (``NO_COLOR``, a pipe, a
``.txt`` export, or a terminal of 8 or 16 colours) it is drawn with the shades `` ░▒▓█`` so the picture survives
copy and paste.  The signed quantities (the gradients, differential attention's W = A₁ − λ·A₂) are coloured on a
scale centred on 0 instead; W is drawn a pair of heads at a time.
Masked cells are hatched ``╱╱`` either way.  With sinks, the weights' map has one more
column after a bar, ``sink``: the share of each row that went to the sink (the row's weights sum to 1 − it).
One head is drawn large with its numbers; several heads as small multiples on one shared scale.
"""

from __future__ import annotations

from copy import copy
from dataclasses import dataclass, replace

import numpy as np
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text

from attncli.core.errors import visible
from attncli.core.formulas import bias_text, scale_text, score_formula, weights_formula
from attncli.core.trace import Trace
from attncli.outputs.numbers import format_number, pick
from attncli.views.colours import FEW_COLOURS, heat_style, signed_style, signed_swatches, swatches
from attncli.views.heatmap_grid import LABEL_WIDTH, choose, fit, numbered_rows, panels
from attncli.views.words import words

SHADES = " ░▒▓█"
HATCH = "╱"
KEY_CELLS_ONE, KEY_CELLS_MANY = 12, 6  # widest column: longer key labels become numbers, named in a key line
MAX_ONE, EDGE_ONE = 24, 10  # one head: beyond 24 rows or columns, show 10 at each end
MAX_MANY, EDGE_MANY = 16, 6  # small multiples
QUANTITIES = ("weights", "scores", "scaled_scores", "score_bias", "grad_weights", "grad_scaled_scores",
              "differential_weights")
# a gradient's sign is its meaning (which way the loss moves), a differential weight's whether the pair's value is
# added or taken away: drawn on a scale centred on 0. (A score's zero means nothing to softmax, which only sees
# differences: scores keep the scale from their smallest to their largest.)
SIGNED = ("grad_weights", "grad_scaled_scores", "differential_weights")
PAIRED = ("differential_weights",)  # (p, n, m): one matrix per pair of heads, pair k = heads k and k + h/2


@dataclass(frozen=True)
class Scale:
    """Values lo … hi mapped onto 0 … 1."""

    lo: float
    hi: float

    def t(self, x: float) -> float:
        return float(min(max((x - self.lo) / (self.hi - self.lo), 0.0), 1.0)) if self.hi > self.lo else 0.5


def shade(t: float) -> str:
    return SHADES[min(int(t * len(SHADES)), len(SHADES) - 1)]


class HeatMap:
    """The heat map of ``of`` (weights, scores or scaled_scores) for one head (0-based) or all of them, its words
    in ``lang`` (en or zh: :mod:`attncli.views.words`)."""

    def __init__(self, trace: Trace, of: str = "weights", head: int | None = None, full: bool = False,
                 color: bool = True, precision: int = 2, lang: str = "en", layer: str = ""):
        self.spec, self.of, self.full, self.color, self.precision = trace.spec, of, full, color, precision
        self.signed = of in SIGNED  # coloured by sign around 0
        self.layer = layer  # a stacked document's layer, before the title: "Layer 2 · "
        self.words = words(lang)
        tokens, context_tokens = ([visible(t) for t in labels]
                                  for labels in (self.spec.tokens, self.spec.context_tokens))
        self.spec = replace(self.spec, tokens=tokens, context_tokens=context_tokens)  # labels safe for a terminal
        self.matrices: np.ndarray = getattr(trace, of)  # (h, n, m); a pair's: (p, n, m)
        self.sinks = trace.sink_weights if of == "weights" else None  # (h, n): a column beside the weights
        self.paired = of in PAIRED  # "heads" below are then the pairs: --head N draws head N's pair
        count = self.matrices.shape[0]
        self.heads = list(range(count)) if head is None else [head % count]
        allowed = self.spec.allowed
        if self.paired:
            self.words = {**self.words, "head": self.words["pair"], "heads": self.words["pairs"],
                          "tall": self.words["tall_pairs"]}
            allowed = None if allowed is None else allowed[:count] | allowed[count:]  # masked in both heads
        self.masked = np.zeros(self.matrices.shape, bool) if allowed is None else ~allowed  # (h, n, m)
        self.scale = self._scale()
        key_w = max(cell_len(t) for t in self.spec.context_tokens)
        self.numbered = key_w + 1 > (KEY_CELLS_MANY if len(self.heads) > 1 else KEY_CELLS_ONE)

    @property
    def min_lines(self) -> int:
        """Lines it takes at least (a picture too large is refused before the layout): with --full, a line per query."""
        return self.spec.n if self.full else 0

    def _scale(self) -> Scale:
        """From the smallest to the largest unmasked value of the heads drawn (read in place:
        no copy of the matrices)."""
        allowed = ~self.masked
        if not any(allowed[h].any() for h in self.heads):
            return Scale(0.0, 1.0)
        lo = min(float(self.matrices[h].min(where=allowed[h], initial=np.inf)) for h in self.heads)
        hi = max(float(self.matrices[h].max(where=allowed[h], initial=-np.inf)) for h in self.heads)
        if self.signed:  # −max|x| … max|x|: 0 in the middle, uncoloured
            return Scale(-max(abs(lo), abs(hi)), max(abs(lo), abs(hi)))
        return Scale(min(lo, 0.0), hi) if self.of == "weights" else Scale(lo, hi)

    # -- what is shown

    def title(self) -> str:
        spec, w = self.spec, self.words
        formula = {
            "weights": weights_formula(spec), "scores": score_formula(spec), "scaled_scores": scale_text(spec),
            "score_bias": bias_text(spec) if spec.score_bias is not None else "",
            "grad_weights": "dA = dH·Vᵀ", "grad_scaled_scores": "dZ = A ⊙ (dA − D)",
            "differential_weights": "W = A₁ − λ·A₂",
        }[self.of]
        formula = f"{w[self.of]}  {formula}" if formula else ""
        sizes = w["sizes"].format(n=spec.n, m=spec.m)
        if self.paired:  # pair k + 1: heads k + 1 and k + 1 + h/2
            count = self.matrices.shape[0]
            which = (w["pair_of"].format(h=self.heads[0] + 1, heads=count, a=self.heads[0] + 1,
                                         b=self.heads[0] + count + 1) if len(self.heads) == 1
                     else w["heads"].format(heads=count))
            return self.layer + "   ".join((formula, which, sizes))
        which = w["head_of"].format(h=self.heads[0] + 1, heads=spec.heads) if len(self.heads) == 1 and spec.heads > 1 \
            else (w["heads"].format(heads=spec.heads) if spec.heads > 1 else "")
        if spec.kv_heads < spec.heads:  # grouped-query: each query head is drawn, with the K/V head it uses
            group = spec.heads // spec.kv_heads
            which += (w["kv_head_of"].format(j=self.heads[0] // group + 1, g=spec.kv_heads) if len(self.heads) == 1
                      else w["sharing_many" if spec.kv_heads > 1 else "sharing"].format(g=spec.kv_heads))
        return self.layer + "   ".join(part for part in (formula, which, sizes) if part)

    def title_lines(self, width: int) -> list[str]:
        """The title in lines of at most ``width`` columns, broken between its parts (formula, heads, sizes), and a
        formula too wide after its commas, so that many heads on a narrow terminal cut none of it off."""
        lines: list[str] = []
        joins = False  # whether the next part may join the last line (not the end of a formula cut in pieces)
        for part in self.title().split("   "):
            if joins and cell_len(lines[-1]) + 3 + cell_len(part) <= width:
                lines[-1] += "   " + part
            elif cell_len(part) <= width:
                lines.append(part)
            else:  # "A = …,  Z = …": the formula's own pieces, each on a line of its own
                lines.extend(piece + "," for piece in part.split(",  "))
                lines[-1] = lines[-1][:-1]
            joins = cell_len(part) <= width
        return lines

    def cell(self, value: float, masked: bool, width: int, number: bool) -> Text:
        if masked:  # beside numbers without colour, a space first (as before the shades of a number)
            return Text(HATCH * width, style="grey50") if self.color or not number else Text(" " + HATCH * (width - 1))
        t = self.scale.t(value)
        text = format_number(value, self.precision) if number else ""
        if self.signed:  # shaded by size; the colour (or the number) says the sign
            s = 2 * t - 1  # −1 … 1
            if self.color:
                return Text(text.center(width), style=signed_style(s))
            t = abs(s)
            if value < 0 and not number and shade(t) != " ":  # no colour, no number: a − before the shade
                return Text("−" + shade(t) * (width - 1))
        if self.color:
            return Text(text.center(width), style=heat_style(t))
        if number:  # two shade characters, then the number
            return Text(" " + shade(t) * 2 + text.rjust(width - 3))
        return Text(shade(t) * width)

    def column_labels(self) -> list[str]:
        """The key labels across the top: the tokens, or 1 … m when they are too long (see key_lines)."""
        tokens = self.spec.context_tokens
        return [str(j) for j in range(1, len(tokens) + 1)] if self.numbered else [" ".join(t.split()) for t in tokens]

    def cell_width(self, many: bool) -> int:
        """Terminal cells per matrix cell: room for the widest column label (and the numbers of one head).

        The numbers are those that can be shown (every one only with ``full``), not the whole matrix.
        """
        key_w = max(cell_len(t) for t in self.column_labels())
        if many:
            return 2 if key_w <= 2 else key_w + 1
        matrix, masked = self.matrices[self.heads[0]], self.masked[self.heads[0]]
        rows = [i for i in pick(self.spec.n, MAX_ONE, EDGE_ONE, self.full) if i is not None]
        # panel() shows these or fewer
        cols = [j for j in pick(self.spec.m, MAX_ONE, EDGE_ONE, self.full) if j is not None]
        shown = matrix[np.ix_(rows, cols)][~masked[np.ix_(rows, cols)]] if not self.full else matrix[~masked]
        numbers = max((len(format_number(x, self.precision)) for x in shown), default=1)
        return max(numbers + (4 if not self.color else 2), key_w + 1)

    def panel(self, head: int, many: bool, room: int) -> list[Text]:
        """The lines of one head's grid, at most ``room`` cells wide: a title line, the key labels, one line per query.

        With ``full``, keys that do not fit side by side come in further blocks of columns below, each headed
        "keys a–b of m" (as compute --full does): every cell is drawn, none is cut off at the edge.
        """
        spec = self.spec
        limit, edge = (MAX_MANY, EDGE_MANY) if many else (MAX_ONE, EDGE_ONE)
        label_w = min(max(cell_len(t) for t in spec.tokens), LABEL_WIDTH)
        width = self.cell_width(many)
        fits = max(1, (room - label_w - 1 - (width + 2 if self.sinks is not None else 0)) // width)
        if self.full and spec.m > fits:
            blocks = [list(range(a, min(a + fits, spec.m))) for a in range(0, spec.m, fits)]
        else:
            blocks = [pick(spec.m, limit, edge, self.full, fits=fits)]
        lines = [Text(fit(self.words["head"].format(h=head + 1), label_w + 1 + width * len(blocks[0])), style="bold")
                 ] if many else []
        for b, cols in enumerate(blocks):
            if len(blocks) > 1:
                lines += [Text("")] if b else []
                keys = self.words["keys_of"].format(a=cols[0] + 1, b=cols[-1] + 1, m=spec.m)
                lines.append(Text(keys, style="dim" if self.color else ""))
            lines += self._grid(head, many, label_w, width, pick(spec.n, limit, edge, self.full), cols)
        return lines

    def limits(self, many: bool) -> tuple[int, int]:
        """Rows or columns shown at most, and at each end beyond that (without ``full``)."""
        return (MAX_MANY, EDGE_MANY) if many else (MAX_ONE, EDGE_ONE)

    def cells(self, head: int, i: int | None, cols: list, width: int, numbers: bool = False) -> Text:
        """Query ``i``'s cells of ``cols`` (None: left out; ``i`` None: the ``⋮`` line), and its sink's."""
        line = Text()
        for j in cols:
            if i is None or j is None:
                line.append(("⋮" if i is None else "…").center(width))
            else:
                line.append_text(self.cell(self.matrices[head][i, j], bool(self.masked[head, i, j]), width, numbers))
        if self.sinks is not None:
            line.append(" │")
            line.append_text(Text("⋮".center(width)) if i is None else
                             self.cell(self.sinks[head, i], False, width, numbers))
        return line

    def _grid(self, head: int, many: bool, label_w: int, width: int, rows: list, cols: list) -> list[Text]:
        """The key labels, then one line per query: the cells of ``rows`` × ``cols`` (None: the ones left out)."""
        spec, labels = self.spec, self.column_labels()
        header = Text(" " * (label_w + 1), style="bold")
        align = "center" if self.color and not many else "right" if not many else "left"
        for j in cols:
            header.append(fit("…", width, "center") if j is None else fit(labels[j], width, align))
        if self.sinks is not None:
            header.append(" │" + fit(self.words["sink"] if width >= 4 else "σ", width, align))
        lines = [header]
        for i in rows:
            label = "⋮" if i is None else spec.tokens[i]
            line = Text.assemble((fit(label, label_w) + " ", "bold" if i is not None else ""),  # bold: the label only
                                 no_wrap=True, overflow="crop")
            line.append_text(self.cells(head, i, cols, width, not many))
            lines.append(line)
        return lines

    def key_lines(self, room: int, numbered: bool | None = None) -> list[Text]:
        """With numbered columns: which token each number stands for, broken between entries to fit ``room``."""
        if not (self.numbered if numbered is None else numbered):
            return []
        names = [f"{j} {' '.join(t.split())}" for j, t in enumerate(self.spec.context_tokens, 1)]
        start = self.words["keys"]
        lines = [start + names[0]]
        for name in names[1:]:
            if cell_len(lines[-1]) + 3 + cell_len(name) <= room:
                lines[-1] += " · " + name
            else:
                lines.append(" " * cell_len(start) + name)
        return [Text(line) for line in lines]

    def legend(self, room: int = 200, by_number: bool = False, hint: str = "") -> list[Text]:
        """The colour (or shade) scale, the masked mark and what rows and columns are, in lines of ``room`` cells.

        ``by_number``: the rows and columns are numbered alike; ``hint``: a last line (what to do when it is too tall).
        """
        w = self.words
        bar = Text(w["scale"] + format_number(self.scale.lo, self.precision) + " ")
        if self.signed:
            bar.append_text(self._signed_bar())
        elif self.color:
            bar.append("▕")
            for style in swatches():  # the uncoloured low end marked, or it would not show
                bar.append("  " if style else "··", style=style)
            bar.append("▏")
        else:
            bar.append("▕" + SHADES + "▏")
        bar.append(" " + format_number(self.scale.hi, self.precision))
        dim = "dim" if self.color else ""
        parts = [bar]
        if self.signed:  # which side is which
            plain = w["signed_plain"] if len(self.heads) == 1 else w["signed_marked"]  # several: no numbers
            parts.append(Text(w["signed_colour"] if self.color else plain, style=dim))
        if any(self.masked[h].any() for h in self.heads):
            parts.append(Text.assemble((HATCH * 2, "grey50" if self.color else ""), w["masked"]))
        parts.append(Text(w["axes"] + (w["alike"] if by_number else ""), style=dim))
        if self.sinks is not None:
            parts.append(Text(w["sink_note"], style=dim))
        lines = [parts[0]]
        for part in parts[1:]:
            if lines[-1].cell_len + 3 + part.cell_len <= room:
                lines[-1] = Text.assemble(lines[-1], "   ", part)
            else:
                lines.append(part)
        return lines + ([Text(hint, style="yellow" if self.color else "")] if hint else [])

    def _signed_bar(self) -> Text:
        """A signed quantity's swatches, −max|x| … 0 … max|x|: blue below 0 and orange above (without colour, shades
        that grow with |x| either side, the sign in the numbers)."""
        bar = Text("▕")
        if self.color:
            for style in signed_swatches():
                bar.append("  " if style else "0", style=style)
        else:
            bar.append(SHADES[:0:-1] + "0" + SHADES[1:])
        return bar.append("▏")

    def header_lines(self, room: int, numbered: bool, hint: bool) -> list[Text]:
        """What comes before the heads: the title, the legend and (numbered keys that are not the queries) the keys."""
        by_number = len(self.heads) > 1 and numbered_rows(self, numbered)
        title = [Text(line, style="bold", no_wrap=True, overflow="ellipsis") for line in self.title_lines(room)]
        tall = self.words["tall"].format(count=len(self.heads), heads=self.spec.heads)
        keys = [] if by_number else self.key_lines(room, numbered)
        return [*title, *self.legend(room, by_number, tall if hint else ""), *keys]

    # -- Rich protocol

    def lines(self, room: int) -> list[Text]:
        """Every line of the picture in ``room`` cells: the header, a blank line, the head (or the heads' grid)."""
        if len(self.heads) > 1 and not self.too_wide(room):
            layout = choose(self, room)
            return [*self.header_lines(room, layout.numbered, not layout.fits), Text(""), *panels(self, layout, room)]
        out = self.header_lines(room, self.numbered, False)
        for head in self.heads:  # one head; or, with --full, heads too wide for a grid, one below the other
            out += [Text(""), *self.panel(head, len(self.heads) > 1, room)]
        return out

    def too_wide(self, room: int) -> bool:
        """With --full, whether every key of a head in one cell each is wider than ``room`` (then blocks of keys)."""
        label_w = min(max(cell_len(t) for t in self.spec.tokens), LABEL_WIDTH)
        return self.full and label_w + 1 + self.spec.m + (3 if self.sinks is not None else 0) > room

    def drawn(self, console: Console) -> HeatMap:
        """Itself, or on a terminal of 8 or 16 colours, without colour: its palette would turn the scale's even
        lightness into white at the low end and red at the high, backwards on a dark background; the shades ░▒▓█
        and the numbers grow with the value on any background."""
        if not self.color or console.color_system not in FEW_COLOURS:
            return self
        plain = copy(self)
        plain.color = False
        return plain

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max(line.cell_len for line in self.drawn(console).lines(options.max_width))
        return Measurement(widest, widest)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.drawn(console).lines(options.max_width)
