"""Chinese text puts full-width punctuation after Chinese characters: no ASCII ':' or ',' directly after one, in any
Chinese text table (attncli/data/texts/zh.json, with init's comments, the tables' titles and the heat maps' words;
the messages' Chinese catalogue, data/messages/zh.json; help_zh.json; the formulas' Chinese patterns), nor in the
indexer's worked lines. Code and keys written in backticks are left alone (`query:` is a key, not a sentence's
colon)."""

from __future__ import annotations

import json
import re

import attncli.teach.texts as texts_package
from attncli.cli.help_zh import PATH
from attncli.core.messages import catalogue as messages

AFTER_CJK = re.compile(r"[\u3400-\u9fff\u3000-\u303f\uff00-\uffef][:,]")  # a Chinese character, then ':' or ','
CODE = re.compile(r"`[^`]*`")


def strings(value) -> list[str]:
    """Every string inside ``value`` (dicts' values, lists' items), in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in strings(v)]
    return []


def teach_tables() -> dict[str, list[str]]:
    """explain's, check's and the page's Chinese and init's Chinese comments (the file zh.json whole; the starter's
    are its table ``starter``)."""
    catalogue = json.loads(texts_package.path("zh").read_text(encoding="utf-8"))
    assert all(strings(catalogue[table]) for table in ("starter", "titles", "views", "views_linear"))
    return {"data/texts/zh.json": strings(catalogue)}


def tables() -> dict[str, list[str]]:
    """Every Chinese text table by where it lives (the heat maps' and the tables' titles are zh.json's tables
    ``views``, ``views_linear`` and ``titles``; the formulas' Chinese patterns stay in outputs/titles.py)."""
    from attncli.outputs import titles

    return {**teach_tables(), "data/messages/zh.json": strings(messages("zh")),
            "help_zh.json": strings(json.loads(PATH.read_text(encoding="utf-8"))),
            "outputs/titles": [chinese for _, chinese in titles.ZH_FORMULA_PATTERNS]}


def slips(text: str) -> list[str]:
    """Each ':' or ',' that follows a Chinese character in ``text`` (outside backticks), with what is around it."""
    bare = CODE.sub("``", text)
    return [bare[max(m.start() - 12, 0):m.end() + 12] for m in AFTER_CJK.finditer(bare)]


def test_the_scan_finds_what_it_looks_for():
    assert slips("键: 值") == ["键: 值"] and slips("查询,键") == ["查询,键"]
    assert slips("键：值，查询") == [] and slips("score_bias: 与 query:") == [] and slips("写 `键: 值`") == []


def test_chinese_text_has_no_ascii_colon_or_comma_after_a_chinese_character():
    found = {name: [s for text in texts for s in slips(text)] for name, texts in tables().items()}
    assert sum(len(texts) for texts in tables().values()) > 1800 and all(tables().values())  # (the tables were read)
    found = {name: hits for name, hits in found.items() if hits}
    assert not found, found


def test_the_indexers_worked_lines_in_chinese_use_a_full_width_colon(runner, tmp_path):
    """examples/sparse_indexer.yaml with Chinese tokens: each key's line of the indexer step is ``token：I = …`` in
    Chinese, as its masked keys' lines are (``门：被文档的掩码遮蔽``); English keeps ``token: I = …``."""
    from conftest import EXAMPLES

    from attncli.cli import app

    text = (EXAMPLES / "sparse_indexer.yaml").read_text(encoding="utf-8")
    text = re.sub(r"(?m)^tokens: .*$", "tokens: 我 爱 北京 天安 门", text)
    path = tmp_path / "ix.yaml"
    path.write_text(text, encoding="utf-8")
    step = ["explain", str(path), "--step", "indexer", "--query", "4", "--format", "json"]
    lines = json.loads(runner.invoke(app, [*step, "--lang", "zh"]).stdout)["lines"]
    assert lines[0].startswith("我：I = 2^(−1/2)·(") and lines[-1] == "门：被文档的掩码遮蔽", lines
    assert not [s for line in lines for s in slips(line)], lines
    first = json.loads(runner.invoke(app, step).stdout)["lines"][0]
    assert first.startswith("我: I = 2^(−1/2)·(")
    assert first[3:] == lines[0][2:].replace("保留（第 1 名）", "kept (rank 1)")
