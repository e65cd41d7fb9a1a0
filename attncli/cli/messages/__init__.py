"""The command line's side of messages: an error's line, and the parser's (Click's) usage errors, in the run's language.

Messages are data (:mod:`attncli.core.messages`): an :class:`~attncli.core.errors.AttnError` holds an id and its
fields, and is written here in the run's language (:func:`attncli.cli.language.current`). The place (``where``)
is never translated; the line's ``Error: `` is the command line's, 错误： in Chinese (:func:`attncli.cli.run.prefix`).
Click words its own usage errors: :mod:`.usage` finds their kind by a few words and says it in Chinese.

>>> error = AttnError("errors.unknown", "doc.yaml", what="key", key="'wieghts'", hint="did you mean 'weights'?")
>>> error_line(error, "zh")
"doc.yaml: 未知的键 'wieghts'（是不是 'weights'？）"
"""

from __future__ import annotations

from attncli.cli.language import current, language_in  # noqa: F401  (language_in: here too, as before)
from attncli.core.errors import AttnError


def error_line(error: AttnError, language: str | None = None) -> str:
    """``error`` as the command line prints it after ``Error: ``: the place, then the message in the run's language
    (shortened as :class:`AttnError` shortens it: the limits hold in every language)."""
    return error.text(language or current())


def usage_error(message: str, language: str | None = None) -> str:
    """A usage error of the parser (Click's, one line) in ``language``: Chinese for the common kinds, else as it is."""
    if (language or current()) != "zh":
        return message
    from attncli.cli.messages.usage import usage

    return usage(message) or message
