"""Which language attncli speaks: ``--lang``, else ``ATTNCLI_LANG``, else a Chinese locale, else English.

Every command resolves its ``--lang`` option here first thing (:func:`choose`); the one place that prints
``Error: …`` asks :func:`current` (a usage error comes before any command has run: the environment decides).
"""

from __future__ import annotations

from attncli.core.messages import LANGUAGES, LOCALE_VARIABLES, from_environment, language, set_language  # noqa: F401

USAGE = "attncli.usage"  # ctx.meta: the usage line's prefix while --help is written in another language (help_zh)


def choose(option: object = None) -> str:
    """The language of this run: the ``--lang`` option's value when given, else :func:`from_environment`."""
    value = getattr(option, "value", option)
    chosen = value if value in LANGUAGES else from_environment()
    set_language(chosen)  # (the library's messages are written in it too)
    return chosen


def current() -> str:
    """The language chosen by the running command, or the environment's before one has chosen."""
    return language()


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
