"""The command line: one module per command, sharing the app, the options and the error handler.

``main`` is the console entry point (``attncli``) and ``python -m attncli``: it imports the command it runs, not
all eight. ``app`` is the Typer app with every command registered on it (for typer.testing's CliRunner).
"""

try:
    from attncli.cli.main import every_command, main
except KeyboardInterrupt:  # Ctrl-C while the command line is still importing (its first ~0.3 s): one line, exit 130,
    import signal  # as later (attncli.cli.run); nothing has been opened or written yet
    import sys

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from attncli.cli.language import current, language_in
    from attncli.core.messages import text

    sys.stderr.write(text("cli.interrupted", {}, language_in(sys.argv[1:]) or current()) + "\n")
    sys.stderr.flush()
    raise SystemExit(130) from None

__all__ = ["app", "main"]

globals().pop("app")  # the submodule attncli.cli.app, bound here by its import: ``app`` is the Typer app (below)


def __getattr__(name: str):
    if name == "app":
        return every_command()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
