"""The one error type for everything a user can cause.

Library code raises :class:`AttnError` with a message that names the place
(file, key, row, column) and what was expected; the command line turns it
into ``Error: …`` on standard error and exit code 2, in one place.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable


class AttnError(Exception):
    """A problem with the user's document, files or options (exit code 2)."""

    def __init__(self, message: str, where: str | None = None):
        self.message = message
        self.where = where
        super().__init__(self.__str__())

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message

    def at(self, where: str) -> AttnError:
        """The same error with an outer location put in front (file, key)."""
        return AttnError(self.message, f"{where}: {self.where}" if self.where else where)


def unknown_key(key: object, known: Iterable[str], what: str = "key") -> AttnError:
    """``unknown key 'wieghts' (did you mean 'weights'?)``, or the list of known keys."""
    known = list(known)
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'?" if close else "expected one of " + ", ".join(known)
    return AttnError(f"unknown {what} '{key}' ({hint})")


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def shape_str(shape: tuple[int, ...]) -> str:
    return "×".join(str(s) for s in shape) if shape else "a scalar"


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """Text as it may go to a terminal: control characters written as ``\\x1b`` (never sent raw)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def describe(x: object) -> str:
    """A document value as a message names it: ``null``, ``the string 'abc'``, ``1234567890… (330 digits)``."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, str):
        return f"the string {x[:40]!r}"
    if isinstance(x, dict):
        return "a mapping"
    if isinstance(x, list):
        return "a list"
    if isinstance(x, int) and abs(x) >= 10**24:
        digits = str(abs(x))
        return f"{'-' if x < 0 else ''}{digits[:10]}… ({len(digits)} digits)"
    if isinstance(x, (int, float)):
        return repr(x)
    return f"a {type(x).__name__} ({str(x)[:40]})"
