"""The arithmetic of one step written out as text: ``1·0 + 0·1 + 2·1 = 2``.

Every number has the same decimals, so a factor too small for them would read 0;
when its product is not 0 at those decimals, the factor is written in e-notation
instead, so that the line stays true (``1.0000e-20 × [1.0000e+25] = [100000]``).

>>> dot_line([1, 0, 2], [0, 1, 1], 2.0, 4)
'1·0 + 0·1 + 2·1 = 2'
>>> vector([0.5, 2.0], 4)
'[0.5000, 2]'
>>> weighted_line(1e-20, [0, 1e25], [0, 1e5], 4)
'1.0000e-20 × [0, 1.0000e+25] = [0, 100000]'
>>> quotient_line(1e-6, 2e-6, 0.5, 4)
'1.0000e-06 / 2.0000e-06 = 0.5000'
"""

from __future__ import annotations

from attncli.outputs.numbers import number

MAX_TERMS = 8  # a longer dot product shows its first and last terms around "…"


def reads_zero(x: float, precision: int) -> bool:
    """Is ``x`` not 0 but written as 0 (``0.0000``) with these decimals?"""
    return x != 0 and float(number(x, precision)) == 0


def operand(x: float, precision: int, partner: float | None = None) -> str:
    """``x`` as :func:`number` writes it, or in e-notation when it would read 0 yet ``x · partner`` would not."""
    x = float(x)
    if reads_zero(x, precision) and (partner is None or not _zero_shown(x * float(partner), precision)):
        return f"{x:.{precision}e}"
    return number(x, precision)


def _zero_shown(x: float, precision: int) -> bool:
    return float(number(x, precision)) == 0


def vector(xs, precision: int, limit: int = MAX_TERMS, partner: float | None = None) -> str:
    """``[1, 0.5000, 2]``; a long vector keeps its first and last entries.

    With ``partner`` (the vector is multiplied by it), an entry that would read 0 while
    its product does not is written in e-notation.
    """
    xs = [float(x) for x in xs]
    parts = [number(x, precision) if partner is None else operand(x, precision, partner) for x in xs]
    if len(parts) > limit:
        parts = parts[: limit // 2] + ["…"] + parts[-2:]
    return "[" + ", ".join(parts) + "]"


def fixed(xs, decimals: int) -> str:
    """Every entry with exactly ``decimals`` decimals, as an article prints them: ``[2.0, 7.0, 1.5]``."""
    return "[" + ", ".join(f"{float(x):.{decimals}f}" for x in xs) + "]"


def factor(x: float, precision: int, partner: float | None = None) -> str:
    """A factor inside a product: negatives in brackets, ``1·(-0.5)``; see :func:`operand` for ``partner``."""
    text = number(x, precision) if partner is None else operand(x, precision, partner)
    return f"({text})" if text.startswith("-") else text


def dot_terms(q, k, precision: int) -> str:
    """Every product q_d·k_d of a dot product, added: ``1·0 + 0·1 + 2·1`` (a long one keeps its ends)."""
    terms = [f"{factor(a, precision, b)}·{factor(b, precision, a)}" for a, b in zip(q, k)]
    if len(terms) > MAX_TERMS:
        terms = terms[: MAX_TERMS // 2] + ["…"] + terms[-2:]
    return " + ".join(terms)


def dot_line(q, k, s: float, precision: int) -> str:
    """One score written as its dot product: every product q_d·k_d, then the sum."""
    return dot_terms(q, k, precision) + f" = {number(s, precision)}"


def product_line(x, w, b, precision: int) -> str | None:
    """A row times a matrix (plus a bias) written cell by cell, ``[1·1 + 0·1, 1·0 + 0·2 + 0.5]``, so that a wrong
    cell can be traced to its products; None when the row or the result is too long to be worked by hand."""
    if len(x) > MAX_TERMS or w.shape[1] > MAX_TERMS:
        return None
    cells = [dot_terms(x, w[:, c], precision) + ("" if b is None else f" + {factor(b[c], precision)}")
             for c in range(w.shape[1])]
    return "[" + ", ".join(cells) + "]"


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
    k = operand(spec.scale, precision)  # one constant, written the same on every line (1.0000e-10, not 0.0000)
    k = f"({k})" if k.startswith("-") else k
    return f"{k} × {factor(s, precision, spec.scale)} = {number(z, precision)}"


def weighted_line(a: float, v, av, precision: int) -> str:
    """One weight times its value row: ``0.4683 × [2, 8, 0] = [0.9366, 3.7464, 0]``."""
    v = [float(x) for x in v]
    big = max(v, key=abs, default=0.0)  # a tiny weight reads 0 unless one of its products does not
    return f"{operand(a, precision, big)} × {vector(v, precision, partner=a)} = {vector(av, precision)}"


def quotient_line(x: float, total: float, a: float, precision: int) -> str:
    """One number divided by a sum, ``x / total = a``, in e-notation where the decimals would read 0:
    a divisor, and a dividend whose quotient does not read 0."""
    tiny = reads_zero(total, precision)
    top = (f"{x:.{precision}e}" if reads_zero(x, precision) and (tiny or not _zero_shown(a, precision))
           else number(x, precision))
    bottom = f"{total:.{precision}e}" if tiny else number(total, precision)
    return f"{top} / {bottom} = {number(a, precision)}"
