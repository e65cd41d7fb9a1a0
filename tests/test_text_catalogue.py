"""The texts' files (attncli/data/texts/en.json and zh.json): the same ids in both languages, the same placeholders
in each id's two texts, and a language's file read only when one of its texts is printed."""

from __future__ import annotations

import copy
import json
import string
import subprocess
import sys

import pytest

from attncli.teach.texts import FOLDER, LANGUAGES

# ids only one language has, and why: Chinese names of the page's tables for which explain has no label; in
# English a table keeps compute's own title (attncli/outputs/titles.py), so en.json's "names" is empty. So too the
# tables' titles: English writes the stage list's own titles and formulas (core), so en.json's titles.names,
# titles.owners and titles.formula_words are empty, and another language's are held to the ids the code gives them
# (the quantities' JSON keys, titles.OWNERS and titles.FORMULA_WORDS: the tests below).
ONE_LANGUAGE = ("page.names.", "titles.names.", "titles.owners.", "titles.formula_words.")


def read(lang: str) -> dict:
    return json.loads((FOLDER / f"{lang}.json").read_text(encoding="utf-8"))


def ids(table: dict, prefix: str = "") -> dict[str, str]:
    """Every text of ``table`` by its id, the dotted path of its keys (``inputs.title``)."""
    found = {}
    for key, value in table.items():
        if isinstance(value, dict):
            found.update(ids(value, f"{prefix}{key}."))
        else:
            found[f"{prefix}{key}"] = value
    return found


