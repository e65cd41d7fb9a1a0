"""The conventions card on a terminal: the setup, then each library's lines (see :mod:`attncli.outputs.card`).

Code is printed as it is, one source line per line (``soft_wrap``: a narrow terminal folds it, a copy keeps it
whole), so that it can be pasted; the words around it are wrapped to the terminal.
"""

from __future__ import annotations

from rich.text import Text

from attncli.outputs.card import export_command
from attncli.outputs.card_facts import Card
from attncli.outputs.card_words import sentence


def code(line: str) -> Text:
    return Text("    " + line if line else "")


def card_lines(c: Card, name: str, path: str, language: str = "en") -> list[tuple[Text, bool]]:
    """(text, is_code) in print order; ``path`` the document as the user named it (for the compute command)."""
    f = c.facts
    say = lambda key, **fields: sentence(language, key, **fields)  # noqa: E731
    out: list[tuple[Text, bool]] = [
        (Text(say("title", name=name), style="bold"), False),
        (Text(say("shape", h=f["heads"], g=f["kv_heads"], n=f["n"], m=f["m"], scale=repr(f["scale"]))), False),
        (Text(""), False), (Text(say("command"), style="bold"), False),
        (Text("    " + export_command(c, path)), True),
        (Text(""), False), (Text(say("setup"), style="bold"), False)]
    out += [(code(line), True) for line in c.setup]
    for e in c.entries:
        lse = say("lse_none") if e.lse is None else say(f"lse_{e.lse}", shape=e.lse_shape)
        out += [(Text(""), False), (Text.assemble((e.library, "bold cyan"), f"  ·  {lse}"), False)]
        for key, fields in e.missing:
            out.append((Text.assemble(("  " + say("none") + ": ", "bold red"), say(key, **fields)), False))
        out += [(code(line), True) for line in e.code]
        for key, fields in e.notes:
            out.append((Text.assemble(("  " + say("note") + ": ", "yellow"), say(key, **fields)), False))
    return out
