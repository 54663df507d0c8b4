"""The ``tausim domains`` command: list the registered domains."""

from __future__ import annotations

import typer
from rich.markup import escape

from simulator.cli._common import console, err
from simulator.world.domain import DomainError, available_domains, get_domain


def domains_command() -> None:
    """List the registered domains and their built-in task splits; a plugin that cannot load is reported (exit 1)."""
    broken = 0
    for name in available_domains():
        try:
            dom = get_domain(name)
            line = f"{name}: splits {', '.join(dom.task_splits()) or '-'}; tools {len(dom.toolbox().specs)}"
        except (DomainError, ValueError, OSError) as e:
            broken += 1
            err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
            continue
        console.print(line, highlight=False)
    if broken:
        raise typer.Exit(1)
