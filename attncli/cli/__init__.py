"""The command line: one module per command, sharing the app, the options and the error handler.

``main`` is the console entry point (``attncli``) and ``python -m attncli``.
"""

from attncli.cli.main import app, main

__all__ = ["app", "main"]
