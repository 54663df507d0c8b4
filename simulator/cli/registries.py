"""The ``tausim agents`` and ``tausim users`` commands: list the registered agent and user schemes."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from simulator.agents import AGENTS
from simulator.cli._common import console, err
from simulator.errors import RegistryError
from simulator.users import USERS
from simulator.world.plugins import Registry

__all__ = ["agents_command", "users_command"]

_CHECK_HELP = "Also load each scheme's builder: show its first docstring line, or why it cannot be loaded (exit 1)."


def _list(registry: Registry[Any], check: bool) -> None:
    """Print one row per registration: scheme, package, entry point (and with ``check``: what loading it gives).

    With ``check`` each scheme is one line, never cut to the terminal's width (its summary or error is read whole).
    """
    regs = registry.registrations()
    broken = 0
    rows = []
    for reg in regs:
        row = [reg.scheme, escape(reg.origin), escape(reg.target)]
        if check:
            try:
                doc = (getattr(registry.builder(reg.scheme), "__doc__", None) or "").strip()
            except RegistryError as e:
                broken += 1
                row.append(f"[red]error:[/] {escape(str(e))}")
            else:
                row.append(escape(doc.splitlines()[0].replace("``", "") if doc else "ok"))
        rows.append(row)
    if check:
        for scheme, origin, target, summary in rows:
            console.print(f"{scheme} ({origin}, {target}): {summary}", soft_wrap=True, highlight=False)
    else:
        table = Table("scheme", "package", "entry point", box=None, pad_edge=False)
        for row in rows:
            table.add_row(*row)
        console.print(table)
    if not regs:
        err.print(f"no {registry.role} schemes registered (entry-point group {registry.group})", highlight=False)
    if broken:
        err.print(f"{broken} {registry.role} scheme(s) cannot be used", highlight=False)
        raise typer.Exit(1)


def agents_command(
    check: Annotated[bool, typer.Option("--check", help=_CHECK_HELP)] = False,
) -> None:
    """List the agent schemes (--agent SCHEME[:ARG]) registered under the entry-point group tausim.agents."""
    _list(AGENTS, check)


def users_command(
    check: Annotated[bool, typer.Option("--check", help=_CHECK_HELP)] = False,
) -> None:
    """List the user schemes (--user SCHEME[:ARG]) registered under the entry-point group tausim.users."""
    _list(USERS, check)
