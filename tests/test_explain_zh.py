"""attncli explain --lang zh: every paragraph of every step (also --why and the extra steps) is Chinese,
none English."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from conftest import EXAMPLES, ROOT

from attncli.cli import app
from attncli.teach.texts import texts

EXAMPLE_FILES = sorted(str(p) for p in EXAMPLES.rglob("*.yaml")
                       if p.parent.name not in ("stacked", "linear"))  # (test_stacked.py; linear: test_lightning.py)
CJK = re.compile(r"[\u4e00-\u9fff]")


def english_sentences() -> set[str]:
    """Every English sentence of the texts, without its placeholders (long enough to be a sentence)."""
    def strings(d):
        for value in d.values():
            yield from strings(value) if isinstance(value, dict) else [value]

    out = set()
    for text in strings(texts("en")):
        for sentence in re.split(r"(?<=[.:;])\s+", text):
            for piece in re.split(r"\{[^}]*\}", sentence):  # the fixed words between placeholders
                if len(piece.split()) >= 4:
                    out.add(piece.strip())
    return out


SENTENCES = english_sentences()


def zh_steps(runner, *args) -> list[dict]:
    result = runner.invoke(app, ["explain", *args, "--lang", "zh", "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["steps"]


def assert_chinese(steps: list[dict]) -> None:
    for step in steps:
        assert CJK.search(step["title"]), step["title"]
        assert step["text"], step["step"]
        for paragraph in step["text"] + step["notes"]:
            assert CJK.search(paragraph), paragraph
            english = [s for s in SENTENCES if s in paragraph]
            assert not english, (step["step"], english)
        for table in step["numbers"].values():  # every table's label is Chinese too (its formula stays as it is)
            assert CJK.search(table["title"]), (step["step"], table["title"])


def test_the_english_sentences_are_found_at_all():
    assert len(SENTENCES) > 50
    assert any("dot product of its query" in s for s in SENTENCES)


@pytest.mark.parametrize("file", EXAMPLE_FILES, ids=lambda p: p.split("examples/")[-1])
def test_every_step_of_every_example_is_chinese_and_has_no_english_sentence(runner, file):
    assert_chinese(zh_steps(runner, file))


@pytest.mark.parametrize("file", EXAMPLE_FILES, ids=lambda p: p.split("examples/")[-1])
def test_every_why_stage_is_chinese(runner, file):
    assert_chinese(zh_steps(runner, file, "--why"))


def test_the_extra_steps_and_variants_are_chinese(runner, tmp_path):
    data = yaml.safe_load((EXAMPLES / "illustrated.yaml").read_text())
    data["weights"]["output"] = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]
    for extra in ({"positional": "sinusoidal", "add_norm": True, "mask": "causal", "scale": 0.5},
                  {"normalize": "sum"}, {"normalize": "none", "scale": "sqrt"},
                  {"score": "additive", "weights": dict(data["weights"], w1=[[1, 0], [0, 1], [1, 1]],
                                                        w2=[[1, 1], [0, 1], [1, 0]], v=[1, -1])}):
        path = tmp_path / "doc.yaml"
        path.write_text(yaml.safe_dump(dict(data, **extra)))
        steps = zh_steps(runner, str(path), "--query", "2")
        assert_chinese(steps)
        assert len(steps) == 8 + ("positional" in extra) + ("add_norm" in extra)


def test_the_builtin_rounding_note_in_chinese_names_both_outputs(runner):
    (step,) = [s for s in zh_steps(runner) if s["step"] == 7]
    text = "".join(step["text"])
    assert "[2.0, 7.0, 1.5]" in text and "[1.9366, 6.6831, 1.5951]" in text and "scale: none" in text


def test_pyproject_packages_the_builtin_example():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "data/*.yaml" in config["tool"]["setuptools"]["package-data"]["attncli"]


def test_paragraphs_have_no_trailing_spaces(runner):
    result = runner.invoke(app, ["explain", "--step", "5"])
    prose = [line for line in result.stdout.splitlines() if not line.strip().startswith(("┏", "┃", "┡", "│", "└"))]
    assert [line for line in prose if line.endswith(" ") and "×" not in line] == []  # a table title is Rich's
