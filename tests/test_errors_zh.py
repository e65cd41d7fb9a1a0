"""Error messages in Chinese (issue 31; as data, issue 41): every message is an id with a template in each
language's catalogue (attncli/data/messages/), and the command line prints it with the same values and the same
place, after an unchanged ``Error: ``.

The catalogues are checked against the code itself: :mod:`attncli.cli.messages.sites` reads every ``AttnError(...)``
with :mod:`ast`; an id taken from another error is listed below with the reason. Bad documents and options
(test_errors' table, Click's usage errors) run through the command line in both languages.
"""

from __future__ import annotations

import re
import string

import pytest
from test_errors import CASES, write_case

import attncli.cli.run as cli_run
from attncli.cli import app
from attncli.cli.main import main
from attncli.cli.messages import language_in
from attncli.cli.messages.sites import raise_sites, strings
from attncli.core.errors import MESSAGE_CHARS, AttnError
from attncli.core.memory import MEMORY_ENV
from attncli.core.messages import PHRASE, catalogue, phrase, placeholders, text

PREFIX = {"en": "Error: ", "zh": "错误："}  # the line's first word, in the run's language
CJK = re.compile(r"[\u4e00-\u9fff]")
# A message whose id is not written where it is raised: the file and the argument's source, and why.
DYNAMIC = {
    ("attncli/core/errors.py", "self.id"): "AttnError.at: the same message at an outer place",
    ("attncli/core/errors.py", "id"): "AttnError.placed and the unpickled error: the same message",
    ("attncli/core/stream.py", "e.id"): "a block's message with its query renumbered (the same id)",
    ("attncli/views/picture_size.py", "id"): "_refuse's callers name the ids (SAID sites)",
    ("attncli/cli/run.py", "id"): "said(): the command line's own lines, named by its callers",
    ("attncli/cli/main.py", "id"): "spoken(): said() before the parser has read --lang, named by its callers",
    ("attncli/cli/write.py", "PNG_NEEDS"): "views/picture.py's constant (picture.png_needs)",
    ("attncli/models/families.py", "latent_families.REFUSED[model_type]"): "each refusal's id is in latent_families.py",
}
# Fields a language's grammar may leave out: an English verb's form, a plural's s.
GRAMMAR = {"verb", "plural_s", "plural_s_2"}


pytestmark = pytest.mark.usefixtures("language_from_environment")  # (conftest)


