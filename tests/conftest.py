"""Shared helpers: the repository's folders and a CLI runner."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def default_signals() -> None:
    """In the child: the signals' default actions, whatever this run inherited (under `nohup` SIGHUP is ignored,
    and a signal the test sends would then never end the child)."""
    for signo in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signo, signal.SIG_DFL)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


ORACLE_FIXTURES = ("torch", "hf", "save_file", "minilm")  # fixtures that import PyTorch or transformers (importorskip)


def pytest_collection_modifyitems(items):
    """A test that takes an oracle fixture is a comparison: marked torch, so that `pytest -m torch` runs it."""
    for item in items:
        if set(getattr(item, "fixturenames", ())) & set(ORACLE_FIXTURES):
            item.add_marker(pytest.mark.torch)
