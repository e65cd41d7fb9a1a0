"""Numbers as every output writes them: fixed decimals, whole numbers bare, huge ones in e-notation.

Tables, heat maps, explanations, Markdown and LaTeX all format through here, and
all summarise a large matrix the same way (its first and last rows and columns).

>>> format_number(-0.00001, 4), format_number(2.0, 4, whole=True), number(0.5, 2), number(3.0, 2)
('0.0000', '2', '0.50', '3')
>>> pick(20, 16, 6, full=False)
[0, 1, 2, 3, 4, 5, None, 14, 15, 16, 17, 18, 19]
"""

from __future__ import annotations

import math

import numpy as np

MAX_ROWS, EDGE_ROWS = 16, 6  # beyond MAX_ROWS rows, show EDGE_ROWS at each end
MAX_COLS, EDGE_COLS = 12, 5
LARGE = 1e15  # from here on numbers are shown in scientific notation


def format_number(x: float, precision: int, whole: bool = False) -> str:
    if whole:
        return str(int(x))
    if abs(x) >= LARGE:  # 1e300 in fixed point would be 300 digits wide
        return f"{x:.{precision}e}"
    text = f"{x:.{precision}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text  # no "-0.0000"


def all_whole(matrix: np.ndarray) -> bool:
    return bool(np.all(np.abs(matrix) < LARGE) and np.all(matrix == np.round(matrix)))


def pick(size: int, limit: int, edge: int, full: bool, fits: int | None = None) -> list[int | None]:
    """Indices to show of ``size``; None stands for the ones left out (``edge`` shown at each end).

    ``fits``: how many can be shown at most (columns side by side in the terminal's width).
    """
    most = limit if fits is None else max(3, min(limit, fits))
    if full or size <= most:
        return list(range(size))
    edge = min(edge, (most - 1) // 2)
    return [*range(edge), None, *range(size - edge, size)]


def number(x: float, precision: int) -> str:
    """A whole number without decimals, anything else with ``precision`` decimals (never ``-0.0000``)."""
    x = float(x)
    return format_number(x, precision, whole=math.isfinite(x) and abs(x) < LARGE and x == round(x))


def dims(d: int) -> list[str]:
    """Column labels counted from 1: ``['1', '2', '3']``."""
    return [str(j) for j in range(1, d + 1)]
