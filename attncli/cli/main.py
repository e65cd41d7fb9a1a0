"""The command line: each command parses its options, calls the library and renders (attncli.cli).

Exit codes: 0 success, 2 a problem with the document or the options (one
``Error: …`` line), 70 an internal error (a bug: ``--debug`` shows the
traceback), 130 interrupted with Ctrl-C, 143 / 129 stopped by SIGTERM / SIGHUP.
"""

import gc
import importlib
import os
import re
import signal
import sys
import warnings

import typer

from attncli.cli.app import app as _app  # as the commands imported so far have registered on it (``app``: all)
from attncli.cli.language import current
from attncli.cli.run import (
    EXIT_USER,
    OUT_OF_MEMORY,
    Stopped,
    prefix,
    quiet_broken_pipe,
    said,
    say,
    stop_cleanly_on_signals,
)
from attncli.cli.start import start_within_limits
from attncli.core.errors import MESSAGE_CHARS, quoted, shorten, visible
from attncli.core.memory import MEMORY_ENV

__all__ = ["main"]  # and app (below)

# --help lists them in this order; each is the module attncli.cli.NAME, whose import registers it on the app
COMMANDS = ("check", "compute", "explain", "extract", "heatmap", "init", "page", "card")


def every_command() -> typer.Typer:
    """The app with every command registered on it, in the order of COMMANDS."""
    for name in COMMANDS:
        importlib.import_module(f"attncli.cli.{name}")
    _app.registered_commands.sort(key=lambda command: COMMANDS.index(command.name or command.callback.__name__))
    return _app


def __getattr__(name: str) -> typer.Typer:
    """``app``: the app with every command (:func:`every_command`), for typer.testing and anyone who imports it."""
    if name == "app":
        return every_command()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def the_command(args: list[str]) -> None:
    """Register what the run needs: the command ``args`` starts with alone (each start would otherwise import and
    build all eight), or every command for anything else (``--help``, a misspelt name, shell completion)."""
    completing = any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ)
    if args and args[0] in COMMANDS and not completing:
        importlib.import_module(f"attncli.cli.{args[0]}")
    else:
        every_command()


def main(args: list[str] | None = None) -> None:
    """Run attncli; an option the parser refuses is one ``Error:`` line too (exit 2), not a framed box; Ctrl-C from
    the first line on (settings, the start within ulimit -v, imports, parsing) is ``Interrupted.``, exit 130."""
    try:
        start_and_run(args)
    except KeyboardInterrupt:  # (before the command's own run() or the parsing's handler below catches it)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # (a second Ctrl-C does not interrupt the message)
        say(f"{spoken('cli.interrupted', _args(args))}\n")
        sys.exit(130)


