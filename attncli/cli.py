"""The command line: each command parses its options, calls the library and renders (attncli.commands).

Exit codes: 0 success, 2 a problem with the document or the options (one
``Error: …`` line), 70 an internal error (a bug: ``--debug`` shows the
traceback), 130 interrupted with Ctrl-C.
"""

from attncli.commands import compute, explain, pictures  # noqa: F401  (registers the commands)
from attncli.commands.common import app

__all__ = ["app", "main"]


def main() -> None:
    app()
