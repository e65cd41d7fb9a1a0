"""Error messages in Chinese (issue 31): every message the package raises has a Chinese template, and the command
line prints it with the same values and the same place, after an unchanged ``Error: ``.

The catalogue is checked against the code itself: :mod:`attncli.cli.messages.sites` reads every ``AttnError(...)``
with :mod:`ast`; a message built elsewhere (a variable) is listed below with the reason. Bad documents and options
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
from attncli.cli.messages import CATALOGUE, PHRASES, dynamic, language_in, lookup, translate
from attncli.cli.messages.sites import raise_sites
from attncli.core.errors import MESSAGE_CHARS, AttnError
from attncli.core.memory import MEMORY_ENV

PREFIX = {"en": "Error: ", "zh": "错误："}  # the line's first word, in the run's language
CJK = re.compile(r"[\u4e00-\u9fff]")
# A message raised from a variable: the file and the argument's source, and why it needs no template of its own.
DYNAMIC = {
    ("attncli/cli/options.py", "e.message"): "--scale's own message, put at the option (scale_of's templates)",
    ("attncli/core/errors.py", "self.message"): "AttnError.at: the same message at an outer place",
    ("attncli/inputs/builder.py", "e.message"): "the same message at an outer place",
    ("attncli/core/stream.py", "message"): "a block's message with its query renumbered (the same template)",
    ("attncli/cli/write.py", "PNG_NEEDS"): "views/picture.py's constant: its template is checked there",
    ("attncli/inputs/reading.py", "reasons.get(e.errno, f'cannot be read ({e.strerror or type(e).__name__})')"):
        "an errno's reason: each is in messages/dynamic.py, and 'cannot be read ({})' is a template",
    ("attncli/models/families.py", "latent_families.REFUSED[model_type]"): "each refusal is in messages/dynamic.py",
    ("attncli/inputs/stacked.py", "NOT_IN_A_LAYER[key]"): "each reason is in messages/stack.py",
}
DYNAMIC[("attncli/inputs/indexer.py", "e.message")] = "rope's own message, at indexer.rope (read_rope's templates)"


pytestmark = pytest.mark.usefixtures("language_from_environment")  # (conftest)


def english_run(text: str) -> str | None:
    """Three English words in a row outside quoted values, paths, option names and lists of names, if any."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", " ", text)
    text = re.sub(r"\S*[/\\]\S*|--?[\w-]+|\w+(?:, \w+)+", " ", text)
    found = re.search(r"[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}", text)
    return found.group() if found else None


def test_every_raise_site_has_a_chinese_template():
    missing, dynamic_sites = [], set()
    for path, line, templates, source in raise_sites():
        if templates is None:
            dynamic_sites.add((path, source))
            continue
        missing += [f"{path}:{line}: {t}" for t in templates if t not in CATALOGUE]
    assert not missing, "\n".join(missing)
    assert dynamic_sites <= set(DYNAMIC), dynamic_sites - set(DYNAMIC)
    assert len(raise_sites()) > 400  # (the walk found the package)


def test_dynamic_messages_have_chinese():
    from attncli.models.latent_families import REFUSED
    from attncli.views.picture import PNG_NEEDS

    for message in [*REFUSED.values(), PNG_NEEDS, *dynamic.CATALOGUE]:
        assert CJK.search(translate(message, "zh")), message


def test_stacked_documents_reasons_have_chinese():
    stacked = pytest.importorskip("attncli.inputs.stacked")  # (stacked documents, issue 31's layers)
    for message in stacked.NOT_IN_A_LAYER.values():
        assert CJK.search(translate(message, "zh")), message


def _filled(template: str) -> tuple[str, list[str]]:
    """``template`` with a distinct value in each field: a number for ``{n}``, else a quoted word."""
    values, parts = [], []
    for text, name, _, _ in string.Formatter().parse(template):
        parts.append(text)
        if name is not None:
            values.append(str(700 + len(values)) if name == "n" else f"'v{len(values)}'")
            parts.append(values[-1])
    return "".join(parts), values


def _used(chinese: str, count: int) -> list[int]:
    """The field numbers a Chinese template shows."""
    names = [name for _, name, _, _ in string.Formatter().parse(chinese) if name is not None]
    return list(range(len(names))) if all(name == "" for name in names) else [int(name) for name in names]


@pytest.mark.parametrize("catalogue, depth", [(CATALOGUE, 0), (PHRASES, 1)], ids=["messages", "phrases"])
def test_each_template_is_rebuilt_in_chinese_with_its_values(catalogue, depth):
    wrong = []
    for english, chinese in catalogue.items():
        filled, values = _filled(english)
        result = lookup(filled, depth)
        if result is None:
            wrong.append(f"no match: {english}")
            continue
        lost = [values[i] for i in _used(chinese, len(values)) if values[i] not in result]
        if lost or (CJK.search(chinese) and not CJK.search(result)):
            wrong.append(f"{english} -> {result} (lost {lost})")
    assert not wrong, "\n".join(wrong)


def test_chinese_templates_use_the_seeds_terms():
    text = "\n".join(CATALOGUE.values()) + "\n".join(PHRASES.values())
    assert "键/值头" not in text and "推力" not in text  # (issue 31: one term, 键值头)
    for english, chinese in CATALOGUE.items():
        if "scores" in english and "score" not in chinese.replace("score_bias", ""):
            assert "得分" in chinese, (english, chinese)


def test_a_field_that_is_a_known_phrase_is_translated_too():
    message = AttnError("unknown key 'wieghts' (did you mean 'weights'?)", "doc.yaml: weights").message
    assert translate(message, "zh") == "未知的键 'wieghts'（是不是 'weights'？）"
    cell = "row 2, column 3: the string 'yes' is not a mask value (use 1/true = may attend, 0/false = masked)"
    assert translate(cell, "zh") == ("第 2 行第 3 列：字符串 'yes' 不是掩码值"
                                     "（请用 1/true = 可以关注，0/false = 被掩盖）")
    # a quoted value is one field, even when it holds what separates phrases
    odd = "unknown key 'a (b): c' (expected one of x, y)"
    assert translate(odd, "zh") == "未知的键 'a (b): c'（应为以下之一：x, y）"


def test_an_unknown_message_stays_english_and_english_is_untouched():
    assert translate("something no template knows", "zh") == "something no template knows"
    assert translate("unknown key 'x' (did you mean 'y'?)", "en") == "unknown key 'x' (did you mean 'y'?)"
    memory = cli_run.OUT_OF_MEMORY
    assert CJK.search(translate(memory, "zh")) and MEMORY_ENV in translate(memory, "zh")


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
