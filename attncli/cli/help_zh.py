"""``--help`` in Chinese: the texts of attncli/data/help_zh.json put on the command Click is about to describe.

Imported, and the file read, only when a run asks for ``--help`` in Chinese (:class:`attncli.cli.app.Spoken`); every
other run reads the English of the commands' declarations alone. The file holds, for each command (``attncli`` is
the app itself), its description as lines and the help of each of its parameters by Click's name (``d_model`` for
--d-model, ``file`` for FILE), a parameter's shown default where it is words; ``shared`` holds a parameter's text
once for the commands whose English help of it is the same; ``typer`` the words Typer itself writes around them.
Option names, metavars and examples stay as they are. While the help is written the texts are swapped in, then put
back (one process may write the English help next: typer.testing).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PATH = Path(__file__).resolve().parents[1] / "data" / "help_zh.json"

# Typer's own words (typer.rich_utils' module constants, which it reads as it writes each help) by their key in the file
TYPER_WORDS = {"ARGUMENTS_PANEL_TITLE": "arguments", "OPTIONS_PANEL_TITLE": "options",
               "COMMANDS_PANEL_TITLE": "commands", "DEFAULT_STRING": "default", "REQUIRED_LONG_STRING": "required"}


def texts() -> dict:
    """The file's texts, a description's lines joined."""
    return json.loads(PATH.read_text(encoding="utf-8"))


def description(data: dict, command: str) -> str:
    return "\n".join(data["commands"][command]["help"])


def parameter_help(data: dict, command: str, name: str) -> str | None:
    """The help of ``command``'s parameter ``name``: its own, else the shared one, else None (left in English)."""
    own = data["commands"][command].get("options", {})
    text = own.get(name, data["shared"].get(name))
    if text is not None and name in FIELDS.get(command, {}):
        text = text.format(**FIELDS[command][name]())
    return text


def _only_fields() -> dict[str, str]:
    """The lists of compute --only's help, an alternative spelling written as Chinese text writes it:
    ``Q′（或 Q'）``, not ``Q′ (or Q')``."""
    from attncli.cli.only_help import parts

    return {name: re.sub(r" \(or ([^()]*)\)", r"（或 \1）", text) for name, text in parts().items()}


# texts made around lists the command line writes out (compute --only: the stage list's keys and names)
FIELDS = {"compute": {"only": _only_fields}}


# what stands for each kind of text in the trial run that measures the room Rich gives it (any breakable text)
MARKS = {"argument": "@", "option": "%", "command": "^"}


def room(command, ctx, render) -> dict[str, int]:
    """The width in cells of the column each kind of text gets (``description``: the command's paragraphs), from a
    trial run of the help (``render``) with every text a long breakable line of its mark: Rich lays out the names and
    metavars as it will for the Chinese, then gives the rest of the line to the text."""
    import io
    from contextlib import redirect_stdout

    from rich.cells import cell_len

    saved = [(param, param.help) for param in command.get_params(ctx) if hasattr(param, "help")]
    saved += [(sub, sub.help) for sub in getattr(command, "commands", {}).values()]
    for thing, _ in saved:
        kind = "command" if thing in getattr(command, "commands", {}).values() else thing.param_type_name
        thing.help = " ".join(MARKS.get(kind, "%") * 3 for _ in range(60))
    out = io.StringIO()
    try:
        with redirect_stdout(out):
            render(ctx.make_formatter())
    finally:
        for thing, text in saved:
            thing.help = text
    lines = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue()).splitlines()  # (colours, where FORCE_COLOR asks for them)
    widths = {"description": max(map(cell_len, lines), default=80) - 2}
    for kind, mark in MARKS.items():
        rows = [line.rstrip() for line in lines if f"{mark * 3} " in line]
        if rows:
            start = min(cell_len(row[:row.index(mark * 3)]) for row in rows)
            widths[kind] = max(10, min(cell_len(row) for row in rows) - 2 - start)  # (the border, its padding)
    return widths


@contextmanager
def chinese(command, ctx, render) -> Iterator[None]:
    """``command``'s help (and, for the app, its commands' lines) in Chinese while the block runs; ``render`` writes
    the help (into a Click formatter): once beforehand, to measure the room of each text (:func:`room`)."""
    from typer import rich_utils

    from attncli.cli.language import USAGE
    from attncli.cli.wrap_zh import wrap

    data = texts()
    widths = room(command, ctx, render)
    changes: list[tuple[object, str, object]] = []

    def put(thing: object, attribute: str, value: object) -> None:
        changes.append((thing, attribute, getattr(thing, attribute)))
        setattr(thing, attribute, value)

    name = "attncli" if ctx.parent is None else command.name
    put(command, "help", "\b" + wrap(description(data, name), widths["description"]))  # (\b: Typer keeps the first
    # paragraph's lines as they are; the others it keeps anyway)
    defaults = data["commands"][name].get("defaults", {})
    for param in command.get_params(ctx):
        text = parameter_help(data, name, param.name)
        if text is not None:  # (\b: Typer keeps the lines of the paragraph as they are)
            put(param, "help", "\b" + wrap(text, widths.get(param.param_type_name, widths["description"])))
        if isinstance(getattr(param, "show_default", None), str) and param.name in defaults:
            put(param, "show_default", defaults[param.name])
    for sub_name, sub in getattr(command, "commands", {}).items():  # the app's list of commands
        if sub_name in data["commands"]:
            put(sub, "help", "\b" + wrap(description(data, sub_name).split("\n\n")[0], widths.get("command", 80)))
    for constant, key in TYPER_WORDS.items():
        put(rich_utils, constant, data["typer"][key])
    ctx.meta[USAGE] = data["typer"]["usage"]
    try:
        yield
    finally:
        ctx.meta.pop(USAGE, None)
        for thing, attribute, value in reversed(changes):
            setattr(thing, attribute, value)
