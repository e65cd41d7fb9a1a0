"""The texts' files as the teaching code reads them: :mod:`attncli.outputs.texts` (one JSON file per language, read
once per process; the tables' titles and the heat maps read the same files, so the loader lives below them)."""

from __future__ import annotations

from attncli.outputs.texts import FOLDER, LANGUAGES, path, texts

__all__ = ["FOLDER", "LANGUAGES", "path", "texts"]