def fields(text: str) -> set[str]:
    """The names of ``text``'s str.format fields (``{q}``, ``{title}`` …)."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def differences(en: dict, zh: dict) -> list[str]:
    """What differs between the two tables, one line per id: an id one of them lacks, or other placeholders (``zh``
    stands for any language compared with English)."""
    a, b = ids(en), ids(zh)
    shared = [i for i in a if i in b]
    return ([f"{i}: missing in zh" for i in a if i not in b and not i.startswith(ONE_LANGUAGE)]
            + [f"{i}: missing in en" for i in b if i not in a and not i.startswith(ONE_LANGUAGE)]
            + [f"{i}: placeholders {sorted(fields(a[i]))} in en, {sorted(fields(b[i]))} in zh"
               for i in shared if fields(a[i]) != fields(b[i])])


def test_every_text_is_a_string_under_string_keys():
    for lang in LANGUAGES:
        texts = ids(read(lang))
        assert len(texts) > 600, lang
        assert all(isinstance(text, str) for text in texts.values()), lang


def test_each_language_has_its_file_and_no_file_is_left_over():
    assert sorted(path.stem for path in FOLDER.glob("*.json")) == sorted(LANGUAGES)


@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_every_language_has_the_english_ids_and_placeholders(lang):
    assert differences(read("en"), read(lang)) == []


def test_the_one_language_ids_are_the_chinese_names_of_tables_alone():
    en, zh = read("en"), read("zh")
    assert en["page"]["names"] == {} and en["titles"]["names"] == {}
    assert en["titles"]["owners"] == {} and en["titles"]["formula_words"] == {}
    only = {i for i in ids(zh) if i not in ids(en)}
    assert only and all(i.startswith(ONE_LANGUAGE) for i in only)
    assert "page.names.grad_sinks" in only and "page.names.lse" in only and "titles.names.weights" in only


@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_every_quantity_has_a_title_in_every_language(lang):
    """titles.names: a name for each quantity of the stage list (a gradient may go without one: its title is made
    from its owner's, "Gradient of X"), and no name for a key the stage list does not have."""
    from attncli.core.stages import QUANTITIES
    from attncli.outputs.titles import GRADIENT_OF

    names = read(lang)["titles"]["names"]
    assert set(names) <= set(QUANTITIES)
    assert [key for key, q in QUANTITIES.items() if key not in names and not q.title.startswith(GRADIENT_OF)] == []
    assert len(names) > 70


@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_a_formulas_words_and_a_gradients_owners_have_the_codes_ids(lang):
    from attncli.outputs.titles import FORMULA_WORDS, OWNERS

    table = read(lang)["titles"]
    assert sorted(table["formula_words"]) == sorted(FORMULA_WORDS.values())
    assert sorted(table["owners"]) == sorted(OWNERS.values())


def test_the_english_gradient_title_is_the_stage_lists():
    """en.json's titles.gradient is the title core gives a gradient, "Gradient of X", that titles.py reads back."""
    from attncli.core.stages import QUANTITIES
    from attncli.outputs.titles import GRADIENT_OF

    gradients = [q.title for key, q in QUANTITIES.items() if key.startswith("grad_")]
    assert len(gradients) > 40 and all(title.startswith(GRADIENT_OF) for title in gradients)
    en = read("en")["titles"]
    for template in (en["gradient"], en["gradient_closed"]):
        assert [template.format(of=t.removeprefix(GRADIENT_OF)) for t in gradients] == gradients


def test_a_missing_or_extra_id_or_placeholder_is_named():
    en, zh = read("en"), read("zh")
    broken = copy.deepcopy(zh)
    del broken["inputs"]["title"]
    broken["check"]["cell"]["lane"] = "第 {i} 道"
    broken["scores"]["dot"] = broken["scores"]["dot"].replace("{q}", "{query}")
    assert differences(en, broken) == ["inputs.title: missing in zh", "check.cell.lane: missing in en",
                                       "scores.dot: placeholders ['q'] in en, ['query'] in zh"]
    assert "{q}" in zh["scores"]["dot"] and "{q}" in en["scores"]["dot"]  # (the real texts have the field)
    assert differences(broken, zh)[0] == "check.cell.lane: missing in zh"


def test_the_files_are_readable_for_a_translator():
    """Written as UTF-8 characters (no \\u escapes), one text per line, each file a few hundred lines."""
    for lang in LANGUAGES:
        raw = (FOLDER / f"{lang}.json").read_text(encoding="utf-8")
        assert "\\u" not in raw and raw.count("\n") > 600
    assert "准备输入" in (FOLDER / "zh.json").read_text(encoding="utf-8")


OPENED = """
import runpy, sys
opened = []
sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" else None)
sys.argv = ["attncli", *sys.argv[1:]]
try:
    runpy.run_module("attncli", run_name="__main__")
except SystemExit:
    pass
open(OUT, "w").write("\\n".join(p for p in opened if "texts" in p))
"""


@pytest.mark.parametrize(("lang", "read_files"), [("en", ["en.json"]), ("zh", ["zh.json"])])
def test_explain_reads_only_the_file_of_its_language(tmp_path, lang, read_files):
    out = tmp_path / "opened.txt"
    script = OPENED.replace("OUT", repr(str(out)))
    result = subprocess.run([sys.executable, "-c", script, "explain", "--step", "1", "--lang", lang],
                            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    opened = sorted({p.rsplit("/", 1)[-1] for p in out.read_text().split("\n") if p.endswith(".json")})
    assert opened == read_files


def test_the_wheel_ships_every_data_file():
    """pyproject's package-data globs (as setuptools reads them, a ``*`` within one folder) take in every file of
    attncli/data, the texts' folder too (a plain ``pip install`` was checked to explain in Chinese from them)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    package = FOLDER.parents[1]
    config = tomllib.loads((package.parent / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = {path for pattern in config["tool"]["setuptools"]["package-data"]["attncli"]
               for path in package.glob(pattern)}
    data = {path for path in (package / "data").rglob("*") if path.is_file() and "__pycache__" not in path.parts}
    assert data - shipped == set()
    assert {FOLDER / "en.json", FOLDER / "zh.json"} <= shipped


class Reading(dict):
    """A text table that notes the id of every text read from it (into ``seen``)."""

    def __init__(self, table: dict, seen: set[str], prefix: str = ""):
        super().__init__(table)
        self.seen, self.prefix = seen, prefix

    def __getitem__(self, key):
        value = super().__getitem__(key)
        if isinstance(value, dict):
            return Reading(value, self.seen, f"{self.prefix}{key}.")
        self.seen.add(f"{self.prefix}{key}")
        return value


STARTERS = [{}, {"heads": 2, "kv_heads": 1, "context": 3, "rope": True, "pre_norm": "layer", "qk_norm": "rms",
                 "sinks": True, "gate": True, "temperature": True, "inline": True},
            {"heads": 4, "kv_heads": 2, "pre_norm": "rms", "integers": True, "max_weight": 1},
            *({"d_model": 8, "rope": kind} for kind in ("linear", "dynamic", "llama3", "yarn", "longrope"))]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_init_reads_every_text_of_the_starter_table_and_no_other(monkeypatch, lang):
    """The documents of every option of init, between them, read each id of ``starter`` (none is left over, none
    is missing: a missing one raises KeyError)."""
    from attncli.teach import starter_document
    from attncli.teach.starter import document
    from attncli.teach.texts import texts

    seen: set[str] = set()
    monkeypatch.setattr(starter_document, "words", lambda language: Reading(texts(language)["starter"], seen))
    for options in STARTERS:
        document(**options, lang=lang)
    assert seen == set(ids(read(lang)["starter"]))


def test_init_writes_the_translation_as_the_file_has_it(monkeypatch):
    """A comment is its text filled in, never English translated afterwards: a reworded Chinese text, a reworded
    English one, each shows at once in its own language alone."""
    from attncli.teach import starter_words
    from attncli.teach.starter import document

    tables = {lang: copy.deepcopy(read(lang)) for lang in LANGUAGES}
    tables["zh"]["starter"]["inputs"] = "X：改过的说明，d_model = {d_model}。"
    tables["en"]["starter"]["compute"] = "every number of it"
    monkeypatch.setattr(starter_words, "texts", lambda lang: tables[lang])
    zh, en = document(d_model=6, lang="zh"), document(d_model=6)
    assert "# X：改过的说明，d_model = 6。\n" in zh and "# X: one row per token, d_model = 6 numbers each.\n" in en
    assert "#   attncli compute FILE     every number of it\n" in en and "every number" not in zh
    assert "#   attncli compute FILE     逐步列出每一个中间结果\n" in zh
