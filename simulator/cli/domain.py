"""The ``tausim domain`` commands: ``check`` (the conformance suite) and ``new`` (scaffold a domain package)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from simulator.authoring import Finding, check_domain, count_by_rule, errors
from simulator.authoring.scaffold import new_domain
from simulator.cli._common import console, fail
from simulator.errors import ScaffoldError
from simulator.types.tasks import TaskFileError
from simulator.world.domain import DomainError, get_domain

__all__ = ["domain_app", "print_findings"]

domain_app = typer.Typer(no_args_is_help=True, help="Check a domain, or scaffold a new one.")


def print_findings(findings: list[Finding], fmt: str, what: str) -> None:
    """Print findings one per line (``text``) or as one JSON document (``json``), then a count line.

    Args:
        findings: the findings.
        fmt: ``text`` or ``json``.
        what: what was checked, for the count line (e.g. ``domain retail``).
    """
    if fmt == "json":
        console.print_json(json.dumps({"findings": [f.to_json() for f in findings], "counts": count_by_rule(findings),
                                       "errors": len(errors(findings))}))
        return
    notes = [f for f in findings if f.severity == "note"]
    for f in [*(f for f in findings if f.severity != "note"), *notes]:  # informational notes apart, at the end
        style = {"error": "red", "warning": "yellow"}.get(f.severity, "dim")
        console.print(f"[{style}]{f.severity}[/] {escape(f'{f.rule} {f.subject}: ' + ' '.join(f.message.split()))}",
                      highlight=False, markup=True)
    n_err = len(errors(findings))
    tail = f", {len(notes)} note(s)" if notes else ""
    console.print(f"{what}: {n_err} error(s), {len(findings) - n_err - len(notes)} warning(s){tail}",
                  highlight=False)


def print_rule_counts(findings: list[Finding], tasks: int) -> None:
    """Print the findings' counts per rule and severity, and the share of tasks with an error or a warning.

    Args:
        findings: the findings.
        tasks: how many tasks were linted (the share's denominator).
    """
    for key, n in count_by_rule(findings).items():
        console.print(f"  {escape(key)}: {n}", highlight=False)
    flagged = {f.task_id for f in findings if f.severity in ("error", "warning") and f.task_id is not None}
    share = len(flagged) / tasks if tasks else 0.0
    console.print(f"tasks with an error or warning: {len(flagged)}/{tasks} ({share:.0%})", highlight=False)


@domain_app.command("check")
def check_command(
    name: Annotated[str, typer.Argument(help="Registered domain name.")],
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the built-in data set).")] = None,
    tasks: Annotated[str | None, typer.Option(help="Task file or split name (default: every built-in split).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text | json")] = "text",
    no_agents: Annotated[bool, typer.Option("--no-agents", help="Skip the oracle and do-nothing agent runs.")] = False,
) -> None:
    """Run the conformance checks on a domain; exit 1 when any finding is an error."""
    if fmt not in ("text", "json"):
        raise fail(f"--format {fmt!r}: expected text or json")
    try:
        dom = get_domain(name)
        task_list = dom.load_tasks(tasks) if tasks is not None else None
        findings = check_domain(dom, data_dir=data, tasks=task_list, agents=not no_agents)
    except (DomainError, TaskFileError) as e:
        raise fail(str(e)) from e
    print_findings(findings, fmt, f"domain {name}")
    if errors(findings):
        raise typer.Exit(1)


@domain_app.command("new")
def new_command(
    name: Annotated[str, typer.Argument(help="Domain name (also its Python package name), e.g. kiosk.")],
    directory: Annotated[Path, typer.Option("--dir", help="Where the package folder DIR/NAME is made.")] = Path("."),
) -> None:
    """Write an installable domain package that passes `tausim domain check NAME` as it is."""
    try:
        root = new_domain(name, directory)
    except ScaffoldError as e:
        raise fail(str(e)) from e
    console.print(f"wrote {root}", highlight=False)
    console.print(f"next: pip install -e {root} && tausim domain check {name} && "
                  f"tausim run --domain {name} --agent oracle", highlight=False)
