"""Which language attncli speaks: ``--lang``, else ``ATTNCLI_LANG``, else a Chinese locale, else English.

Every command resolves its ``--lang`` option here first thing (:func:`choose`); the one place that prints
``Error: …`` asks :func:`current` (a usage error comes before any command has run: the environment decides).
"""

from __future__ import annotations

import os

LANGUAGES = ("en", "zh")
LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG")  # in the order POSIX gives them precedence

_chosen: str | None = None
USAGE = "attncli.usage"  # ctx.meta: the usage line's prefix while --help is written in another language (help_zh)


def from_environment(environ: os._Environ | dict | None = None) -> str:
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


def choose(option: object = None) -> str:
    """The language of this run: the ``--lang`` option's value when given, else :func:`from_environment`."""
    global _chosen
    value = getattr(option, "value", option)
    _chosen = value if value in LANGUAGES else from_environment()
    return _chosen


def current() -> str:
    """The language chosen by the running command, or the environment's before one has chosen."""
    return _chosen or from_environment()


def language_in(args: list[str]) -> str | None:
    """The language ``--lang zh`` / ``--lang=zh`` asks for in ``args`` (before the parser has read them), or None.

    >>> language_in(["compute", "doc.yaml", "--lang", "zh", "--bogus"]), language_in(["--lang=en"]), language_in([])
    ('zh', 'en', None)
    """
    found = None
    for i, arg in enumerate(args):
        if arg == "--":
            break
        value = arg.partition("=")[2] if arg.startswith("--lang=") else args[i + 1] if (
            arg == "--lang" and i + 1 < len(args)) else None
        if value in LANGUAGES:
            found = value  # (the last one given wins, as the parser has it)
    return found
