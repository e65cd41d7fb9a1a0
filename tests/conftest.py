"""Shared helpers: the repository's folders and a CLI runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()
