"""The one error type for everything a user can cause.

Library code raises :class:`AttnError` with a message id, the place (file, key, row, column) and the message's
fields: ``AttnError("qknorm.not_number", "weights.query", value=describe(x))``. The text is data
(:mod:`attncli.core.messages`: one file per language), written when the error is shown, in the language asked
for; the command line turns it into ``Error: …`` on standard error and exit code 2, in one place.
"""

from __future__ import annotations

import difflib
import heapq
import re
from collections.abc import Iterable

SHOWN_CHARS = 40  # of a value, a key or a label a message quotes
PLACE_CHARS = 120  # of a place (a file name, an option) a message names
CELL_CHARS = 20  # of a cell of a matrix file: never more of a file's content than this
MESSAGE_CHARS = 1000  # the whole message, should one place above be missed


class AttnError(Exception):
    """A problem with the user's document, files or options (exit code 2).

    ``id`` names the message in the catalogues (attncli/data/messages/), ``fields`` fill its template; ``where``
    (a file, a key, an option) is shortened as each part is added, so a 10 kB file name cannot flood the message;
    what the message quotes of the user's text is shortened where it is written, with :func:`shorten`. ``str()``
    and :attr:`message` are in the language messages are written in (:func:`attncli.set_language`, else the
    environment), :meth:`text` in any.

    >>> str(AttnError("errors.unknown", "doc.yaml", what="key", key="'wieghts'", hint="did you mean 'weights'?"))
    "doc.yaml: unknown key 'wieghts' (did you mean 'weights'?)"
    """

    def __init__(self, id: str, where: str | None = None, /, **fields: object):
        self.id, self.fields = id, fields
        self.where = None if where is None else shorten(where, PLACE_CHARS, tail=PLACE_CHARS // 3)
        super().__init__(id, self.where)

    @property
    def message(self) -> str:
        """The message without its place, in the language messages are written in."""
        return self.said()

    def said(self, lang: str | None = None) -> str:
        """The message without its place, in ``lang`` (else the language messages are written in), shortened."""
        from attncli.core.messages import text

        message = shorten(text(self.id, self.fields, lang), MESSAGE_CHARS, tail=MESSAGE_CHARS // 3)
        if lang != "en" and message.endswith(" characters)"):  # (the length a shortened message shows, in lang)
            from attncli.core.messages import language, suffix

            message = suffix(message, lang or language())
        return message

    def text(self, lang: str | None = None) -> str:
        """The place and the message, in ``lang`` (else the language messages are written in)."""
        message = self.said(lang)
        return f"{self.where}: {message}" if self.where else message

    def __str__(self) -> str:
        return self.text()

    def __reduce__(self):
        return _rebuilt, (type(self), self.id, self.where, self.fields)

    def placed(self, where: str | None) -> AttnError:
        """The same message at another place (``where`` instead of this one's)."""
        return type(self)(self.id, where, **self.fields)

    def at(self, where: str) -> AttnError:
        """The same error with an outer location put in front (file, key)."""
        error = AttnError(self.id, where, **self.fields)
        if self.where:
            error.where = f"{error.where}: {self.where}"
            error.args = (self.id, error.where)
        return error


def _rebuilt(kind: type, id: str, where: str | None, fields: dict) -> AttnError:
    return kind(id, where, **fields)


def shorten(text: object, limit: int = SHOWN_CHARS, tail: int = 0) -> str:
    """User text as a message quotes it: its first ``limit`` characters (its last ``tail`` of them among
    those), and its length.

    >>> shorten("k" * 10000, 20)
    'kkkkkkkkkkkkkkkkkkkk… (10000 characters)'
    >>> shorten("/tmp/" + "d" * 300 + "/doc.yaml", 30, tail=10)
    '/tmp/ddddddddddddddd…d/doc.yaml (314 characters)'
    >>> shorten(10**330)
    '1000000000… (331 digits)'
    """
    if isinstance(text, (list, tuple)) or hasattr(text, "tolist"):  # (NumPy's values as the numbers they are,
        text = _plain(text)  # never as their repr: np.float64(0.5), array([…]))
    if isinstance(text, int) and not isinstance(text, bool):
        if abs(text) < 10**24:
            return str(text)
        digits = str(abs(text)) if text.bit_length() < 10_000 else None  # (str() refuses beyond 4300 digits)
        count = f"{len(digits)} digits" if digits else f"about {int(text.bit_length() * 0.30103)} digits"
        return f"{'-' if text < 0 else ''}{(digits or '')[:10]}… ({count})"
    text = str(text)
    if len(text) <= limit:
        return text
    end = text[len(text) - tail:] if tail else ""
    return f"{text[: limit - tail]}…{end} ({len(text)} characters)"


def _plain(value: object) -> object:
    """Lists, tuples and NumPy arrays and numbers (from the Python API) as Python lists and numbers."""
    if hasattr(value, "tolist") and hasattr(value, "dtype"):
        return value.tolist()
    if isinstance(value, (list, tuple)) and any(isinstance(x, (list, tuple)) or hasattr(x, "dtype") for x in value):
        return type(value)(_plain(x) for x in value)
    return value


def quoted(text: object, limit: int = SHOWN_CHARS) -> str:
    """``'text'`` shortened, as messages quote a value, a key or a label."""
    return f"'{shorten(text, limit)}'"


NEAREST_POOL = 400  # names compared in full when a name is not found: difflib is slow (benchmarks/README.md, errors)


def nearest(word: str, names: Iterable[str], n: int = 1, cutoff: float = 0.6) -> list[str]:
    """The names most like ``word`` (difflib's ratio, at least ``cutoff``), best first.

    Comparing with every name of a large header takes seconds (see benchmarks/README.md, errors): beyond
    :data:`NEAREST_POOL` names, only some are compared, found in C: those that share the longest start or the
    longest end with ``word`` (by sorting), and those that hold one of its numbers (a layer's:
    ``model.layrs.12.self_atn.q_proj.weight`` still finds layer 12's).
    """
    names = list(names)
    if len(names) <= NEAREST_POOL:
        return difflib.get_close_matches(word, names, n=n, cutoff=cutoff)
    share = NEAREST_POOL // 6
    ends, drow = [name[::-1] for name in names], word[::-1]
    pool = _beside(word, names, share) + [end[::-1] for end in _beside(drow, ends, share)]
    pool += _holding_numbers(word, names, 2 * share)
    return difflib.get_close_matches(word, list(dict.fromkeys(pool)), n=n, cutoff=cutoff)


def _beside(word: str, names: list[str], share: int) -> list[str]:
    """The ``share`` names just before ``word`` in sorted order and the ``share`` from it on, as a sort of all the
    names and a bisection would find them, in one pass of comparisons (C's) and two small heaps: no sort of 300,000
    names."""
    before = heapq.nlargest(share, filter(word.__gt__, names))
    after = heapq.nsmallest(share, filter(word.__le__, names))
    return before[::-1] + after


def _holding_numbers(word: str, names: list[str], limit: int) -> list[str]:
    """Up to ``limit`` names that hold one of the whole numbers in ``word`` (its three longest), found by str.find."""
    numbers = sorted(set(re.findall(r"[0-9]+", word)), key=len, reverse=True)[:3]
    if not numbers:
        return []
    text = "\n" + "\n".join(names) + "\n"
    found: list[str] = []
    for number in numbers:
        at, tries, kept = text.find(number), 0, 0
        while at >= 0 and kept < limit // len(numbers) and tries < 50 * limit:  # (a 0 is in many names)
            end = at + len(number)
            if not (text[at - 1].isdigit() or text[end].isdigit()):
                found.append(text[text.rfind("\n", 0, at) + 1: text.find("\n", end)])
                kept += 1
            at, tries = text.find(number, end), tries + 1
    known = set(names)  # (a name holding a line break is not cut out whole)
    return [name for name in found if name in known]


def unknown_key(key: object, known: Iterable[str], what: str = "key") -> AttnError:
    """``unknown key 'wieghts' (did you mean 'weights'?)``, or the list of known keys."""
    known = list(known)
    close = nearest(str(key)[:100], known)
    hint = f"did you mean '{close[0]}'?" if close else "expected one of " + ", ".join(known)
    return AttnError("errors.unknown", what=what, key=quoted(key), hint=hint)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def shape_str(shape: tuple[int, ...]) -> str:
    return "×".join(shorten(s) for s in shape) if shape else "a scalar"


_CONTROL = r"[\x00-\x1f\x7f-\x9f]"  # compiled where it is used (re keeps it): a run that prints no message needs none


def visible(text: str) -> str:
    """Text as it may go to a terminal: control characters written as ``\\x1b`` (never sent raw)."""
    return re.compile(_CONTROL).sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def describe(x: object) -> str:
    """A document value as a message names it: ``null``, ``the string 'abc'``, ``1234567890… (330 digits)``."""
    if hasattr(x, "dtype") and hasattr(x, "shape"):  # NumPy's (from the Python API): never its repr
        return describe(x.item()) if x.shape == () else f"an array of shape {shape_str(x.shape)}"
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, str):
        return f"the string {shorten(x)!r}"
    if isinstance(x, dict):
        return "a mapping"
    if isinstance(x, list):
        return "a list"
    if isinstance(x, int):
        return shorten(x)
    if isinstance(x, float):
        return shorten(repr(float(x)))
    return f"a {type(x).__name__} ({shorten(x)})"
