"""CSV, TSV and TXT matrix files: one row per line, cells that are numbers as JSON and YAML 1.2 write them.

A cell that is not a number is named by its line and column and quoted, cut to
CELL_CHARS characters: a document may name any file, and a message never shows
more of it than that one cell (a password file named as a matrix prints no password).
"""

from __future__ import annotations

import math
import re

import numpy as np

from attncli.core.errors import CELL_CHARS, AttnError, plural, shorten
from attncli.inputs.reading import decode_utf8

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # only these end a line (str.splitlines also splits at \f, \x1c, U+2028 …)
_BOOLEAN_CELLS = {word: digit for digit, words in (("1", "true True TRUE"), ("0", "false False FALSE"))
                  for word in words.split()}
# −inf as people write it in a score bias: -inf (Python, numpy, CSV), -.inf (YAML), -Infinity (JavaScript, JSON5)
MINUS_INF = re.compile(r"-(?:\.?inf|infinity)", re.IGNORECASE)
ONLY_MINUS_INF = "is not allowed here: -inf masks a key, but NaN and +inf are errors"


def read_text(
    raw: bytes, name: str, delimiter: str | None, boolean: bool, minus_inf: bool = False
) -> tuple[np.ndarray, list[int]]:
    """A CSV/TSV/TXT matrix and the line of each row: blank lines and ``#`` lines skipped; a mask may say true/false.

    ``minus_inf``: a cell may be −inf (a score bias), spelled as :data:`MINUS_INF` reads it.
    """
    text = decode_utf8(raw, name)
    rows: list[list[float]] = []
    lines: list[int] = []
    text_lines = _LINE_BREAK.split(text)
    for number, line in enumerate(text_lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        rows.append(_read_row(stripped, name, number, delimiter, boolean, minus_inf))
        lines.append(number)
        if len(rows[-1]) != len(rows[0]):
            raise AttnError(
                "textfile.line_has_but_line_has", name, number=number, numbers=plural(len(rows[-1]),
                                                                                      'number'), lines=lines[0],
                                                                                      count=len(rows[0])
            )
    if not rows:
        raise AttnError("textfile.holds_no_numbers_file_empty", name)
    values = np.array(rows, dtype=np.float64)
    _check_finite(values, text_lines, lines, name, delimiter, minus_inf)
    return values, lines


def _read_row(stripped: str, name: str, number: int, delimiter: str | None, boolean: bool,
              minus_inf: bool) -> list[float]:
    """One line's numbers (true/false in a mask, −inf where it may be); a cell that is not a number is named."""
    cells = stripped.split(delimiter)
    if boolean:
        cells = [_BOOLEAN_CELLS.get(c.strip(), c) for c in cells]
    elif minus_inf and "inf" in stripped.lower():
        cells = ["-inf" if MINUS_INF.fullmatch(c.strip()) else c for c in cells]
    try:
        if "_" in stripped or not stripped.isascii():
            # float() reads 1_0 as 10 and '１２' as 12; the document's numbers do not (see _number_cell)
            raise ValueError
        row = [float(c) for c in cells]
    except ValueError:
        row = _diagnose_row(cells, name, number, delimiter, boolean)
    if minus_inf and -math.inf in row:
        _check_overflow(cells, row, name, number)
    return row


def _check_finite(values: np.ndarray, text_lines: list[str], lines: list[int], name: str, delimiter: str | None,
                  minus_inf: bool) -> None:
    """The first cell that is NaN or infinite (but a −inf that may be), named by its line and column."""
    bad = np.argwhere(~np.isfinite(values) & ~(minus_inf & (values == -math.inf)))
    if len(bad):
        r, c = bad[0]
        cell = text_lines[lines[r] - 1].strip().split(delimiter)[c].strip()
        where = f"line {lines[r]}, column {c + 1}: {shorten(cell, CELL_CHARS)}"
        if np.isinf(values[r, c]) and "inf" not in cell.lower():
            raise AttnError("textfile.too_large_float64_about_e308", name, place=where)
        if minus_inf:
            raise AttnError("values.value_and_problem", name, value=where, problem=ONLY_MINUS_INF)
        raise AttnError("textfile.not_finite_number_nan_infinities", name, place=where)


def _check_overflow(cells: list[str], row: list[float], name: str, number: int) -> None:
    """A −inf that is a number beyond float64 (-1e999), not the word: named, as in any other matrix."""
    for column, (cell, value) in enumerate(zip(cells, row), start=1):
        if value == -math.inf and "inf" not in cell.lower():
            shown = shorten(cell.strip(), CELL_CHARS)
            raise AttnError("textfile.line_column_too_large_float64", name, number=number, column=column, shown=shown)


def _diagnose_row(cells: list[str], name: str, number: int, delimiter: str | None,
                  boolean: bool = False) -> list[float]:
    """The row's numbers, or an error naming its first cell that is not one, quoting at most CELL_CHARS of it."""
    for column, cell in enumerate(cells, start=1):
        if _number_cell(cell):
            continue
        where = f"line {number}, column {column}"
        text = cell.strip()
        if not text:
            raise AttnError("textfile.empty_cell", name, place=where)
        shown = repr(shorten(text, CELL_CHARS))
        if boolean and not any(sep in cell for sep in ",;\t |"):
            raise AttnError("textfile.not_mask_value_true_may", name, place=where, shown=shown)
        hint = ""
        if not text.isascii() and any(ch.isdigit() for ch in text):
            hint = " (write numbers with the digits 0-9)"
        elif "_" in text:
            hint = " (write numbers without underscores)"
        elif number == 1 and any(ch.isalpha() for ch in cell):
            hint = " (a header line? matrix files hold numbers only)"
        elif any(sep in cell for sep in ",;\t |"):
            kinds = {",": "commas", "\t": "tabs", None: "white space"}
            hint = f" (this file kind separates cells with {kinds[delimiter]})"
        raise AttnError("textfile.not_number", name, place=where, shown=shown, hint=hint)
    return [float(c) for c in cells]


def _number_cell(cell: str) -> bool:
    """A cell as float() reads it (also 'nan', 'inf': refused later, by name), but only ASCII and no underscores."""
    text = cell.strip()
    if "_" in text or not text.isascii():
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True
