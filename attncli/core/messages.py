"""Messages are data: every message attncli raises or prints is an id, with its text in one file per language.

``attncli/data/messages/en.json`` and ``zh.json`` map each id to a :meth:`str.format` template with named
fields (``"qknorm.not_number": "{value} is not a number"``); :class:`~attncli.core.errors.AttnError`
keeps the id and the field values and writes its text when it is shown, in the language asked for:
:func:`set_language` (the Python API's ``attncli.set_language``, the command line's ``--lang``), else the
environment (``ATTNCLI_LANG``, then a ``zh_*`` locale). A language's file is read the first time a message in it
is written. A field's value is written as it is (a key path, a file name, a number), except the words a message
is built from (``row 2, column 3``, ``did you mean 'x'?``, ``a mapping``): those are found among the ``phrase.*``
templates of the same files and written in the message's language (:func:`phrase`): each phrase's English
template is compiled once to an anchored regex (each field a non-greedy group, the most literal text first, ``{n}``
a count) and rebuilt from the same id's template, its own fields translated in turn (to :data:`DEPTH`). A field no
phrase matches is written as it is. The place (``where``) is never translated. An id the catalogue does not hold
is written as it is (the suite checks that every id the package raises is there).

>>> text("qknorm.not_number", {"value": "the string 'x'"}, "en")
"the string 'x' is not a number"
>>> text("qknorm.not_number", {"value": "the string 'x'"}, "zh")
"字符串 'x' 不是数"
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from pathlib import Path

LANGUAGES = ("en", "zh")
LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG")  # in the order POSIX gives them precedence

_chosen: str | None = None
_read: dict[str, dict[str, str]] = {}  # the catalogues read so far, by language


def from_environment(environ: Mapping[str, str] | None = None) -> str:
    """``ATTNCLI_LANG`` (en or zh; anything else is ignored), else the locale: ``zh_*`` is Chinese.

    >>> from_environment({"ATTNCLI_LANG": "zh"}), from_environment({"LANG": "zh_CN.UTF-8"})
    ('zh', 'zh')
    >>> from_environment({"ATTNCLI_LANG": "en", "LANG": "zh_TW.UTF-8"})
    'en'
    >>> from_environment({"LC_ALL": "C", "LANG": "zh_CN"})
    'en'
    """
    environ = os.environ if environ is None else environ
    asked = environ.get("ATTNCLI_LANG", "").strip().lower()
    if asked in LANGUAGES:
        return asked
    for name in LOCALE_VARIABLES:
        value = environ.get(name, "")
        if value:  # the first one set decides, as in POSIX
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def set_language(lang: str | None) -> None:
    """Write every later message in ``lang`` (``"en"`` or ``"zh"``); None: as the environment says again.

    >>> set_language("zh"); language()
    'zh'
    >>> set_language(None)
    """
    global _chosen
    if lang is not None and not (isinstance(lang, str) and lang in LANGUAGES):  # (attncli.set_language: an AttnError)
        raise ValueError(f"lang: expected one of {', '.join(LANGUAGES)} or None")
    _chosen = lang


def language() -> str:
    """The language messages are written in: the one set, else the environment's."""
    return _chosen or from_environment()


def folder() -> Path:
    """Where the catalogues are: attncli/data/messages/."""
    return Path(__file__).resolve().parent.parent / "data" / "messages"


def catalogue(lang: str) -> dict[str, str]:
    """The templates of ``lang`` by id, read from its file the first time one is needed."""
    if lang not in _read:
        data = (folder() / f"{lang}.json").read_bytes()
        import json  # (json is imported by then; orjson's import would cost more than it saves on 90 kB)

        _read[lang] = json.loads(data)
    return _read[lang]


def template(id: str, lang: str) -> str:
    """The template of ``id`` in ``lang``; English where ``lang`` has none (the suite fails on a missing id); an id
    no catalogue holds (a caller's own text) as it is."""
    found = catalogue(lang).get(id) if lang != "en" else None
    if found is None:
        found = catalogue("en").get(id)
    return found if found is not None else id.replace("{", "{{").replace("}", "}}")


def text(id: str, fields: Mapping[str, object], lang: str | None = None) -> str:
    """The message ``id`` with its ``fields``, in ``lang`` (else :func:`language`)."""
    lang = lang or language()
    if any(hasattr(value, "said") for value in fields.values()):  # (a field that is another error's message)
        fields = {key: value.said(lang) if hasattr(value, "said") else value for key, value in fields.items()}
    if lang == "en":
        return template(id, "en").format_map(fields)
    return fill(template(id, lang), fields, lang)


def _formatter():
    """A :class:`string.Formatter`, its module imported when a template is first taken apart (a Chinese message,
    not an English one: :func:`text` fills those with ``str.format_map``)."""
    import string

    return string.Formatter()


def placeholders(template_text: str) -> set[str]:
    """The field names ``template_text`` writes (``{value!r}`` is ``value``)."""
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in _formatter().parse(template_text)
            if name is not None}


# ---------------------------------------------------------------- the words of a field, in another language

DEPTH = 3  # fields translated within fields
# a field: a quoted value whole if it can be (its text may hold " (" or ": "), a shortened number whole
# (``1234567890… (330 digits)``), else the shortest text that lets the rest match
FIELD = r"('[^'\n]*'|-?[0-9]+… \([0-9]+ [a-z]+\)|.*?)"
NUMBER = r"([0-9][0-9,]*)"  # {n}: a count (``3 rows``), never a word
PHRASE = "phrase."  # the ids of the phrases


