"""How large an ``--export`` picture will be, worked out before it is drawn, and the pictures refused for it.

A PNG of more than :data:`PNG_MAX_SIDE` pixels a side cannot be opened by many viewers (nor shown in a browser's
canvas), and one of more than :data:`PNG_MAX_PIXELS` takes resvg half a minute and gigabytes to draw; an SVG or
an HTML page of more than :data:`PAGE_MAX_LINES` lines is no picture anyone looks at (the text, ``.txt``, has no
limit: it is what the terminal shows). What fits those limits must still fit the memory budget
(:mod:`attncli.core.memory`): resvg's pixels, or the SVG's and HTML's text as Rich builds it.

The geometry is Rich's (``Console.export_svg``): cells of 20 × :data:`FONT_ASPECT` units, lines 1.22 × 20 units,
a frame of 8 units around the text and 40 above it (the title bar), 1 unit of margin.
"""

from __future__ import annotations

import math

from attncli.core.errors import AttnError
from attncli.core.memory import ensure_fits

PNG_MAX_SIDE, PNG_MAX_PIXELS, PAGE_MAX_LINES = 32_767, 100_000_000, 10_000
FONT_ASPECT = 1233 / 2048  # advance ÷ size of DejaVu Sans Mono (and Menlo): SVG cells as wide as its glyphs
PNG_ZOOM = 2  # pixels per SVG unit: sharp on a projector and a high-density screen (a 3 × 3 table: about 600 × 270 × 2)
MARGIN = 12  # around the text of a picture without a frame
CELL, LINE = 20 * FONT_ASPECT, 20 * 1.22  # units
# Memory while drawing (measured, peak resident set less the interpreter's): resvg keeps the pixels (4 bytes), a
# layer for the clipped text and its mask, and the PNG it encodes: 12.4 to 13.3 bytes a pixel from 14 to 135 Mpx.
PNG_BYTES_PER_PIXEL = 14
# Rich's export of the recorded text, per character of it (measured on coloured tables: 245 and 54 bytes).
PAGE_BYTES_PER_CHAR = {".svg": 256, ".png": 256, ".html": 64, ".htm": 64}


class Size:
    """The size of one picture (``suffix``, ``framed`` or not, ``width`` cells wide), and its refusals."""

    def __init__(self, suffix: str, framed: bool, width: int, where: str, fewer: str):
        self.suffix, self.framed, self.width, self.where, self.fewer = suffix, framed, width, where, fewer

    def units(self, lines: int) -> tuple[float, float]:
        """Width and height of the SVG (its viewBox) for ``lines`` lines of text."""
        if self.framed:
            return math.ceil(self.width * CELL + 16) + 2, lines * LINE + 48 + 2
        return self.width * CELL - 1 + 2 * MARGIN, lines * LINE - 1 + 2 * MARGIN

    def pixels(self, lines: int) -> tuple[int, int]:
        """Width and height of the PNG for ``lines`` lines (resvg rounds each side up)."""
        width, height = self.units(lines)
        return math.ceil(width * PNG_ZOOM), math.ceil(height * PNG_ZOOM)

    @staticmethod
    def fewest_lines(renderables: list) -> int:
        """At least as many lines as the renderables will take: a table's rows (a heat map's ``min_lines``), and a
        blank line after each."""
        return sum(getattr(item, "min_lines", getattr(item, "row_count", 0)) for item in renderables) + len(renderables)

    def check(self, lines: int, at_least: bool = False) -> None:
        """Refuse a picture of ``lines`` lines that is too large to view (see the module's limits); ``at_least``:
        ``lines`` and the width are lower bounds (before the layout)."""
        if self.suffix == ".txt":
            return
        would = "would be at least" if at_least else "would be"
        if self.suffix == ".png":
            width, height = self.pixels(lines)
            # under a memory limit (ulimit -v, a cgroup, ATTNCLI_MEMORY) memory is named first: it is the cause there
            ensure_fits(PNG_BYTES_PER_PIXEL * width * height, f"drawing this PNG of {lines:,} lines", self.where,
                        self._advice())
            if max(width, height) > PNG_MAX_SIDE or width * height > PNG_MAX_PIXELS:
                size = f"{height:,} pixels tall" if at_least else f"{width:,} × {height:,} pixels"
                self._refuse("picture_size.picture_too_large_png", size=f"{would} {size}", lines=f"{lines:,}",
                             side=f"{PNG_MAX_SIDE:,}", million=PNG_MAX_PIXELS // 1_000_000)
        elif lines > PAGE_MAX_LINES:
            self._refuse("picture_size.picture_too_long", lines=f"{would} {lines:,}", most=f"{PAGE_MAX_LINES:,}")

    def check_all(self, text: str) -> None:
        """``text`` (what was laid out) as a picture: its lines within the limits,
        its drawing within the memory budget."""
        lines = text.count("\n")
        need = PAGE_BYTES_PER_CHAR.get(self.suffix, 0) * len(text)
        if self.suffix == ".png":
            width, height = self.pixels(lines)
            need += PNG_BYTES_PER_PIXEL * width * height
        kind = self.suffix.lstrip(".").upper()
        ensure_fits(need, f"drawing this {kind} of {lines:,} lines", self.where, self._advice())  # memory first
        self.check(lines)

    def _refuse(self, id: str, **fields: object) -> None:
        raise AttnError(id, self.where, advice=self._advice(), **fields)

    def _advice(self) -> str:
        other = "save it as .svg, which has no pixel limit" if self.suffix == ".png" else "save it as .txt"
        return f"; show less ({self.fewer}), or {other}" if self.fewer else f"; {other}"
