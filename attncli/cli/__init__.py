"""The command line: one module per command, sharing the app, the options and the error handler.

``main`` is the console entry point (``attncli``) and ``python -m attncli``.
"""

try:
    from attncli.cli.main import app, main
except KeyboardInterrupt:  # Ctrl-C while the command line is still importing (its first ~0.3 s): one line, exit 130,
    import signal  # as later (attncli.cli.run); nothing has been opened or written yet
    import sys

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stderr.write("Interrupted.\n")
    sys.stderr.flush()
    raise SystemExit(130) from None

__all__ = ["app", "main"]
