"""Pictures of what the terminal shows: any Rich renderables saved as SVG, PNG, an HTML page or text.

Used by ``--export`` on compute, explain and heatmap.  The font stack names a
Latin monospace first and then fonts with Chinese glyphs; every double-width
character is placed on the grid by itself, so Chinese tokens line up in a
browser and in ``rsvg-convert`` alike.  Two themes: ``dark``, a terminal window
with its frame, and ``light``, black on white without a frame (for slides and
papers).  PNG is the SVG rasterised by resvg (the optional package resvg-py).
"""

from __future__ import annotations

import io
import re
from html import escape, unescape

from rich.cells import cell_len
from rich.console import CONSOLE_HTML_FORMAT, CONSOLE_SVG_FORMAT, Console
from rich.measure import Measurement
from rich.terminal_theme import DEFAULT_TERMINAL_THEME, SVG_EXPORT_THEME, TerminalTheme

from attncli.core.errors import AttnError
from attncli.views.picture_size import FONT_ASPECT, LINE, MARGIN, PNG_ZOOM, Size

# A Latin monospace first (box drawing stays one cell wide), then fonts with Chinese glyphs.
FONTS = ('"DejaVu Sans Mono", Menlo, Consolas, "Fira Code", '
         '"Noto Sans Mono CJK SC", "Noto Sans CJK SC", "Source Han Sans SC", "Microsoft YaHei", monospace')
EXPORT_KINDS = (".svg", ".png", ".html", ".htm", ".txt")
THEMES = ("dark", "light")
PNG_NEEDS = "picture.png_needs"  # (the message's id: resvg-py is missing)


def default_theme(suffix: str) -> str:
    """What each kind of picture was before ``--theme``: a dark terminal window for SVG (and PNG),
    a white page for HTML."""
    return "light" if suffix in (".html", ".htm") else "dark"


def png_ready() -> bool:
    """Whether resvg-py can be imported (checked before anything is computed or written)."""
    import importlib.util

    return importlib.util.find_spec("resvg_py") is not None


def picture(renderables: list, suffix: str, max_width: int = 200, title: str = "attncli", theme: str | None = None,
            where: str = "--export", fewer: str = "") -> bytes:
    """``renderables`` as the terminal shows them, saved as an SVG, a PNG, an HTML page or text (``suffix``).

    The picture is as wide as its widest renderable (at most ``max_width`` cells). ``theme``: ``dark``, ``light``,
    or None for the kind's default (:func:`default_theme`); text has none. A picture too large to view, or to draw
    within the memory budget, is refused before it is drawn (an :class:`AttnError` at ``where``; ``fewer``: how to
    show less, for the message).
    """
    theme = theme or default_theme(suffix)
    framed = theme == "dark" and suffix in (".svg", ".png")
    record = Console(record=True, file=io.StringIO(), width=max_width, highlight=False, soft_wrap=False,
                     color_system=None if suffix == ".txt" else "truecolor", legacy_windows=False)
    room = cell_len(title) + 16 if framed else 0  # room for the title beside the window buttons
    narrowest = Size(suffix, framed, max(20, room), where, fewer)
    # a table's rows alone too many: refused before the layout
    narrowest.check(narrowest.fewest_lines(renderables), at_least=True)
    widest = max((Measurement.get(record, record.options, item).maximum for item in renderables), default=20)
    record.width = max(20, room, min(widest, max_width))
    size = Size(suffix, framed, record.width, where, fewer)
    for item in renderables:
        record.print(item)
        record.print()
    if suffix == ".txt":
        return record.export_text().encode("utf-8")
    size.check_all(record.export_text(clear=False, styles=False))
    if suffix == ".png":
        check_glyphs(record.export_text(clear=False, styles=False), where)
    colours = _inks(DEFAULT_TERMINAL_THEME if theme == "light" else SVG_EXPORT_THEME)
    if suffix in (".html", ".htm"):
        page = CONSOLE_HTML_FORMAT.replace("Menlo,'DejaVu Sans Mono',consolas,'Courier New',monospace",
                                           FONTS.replace('"', "'"))
        page = page.replace("<head>", "<head>\n<title>" + escape(title) + "</title>", 1)
        return record.export_html(theme=colours, code_format=page, inline_styles=True).encode("utf-8")
    svg = CONSOLE_SVG_FORMAT.replace("font-family: Fira Code, monospace;", f"font-family: {FONTS};")
    svg = re.sub(r"\s*@font-face \{\{.*?\}\}", "", svg, flags=re.S)  # Rich's Fira Code from a CDN: the reader's fonts
    # the title: resvg needs a fallback
    svg = svg.replace("font-family: arial;", 'font-family: Arial, "DejaVu Sans", sans-serif;')
    if not framed:
        svg = svg.replace("{chrome}", _BACKGROUND)
    picture = record.export_svg(title=title, theme=colours, code_format=svg, font_aspect_ratio=FONT_ASPECT)
    picture = _joined_rules(_fix_text_runs(picture if framed else _unframed(picture, colours.background_color.hex)))
    return to_png(picture) if suffix == ".png" else picture.encode("utf-8")


def check_glyphs(text: str, where: str = "--export") -> None:
    """Refuse a PNG with characters that no font of this machine has: resvg would draw them as empty boxes."""
    from attncli.views.fonts import INSTALL_CJK, missing, wide_characters

    lost = missing(wide_characters(text))
    if lost:
        raise AttnError("picture.no_font_this_machine_has", where, count=len(lost), install_cjk=INSTALL_CJK)


