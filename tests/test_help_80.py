"""--help at an 80-column terminal (issue 32): paragraphs re-wrapped, not hard-wrapped near 100 (no alternating long
and short lines); every example whole on one line, so that a copied line runs; option values (metavars) not cut in
two; the usage line as Click writes it (FILE, not {FILE}); Rich markup not eating ``attncli[png]``."""

from __future__ import annotations

import re

import pytest
from rich.cells import cell_len
from test_help_examples import help_examples

COMMANDS = ("compute", "check", "explain", "heatmap", "init", "extract", "card")


def shown(runner, *args: str) -> list[str]:
    from attncli.cli import app

    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def examples(command: str) -> list[str]:
    if command != "extract":
        return help_examples(command)
    from typer.testing import CliRunner

    from attncli.cli import app

    text = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "300", "NO_COLOR": "1"}).stdout
    return [line.strip() for line in text.splitlines() if re.match(r"\s+attncli ", line)]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_fits_80_columns_as_written(runner, command):
    lines = shown(runner, command)
    assert all(cell_len(line) <= 80 for line in lines)
    assert "{" not in lines[1] and lines[1].split()[-1] in ("FILE", "[FILE]", "MODEL", "[OPTIONS]")
    text = "\n".join(line.rstrip() for line in lines)
    for example in examples(command):
        assert any(line.strip() == example for line in lines), f"{example!r} is cut at 80 columns"
    prose = text.split("╭─")[0].split(" Examples")[0].split(" Example ")[0]
    for paragraph in prose.split("\n\n")[2:]:
        rows = [row.strip() for row in paragraph.splitlines() if row.strip()]
        short = [row for row in rows[:-1] if len(row) < 50]
        assert not short, f"a hard-wrapped paragraph: {short[0]!r}"
    for line in lines:  # an option's metavar (<a|b|c>, <int range>) whole on its line
        for metavar in re.finditer(r"<([a-z][a-z0-9_|]*(?: [a-z]+)?)(.)", line):
            assert metavar.group(2) == ">", line


def test_markup_in_help_is_shown_as_written(runner):
    text = " ".join(line.strip("│ ") for line in shown(runner, "heatmap"))
    assert "(needs attncli[png])" in text
