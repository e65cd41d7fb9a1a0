"""The command line: each command parses its options, calls the library and renders (attncli.cli).

Exit codes: 0 success, 2 a problem with the document or the options (one
``Error: …`` line), 70 an internal error (a bug: ``--debug`` shows the
traceback), 130 interrupted with Ctrl-C, 143 / 129 stopped by SIGTERM / SIGHUP.
"""

import os
import re
import signal
import sys
import warnings

import typer

from attncli.cli import compute  # noqa: F401  (registers the commands: --help lists them in this order)

from attncli.cli import check, explain, extract, heatmap, init, page, card  # noqa: F401  # isort: skip
from attncli.cli.app import app
from attncli.cli.language import current
from attncli.cli.messages import language_in, translate, usage_error
from attncli.cli.run import EXIT_USER, Stopped, quiet_broken_pipe, say, stop_cleanly_on_signals
from attncli.core.errors import MESSAGE_CHARS, quoted, shorten, visible

__all__ = ["app", "main"]


def main(args: list[str] | None = None) -> None:
    """Run attncli; an option the parser refuses is one ``Error:`` line too (exit 2), not a framed box."""
    library_defaults()
    warnings.simplefilter("ignore")  # stderr is attncli's: one Error line, or its own warnings (cli.run.warn); a
    # floating-point flag that NumPy reports as a RuntimeWarning (with a source path) has been checked for and named
    hold_standard_streams()
    stop_cleanly_on_signals()
    try:
        code = app(args=args, standalone_mode=False)  # returns the exit code instead of leaving
        if sys.stdout is not None:
            sys.stdout.flush()  # (--help, --version)
    except typer.Abort:  # (a prompt's end of input; attncli asks nothing)
        say("Aborted.\n")
        code = 1
    except Stopped as e:  # (while the options are parsed)
        say(f"Stopped by {signal.Signals(e.signo).name}.\n")
        code = 128 + e.signo
    except BrokenPipeError:  # --help into `| head`
        try:
            quiet_broken_pipe()
        except typer.Exit:
            code = 0
    except OSError as e:  # --help or --version into a full disk
        say(f"Error: standard output: {translate(f'cannot be written ({e.strerror or e})')}\n")
        code = EXIT_USER
    except Exception as e:  # a usage error: unknown option, missing FILE, value out of range
        if not (hasattr(e, "format_message") and hasattr(e, "exit_code")):  # Click's errors, by shape: Typer
            raise  # 0.26–0.29 name their base class differently, and commands report their own errors in run()
        message = e.format_message()
        ctx = getattr(e, "ctx", None)
        command = ctx.command_path if ctx is not None else "attncli"
        if message.strip():  # (empty after `attncli` alone, which shows the help)
            message = re.sub(r"'([^']{41,})'", lambda m: quoted(m.group(1)),  # a 10 kB value,
                             " ".join(message.split()))
            message = re.sub(r"[^\s']{61,}", lambda m: shorten(m.group()), message)  # option or command name
            language = language_in(sys.argv[1:] if args is None else list(args)) or current()
            message = shorten(usage_error(message, language), MESSAGE_CHARS, tail=MESSAGE_CHARS // 3)
            see = "（见 {} --help）" if language == "zh" else " (see {} --help)"
            say(f"Error: {visible(message).rstrip('.')}{see.format(shorten(command))}\n")
        code = getattr(e, "exit_code", 2)
    sys.exit(code if isinstance(code, int) else 0)


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
