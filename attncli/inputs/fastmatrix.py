"""Large inline matrices in YAML, read without one Python object per number.

libyaml hands every number to Python as an event of its own, which is slow for a large
matrix (see benchmarks/README.md, inline matrices).  Before the YAML parser runs,
:func:`lift` finds the large ``key: [[…], …]`` flow matrices that hold nothing but
plain numbers, reads them with numpy, and leaves a placeholder in their place that
keeps the line count, so that later messages still name the right line.
:func:`lower` puts the arrays back into the parsed document.

A cell may also be YAML's ``-.inf`` (a score bias masks keys with it): the array
then holds −inf, and :func:`attncli.inputs.matrices.inline` names it where a −inf
is not allowed, as the careful way would.  Anything unusual (a cell YAML would not
read as a number, ragged rows, a comment inside the brackets, a placeholder that
did not come back as a value of its own) makes the caller read the original text
the careful way, which names the bad cell.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

MIN_CHARS = 20_000  # smaller matrices are read the careful way: it is fast enough for them
# The patterns are compiled where they are used (re keeps them): compiling them at import took about 15 million
# instructions at every start, for the documents of over MIN_CHARS characters alone (docs/speed.md, Start-up).

# key: [[   or   "key": [[   followed by at least MIN_CHARS characters that a matrix of numbers may hold
# (a test in C that passes over the many small or wordy ``: [[`` of a long text quickly)
_START = rf"(?::[ \t]+|\":[ \t]*)(?=\[[ \t\r\n]*\[)(?=[-+.0-9eEinfINF \t\r\n,\[\]]{{{MIN_CHARS}}})"
# A YAML 1.2 core int or float, or −inf as YAML writes it
_NUMBER = r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|-\.(?:inf|Inf|INF))"
_MINUS_INF = ("-.inf", "-.Inf", "-.INF")
_ROW = rf"[ \t\r\n]*{_NUMBER}(?:[ \t\r\n]*,[ \t\r\n]*{_NUMBER})*[ \t\r\n]*,?[ \t\r\n]*"
# A row ``[1, 2.5, -3e4]``, and a whole matrix of them, matched where they start: a match reads no further than
# the last number and its ``]``, and never past a ``:``, so finding every matrix reads each character a bounded
# number of times (a search for ``]`` could read to the end of the text from every ``: [[``: quadratic).
_ROW_AT = rf"\[({_ROW})\]"
_MATRIX_AT = rf"\[[ \t\r\n]*(?:\[{_ROW}\][ \t\r\n]*,?[ \t\r\n]*)+\]"


class FastMatrix(list):
    """A matrix read by :func:`lift`: a list of its rows, each a list of Python ints and floats exactly as the careful
    reading gives them (so a key that takes a list of numbers, ``columns: [[0, 64], …]``, or names one in a message,
    sees what it would have seen); and the array, kept whole, which a matrix key reads without them."""

    def __init__(self, array: np.ndarray, rows: list[list]) -> None:
        super().__init__(rows)
        self.array = array


def lift(text: str) -> tuple[str, dict[str, FastMatrix]]:
    """The text with each large numeric flow matrix replaced by a placeholder, and the matrices by placeholder."""
    if len(text) < MIN_CHARS:
        return text, {}
    import secrets  # here: its import (hashlib, random) would slow every small document (benchmarks/README.md, imports)

    stem = f"attncli-matrix-{secrets.token_hex(8)}-"
    pieces: list[str] = []
    arrays: dict[str, FastMatrix] = {}
    done = 0
    for match in re.finditer(_START, text):
        start = text.index("[", match.start())
        if start < done:
            continue
        found = _matrix_at(text, start)
        if found is None:
            continue
        array, end = found
        name = f"{stem}{len(arrays)}"
        arrays[name] = array
        pieces += [text[done:start], name, "\n" * text.count("\n", start, end)]
        done = end
    pieces.append(text[done:])
    return "".join(pieces), arrays


def _matrix_at(text: str, start: int) -> tuple[FastMatrix, int] | None:
    """The matrix whose ``[`` is at ``start`` and the index after its ``]``, or None when it is not plain numbers."""
    whole = re.compile(_MATRIX_AT).match(text, start)  # in C: most ``: [[`` are small or no matrix at all
    if whole is None or whole.end() - start < MIN_CHARS:
        return None
    rows: list[str] = []
    row_at = re.compile(_ROW_AT)
    i = start + 1
    size = len(text)
    while True:
        i = _skip_space(text, i)
        row = row_at.match(text, i)
        if row is None:
            return None
        rows.append(row.group(1))
        i = _skip_space(text, row.end())
        if i < size and text[i] == ",":
            i = _skip_space(text, i + 1)
        if i < size and text[i] == "]":
            break
    end = i + 1
    if end - start < MIN_CHARS:
        return None
    cells = [row.replace(",", " ").split() for row in rows]
    width = len(cells[0])
    if any(len(row) != width for row in cells):
        return None
    flat = [x for row in cells for x in row]
    words = any(".inf" in row or ".Inf" in row or ".INF" in row for row in rows)
    if words:
        flat = ["-inf" if x in _MINUS_INF else x for x in flat]
    array = np.array(flat, dtype=np.float64).reshape(len(rows), width)
    infinite = ~np.isfinite(array)
    if infinite.any():
        if not words:
            return None  # beyond float64: the careful path names the cell
        written = np.array([x == "-inf" for x in flat]).reshape(array.shape)  # (numbers beyond float64 are not)
        if (infinite & ~written).any():
            return None
    rows = _as_written(array, flat)
    return (FastMatrix(array, rows), end) if rows is not None else None


_FLOAT_MARK = r"[.eEiI]"  # in a cell: a float ("1.", "2e3", "-inf"); without one, an integer
_INT = r"[-+]?[0-9]+"


def _as_written(array: np.ndarray, flat: list[str]) -> list[list] | None:
    """The rows as Python numbers of the types the careful reading gives: an int for ``64``, a float for ``64.0``
    (only cells of whole values are looked at, one by one); None for an integer beyond what float64 holds exactly."""
    whole = np.flatnonzero(array == np.trunc(array))  # (-inf too: its cell says it is a float)
    if len(whole) == array.size and not re.search(_FLOAT_MARK, " ".join(flat)):  # integers only: ranges, a 0/1 mask
        if np.abs(array).max() >= 2**53:
            return None  # (the careful reading keeps each digit)
        return array.astype(np.int64).tolist()
    rows = array.tolist()
    width = array.shape[1]
    integer = re.compile(_INT)
    for k in whole.tolist():
        if integer.fullmatch(flat[k]):
            rows[k // width][k % width] = int(flat[k])
    return rows


def _skip_space(text: str, i: int) -> int:
    size = len(text)
    while i < size and text[i] in " \t\r\n":
        i += 1
    return i


def lower(data: Any, arrays: dict[str, FastMatrix]) -> bool:
    """Put the matrices back in place of their placeholders; False unless each came back as a value of its own."""
    found = 0
    stack = [data]
    while stack:
        container = stack.pop()
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, value in list(items):
            if isinstance(value, str) and value in arrays:
                container[key] = arrays[value]
                found += 1
            elif isinstance(value, (dict, list)) and not isinstance(value, FastMatrix):
                stack.append(value)
    return found == len(arrays)
