"""The ``tausim personas`` command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from personas.loader import PersonaError, available_personas, load_persona, load_personas
from simulator.report import safe_console

__all__ = ["personas_command"]


def _console(stderr: bool = False) -> Console:
    return safe_console(stderr=stderr)


def personas_command(
    validate: Annotated[list[Path] | None, typer.Option(
        "--validate", metavar="FILE", help="Check a persona file against the schema (repeatable).")] = None,
) -> None:
    """List the shipped personas, or validate persona files with --validate FILE."""
    out, err = _console(), _console(stderr=True)
    if validate:
        failed = False
        for path in validate:
            try:
                persona = load_persona(path)
            except PersonaError as e:
                err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
                failed = True
            else:
                out.print(f"{path}: ok (persona {persona.name})", highlight=False, markup=False)
        if failed:
            raise typer.Exit(2)
        return
    try:
        personas = load_personas(available_personas())
    except PersonaError as e:
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        raise typer.Exit(2) from e
    table = Table("name", "patience", "reveal style", "description", box=None, pad_edge=False)
    for p in personas:
        table.add_row(p.name, "never gives up" if p.patience is None else str(p.patience), p.reveal_style,
                      p.description)
    out.print(table)
