"""Chinese error messages whose fields are themselves phrases (review fixes B): a cell before a colon, a noun, a
shortened value's length, and Click's range and type checks; no English left, no space between Chinese words."""

from __future__ import annotations

import re

import pytest
from test_errors_zh import _usage

from attncli.cli import app
from attncli.core.errors import AttnError

CJK = re.compile(r"[\u4e00-\u9fff]")
SPACED = re.compile(r"[\u4e00-\u9fff\uff08-\uff1f] [\u4e00-\u9fff]")  # (a space between two Chinese words)
ENGLISH = re.compile(r"(?<![\w.])[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}(?![\w.])")  # two English words in a row


pytestmark = pytest.mark.usefixtures("language_from_environment")  # (conftest)


def _english(text: str) -> str | None:
    """Two English words in a row outside quoted values, if any."""
    found = ENGLISH.search(re.sub(r"'[^']*'", " ", text))
    return found.group() if found else None


@pytest.mark.parametrize("command, doc, wanted", [
    ("compute", "inputs: [[.nan, 1], [1, 1]]\n", "inputs: 第 1 行第 1 列：nan 不是有限的数"),
    ("compute", "inputs: [[1, 2], [3, 4]]\nbias: {query: [.nan, 1]}\n", "第 1 个元素：nan 不是有限的数"),
    ("compute", "inputs: [[1, 2], [3]]\n", "inputs: 第 2 行有 1 个元素，"),
    ("compute", "inputs: [[1e308, 1e308], [1, 1]]\n", ": 得分在第 1 个头第 1 行（'x1'）"),
    ("check", "inputs: [[1, 2], [3, 4]]\nanswer: {head: 2, query: 1}\n", "answer.head: 2 超出范围：只有一个头，即头 1"),
    ("compute", "layers: []\n", "layers: 是空列表；"),
    ("compute", "layers: {}\n", "layers: 是映射；"),
    ("compute", "inputs: [[1, 2], [3, 4]]\nmask: '" + "x" * 3000 + "'\n", "…（共 3000 个字符）' 不是 none"),
], ids=["cell", "entry", "ragged row", "overflow at a head", "head range", "empty list", "mapping", "shortened"])
def test_a_phrase_inside_a_message_is_chinese(runner, monkeypatch, tmp_path, command, doc, wanted):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "doc.yaml").write_text(doc, encoding="utf-8")
    monkeypatch.setenv("ATTNCLI_LANG", "zh")
    result = runner.invoke(app, [command, "doc.yaml"])
    line = result.stderr
    assert result.exit_code == 2 and line.startswith("错误：doc.yaml: ") and line.count("\n") == 1, line
    assert wanted in line, line
    assert _english(line) is None and not SPACED.search(line), line


def test_a_field_that_is_a_cell_and_a_value_keeps_the_value_and_names_the_cell():
    error = AttnError("textfile.not_finite_number_nan_infinities", place="row 12, column 3: inf")
    assert error.said("en") == "row 12, column 3: inf is not a finite number (NaN and infinities are not allowed)"
    assert error.said("zh") == "第 12 行第 3 列：inf 不是有限的数（不允许 NaN 和无穷大）"
    # a quoted value is never split at its colon, and a value not a known phrase stays English (no half-translation)
    odd = AttnError("errors.unknown", what="key", key="'row 1: x'", hint="did you mean 'rows'?")
    assert odd.said("zh") == "未知的键 'row 1: x'（是不是 'rows'？）"


def test_a_name_stays_as_written_inside_a_chinese_message():
    said = AttnError("compute.names_no_matrix_come_every", only="heads").said("zh")
    assert "heads" in said and CJK.search(said)


@pytest.mark.parametrize("args, value", [
    (["compute", "doc.yaml", "--precision", "99"], "99"),
    (["compute", "doc.yaml", "--layer", "0"], "0"),
    (["compute", "doc.yaml", "--heads", "0"], "0"),
    (["compute", "doc.yaml", "--layer", "abc"], "abc"),
    (["check", "doc.yaml", "--tol", "-1"], "-1"),
], ids=["precision range", "layer range", "heads range", "layer type", "tol range"])
def test_clicks_range_and_type_checks_in_chinese(capsys, monkeypatch, tmp_path, args, value):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "doc.yaml").write_text("inputs: [[1, 0], [0, 1]]\n", encoding="utf-8")
    english = _usage(capsys, monkeypatch, args, "en")
    chinese = _usage(capsys, monkeypatch, args, "zh")
    said = chinese.rsplit("（见 ", 1)[0]
    assert value in english and value in said and args[2] in said, (english, chinese)
    assert CJK.search(said.split("：", 1)[-1]) and _english(said) is None, chinese
