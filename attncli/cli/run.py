"""The one place where failures become messages and exit codes.

Library code raises :class:`~attncli.core.errors.AttnError`; :func:`run` turns it
into one ``Error: …`` line on standard error and exit code 2.
"""

import os
import sys
import traceback
from collections.abc import Callable

import typer

from attncli.core.errors import AttnError, visible
from attncli.core.memory import MEMORY_ENV

EXIT_USER, EXIT_INTERNAL, EXIT_INTERRUPTED = 2, 70, 130
OUT_OF_MEMORY = ("Error: memory: ran out of memory (the input is larger than this process may allocate); use a smaller "
                 f"input, or set {MEMORY_ENV} to what attncli may use, so that it computes large results block by block")


def run(action: Callable[[], None], debug: bool) -> None:
    """Run ``action``; turn every failure into one line on stderr and an exit code."""
    try:
        action()
        sys.stdout.flush()
    except AttnError as e:
        _fail(f"Error: {e}", EXIT_USER)
    except MemoryError:  # a last resort: the estimates (attncli.core.memory) should have refused the size first
        if debug:
            traceback.print_exc()
        _fail(OUT_OF_MEMORY, EXIT_USER)
    except KeyboardInterrupt:
        _fail("Interrupted.", EXIT_INTERRUPTED)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except typer.Exit:
        raise
    except Exception as e:  # a bug of ours: one line, unless --debug
        if debug:
            traceback.print_exc()
        else:
            detail = str(e).splitlines()[0][:200] if str(e) else ""
            sys.stderr.write(
                f"Internal error: {type(e).__name__}: {detail} (this is a bug in attncli; "
                "run again with --debug for the traceback)\n"
            )
        raise typer.Exit(EXIT_INTERNAL) from None


def _fail(message: str, code: int) -> None:
    sys.stderr.write(visible(message.replace("\n", " ")) + "\n")
    raise typer.Exit(code)


def _quiet_broken_pipe() -> None:
    # The reader went away (`| head`): say nothing, and keep Python from complaining at exit.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise typer.Exit(0)


def warn(message: str) -> None:
    sys.stderr.write(f"Warning: {visible(message)}\n")
