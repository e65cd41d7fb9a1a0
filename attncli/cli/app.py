"""The Typer app every command registers on, and its top-level options (``--version``).

Exit codes: 0 success, 1 ``check`` found a wrong answer, 2 a problem with the
document or the options (one ``Error: …`` line), 70 an internal error (a bug:
``--debug`` shows the traceback), 130 interrupted with Ctrl-C, 143 / 129 stopped
by SIGTERM / SIGHUP.
"""

import sys
from typing import Annotated

import typer
import typer.core

_make_metavar = typer.core.TyperArgument.make_metavar


def _plain_metavar(self, *args, **kwargs) -> str:
    """A required argument as FILE in the usage line, as Click writes it (Typer 0.28 writes {FILE}).

    The arguments are passed on as they come: older Typer versions take no ``usage`` keyword."""
    var = _make_metavar(self, *args, **kwargs)
    return var[1:-1] if kwargs.get("usage") and var.startswith("{") and var.endswith("}") else var


typer.core.TyperArgument.make_metavar = _plain_metavar

app = typer.Typer(
    name="attncli",
    help="See every number of self-attention: Q, K, V, scores, softmax weights and outputs.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from attncli import __version__
        from attncli.cli.run import say

        if sys.stdout is None:  # started with standard output closed
            say("Error: standard output: is closed; nothing can be written there\n")
            raise typer.Exit(2)
        sys.stdout.write(f"attncli {__version__}\n")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
) -> None:
    """See every number of self-attention: Q, K, V, scores, softmax weights and outputs.

    Start with [bold]attncli explain[/bold] for the eight steps on a built-in example, or
    [bold]attncli compute FILE[/bold] for your own matrices.
    """