def english_run(text: str) -> str | None:
    """Three English words in a row outside quoted values, paths, option names and lists of names, if any."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", " ", text)
    text = re.sub(r"\S*[/\\]\S*|--?[\w-]+|\w+(?:, \w+)+", " ", text)
    found = re.search(r"[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}", text)
    return found.group() if found else None


def test_every_raise_site_names_a_message_of_the_catalogue():
    english = catalogue("en")
    missing, dynamic_sites = [], set()
    for path, line, ids, source in raise_sites():
        if ids is None:
            dynamic_sites.add((path, source))
            continue
        missing += [f"{path}:{line}: {id}" for id in ids if id not in english]
    assert not missing, "\n".join(missing)
    assert dynamic_sites <= set(DYNAMIC), dynamic_sites - set(DYNAMIC)
    assert len(raise_sites()) > 600  # (the walk found the package)


def test_every_raise_site_gives_the_fields_its_message_writes():
    """A field the template writes and the raise site does not give would be a KeyError when the message is shown;
    one given and written by no language is a slip of the site (both read with ast, sites that pass **fields aside)."""
    import ast

    from attncli.cli.messages.sites import PACKAGE, RAISED

    english, other, wrong = catalogue("en"), catalogue("zh"), []
    for path in sorted((PACKAGE / "attncli").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and ast.unparse(node.func).rpartition(".")[2] in RAISED and node.args):
                continue
            id = node.args[0].value if isinstance(node.args[0], ast.Constant) else None
            if id not in english or any(k.arg is None for k in node.keywords):
                continue
            given = {k.arg for k in node.keywords}
            written = placeholders(english[id]) | placeholders(other[id])
            if not placeholders(english[id]) <= given or not given <= written:
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {id} gives {sorted(given)}, "
                             f"writes {sorted(written)}")
    assert not wrong, "\n".join(wrong)


def test_every_message_is_used_and_no_site_writes_english():
    """No id in the catalogue that nothing raises (a phrase is matched in fields, not raised), and no raise site
    whose argument is English text instead of an id."""
    used = strings()
    unused = sorted(id for id in catalogue("en") if not id.startswith(PHRASE) and id not in used)
    assert not unused, unused
    prose = [f"{path}:{line}: {ids}" for path, line, ids, _ in raise_sites() for id in ids or () if " " in id]
    assert not prose, prose


@pytest.mark.parametrize("lang", ["zh"])
def test_every_id_has_a_translation_with_the_same_fields(lang):
    english, other = catalogue("en"), catalogue(lang)
    assert sorted(set(english) - set(other)) == [], "no translation"
    assert sorted(set(other) - set(english)) == [], "translated, but no English"
    differ = [f"{id}: {english[id]!r} / {other[id]!r}" for id in english if not id.startswith(PHRASE)
              and not placeholders(english[id]) - GRAMMAR <= placeholders(other[id]) <= placeholders(english[id])]
    assert not differ, "\n".join(differ)
    # a phrase's fields are positional ({}, {0}, {n}): the same count in both
    counts = [id for id in english if id.startswith(PHRASE)
              if len(list(_names(english[id]))) != len(list(_names(other[id])))]
    assert not counts, counts


def test_the_check_over_ids_fails_on_a_missing_translation(monkeypatch):
    import attncli.core.messages as messages

    short = dict(catalogue("zh"))
    short.pop(next(iter(short)))
    monkeypatch.setitem(messages._read, "zh", short)
    with pytest.raises(AssertionError, match="no translation"):
        test_every_id_has_a_translation_with_the_same_fields("zh")


def _names(template: str):
    return (name for _, name, _, _ in string.Formatter().parse(template) if name is not None)


def test_dynamic_messages_have_chinese():
    from attncli.inputs.stacked import NOT_IN_A_LAYER
    from attncli.models.latent_families import REFUSED
    from attncli.views.picture import PNG_NEEDS

    for id in [*REFUSED.values(), PNG_NEEDS, *NOT_IN_A_LAYER.values(), "reading.loop_of_links"]:
        assert CJK.search(text(id, {}, "zh")) and not CJK.search(text(id, {}, "en")), id


def test_each_message_is_written_in_chinese_with_its_values():
    wrong = []
    for id, english in catalogue("en").items():
        if id.startswith(PHRASE):
            continue
        specs = {name.split("!")[0]: spec for _, name, spec, _ in string.Formatter().parse(english) if name}
        values = {name: 700 + i if specs.get(name) else f"'v{i}'" for i, name in enumerate(sorted(specs))}
        result = text(id, values, "zh")
        lost = [value for name, value in values.items()
                if format(value, specs[name]) not in result and name not in GRAMMAR]
        if lost or (CJK.search(catalogue("zh")[id]) and not CJK.search(result)):
            wrong.append(f"{id}: {result} (lost {lost})")
    assert not wrong, "\n".join(wrong)


def test_each_phrase_is_found_in_a_field_and_written_in_chinese():
    wrong = []
    for id, english in catalogue("en").items():
        if not id.startswith(PHRASE):
            continue
        values, parts = [], []
        for literal, name, _, _ in string.Formatter().parse(english):
            parts.append(literal)
            if name is not None:
                values.append(str(700 + len(values)) if name == "n" else f"'v{len(values)}'")
                parts.append(values[-1])
        result = phrase("".join(parts), "zh")
        chinese = catalogue("zh")[id]
        if result is None or [v for v in values if v not in result] or (CJK.search(chinese) and not CJK.search(result)):
            wrong.append(f"{id}: {english} -> {result}")
    assert not wrong, "\n".join(wrong)


def test_chinese_templates_use_the_seeds_terms():
    english, chinese = catalogue("en"), catalogue("zh")
    assert "键/值头" not in "\n".join(chinese.values()) and "推力" not in "\n".join(chinese.values())  # (one term)
    for id, said in english.items():
        if not id.startswith(PHRASE) and "scores" in said and "score" not in chinese[id].replace("score_bias", ""):
            assert "得分" in chinese[id], (said, chinese[id])


def test_a_field_that_is_a_known_phrase_is_translated_too():
    error = AttnError("errors.unknown", "doc.yaml: weights", what="key", key="'wieghts'",
                      hint="did you mean 'weights'?")
    assert error.said("zh") == "未知的键 'wieghts'（是不是 'weights'？）"
    assert error.said("en") == "unknown key 'wieghts' (did you mean 'weights'?)"
    cell = AttnError("matrices.cell_problem", cell="row 2, column 3",
                     problem="the string 'yes' is not a mask value (use 1/true = may attend, 0/false = masked)")
    assert cell.said("zh") == "第 2 行第 3 列：字符串 'yes' 不是掩码值（请用 1/true = 可以关注，0/false = 被掩盖）"
    # a quoted value is one field, even when it holds what separates phrases
    odd = AttnError("errors.unknown", what="key", key="'a (b): c'", hint="expected one of x, y")
    assert odd.said("zh") == "未知的键 'a (b): c'（应为以下之一：x, y）"


def test_a_field_no_phrase_knows_stays_as_it_is_and_english_is_untouched():
    error = AttnError("errors.unknown", what="key", key="'x'", hint="something no phrase knows")
    assert error.said("zh") == "未知的键 'x'（something no phrase knows）"
    assert error.said("en") == "unknown key 'x' (something no phrase knows)"
    memory = text(cli_run.OUT_OF_MEMORY, {"variable": MEMORY_ENV}, "zh")
    assert CJK.search(memory) and MEMORY_ENV in memory


def test_the_python_api_raises_in_the_language_asked_for(monkeypatch):
    import attncli

    with pytest.raises(AttnError) as english:
        attncli.compute({"inputs": [[1, 2], [3]]})
    attncli.set_language("zh")
    try:
        with pytest.raises(AttnError) as chinese:
            attncli.compute({"inputs": [[1, 2], [3]]})
        said = str(chinese.value)  # (a message is written when it is shown, in the language of that moment)
    finally:
        attncli.set_language(None)
    assert "ragged rows" in str(english.value) and "各行长短不一" in said, (english.value, said)
    assert english.value.id == chinese.value.id and english.value.fields == chinese.value.fields
    monkeypatch.setenv("ATTNCLI_LANG", "zh")  # (the environment, as for the command line)
    with pytest.raises(AttnError) as environment:
        attncli.compute({"inputs": [[1, 2], [3]]})
    assert "各行长短不一" in str(environment.value)
    with pytest.raises(AttnError, match="'fr'"):
        attncli.set_language("fr")
    attncli.set_language("en")  # (the language set outranks the environment's)
    try:
        with pytest.raises(AttnError, match="ragged rows"):
            attncli.compute({"inputs": [[1, 2], [3]]})
    finally:
        attncli.set_language(None)


def test_language_in_reads_the_lang_option_before_the_parser():
    assert language_in(["compute", "x.yaml", "--lang", "zh"]) == "zh"
    assert language_in(["--lang=zh", "compute", "--lang", "en"]) == "en"  # the last one wins
    assert language_in(["compute", "--", "--lang", "zh"]) is None
    assert language_in(["compute", "--lang", "fr"]) is None


def _run(runner, monkeypatch, tmp_path, case, lang: str):
    """One test_errors case through the command line in ``lang``: (the line on stderr, the AttnError it printed)."""
    monkeypatch.setenv("ATTNCLI_LANG", lang)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    errors = []
    real = cli_run.error_line

    def recording(error, *args):
        errors.append(error)
        return real(error, *args)

    monkeypatch.setattr(cli_run, "error_line", recording)
    folder = tmp_path / lang
    folder.mkdir()
    monkeypatch.chdir(folder)
    doc = write_case(case, folder)
    doc = folder / case.target if case.target else doc
    args = [a.replace("{dir}", str(folder)) for a in case.args]
    result = runner.invoke(app, ["compute", str(doc), "--format", "json", *args])
    assert result.exit_code == 2 and result.stdout == "", (result.exit_code, result.stderr)
    line = result.stderr
    assert line.startswith(PREFIX[lang]) and line.count("\n") == 1 and "Traceback" not in line, line
    assert len(errors) == 1, line
    where = errors[0].where and errors[0].where.replace(str(folder), "DIR")
    return line[:-1].replace(str(folder), "DIR"), where, str(errors[0]).replace("\n", " ").replace(str(folder), "DIR")


# Cases whose Chinese line keeps a run of English by design: the text a library gave (quoted in brackets).
LIBRARY_TEXT = {"npy-code-in-header"}  # (numpy's reason a header cannot be read)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_documents_in_chinese(runner, tmp_path, monkeypatch, case):
    english, where, error = _run(runner, monkeypatch, tmp_path, case, "en")
    chinese, zh_where, _ = _run(runner, monkeypatch, tmp_path, case, "zh")
    assert english == f"Error: {error}"  # English as it was
    assert zh_where == where  # the same place, untranslated
    place = f"错误：{where}: " if where else "错误："  # (the prefix in Chinese, the place as it is)
    assert chinese.startswith(place), (place, chinese)
    assert CJK.search(chinese[len(place):]), chinese
    if case.id not in LIBRARY_TEXT:
        assert english_run(chinese[len(place):]) is None, chinese
    # the same values, and nothing of the files' content that the English line does not show
    assert set(re.findall(r"'[^']*'", chinese)) <= set(re.findall(r"'[^']*'", english)), (english, chinese)
    assert len(chinese) <= len(place) + MESSAGE_CHARS + 60


def _usage(capsys, monkeypatch, args: list[str], lang: str) -> str:
    monkeypatch.setenv("ATTNCLI_LANG", lang)
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    said = language_in(args) or lang  # (--lang on the command line counts before the environment)
    assert err.startswith(PREFIX[said]) and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("args, names", [
    (["compute", "doc.yaml", "--bogus-option"], ["--bogus-option"]),
    (["compute"], ["FILE"]),
    (["compute", "doc.yaml", "--format", "bogus"], ["--format", "bogus"]),
    (["bogus-command"], ["bogus-command"]),
    (["compute", "doc.yaml", "--heads"], ["--heads"]),
], ids=["unknown option", "missing argument", "invalid value", "unknown command", "option without value"])
def test_usage_errors_in_chinese(capsys, monkeypatch, tmp_path, args, names):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "doc.yaml").write_text("inputs: [[1, 0], [0, 1]]\n", encoding="utf-8")
    english = _usage(capsys, monkeypatch, args, "en")
    chinese = _usage(capsys, monkeypatch, args, "zh")
    said, see = chinese.rsplit("（见 ", 1)  # (the command's name, as the program was started, is not ours to check)
    assert CJK.search(said) and english_run(said) is None and see.endswith(" --help）\n"), chinese
    for name in names:  # the names Click gave, carried over
        assert name in english and name in chinese, (english, chinese)


def test_lang_in_the_arguments_chooses_chinese_for_a_usage_error(capsys, monkeypatch):
    chinese = _usage(capsys, monkeypatch, ["compute", "--lang", "zh", "--bogus-option"], "en")
    assert CJK.search(chinese), chinese


@pytest.mark.parametrize("args, place", [
    (["compute", "doc.yaml", "--only", "wieghts"], "--only"),
    (["explain", "doc.yaml", "--step", "99"], "--step"),
    (["compute", "missing.yaml"], "missing.yaml"),
    (["heatmap", "doc.yaml", "--head", "7"], "--head"),
], ids=["bad --only", "bad --step", "missing file", "bad --head"])
def test_other_commands_in_chinese(runner, monkeypatch, tmp_path, args, place):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "doc.yaml").write_text("inputs: [[1, 0], [0, 1], [1, 1]]\n", encoding="utf-8")
    lines = {}
    for lang in ("en", "zh"):
        monkeypatch.setenv("ATTNCLI_LANG", lang)
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
        lines[lang] = result.stderr
    assert lines["zh"].startswith("错误：") and lines["en"].startswith("Error: "), lines
    assert place in lines["zh"] and place in lines["en"], lines
    message = lines["zh"].removeprefix("错误：").split(": ", 1)[-1]
    assert CJK.search(message) and english_run(message) is None, lines["zh"]
