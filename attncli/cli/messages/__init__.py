"""Error messages in the language of the run: the one place that turns an English message into Chinese.

Library code raises :class:`~attncli.core.errors.AttnError` with an English message (the Python API speaks
English). When the run's language (:func:`attncli.cli.language.current`) is Chinese, the command line looks the
message up here as it prints it: each catalogue maps an English template (the f-string as written where it is
raised, ``{}`` for each replacement field) to a Chinese one. A template is compiled once to an anchored regex
(each field a non-greedy group); the first that matches, most literal text first, rebuilds the message in
Chinese with the same field values: key paths, file names and numbers stay as they are, and a field that is
itself a known phrase (``the string 'abc'``, ``did you mean 'x'?``) is translated in turn. A message no template
matches stays English, rather than half-translated. The place (``where``) is never translated; the line's
``Error: `` is the command line's, 错误： in Chinese (:func:`attncli.cli.run.prefix`).

>>> translate("unknown key 'wieghts' (did you mean 'weights'?)", "zh")
"未知的键 'wieghts'（是不是 'weights'？）"
>>> translate("unknown key 'wieghts' (did you mean 'weights'?)", "en")
"unknown key 'wieghts' (did you mean 'weights'?)"
"""

from __future__ import annotations

import functools
import re
import string

from attncli.cli.language import current, language_in  # noqa: F401  (language_in: here too, as before)
from attncli.core.errors import MESSAGE_CHARS, AttnError, shorten

LONGEST = 2 * MESSAGE_CHARS  # a longer message (its fields are shortened where it is raised: none is) stays English
DEPTH = 3  # fields translated within fields
# a field: a quoted value whole if it can be (its text may hold " (" or ": "), a shortened number whole
# (``1234567890… (330 digits)``), else the shortest text that lets the rest match
FIELD = r"('[^'\n]*'|-?[0-9]+… \([0-9]+ [a-z]+\)|.*?)"
WORDS = re.compile(r"[A-Za-z]{2,} [A-Za-z]{2,}")  # (a phrase, not a name or a number)
NUMBER = r"([0-9][0-9,]*)"  # {n}: a count (``3 rows``), never a word


def fields(template: str) -> int:
    """How many replacement fields ``template`` has (``{}``, ``{0}``, ``{n}``)."""
    return sum(1 for _, name, _, _ in string.Formatter().parse(template) if name is not None)


def _pattern(template: str) -> tuple[re.Pattern, tuple[int, int]]:
    """``template`` as an anchored regex, each field a group; and how specific it is (its literal text, in words
    and in all: ``{}: {}`` is tried before ``{} {}``, which is tried before ``{}{}``)."""
    parts, words, literal = [], 0, 0
    for text, name, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(text))
        words, literal = words + len(text.strip(" :;,.")), literal + len(text)
        if name is not None:
            parts.append(NUMBER if name == "n" else FIELD)
    return re.compile("".join(parts) + r"\Z", re.S), (words, literal)


def _compile(catalogue: dict[str, str]) -> list[tuple[re.Pattern, str, bool]]:
    """(regex, Chinese template, a mere joint of fields) for each template, the most specific first."""
    entries = sorted(((*_pattern(english), chinese) for english, chinese in catalogue.items()),
                     key=lambda entry: (-entry[1][0], -entry[1][1]))
    return [(regex, chinese, specific[0] == 0 and regex.groups > 1) for regex, specific, chinese in entries]


@functools.cache
def catalogues() -> tuple[dict[str, str], dict[str, str]]:
    """The whole messages, as raised (``CATALOGUE``), and what a field of a message may hold, never a message alone
    (``PHRASES``): imported when the first message is translated, not at every start."""
    from attncli.cli.messages import (
        cli,
        core,
        dynamic,
        fragments,
        inputs_doc,
        inputs_files,
        inputs_parts,
        models,
        teach,
    )
    from attncli.cli.messages import differential as differential_attention
    from attncli.cli.messages import indexer as sparse_selection
    from attncli.cli.messages import kernels as kernel_api
    from attncli.cli.messages import linear as linear_attention
    from attncli.cli.messages import stack as stacked

    return {
        **core.CATALOGUE, **inputs_doc.CATALOGUE, **inputs_files.CATALOGUE, **inputs_parts.CATALOGUE,
        **models.CATALOGUE, **teach.CATALOGUE, **cli.CATALOGUE, **dynamic.CATALOGUE, **stacked.CATALOGUE,
        **kernel_api.CATALOGUE, **linear_attention.CATALOGUE,
        **differential_attention.CATALOGUE, **sparse_selection.CATALOGUE,
    }, {**sparse_selection.PHRASES, **fragments.CATALOGUE}


