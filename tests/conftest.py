"""Shared helpers: the repository's folders and a CLI runner."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
# The README and the guides its sections moved to (issue 32): every command and session in them runs in the tests.
GUIDES = ("tutorial.md", "documents.md", "real-models.md", "pictures.md", "json-and-python.md", "speed.md",
          "errors.md", "development.md", "kernels.md", "layers.md")
PAGES = (ROOT / "README.md", *(ROOT / "docs" / name for name in GUIDES))


def pages_text() -> str:
    """The README and its guides, one after the other."""
    return "\n".join(page.read_text(encoding="utf-8") for page in PAGES)


def section(heading: str) -> str:
    """The section ``## heading`` (up to the next ``## ``), in whichever page holds it."""
    return pages_text().split(f"## {heading}", 1)[1].split("\n## ", 1)[0]


@pytest.fixture(scope="module")
def hf():
    """(torch, transformers) for the extract tests' tiny models (tests/tiny_models.py); skipped without them or
    tokenizers. (A test module may define its own ``hf``.)"""
    import tiny_models

    return tiny_models.hf_and_tokenizers()


def default_signals() -> None:
    """In the child: the signals' default actions, whatever this run inherited (under `nohup` SIGHUP is ignored,
    and a signal the test sends would then never end the child)."""
    for signo in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signo, signal.SIG_DFL)


@pytest.fixture(autouse=True)
def fixed_memory_budget(monkeypatch):
    """attncli's memory budget is 2 GiB in every test unless the test (or whoever runs the suite) sets another:
    half the machine's free memory, attncli's default, would make a test's plan depend on what else the machine
    runs (a busy machine with 100 MB free refuses even a 3 × 4 document). Tests of the default delete it."""
    if "ATTNCLI_MEMORY" not in os.environ:
        monkeypatch.setenv("ATTNCLI_MEMORY", "2G")


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


ORACLE_FIXTURES = ("torch", "hf", "save_file", "minilm")  # fixtures that import PyTorch or transformers (importorskip)
# The quick subset (`pytest -m quick`, README): the tests of these files (or FILE::test) but the slow, torch and
# browser ones. Every command and the core maths once (forward against hand-worked numbers and a naive loop, scale and
# masks, the backward pass by hand), in under a minute on 2 cores; tests/test_suite_hygiene.py checks each command.
QUICK = ("test_illustrated.py", "test_compute.py", "test_check.py", "test_explain.py", "test_heatmap.py",
         "test_init.py", "test_page.py", "test_extract.py", "test_cli.py", "test_api.py",
         "test_backward_views.py::test_a_hand_worked_example")
NOT_QUICK = ("slow", "torch", "browser")
QUICK_LEAVES_OUT = ("test_explain.py::test_every_example_every_step_every_language",)  # 16 s: every example and step


def pytest_collection_modifyitems(items):
    """A test that takes an oracle fixture is a comparison: marked torch, so that `pytest -m torch` runs it. A test
    of a QUICK file that is neither slow nor a comparison is marked quick."""
    for item in items:
        if set(getattr(item, "fixturenames", ())) & set(ORACLE_FIXTURES):
            item.add_marker(pytest.mark.torch)
        test = f"{item.path.name}::{getattr(item, 'originalname', '')}"
        if (item.path.name in QUICK or test in QUICK) and test not in QUICK_LEAVES_OUT \
                and not any(item.get_closest_marker(name) for name in NOT_QUICK):
            item.add_marker(pytest.mark.quick)


def read_within(stream, size: int, seconds: float = 60) -> bytes:
    """Up to ``size`` bytes from a child's pipe, waiting at most ``seconds`` for them (a test never hangs on a read)."""
    import select

    ready, _, _ = select.select([stream], [], [], seconds)
    assert ready, f"nothing to read within {seconds} s"
    return os.read(stream.fileno(), size)



def answer_checked(runner, tmp_path, doc: dict, answer: dict, *args) -> dict:
    """``attncli check`` of ``doc`` with the learner's ``answer`` (which has a slip: exit 1), its JSON report."""
    import json

    import yaml

    from attncli.cli import app

    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump({**doc, "answer": answer}, allow_unicode=True))
    result = runner.invoke(app, ["check", str(path), "--format", "json", *args])
    assert result.exit_code == 1, result.output
    return json.loads(result.stdout)


@pytest.fixture
def language_from_environment(monkeypatch):
    """The language comes from ATTNCLI_LANG alone (as for a command given no --lang): no language chosen by an
    earlier command, no locale variable."""
    monkeypatch.setattr("attncli.core.messages._chosen", None)
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
