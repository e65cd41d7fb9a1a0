"""What every test and every doctest of the package starts from (the tests' own fixtures: tests/conftest.py)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def english(monkeypatch):
    """The suite speaks English wherever it runs: ATTNCLI_LANG=en, and a Chinese locale (LC_ALL, LC_MESSAGES, LANG
    zh_*) replaced by C.UTF-8, in this process and the commands it starts. Tests of the language set their own."""
    monkeypatch.setenv("ATTNCLI_LANG", "en")
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        if os.environ.get(name, "").lower().startswith("zh"):
            monkeypatch.setenv(name, "C.UTF-8")
    # no command's choice carried over from a test before, nor from the --help examples run while collecting (a
    # language chosen then is what monkeypatch would restore after each test: doctests, which come later, saw it)
    import attncli.core.messages as messages

    messages._chosen = None
    monkeypatch.setattr(messages, "_chosen", None)