def start_and_run(args: list[str] | None) -> None:
    """:func:`main`'s work: the settings numpy reads, then the command."""
    library_defaults()
    start_or_refuse(sys.argv[1:] if args is None else list(args))  # (under ulimit -v, before numpy is imported)
    gc.freeze()  # what the imports so far made (Typer's, Click's) lives to the end: no collection walks it again
    # (at every start, the walks of the later imports and of the exit took 21 million instructions: docs/speed.md)
    warnings.simplefilter("ignore")  # stderr is attncli's: one Error line, or its own warnings (cli.run.warn); a
    # floating-point flag that NumPy reports as a RuntimeWarning (with a source path) has been checked for and named
    hold_standard_streams()
    stop_cleanly_on_signals()
    try:
        the_command(sys.argv[1:] if args is None else list(args))  # (inside: a Ctrl-C while it imports is one line)
        code = _app(args=args, standalone_mode=False)  # returns the exit code instead of leaving
        if sys.stdout is not None:
            sys.stdout.flush()  # (--help, --version)
    except typer.Abort:  # (a prompt's end of input; attncli asks nothing)
        say("Aborted.\n")
        code = 1
    except Stopped as e:  # (while the options are parsed)
        say(f"{spoken('cli.stopped_by', _args(args), signal=signal.Signals(e.signo).name)}\n")
        code = 128 + e.signo
    except KeyboardInterrupt:  # (Ctrl-C while the options are parsed, before a command's run() catches it)
        say(f"{spoken('cli.interrupted', _args(args))}\n")
        code = 130
    except MemoryError:  # (while a command's module is imported: its run() says the same of what it allocates)
        say(memory_line(OUT_OF_MEMORY, _args(args), variable=MEMORY_ENV))
        code = EXIT_USER
    except BrokenPipeError:  # --help into `| head`
        try:
            quiet_broken_pipe()
        except typer.Exit:
            code = 0
    except OSError as e:  # --help or --version into a full disk
        said = spoken("files.cannot_written", _args(args), reason=e.strerror or e)
        say(f"{prefix('error')}standard output: {said}\n")
        code = EXIT_USER
    except Exception as e:  # a usage error: unknown option, missing FILE, value out of range
        if not (hasattr(e, "format_message") and hasattr(e, "exit_code")):  # Click's errors, by shape: Typer
            raise  # 0.26–0.29 name their base class differently, and commands report their own errors in run()
        _said_again(e, args)
        message = e.format_message()
        ctx = getattr(e, "ctx", None)
        command = ctx.command_path if ctx is not None else "attncli"
        if message.strip():  # (empty after `attncli` alone, which shows the help)
            message = re.sub(r"'([^']{41,})'", lambda m: quoted(m.group(1)),  # a 10 kB value,
                             " ".join(message.split()))
            message = re.sub(r"[^\s']{61,}", lambda m: shorten(m.group()), message)  # option or command name
            from attncli.cli.messages import language_in, usage_error  # (only to print the error)

            language = language_in(sys.argv[1:] if args is None else list(args)) or current()
            message = shorten(usage_error(message, language), MESSAGE_CHARS, tail=MESSAGE_CHARS // 3)
            see = "（见 {} --help）" if language == "zh" else " (see {} --help)"
            say(f"{prefix('error', language)}{visible(message).rstrip('.')}{see.format(shorten(command))}\n")
        code = getattr(e, "exit_code", 2)
    sys.exit(code if isinstance(code, int) else 0)


def start_or_refuse(args: list[str]) -> None:
    """Under an address-space limit, OpenBLAS's threads as fit (:mod:`attncli.cli.start`); a limit in which numpy
    could not even start is one ``Error: memory:`` line, exit 2."""
    too_small = start_within_limits()
    if too_small is not None:
        say(memory_line("cli.too_little_memory_to_start", args, **too_small))
        sys.exit(EXIT_USER)


def memory_line(id: str, args: list[str], /, **fields: object) -> str:
    """``Error: memory: …`` in the language ``--lang`` in ``args`` or the environment asks for (before the parser)."""
    from attncli.cli.language import language_in

    return f"{prefix('error', language_in(args) or current())}memory: {spoken(id, args, **fields)}\n"


def spoken(id: str, args: list[str], /, **fields: object) -> str:
    """The message ``id`` in the language ``--lang`` in ``args`` asks for, else the environment's (before any
    parsing)."""
    from attncli.cli.language import language_in

    return said(id, language_in(args) or current(), **fields)


def _said_again(error: Exception, args: list[str] | None) -> None:
    """An option's bad value that one of our callbacks said (:func:`attncli.cli.options.bad_value`), written again
    in the run's language: the callback ran before ``--lang`` was read."""
    if hasattr(error, "message_id"):
        error.message = spoken(error.message_id, _args(args), **error.message_fields)


def _args(args: list[str] | None) -> list[str]:
    return sys.argv[1:] if args is None else list(args)


LIBRARY_DEFAULTS = {
    # numpy asks for huge pages for arrays of 4 MiB and more; each is zeroed at its first touch, which costs system
    # time on a virtual machine (see benchmarks/README.md, library defaults). A process that uses each of its arrays
    # once and exits gains nothing from them.
    "NUMPY_MADVISE_HUGEPAGE": "0",
    # OpenBLAS's idle threads spin for 2^28 cycles after each product before they sleep: after the
    # projections, that spin takes a core from attncli's own threads (see benchmarks/README.md, library defaults).
    "OPENBLAS_THREAD_TIMEOUT": "4",
}


def library_defaults() -> None:
    """Settings numpy and OpenBLAS read when numpy is imported (after this); a value in the environment wins."""
    for name, value in LIBRARY_DEFAULTS.items():
        os.environ.setdefault(name, value)


def hold_standard_streams() -> None:
    """Standard input, output or error started closed (``<&-``, ``>&-``, ``2>&-``): /dev/null takes the number.

    No file attncli opens may become descriptor 0, 1 or 2 (a temporary output file as "standard
    output"). Python has set ``sys.stdin`` / ``sys.stdout`` to None for a closed one, and so they
    stay: reading the document from ``-`` or writing the result there is then an error. A closed
    standard error just swallows the messages; the exit code still tells.
    """
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            spare = os.open(os.devnull, flags)
            if spare != fd:
                os.dup2(spare, fd)
                os.close(spare)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")
