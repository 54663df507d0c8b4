"""The ``tausim`` command: one module per command, registered on one typer app here.

The CLI is the composition root: it may import every engine package, the reports and the shipped personas; no
engine module imports it (an import-linter contract checks this).
"""

from __future__ import annotations

from typing import Annotated

import typer

from simulator.cli._common import console, package_versions
from simulator.cli.calibrate import calibrate_command
from simulator.cli.domain import domain_app
from simulator.cli.domains import domains_command
from simulator.cli.gate import baseline_command, gate_command
from simulator.cli.hunt import hunt_command
from simulator.cli.imports import import_command
from simulator.cli.judge import judge_app
from simulator.cli.personas import personas_command
from simulator.cli.plan import plan_command
from simulator.cli.play import play_command
from simulator.cli.registries import agents_command, users_command
from simulator.cli.regrade import regrade_command
from simulator.cli.replay import replay_command
from simulator.cli.report import export_command, report_command
from simulator.cli.run import run_command
from simulator.cli.serve_tools import serve_tools_command
from simulator.cli.tasks import tasks_app
from simulator.cli.user import user_app

__all__ = ["app", "main"]

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Multi-turn simulation of tool-using agents.")


def _version(value: bool) -> None:
    if value:
        console.print(f"tausim {package_versions().get('tausim', 'unknown')}", highlight=False)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Multi-turn simulation of tool-using agents."""


app.command("run")(run_command)
app.command("play")(play_command)
app.command("serve-tools")(serve_tools_command)
app.command("hunt")(hunt_command)
app.command("replay")(replay_command)
app.command("regrade")(regrade_command)
app.command("import")(import_command)
app.command("calibrate")(calibrate_command)
app.command("domains")(domains_command)
app.command("agents")(agents_command)
app.command("users")(users_command)
app.command("report")(report_command)
app.command("export")(export_command)
app.command("baseline")(baseline_command)
app.command("gate")(gate_command)
app.command("plan")(plan_command)
app.add_typer(judge_app, name="judge")
app.command("personas")(personas_command)
app.add_typer(domain_app, name="domain")
app.add_typer(tasks_app, name="tasks")
app.add_typer(user_app, name="user")


def main() -> None:
    """Entry point of the ``tausim`` console script."""
    app()