def _specificity(template: str) -> tuple[int, int, str]:
    """How specific ``template`` is (its literal text, in words and in all: ``{}: {}`` is tried before ``{} {}``,
    which is tried before ``{}{}``), and its longest literal part (a field can match only if it holds that)."""
    words, literal, longest = 0, 0, ""
    for text, _, _, _ in _formatter().parse(template):
        words, literal = words + len(text.strip(" :;,.")), literal + len(text)
        longest = max(longest, text, key=len)
    return words, literal, longest


@functools.cache
def _pattern(template: str) -> re.Pattern:
    """``template`` as an anchored regex, each field a group (compiled when a field first holds its literal text)."""
    parts = []
    for text, name, _, _ in _formatter().parse(template):
        parts.append(re.escape(text))
        if name is not None:
            parts.append(NUMBER if name == "n" else FIELD)
    return re.compile("".join(parts) + r"\Z", re.S)


@functools.cache
def compiled(lang: str, messages: bool) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(its longest literal part, the English template, ``lang``'s template, the English fields' names in order) of
    every phrase, and of every message too when ``messages`` (a field may be a whole message another helper wrote:
    a cell's problem), the most specific first; a template that only joins fields (``{}: {}``) is left out: inside a
    field it would split a name."""
    english, other = catalogue("en"), catalogue(lang)
    entries = []
    for id, template in english.items():
        if (messages or id.startswith(PHRASE)) and id in other:
            names = tuple(name for _, name, _, _ in _formatter().parse(template) if name is not None)
            words, literal, longest = _specificity(template)
            if not (words == 0 and len(names) > 1):
                entries.append(((words, literal), (longest, template, other[id], names)))
    entries.sort(key=lambda entry: (-entry[0][0], -entry[0][1]))
    return [entry for _, entry in entries]


def phrase(field: str, lang: str, depth: int = 1) -> str | None:
    """``field`` in ``lang``: a phrase (or, as a message's field, a message) whole, else one before its first colon
    (``row 1, column 2: nan``); None when none matches."""
    whole = _lookup(field, lang, depth)
    if whole is not None:
        return whole
    head, colon, rest = field.partition(": ")
    place = _lookup(head, lang, depth) if colon and not head.startswith("'") else None
    return f"{place}：{rest}" if place is not None else None


def _lookup(field: str, lang: str, depth: int) -> str | None:
    for longest, template, translated, names in compiled(lang, depth == 1):
        if longest not in field:
            continue
        match = _pattern(template).match(field)
        if match:
            values = [(phrase(v, lang, depth + 1) or v) if depth < DEPTH else v for v in match.groups()]
            return _fill_matched(translated, names, values, match.groups())
    return None


def _cjk(char: str) -> bool:
    """Whether ``char`` is a Chinese character or full-width punctuation (no space is written beside one)."""
    return "\u2e80" <= char <= "\u9fff" or "\uff00" <= char <= "\uffef" or "\u3000" <= char <= "\u303f"


def _joined(parts: list[tuple[str, str | None, bool]]) -> str:
    """Literal texts and field values joined; a space between Chinese text and a field that was translated into
    Chinese is dropped (``是 {}`` + ``映射`` is ``是映射``; ``{} 有`` + ``第 2 行`` is ``第 2 行有``)."""
    out, after = "", False
    for text, value, translated in parts:
        if out and text.startswith(" ") and len(text) > 1 and _cjk(out[-1]) and _cjk(text[1]) and after:
            text = text[1:]
        out += text
        after = False
        if value is None:
            continue
        if translated and value and _cjk(value[0]) and out.endswith(" ") and len(out) > 1 and _cjk(out[-2]):
            out = out[:-1]
        out += value
        after = translated
    return out


def _fill_matched(template: str, names: tuple[str, ...], values: list[str], english: tuple[str, ...]) -> str:
    """``template`` filled with the ``values`` a match found for the English fields ``names``: by name (a
    message's ``{place}``), else by position (a phrase's ``{}``, ``{0}``, ``{n}``)."""
    parts, auto = [], 0
    for text, name, _, _ in _formatter().parse(template):
        if name is None:
            parts.append((text, None, False))
            continue
        if name.isdigit():
            index = int(name)
        elif name and name != "n" and name in names:
            index = names.index(name)
        else:
            index, auto = auto, auto + 1
        parts.append((text, values[index], values[index] != english[index]))
    return _joined(parts)


def fill(template: str, fields: Mapping[str, object], lang: str) -> str:
    """A message's ``template`` in ``lang`` with its named ``fields``, each field's words in ``lang`` too."""
    formatter, parts = _formatter(), []
    for text, name, spec, conversion in formatter.parse(template):
        if name is None:
            parts.append((text, None, False))
            continue
        value = formatter.convert_field(formatter.get_field(name, (), fields)[0], conversion)
        english = format(value, spec or "")
        translated = phrase(english, lang) if english else None
        translated = translated if translated is not None and translated != english else None
        parts.append((text, translated if translated is not None else english, translated is not None))
    return suffix(_joined(parts), lang)


def suffix(message: str, lang: str) -> str:
    """The length a shortened value shows, in ``lang`` (``… (3000 characters)`` is ``…（共 3000 个字符）``)."""
    if lang != "zh":
        return message
    message = re.sub(r"…(\S*) \(([0-9]+) characters\)", r"…\1（共 \2 个字符）", message)
    return re.sub(r"… \((about )?([0-9]+) digits\)", lambda m: f"…（{'约' if m[1] else '共'} {m[2]} 位数字）", message)
