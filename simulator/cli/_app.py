"""The root typer app of ``tausim`` and its lazy command group (see :mod:`simulator.cli`)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:  # typer's own copy of click (typer >= 0.24 vendors it)
    from typer._click import Command, Context, HelpFormatter

from simulator.cli import COMMANDS, version_line

__all__ = ["LazyGroup", "app", "load_command"]


def load_command(name: str) -> Command:
    """Import command ``name``'s module and return its click command (a group for the sub-apps).

    Raises:
        KeyError: ``name`` is not one of :data:`COMMANDS`.
    """
    entry = COMMANDS[name]
    obj = getattr(importlib.import_module(entry.module), entry.attr)
    command: Command
    if isinstance(obj, typer.Typer):
        command = typer.main.get_group(obj)  # a group even with one command (tausim user check)
    else:
        single = typer.Typer(add_completion=False)
        single.command(name)(obj)
        command = typer.main.get_command(single)
    command.name = name
    return command


class LazyGroup(TyperGroup):
    """The root group: lists :data:`COMMANDS` from the table and imports a command's module only to run it.

    While the root help is formatted, :meth:`get_command` returns placeholders carrying the listed help, so that
    ``tausim --help`` imports none of the commands.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listing = False
        self._loaded: dict[str, Command] = {}

    def list_commands(self, ctx: Context) -> list[str]:
        """The command names, in :data:`COMMANDS` order."""
        return list(COMMANDS)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        """The command ``cmd_name`` (imported on first use), a placeholder while listing, or None if unknown."""
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        if self._listing:
            return TyperCommand(cmd_name, help=entry.summary, short_help=entry.summary)
        if cmd_name not in self._loaded:
            self._loaded[cmd_name] = load_command(cmd_name)
        return self._loaded[cmd_name]

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        """Format the root help from the table (no command module imported)."""
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


# the root help in click's plain format: rich's help formatting (rich, markdown-it) would double its start-up; each
# command's own help keeps typer's rich format
app = typer.Typer(cls=LazyGroup, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Multi-turn simulation of tool-using agents.")


def _version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Multi-turn simulation of tool-using agents."""


