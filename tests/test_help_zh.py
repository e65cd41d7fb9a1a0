"""--help in Chinese: every command's description and every argument's and option's help from
attncli/data/help_zh.json, complete (a parameter without its Chinese text fails, and so does a text for a parameter
that is gone), shown whole at 80 columns with its lines broken as Chinese is typeset; English as it was under
--lang en."""

from __future__ import annotations

import importlib.metadata
import re

import pytest
from rich.cells import cell_len
from typer.main import get_command

from attncli.cli import app
from attncli.cli.help_zh import description, parameter_help, texts
from attncli.cli.main import COMMANDS

NAMES = ("attncli", *COMMANDS)
CJK = re.compile(r"[\u4e00-\u9fff]")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
ZH = {"ATTNCLI_LANG": "zh"}


def commands() -> dict:
    """Each command's Click object by name (``attncli``: the app), as Typer builds them for a run."""
    group = get_command(app)
    return {"attncli": group, **group.commands}


def params(command) -> list:
    import typer

    return command.get_params(typer.Context(command))


def shown(runner, args: list[str], env: dict, columns: int = 80) -> str:
    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": str(columns), "NO_COLOR": "1", **env})
    assert result.exit_code == 0, result.output
    return result.stdout


def squeezed(text: str) -> str:
    """``text`` as a check that it is all there: no markup, no box, no spaces or line breaks, no [必需] (which Typer
    sets beside an argument's help, inside it at a narrow width)."""
    text = re.sub(r"\[/?bold\]", "", text).replace("\\[", "[").replace("[必需]", "")
    return re.sub(r"[\s│╭╮╰╯─]", "", text)


def test_every_command_and_parameter_has_its_chinese_text():
    data = texts()
    for name, command in commands().items():
        assert CJK.search(description(data, name)), name
        for param in params(command):
            text = parameter_help(data, name, param.name)
            assert text is not None and CJK.search(text), f"{name} {param.opts[0]} has no Chinese help"


def test_no_chinese_text_stands_for_a_parameter_that_is_gone():
    data, found = texts(), commands()
    assert set(data["commands"]) == set(found)
    used_shared = set()
    for name, command in found.items():
        names = {param.name for param in params(command)}
        own = data["commands"][name]
        gone = (set(own.get("options", {})) | set(own.get("defaults", {}))) - names
        assert not gone, f"help_zh.json names {name}'s {sorted(gone)}, which {name} no longer has"
        used_shared |= {n for n in names if n not in own.get("options", {})}
    assert set(data["shared"]) <= used_shared, set(data["shared"]) - used_shared


def test_a_shared_text_stands_for_one_english_text():
    """A text in ``shared`` serves each command whose help of that parameter is the same English."""
    data, english = texts(), {}
    for name, command in commands().items():
        for param in params(command):
            if param.name in data["shared"] and param.name not in data["commands"][name].get("options", {}):
                english.setdefault(param.name, set()).add(param.help)
    assert all(len(helps) == 1 for helps in english.values()), {k: v for k, v in english.items() if len(v) > 1}


def test_the_chinese_names_the_same_options_and_examples_as_the_english():
    data = texts()
    for name, command in commands().items():
        zh, en = description(data, name), command.help or ""
        assert sorted(FLAG.findall(zh)) == sorted(FLAG.findall(en)), name
        def examples(text):
            return [line.strip() for line in text.splitlines() if re.match(r"\s*(attncli|cat) ", line)]
        assert examples(zh) == examples(en), name
        for param in params(command):
            zh = parameter_help(data, name, param.name)
            assert set(FLAG.findall(zh)) == set(FLAG.findall(param.help or "")), (name, param.name)


def test_compute_help_in_chinese_at_80_columns(runner):
    text = shown(runner, ["compute", "--lang", "zh"], {"ATTNCLI_LANG": "en"})
    lines = text.splitlines()
    assert lines[1].strip().startswith("用法：") and lines[1].rstrip().endswith("compute [OPTIONS] FILE")
    assert " 为 FILE 计算注意力，并显示每一个中间结果。" in text and " 示例" in text
    assert "╭─ 参数 " in text and "╭─ 选项 " in text and "[必需]" in text and "[默认：4]" in text
    whole = squeezed(text)
    assert "表格中显示的小数位数（JSON始终保留全部精度）。" in whole  # --precision
    assert "替换文档中的掩码：none、causal，或一个掩码矩阵文件（路径相对于当前工作目录）。" in whole  # --mask
    assert "只显示这个键（可重复给出）：inputs,positional," in whole and "d_sinks。" in whole  # --only's lists
    assert "Q′（或Q'）" in whole and "dK′（或dK'）" in whole and "(or" not in whole  # as Chinese text writes it
    assert "linear:文档的键：inputs,projected_queries," in whole
    assert "以下只在点名时显示：chunk_states,decayed_scores；" in whole
    example = "attncli compute examples/two_heads.yaml --only W_Q --only b_Q --only Q"
    assert example in [line.strip() for line in lines]  # an example whole on its line, as in English
    assert "Options" not in text and "Show this message" not in text and "Usage" not in text


@pytest.mark.parametrize("name", NAMES)
def test_every_chinese_text_is_shown_whole_and_fits_80_columns(runner, name):
    data, command = texts(), commands()[name]
    text = shown(runner, [] if name == "attncli" else [name], ZH)
    lines = text.splitlines()
    assert all(cell_len(line) <= 80 for line in lines), max(lines, key=cell_len)
    whole = squeezed(text)
    for param in params(command):
        assert squeezed(parameter_help(data, name, param.name)) in whole, (name, param.name)
    assert squeezed(description(data, name).split("\n\n")[0]) in whole
    for line in lines:  # no line of text starts with a closing mark, none ends with an opening one
        for cell in line.strip("│ ").split("│"):
            assert not re.match(r"\s*[，。；：、）》」』】”]", cell) and not re.search(r"[（《「『【“]\s*$", cell), line


@pytest.mark.skipif(int(importlib.metadata.version("rich").split(".")[0]) < 15,
                    reason="with rich 13.8 and 14.0 the bare command's help as CliRunner captures it is cut after its "
                           "usage line (attncli itself prints the whole Chinese list: checked by hand)")
def test_the_app_lists_its_commands_in_chinese(runner):
    text = shown(runner, [], {"ATTNCLI_LANG": None, "LC_ALL": None, "LC_MESSAGES": None, "LANG": "zh_CN.UTF-8"})
    assert "╭─ 命令 " in text and " compute  为 FILE 计算注意力，并显示每一个中间结果。" in text
    assert "显示版本号并退出。" in text


def test_english_is_unchanged_under_lang_en_and_after_a_chinese_help(runner):
    before = shown(runner, ["compute"], {"ATTNCLI_LANG": "en"})
    shown(runner, ["compute", "--lang", "zh"], {})
    for english in (shown(runner, ["compute", "--lang", "en"], ZH), shown(runner, ["compute"], {"ATTNCLI_LANG": "en"})):
        assert english == before
    assert "Compute attention for FILE and show every intermediate." in before and "Usage:" in before
    assert "[default: 4]" in before and "[required]" in before and "╭─ Options " in before
    assert not CJK.search(before.replace("我想吃酸菜鱼", ""))
