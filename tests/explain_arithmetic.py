"""Every piece of arithmetic a line of ``attncli explain`` writes out, worked again from the printed numbers alone.

A printed number stands for every value that prints so (``0.4683`` for [0.46825, 0.46835], ``1.0000e-20`` to
half a unit of its mantissa's last digit, a whole ``2`` for 2 exactly), so each expression of printed numbers is
evaluated in interval arithmetic, and the parts of a chain ``a = b = c`` must hold a common value: a product
written out, a sum, a quotient, an exponential, a square root that does not hold at the decimals shown fails.
The segments are read as the lines write them: ``   →   `` and runs of three spaces separate claims, ``label: ``
opens one; ``·`` and ``×`` multiply (two vectors: their dot product), ``⊙`` multiplies element by element, ``[…]``
is a vector, ``−`` subtracts and an ASCII ``-`` is a number's sign. A part with anything else in it (a symbol, a
subscript, ``…``) states no number here and is skipped. Nothing here imports attncli.

>>> holds("1·0 + 0·1 + 2·1 = 2")
True
>>> holds("0.4683 × [2, 8, 0] = [0.9366, 3.7464, 0]"), holds("0.4683 × [2, 8, 0] = [0.9366, 3.7500, 0]")
(True, False)
>>> holds("exp(1.2000 − 1.2000) = 1"), holds("√(0.2500 + 1e-06) = 0.5000")
(True, True)
"""

from __future__ import annotations

import math
import re

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
TOKEN = re.compile(r"\s+|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|exp\(|tanh\(|ln\(|√|[-+·×⊙/()\[\],²−]|.")
SPLIT = re.compile(r" {3,}|→|;|\s,\s")


class Span:
    """A closed interval [lo, hi]."""

    def __init__(self, lo: float, hi: float | None = None):
        self.lo, self.hi = float(lo), float(lo if hi is None else hi)

    @staticmethod
    def of(text: str) -> Span:
        x = float(text)
        mantissa, _, exponent = text.partition("e")
        decimals = len(mantissa.partition(".")[2])
        if not decimals and not exponent:
            return Span(x)
        unit = 0.5 * 10.0 ** -decimals * (10.0 ** int(exponent) if exponent else 1.0)
        return Span(x - unit, x + unit)

    def __add__(self, o):
        o = _i(o)
        return Span(self.lo + o.lo, self.hi + o.hi) if isinstance(o, Span) else NotImplemented

    def __sub__(self, o):
        o = _i(o)
        return Span(self.lo - o.hi, self.hi - o.lo) if isinstance(o, Span) else NotImplemented

    def __mul__(self, o):
        if isinstance(o, V):
            return V([self * x for x in o.xs])
        o = _i(o)
        products = [self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi]
        return Span(min(products), max(products))

    def __truediv__(self, o):
        o = _i(o)
        if o.lo <= 0 <= o.hi:
            raise ZeroDivisionError
        return self * Span(1 / o.hi, 1 / o.lo)

    def __neg__(self):
        return Span(-self.hi, -self.lo)

    def __pow__(self, k):
        ends = sorted([self.lo ** k, self.hi ** k])
        return Span(0.0 if self.lo <= 0 <= self.hi else ends[0], ends[1])

    def meets(self, o, slack: float = 1e-9) -> bool:
        if not isinstance(o, Span):
            return False
        room = slack * max(1.0, abs(self.lo), abs(self.hi))
        return self.lo <= o.hi + room and o.lo <= self.hi + room


class V:
    """A vector of intervals."""

    def __init__(self, xs):
        self.xs = [_i(x) for x in xs]

    def __add__(self, o):
        return V([a + b for a, b in zip(self.xs, o.xs, strict=True)])

    def __sub__(self, o):
        return V([a - b for a, b in zip(self.xs, o.xs, strict=True)])

    def __mul__(self, o):  # · between two vectors: their dot product
        if isinstance(o, V):
            total = Span(0.0)
            for a, b in zip(self.xs, o.xs, strict=True):
                total = total + a * b
            return total
        return V([x * o for x in self.xs])

    __rmul__ = __mul__

    def __mod__(self, o):  # ⊙
        return V([a * b for a, b in zip(self.xs, o.xs, strict=True)])

    def __truediv__(self, o):
        return V([x / o for x in self.xs])

    def meets(self, o, slack: float = 1e-9) -> bool:
        return isinstance(o, V) and len(o.xs) == len(self.xs) and all(
            a.meets(b, slack) for a, b in zip(self.xs, o.xs))


def _i(x):
    if isinstance(x, tuple):
        return V(x)
    return x


def _sqrt(x: Span) -> Span:
    return Span(math.sqrt(max(x.lo, 0.0)), math.sqrt(max(x.hi, 0.0)))


def _monotone(f):
    return lambda x: Span(f(x.lo), f(x.hi))


NAMES = {"Span": Span.of, "V": lambda *xs: V(xs), "sqrt": _sqrt, "exp": _monotone(math.exp),
         "tanh": _monotone(math.tanh), "ln": _monotone(math.log)}


def value(text: str):
    """The interval (or vector of them) an expression of printed numbers stands for; None when it is not one."""
    out, tokens = [], [t for t in TOKEN.findall(text.strip())]
    roots = 0
    for k, tok in enumerate(tokens):
        if tok.isspace():
            continue
        if NUMBER.fullmatch(tok):
            out.append(f'Span("{tok}")')
            while roots and (k + 1 >= len(tokens) or tokens[k + 1] != "²"):
                out.append(")")
                roots -= 1
        elif tok == "√":
            if k + 1 < len(tokens) and tokens[k + 1] == "(":
                out.append("sqrt")
            else:
                out.append("sqrt(")
                roots += 1
        else:
            mapped = {"·": "*", "×": "*", "⊙": "%", "−": "-", "[": "V(", "]": ")", "²": "**2", "exp(": "exp(",
                      "tanh(": "tanh(", "ln(": "ln("}.get(tok, tok if tok in "+-/(),*" else None)
            if mapped is None:
                return None
            out.append(mapped)
    if not out or roots:
        return None
    try:
        got = eval("".join(out), {"__builtins__": {}}, NAMES)
    except (SyntaxError, TypeError, ValueError, ZeroDivisionError, OverflowError, AttributeError):
        return None
    got = _i(got)
    return got if isinstance(got, (Span, V)) else None


def claims(line: str) -> list[list[str]]:
    """The chains ``a = b = c`` of a line, each as its parts (a leading ``label:`` dropped)."""
    chains = []
    for segment in SPLIT.split(line):
        parts = [p.strip().rstrip(",").rstrip() for p in segment.split(" = ")]
        if ": " in parts[0]:
            parts[0] = parts[0].rsplit(": ", 1)[1]
        if len(parts) >= 2:
            chains.append(parts)
    return chains


def checked(line: str) -> tuple[int, list[str]]:
    """(how many equalities of printed numbers the line states, the ones that are false)."""
    count, false = 0, []
    for parts in claims(line):
        values = [value(p) for p in parts]
        for (a, va), (b, vb) in zip(zip(parts, values), zip(parts[1:], values[1:])):
            if va is None or vb is None:
                continue
            count += 1
            if not va.meets(vb):
                false.append(f"{a} = {b}")
    return count, false


def holds(line: str) -> bool:
    count, false = checked(line)
    return count > 0 and not false
