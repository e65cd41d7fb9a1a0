"""The words of ``attncli explain``, one module per language: :mod:`.en` (the default) and :mod:`.zh`."""

from __future__ import annotations

LANGUAGES = ("en", "zh")


def texts(lang: str = "en") -> dict:
    """The text table of ``lang``."""
    if lang == "zh":
        from attncli.teach.texts.zh import TEXTS
    else:
        from attncli.teach.texts.en import TEXTS
    return TEXTS
