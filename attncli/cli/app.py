"""The Typer app every command registers on, and its top-level options (``--version``).

Exit codes: 0 success, 1 ``check`` found a wrong answer, 2 a problem with the
document or the options (one ``Error: …`` line), 70 an internal error (a bug:
``--debug`` shows the traceback), 130 interrupted with Ctrl-C, 143 / 129 stopped
by SIGTERM / SIGHUP.
"""

import sys
from typing import Annotated

import typer
from typer.core import TyperCommand, TyperGroup

from attncli.cli.language import USAGE, from_environment, language_in

ARGS = "attncli.args"  # ctx.meta: the arguments the command was given, read by --help to learn --lang


class Spoken:
    """--help in the run's language (``--lang`` among the arguments, else the environment: --help is eager, so
    the parser calls it before ``--lang`` has a value). In Chinese the texts come from attncli/data/help_zh.json,
    read then and only then (:mod:`attncli.cli.help_zh`); Click's hooks only: parse_args, format_help,
    format_usage."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        ctx.meta[ARGS] = list(args)  # (a copy: the parser consumes the list)
        return super().parse_args(ctx, args)

    def format_help(self, ctx, formatter) -> None:
        if (language_in(ctx.meta.get(ARGS, [])) or from_environment()) != "zh":
            return super().format_help(ctx, formatter)
        from attncli.cli.help_zh import chinese

        with chinese(self, ctx, lambda into: super(Spoken, self).format_help(ctx, into)):
            return super().format_help(ctx, formatter)

    def format_usage(self, ctx, formatter) -> None:
        formatter.write_usage(ctx.command_path, " ".join(self.collect_usage_pieces(ctx)), ctx.meta.get(USAGE))


class Command(Spoken, TyperCommand):
    """A command whose usage line names a required argument as Click writes it, FILE (Typer 0.27 and 0.28 write
    {FILE}; 0.26 FILE already): Click's own hook for the usage line, through ``app.command(cls=…)``."""

    def collect_usage_pieces(self, ctx) -> list[str]:
        return [piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece
                for piece in super().collect_usage_pieces(ctx)]


class Group(Spoken, TyperGroup):
    """The app's group: its --help (``attncli``, ``attncli --help``) in the run's language too."""


class App(typer.Typer):
    """The Typer app, each of whose commands is a :class:`Command` unless it names another ``cls``."""

    def command(self, *args, cls=None, **kwargs):
        return super().command(*args, cls=cls or Command, **kwargs)


app = App(
    name="attncli",
    cls=Group,
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
        from attncli.cli.run import prefix, say

        if sys.stdout is None:  # started with standard output closed
            say(f"{prefix('error')}standard output: is closed; nothing can be written there\n")
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