def to_png(svg: str) -> bytes:
    """The SVG rasterised by resvg at :data:`PNG_ZOOM` pixels per unit, with the fonts of the system."""
    try:
        import resvg_py
    except ImportError:  # (the command checked first; here for the Python caller)
        raise AttnError(PNG_NEEDS, "--export") from None
    return bytes(resvg_py.svg_to_bytes(svg_string=svg, zoom=PNG_ZOOM))


_BACKGROUND = "<!-- attncli: background -->"


def _unframed(svg: str, background: str) -> str:
    """The picture cut to its text and a margin, on a plain background: no window, title or buttons."""
    width, height = (float(v) for v in re.search(r'-clip-terminal">\s*<rect x="0" y="0" '
                                                 r'width="([\d.]+)" height="([\d.]+)"', svg).groups())
    x, y = (float(v) for v in re.search(r'<g transform="translate\(([\d.]+), ([\d.]+)\)" clip-path', svg).groups())
    box = (x - MARGIN, y - MARGIN, width + 2 * MARGIN, height + 2 * MARGIN)
    svg = re.sub(r'viewBox="[^"]*"', 'viewBox="{:g} {:g} {:g} {:g}"'.format(*box), svg, count=1)
    rect = '<rect x="{:g}" y="{:g}" width="{:g}" height="{:g}" fill="{}"/>'.format(*box, background)
    return svg.replace(_BACKGROUND, rect, 1)


def _inks(theme: TerminalTheme) -> TerminalTheme:
    """``theme`` with pure black and white, the inks of numbers on coloured cells (most legible on both ends)."""
    normal = [tuple(c) for c in theme.ansi_colors._colors]
    return TerminalTheme(tuple(theme.background_color), tuple(theme.foreground_color),
                         [(0, 0, 0), *normal[1:7], (255, 255, 255)], normal[8:])


_TEXT = re.compile(r'<text class="([^"]*)" x="([\d.]+)" y="([\d.]+)" textLength="([\d.]+)" ([^>]*)>(.*?)</text>')


def _fix_text_runs(svg: str) -> str:
    """Place every double-width character itself: Rich sizes a run of text by its characters, not its
    cells, and a renderer that ignores textLength would let a Chinese run drift off the grid."""

    def fix(match: re.Match) -> str:
        css, x, y, length, rest, body = match.groups()
        text = unescape(body)
        if cell_len(text) == len(text) and not text.startswith("\u00a0"):
            return match.group(0)
        char_width = float(length) / len(text)
        runs: list[list[str]] = []  # [kind, text]: spaces, one wide character, or narrow characters
        for ch in text:
            kind = "space" if ch == "\u00a0" else "wide" if cell_len(ch) == 2 else "narrow"
            if runs and kind != "wide" and runs[-1][0] == kind:
                runs[-1][1] += ch
            else:
                runs.append([kind, ch])
        pieces, cells = [], 0
        for kind, piece in runs:
            if kind != "space":
                left, width = float(x) + cells * char_width, cell_len(piece) * char_width
                body = escape(piece).replace("\u00a0", "&#160;")
                pieces.append(f'<text class="{css}" x="{left:g}" y="{y}" textLength="{width:g}" {rest}>{body}</text>')
            cells += cell_len(piece)
        return "".join(pieces)

    return _TEXT.sub(fix, svg)


LIGHT, HEAVY = 1.3, 2.6  # strokes of the box lines, in SVG units (DejaVu Sans Mono at 20 units)
# the vertical strokes of each box character: above and below its middle (0: none)
RULES = {"│": (LIGHT, LIGHT), "┃": (HEAVY, HEAVY), "┏": (0, HEAVY), "┳": (0, HEAVY), "┓": (0, HEAVY),
         "┡": (HEAVY, LIGHT), "╇": (HEAVY, LIGHT), "┩": (HEAVY, LIGHT), "┌": (0, LIGHT), "┬": (0, LIGHT),
         "┐": (0, LIGHT), "├": (LIGHT, LIGHT), "┼": (LIGHT, LIGHT), "┤": (LIGHT, LIGHT), "└": (LIGHT, 0),
         "┴": (LIGHT, 0), "┘": (LIGHT, 0), "┗": (HEAVY, 0), "┻": (HEAVY, 0), "┛": (HEAVY, 0)}
BASELINE, MIDDLE = 18.5, 6.5  # a line's top, and a box character's middle, above its text's baseline (Rich's SVG)


def _joined_rules(svg: str) -> str:
    """Each vertical table rule (│ ┃) drawn as a bar the whole height of its line, so that the rules of consecutive
    rows join: the font's glyph is shorter than the line, and resvg and browsers left a gap at every row."""

    def bars(match: re.Match) -> str:
        css, x, y, length, rest, body = match.groups()
        text = unescape(body)
        if not any(ch in RULES for ch in text) or cell_len(text) != len(text):
            return match.group(0)
        cell, top, middle = float(length) / len(text), float(y) - BASELINE, float(y) - MIDDLE
        drawn = []
        for k, ch in enumerate(text):
            for stroke, start, end in zip(RULES.get(ch, (0, 0)), (top, middle), (middle, top + LINE + 0.3)):
                if stroke:  # (from the line's top to the middle, and from the middle to the line's bottom)
                    drawn.append(f'<rect class="{css}" x="{float(x) + (k + 0.5) * cell - stroke / 2:g}" '
                                 f'y="{start:g}" width="{stroke:g}" height="{end - start:g}"/>')
        bars = "│┃"  # drawn by the rects alone; the corners and crossings keep their glyph for the horizontal strokes
        kept = escape("".join("\u00a0" if ch in bars else ch for ch in text)).replace("\u00a0", "&#160;")
        return f'<text class="{css}" x="{x}" y="{y}" textLength="{length}" {rest}>{kept}</text>' + "".join(drawn)

    return _TEXT.sub(bars, svg)
