"""A gradient cell's arithmetic as the page writes it: sums term by term with the document's numbers.

:class:`Work` is what :mod:`attncli.teach.page.gradients` finds for a cell; :func:`sum_lines` writes one sum as
``lhs = symbolic``, ``= t₁ + t₂ + …``, ``= total`` (the words, English and Chinese, are
the ``page_grads`` table of :func:`attncli.teach.texts.texts`).
"""

from __future__ import annotations

from dataclasses import dataclass

from attncli.outputs.numbers import number
from attncli.teach.texts import texts

MAX_TERMS = 12  # terms of one sum written out; the rest are counted (the total is still the whole sum)


@dataclass
class Work:
    """A cell's arithmetic: its formula, the words (``key`` of :func:`words` and their values) and its sums; each
    sum is (left side, symbolic right side, [(x, y) products] or [x] terms); ``value`` what the sums make."""

    formula: str
    words: list[tuple[str, dict]]
    sums: list[tuple[str, str, list]]
    value: float
    lines: list[str] | None = None  # lines that are not sums (written as they are), before the sums
    tail: list[str] | None = None  # and after them


def words(lang: str) -> dict:
    """The page's notes beside a gradient's arithmetic in ``lang``."""
    return texts(lang)["page_grads"]


def wrap(x: float, p: int) -> str:
    text = number(x, p)
    return f"({text})" if text.startswith("-") else text


def sum_lines(lhs: str, symbolic: str, terms: list, p: int, lang: str, limit: int = MAX_TERMS) -> list[str]:
    """``lhs = symbolic``, ``= t₁ + t₂ + …``, ``= total`` (a long sum keeps its first :data:`MAX_TERMS` terms)."""
    shown = [f"{wrap(t[0], p)}·{wrap(t[1], p)}" if isinstance(t, tuple) else wrap(t, p) for t in terms[:limit]]
    more = len(terms) - limit
    written = " + ".join(shown) or "0"
    if more > 0:
        written += " + … " + words(lang)["more"].format(count=more)
    total = sum(t[0] * t[1] if isinstance(t, tuple) else t for t in terms)
    return [f"{lhs} = {symbolic}" if symbolic else lhs, f"  = {written}", f"  = {number(total, p)}"]


def scaled(lhs: str, scale: float, z_terms: list, value: float, p: int) -> str:
    """``lhs = scale·(Σ dZ·k) = 0.7071·(…) = value``: the scale's factor in dQ and dK."""
    inner = sum(x * y for x, y in z_terms)
    return f"{lhs} = scale·Σ = {scale:.6g}·{wrap(inner, p)} = {number(value, p)}"
