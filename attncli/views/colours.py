"""The one colour scale of attncli: attention weights in tables, heat maps and pictures, all shaded alike.

A value is first mapped onto t in 0 … 1 (a weight is t itself).  Only the lowest 1/64 of the scale has no colour
at all: the terminal's own background and text, as a weight near 0 should look (a wider blank band, the lowest
eighth, made 0.11 look like nothing and 0.13 like something; the legend marks the band ``··``).  Above it the cell
takes a colour
that keeps one lightness (OKLab L = 0.66) and only gains chroma as t grows, turning from a grey violet to a full
orange: OKLCH(0.66, 0.03 + 0.16u, 290° + 130°u) for u from 0 to 1.  A scale that runs from dark to light (viridis,
or white to blue) reads backwards on one kind of terminal: its lowest end is the brightest cell on a dark
background, or the darkest on a light one.  One of even lightness reads the same on both, lighter than a dark
background and darker than a light one, and the more weight, the more vivid the cell.  Numbers on it are
written in black, the ink with more contrast on every colour of the scale (WCAG: above 6 : 1).
"""

from __future__ import annotations

UNCOLOURED = 1 / 64  # t below this: no colour (a weight that is as good as 0)
# OKLCH(0.66, 0.03 + 0.16u, 290° + 130°u) at u = 0, 1/6 … 1, in sRGB; between two of them, linear.
RAMP = ((145, 143, 164), (158, 137, 172), (177, 127, 168), (199, 117, 150), (217, 108, 116), (227, 104, 64),
        (226, 109, 0))
STEPS = 8  # swatches in a legend: the uncoloured one, then seven colours
FEW_COLOURS = ("standard", "windows")  # Rich's colour systems of 8 or 16 colours: the terminal's own palette
# On those, no colour keeps one lightness (Rich maps the scale to white at the low end and red or yellow at the high,
# brighter for less weight on a dark background): a table's weight is the strength of its number's ink instead, from
# faint to reversed, growing on a dark and on a light background alike (more contrast with it), for t from 0 to 1/4,
# 1/2, 3/4 and 1.
INKS = ("dim", "", "bold", "bold reverse")
# Signed quantities (the gradients dA, dZ): a diverging scale centred on 0, at the same lightness, blue below 0 and
# orange above, more vivid with |x|: OKLCH(0.66, 0.03 + 0.12u, 250°) and OKLCH(0.66, 0.03 + 0.12u, 60°) for
# u = |x| / max |x| at 0, 1/6 … 1, in sRGB; |x| below UNCOLOURED of the largest: no colour, as 0 should look.
NEGATIVE = ((133, 148, 164), (123, 149, 176), (113, 150, 188), (103, 150, 199), (91, 151, 211), (77, 151, 222),
            (62, 150, 234))
POSITIVE = ((161, 142, 128), (170, 139, 116), (178, 136, 102), (187, 133, 88), (195, 129, 72), (203, 125, 52),
            (211, 120, 18))


def heat_rgb(t: float) -> tuple[int, int, int] | None:
    """The colour of ``t`` (clamped to 0 … 1), or None below :data:`UNCOLOURED`.

    >>> heat_rgb(0.0), heat_rgb(1.0), heat_rgb(UNCOLOURED)
    (None, (226, 109, 0), (145, 143, 164))
    """
    t = float(min(max(t, 0.0), 1.0))
    return None if t < UNCOLOURED else _along(RAMP, t)


def _along(ramp: tuple, t: float) -> tuple[int, int, int]:
    """The colour at ``t`` (UNCOLOURED … 1) along ``ramp``, linear between its stops."""
    x = (t - UNCOLOURED) / (1 - UNCOLOURED) * (len(ramp) - 1)
    i = min(int(x), len(ramp) - 2)
    a, b = ramp[i], ramp[i + 1]
    return tuple(round(p + (q - p) * (x - i)) for p, q in zip(a, b))  # type: ignore[return-value]


def signed_rgb(s: float) -> tuple[int, int, int] | None:
    """The colour of a signed ``s`` (−1 … 1, clamped) on the diverging scale, or None for |s| below UNCOLOURED.

    >>> signed_rgb(-1.0), signed_rgb(0.0), signed_rgb(1.0)
    ((62, 150, 234), None, (211, 120, 18))
    """
    s = float(min(max(s, -1.0), 1.0))
    return None if abs(s) < UNCOLOURED else _along(NEGATIVE if s < 0 else POSITIVE, abs(s))


def signed_style(s: float) -> str:
    """The Rich style of a cell at a signed ``s`` (−1 … 1): ``''`` near 0."""
    rgb = signed_rgb(s)
    return "" if rgb is None else f"{ink(rgb)} on rgb({rgb[0]},{rgb[1]},{rgb[2]})"


def signed_swatches() -> list[str]:
    """The background styles of a signed legend, −1 to 1: the negative colours, ``''`` for 0, the positive ones."""
    ups = [UNCOLOURED + (1 - UNCOLOURED) * k / (STEPS - 2) for k in range(STEPS - 1)]
    styles = [f"on rgb({r},{g},{b})" for r, g, b in (signed_rgb(u) for u in ups)]
    return [f"on rgb({r},{g},{b})" for r, g, b in (signed_rgb(-u) for u in reversed(ups))] + [""] + styles


def ink(rgb: tuple[int, int, int]) -> str:
    """``black`` or ``white``: the text colour with more contrast on ``rgb`` (WCAG relative luminance)."""
    linear = [c / 3294.6 if c <= 10.31 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return "white" if 1.05 / (luminance + 0.05) > (luminance + 0.05) / 0.05 else "black"


def heat_style(t: float) -> str:
    """The Rich style of a cell (with or without a number in it) at ``t``: ``''`` for the uncoloured low end.

    >>> heat_style(0.0), heat_style(1.0)
    ('', 'black on rgb(226,109,0)')
    """
    rgb = heat_rgb(t)
    return "" if rgb is None else f"{ink(rgb)} on rgb({rgb[0]},{rgb[1]},{rgb[2]})"


def ink_style(t: float) -> str:
    """The Rich style of a weight's cell on a terminal of 8 or 16 colours (:data:`INKS`): no background colour.

    >>> ink_style(0.1), ink_style(0.3), ink_style(0.6), ink_style(1.0)
    ('dim', '', 'bold', 'bold reverse')
    """
    t = float(min(max(t, 0.0), 1.0))
    return INKS[min(int(t * len(INKS)), len(INKS) - 1)]


def swatches() -> list[str]:
    """The background styles of a legend, low to high (``''`` first: the uncoloured end)."""
    return [""] + [f"on rgb({r},{g},{b})" for r, g, b in (heat_rgb(UNCOLOURED + (1 - UNCOLOURED) * k / (STEPS - 2))
                                                           for k in range(STEPS - 1))]
