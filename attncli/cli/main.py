"""The command line: each command parses its options, calls the library and renders (attncli.cli).

Exit codes: 0 success, 2 a problem with the document or the options (one
``Error: …`` line), 70 an internal error (a bug: ``--debug`` shows the
traceback), 130 interrupted with Ctrl-C.
"""

import re
import sys

import typer

from attncli.cli import check, compute, explain, heatmap, init  # noqa: F401  (registers the commands, in --help's order)
from attncli.cli.app import app
from attncli.core.errors import MESSAGE_CHARS, quoted, shorten, visible

__all__ = ["app", "main"]


def main(args: list[str] | None = None) -> None:
    """Run attncli; an option the parser refuses is one ``Error:`` line too (exit 2), not a framed box."""
    try:
        code = app(args=args, standalone_mode=False)  # returns the exit code instead of leaving
    except typer.Abort:  # (a prompt's end of input; attncli asks nothing)
        sys.stderr.write("Aborted.\n")
        code = 1
    except Exception as e:  # a usage error: unknown option, missing FILE, value out of range
        if not (hasattr(e, "format_message") and hasattr(e, "exit_code")):  # Click's errors, by shape: Typer
            raise  # 0.26–0.29 name their base class differently, and commands report their own errors in run()
        message = e.format_message()
        ctx = getattr(e, "ctx", None)
        command = ctx.command_path if ctx is not None else "attncli"
        if message.strip():  # (empty after `attncli` alone, which shows the help)
            message = re.sub(r"'([^']{41,})'", lambda m: quoted(m.group(1)), " ".join(message.split()))  # a 10 kB value,
            message = re.sub(r"[^\s']{61,}", lambda m: shorten(m.group()), message)  # option or command name
            message = shorten(message, MESSAGE_CHARS, tail=MESSAGE_CHARS // 3)
            sys.stderr.write(f"Error: {visible(message).rstrip('.')} (see {shorten(command)} --help)\n")
        code = getattr(e, "exit_code", 2)
    sys.exit(code if isinstance(code, int) else 0)
