"""The arithmetic of one step written out as text: ``1·0 + 0·1 + 2·1 = 2``.

>>> dot_line([1, 0, 2], [0, 1, 1], 2.0, 4)
'1·0 + 0·1 + 2·1 = 2'
>>> vector([0.5, 2.0], 4)
'[0.5000, 2]'
"""

from __future__ import annotations

from attncli.outputs.numbers import number

MAX_TERMS = 8  # a longer dot product shows its first and last terms around "…"


def vector(xs, precision: int, limit: int = MAX_TERMS) -> str:
    """``[1, 0.5000, 2]``; a long vector keeps its first and last entries."""
    xs = [float(x) for x in xs]
    parts = [number(x, precision) for x in xs]
    if len(parts) > limit:
        parts = parts[: limit // 2] + ["…"] + parts[-2:]
    return "[" + ", ".join(parts) + "]"


def fixed(xs, decimals: int) -> str:
    """Every entry with exactly ``decimals`` decimals, as an article prints them: ``[2.0, 7.0, 1.5]``."""
    return "[" + ", ".join(f"{float(x):.{decimals}f}" for x in xs) + "]"


def factor(x: float, precision: int) -> str:
    """A factor inside a product: negatives in brackets, ``1·(-0.5)``."""
    text = number(x, precision)
    return f"({text})" if text.startswith("-") else text


def dot_line(q, k, s: float, precision: int) -> str:
    """One score written as its dot product: every product q_d·k_d, then the sum."""
    terms = [f"{factor(a, precision)}·{factor(b, precision)}" for a, b in zip(q, k)]
    if len(terms) > MAX_TERMS:
        terms = terms[: MAX_TERMS // 2] + ["…"] + terms[-2:]
    return " + ".join(terms) + f" = {number(s, precision)}"


def squares_line(xs, precision: int) -> str:
    """The squares of a row, added: ``1² + 0² + (-2)²`` (a long row keeps its first and last terms)."""
    terms = [f"{factor(x, precision)}²" for x in xs]
    if len(terms) > MAX_TERMS:
        terms = terms[: MAX_TERMS // 2] + ["…"] + terms[-2:]
    return " + ".join(terms)


SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def subscript(k: int) -> str:
    """``12`` as ``₁₂``: a dimension's number counted from 1, written under its letter."""
    return str(k).translate(SUBSCRIPTS)


def scaled_line(s: float, spec, z: float, precision: int) -> str:
    """The score times the scale: ``4 / √3 = 2.3094`` or ``0.5 × 4 = 2``."""
    if spec.scale_name == "sqrt":
        return f"{factor(s, precision)} / √{spec.d_k} = {number(z, precision)}"
    return f"{factor(spec.scale, precision)} × {factor(s, precision)} = {number(z, precision)}"


def weighted_line(a: float, v, av, precision: int) -> str:
    """One weight times its value row: ``0.4683 × [2, 8, 0] = [0.9366, 3.7464, 0]``."""
    return f"{number(a, precision)} × {vector(v, precision)} = {vector(av, precision)}"
