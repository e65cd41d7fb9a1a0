"""The one place where failures become messages and exit codes.

Library code raises :class:`~attncli.core.errors.AttnError`; :func:`run` turns it
into one ``Error: …`` line (``错误：…`` in Chinese: :func:`prefix`) on standard error and exit code 2.
SIGTERM and SIGHUP become :class:`Stopped` (as Ctrl-C becomes ``KeyboardInterrupt``), so temporary files
are removed on the way out; the exit code is then 128 + the signal's number.
"""

import os
import signal
import sys
import traceback
from collections.abc import Callable

import typer

from attncli.cli.language import current
from attncli.core.errors import AttnError, visible
from attncli.core.memory import MEMORY_ENV

EXIT_USER, EXIT_INTERNAL, EXIT_INTERRUPTED = 2, 70, 130
OUT_OF_MEMORY = "cli.out_of_memory"  # (the id of the message: ran out of memory, set ATTNCLI_MEMORY …)


class Stopped(BaseException):
    """SIGTERM or SIGHUP arrived: unwind (removing temporary files) and exit 128 + ``signo``."""

    def __init__(self, signo: int):
        super().__init__(signo)
        self.signo = signo


# the word before a message line on standard error, in the run's language (the place and the values stay as they are)
PREFIXES = {"en": {"error": "Error: ", "warning": "Warning: "}, "zh": {"error": "错误：", "warning": "警告："}}


def prefix(kind: str, lang: str | None = None) -> str:
    """``Error: `` or ``Warning: `` (``kind``: error, warning) in ``lang``, else the run's language: 错误：, 警告：."""
    return PREFIXES["zh" if (lang or current()) == "zh" else "en"][kind]


def stop_cleanly_on_signals() -> None:
    """SIGTERM and SIGHUP raise :class:`Stopped` (unless the caller ignores them, as ``nohup`` does)."""

    def stop(signo, frame):
        raise Stopped(signo)

    for name in ("SIGTERM", "SIGHUP"):
        signo = getattr(signal, name, None)
        if signo is not None and signal.getsignal(signo) is signal.SIG_DFL:
            signal.signal(signo, stop)


def run(action: Callable[[], None], debug: bool) -> None:
    """Run ``action``; turn every failure into one line on stderr and an exit code."""
    try:
        action()
        if sys.stdout is not None:  # (None: started with standard output closed, and nothing was written there)
            sys.stdout.flush()
    except AttnError as e:
        _fail(f"{prefix('error')}{error_line(e)}", EXIT_USER)
    except MemoryError:  # a last resort: the estimates (attncli.core.memory) should have refused the size first
        if debug:
            traceback.print_exc()
        _fail(f"{prefix('error')}memory: {said(OUT_OF_MEMORY, variable=MEMORY_ENV)}", EXIT_USER)
    except KeyboardInterrupt:
        _fail(said("cli.interrupted"), EXIT_INTERRUPTED)
    except Stopped as e:
        _fail(said("cli.stopped_by", signal=signal.Signals(e.signo).name), 128 + e.signo)
    except BrokenPipeError:
        quiet_broken_pipe()
    except typer.Exit:
        raise
    except Exception as e:  # a bug of ours: one line, unless --debug
        if unmapped(e):  # (a library's import that the address-space limit left no room for)
            _fail(f"{prefix('error')}memory: {said(OUT_OF_MEMORY, variable=MEMORY_ENV)}", EXIT_USER)
        if debug:
            traceback.print_exc()
        else:
            detail = str(e).splitlines()[0][:200] if str(e) else ""
            say(
                f"Internal error: {type(e).__name__}: {detail} (this is a bug in attncli; "
                "run again with --debug for the traceback)\n"
            )
        raise typer.Exit(EXIT_INTERNAL) from None


def unmapped(error: Exception) -> bool:
    """Whether ``error`` is a shared library that could not be mapped into memory (numpy's ImportError under a
    low ``ulimit -v``: ``failed to map segment from shared object``; ENOMEM)."""
    text = str(error).lower()
    return isinstance(error, (ImportError, OSError)) and (
        "failed to map segment" in text or "cannot allocate memory" in text or getattr(error, "errno", 0) == 12)


def error_line(error: AttnError) -> str:
    """``error`` as its ``Error:`` line says it (:func:`attncli.cli.messages.error_line`, imported when one is)."""
    from attncli.cli import messages

    return messages.error_line(error)


def said(id: str, lang: str | None = None, /, **fields: object) -> str:
    """The command line's own line ``id`` in ``lang``, else the run's language (the catalogue is read when one is
    said: not while nothing goes wrong)."""
    from attncli.core.messages import text

    return text(id, fields, lang or current())


def _fail(message: str, code: int) -> None:
    say(visible(message.replace("\n", " ")) + "\n")
    raise typer.Exit(code)


def quiet_broken_pipe() -> None:
    # The reader went away (`| head`): say nothing, and keep Python from complaining at exit.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise typer.Exit(0)


def say(text: str) -> None:
    """Write to standard error; if it cannot take the text (closed, full, gone), the exit code still tells."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # nor may Python's flush at exit fail on it (exit 120)


def warn(message: str) -> None:
    say(f"{prefix('warning')}{visible(message)}\n")