def __getattr__(name: str) -> dict[str, str]:
    """``CATALOGUE`` and ``PHRASES`` (:func:`catalogues`), read on first use."""
    if name in ("CATALOGUE", "PHRASES"):
        return catalogues()[name == "PHRASES"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def compiled() -> tuple[list, list]:
    """The whole messages' templates and the phrases', compiled once."""
    return tuple(_compile(catalogue) for catalogue in catalogues())


def lookup(message: str, depth: int = 0) -> str | None:
    """``message`` in Chinese (a phrase inside another message when ``depth`` > 0), or None when no template matches.

    A template that only joins fields (``{}: {}``) may split the message at the wrong colon: its result is kept
    only if no English phrase is left in it; else the join that leaves the fewest English phrases.
    """
    messages, phrases = compiled()
    best, left = None, 0
    for regex, chinese, joint in phrases if depth else messages:
        if joint and depth:  # ("{}: {}" joins two phrases of a message; inside a field it would split a name)
            continue
        match = regex.match(message)
        if not match:
            continue
        values = [(_phrase(value, depth + 1) or value) if depth < DEPTH else value for value in match.groups()]
        result = _fill(chinese, values, match.groups())
        english = len(WORDS.findall(re.sub(r"'[^']*'", "", result))) if joint else 0
        if not english:
            return result
        if best is None or english < left:
            best, left = result, english
    return best


def _phrase(field: str, depth: int) -> str | None:
    """A field in Chinese: a phrase whole, else a phrase before its first colon (``row 1, column 2: nan``)."""
    whole = lookup(field, depth)
    if whole is not None:
        return whole
    head, colon, rest = field.partition(": ")
    place = lookup(head, depth) if colon and not head.startswith("'") else None
    return f"{place}：{rest}" if place is not None else None


def _cjk(char: str) -> bool:
    """Whether ``char`` is a Chinese character or full-width punctuation (no space is written beside one)."""
    return "\u2e80" <= char <= "\u9fff" or "\uff00" <= char <= "\uffef" or "\u3000" <= char <= "\u303f"


def _fill(chinese: str, values: list[str], english: tuple[str, ...]) -> str:
    """``chinese`` with its fields filled; the template's space between Chinese text and a field that was
    translated into Chinese is dropped (``是 {}`` + ``映射`` is ``是映射``; ``{} 有`` + ``第 2 行`` is ``第 2 行有``).
    """
    out, auto, after = "", 0, False
    for text, name, _, _ in string.Formatter().parse(chinese):
        if out and text.startswith(" ") and len(text) > 1 and _cjk(out[-1]) and _cjk(text[1]) and after:
            text = text[1:]
        out += text
        after = False
        if name is None:
            continue
        index = int(name) if name else auto
        auto += 0 if name else 1
        value = values[index]
        translated = value != english[index]
        if translated and value and _cjk(value[0]) and out.endswith(" ") and len(out) > 1 and _cjk(out[-2]):
            out = out[:-1]
        out += value
        after = translated
    return out


def _suffix(message: str) -> str:
    """The length a shortened value shows, in Chinese (``… (3000 characters)`` is ``…（共 3000 个字符）``)."""
    message = re.sub(r"…(\S*) \(([0-9]+) characters\)", r"…\1（共 \2 个字符）", message)
    return re.sub(r"… \((about )?([0-9]+) digits\)", lambda m: f"…（{'约' if m[1] else '共'} {m[2]} 位数字）", message)


def translate(message: str, language: str | None = None) -> str:
    """``message`` in ``language`` (the run's when None): Chinese when a template matches, else as it is."""
    if (language or current()) != "zh" or len(message) > LONGEST:
        return message
    chinese = lookup(message)
    return _suffix(chinese) if chinese is not None else message


def error_line(error: AttnError, language: str | None = None) -> str:
    """``error`` as the command line prints it after ``Error: ``: the place, then the message in the run's language.

    The message is translated whole, then shortened as :class:`AttnError` shortens it (the limits hold in both).
    """
    message = shorten(translate(error.message, language), MESSAGE_CHARS, tail=MESSAGE_CHARS // 3)
    message = _suffix(message) if (language or current()) == "zh" else message
    return f"{error.where}: {message}" if error.where else message


def usage_error(message: str, language: str | None = None) -> str:
    """A usage error of the parser (Click's, one line) in ``language``: Chinese for the common kinds, else as it is."""
    if (language or current()) != "zh" or len(message) > LONGEST:
        return message
    from attncli.cli.messages.usage import usage

    return usage(message, lookup) or message
