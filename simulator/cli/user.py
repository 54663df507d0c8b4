"""The ``tausim user check`` command: the conformance battery for a simulated user (exit 0 only when all pass)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from simulator.cli._common import check_outputs, console, err, fail, load_persona_option, persona_files, write_output
from simulator.cli.serve_tools import clean_text

__all__ = ["user_app"]

user_app = typer.Typer(no_args_is_help=True, help="Check a simulated user before it grades anyone.")


def _rate(value: float | None, money: bool = False) -> str:
    if value is None:
        return "unknown" if money else "-"
    return f"${value:.6f}" if money else f"{value:.1%}"


@user_app.command("check")
def check_command(
    user: Annotated[str, typer.Option(help="The simulated user to check: rule, llm:MODEL, py:MODULE:FACTORY, ...")],
    domain: Annotated[str, typer.Option(help="The domain whose task gives the probes their facts.")] = "retail",
    personas: Annotated[str | None, typer.Option(
        help="Comma-separated personas (shipped names or JSON files) whose patience is checked, one probe each.")
    ] = None,
    task: Annotated[str | None, typer.Option(
        help="The task whose facts the probes use (default: the first with a write, a known and an unknown fact).")
    ] = None,
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL of an LLM user.")] = None,
    temperature: Annotated[float | None, typer.Option(help="Temperature of an LLM user.")] = None,
    seed: Annotated[int, typer.Option(help="Run seed (each probe's user gets its own trial seed).")] = 0,
    out: Annotated[Path | None, typer.Option(help="Write the scorecard (rates, probes, transcripts) as JSON here.")
                   ] = None,
) -> None:
    """Run scripted agent probes against a simulated user; exit 0 only when every probe passes (1 otherwise).

    Probes: confirm a write (says yes), a wrong write (no yes), a fact it lacks (says it does not know, invents
    nothing), a fact it has (gives exactly that), an alternative, a false "all done", the same question three
    times, an empty message, a transfer, a silent agent, tool-call syntax; with --personas, patience per persona.
    Prints each probe's verdict and the rates: premature stop, invented facts, leaks, restarts, false-completion
    acceptance, persona adherence, cost per turn. Exit 2 on unusable input, or when the user fails on every probe
    (e.g. its model cannot be reached).
    """
    from simulator.analysis.user_check import check_user
    from simulator.types.spec import RunSpec
    from simulator.world.domain import DomainError

    check_outputs([("--out", out)], persona_files(personas))
    loaded: list[Any] = []
    if personas is not None:
        try:
            loaded = load_persona_option(personas)
        except ValueError as e:
            raise fail(str(e)) from e
    model = {k: v for k, v in (("api_base", api_base), ("temperature", temperature)) if v is not None}
    try:
        spec = RunSpec.model_validate({"domain": domain, "user": {"name": user, **model}, "seed": seed})
        card = check_user(spec, personas=loaded, task_id=task)
    except (DomainError, ValueError) as e:
        raise fail(str(e)) from e
    if card.unusable is not None:
        raise fail(f"--user {user}: the user failed on every probe, it cannot be checked: {card.unusable}")
    table = Table(title=f"tausim user check: {user} on {domain} (facts of task {card.task_id})")
    for col in ("probe", "verdict", "expected of a faithful user", "problems"):
        table.add_column(col, overflow="fold")
    for p in card.probes:
        # problems quote what the user said: data, shown as plain text with control characters escaped
        table.add_row(Text(clean_text(p.name)), Text("pass", style="green") if p.passed else
                      Text("FAIL", style="bold red"), Text(p.expect), Text(clean_text("; ".join(p.problems) or "-")))
    console.print(table)
    r = card.rates
    console.print(
        f"rates: premature stop {_rate(r['premature_stop'])}, invented facts {_rate(r['invented_facts'])}, "
        f"leaks {_rate(r['leaks'])}, restarts {_rate(r['restarts'])}, false-completion acceptance "
        f"{_rate(r['false_completion_acceptance'])}, persona adherence {_rate(r['persona_adherence'])}, cost per "
        f"turn {_rate(r['cost_per_turn'], money=True)}", highlight=False, markup=False)
    for rate, values in card.named.items():
        console.print(f"  {rate}: {clean_text(', '.join(values[:10]))}", highlight=False, markup=False)
    if out is not None:
        write_output(out, json.dumps(card.as_dict(), indent=1, default=str) + "\n")
        err.print(f"wrote {out}", highlight=False)
    if not card.passed:
        failed = [p.name for p in card.probes if not p.passed]
        console.print(f"[bold red]user check: FAIL[/] ({len(failed)} of {len(card.probes)} probes: "
                      f"{', '.join(failed)})", highlight=False)
        raise typer.Exit(1)
    console.print(f"[green]user check: pass[/] ({len(card.probes)} probes)", highlight=False)
