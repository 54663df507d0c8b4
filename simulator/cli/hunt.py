r"""``tausim hunt``: search for failures by forking trials at decision points, cluster them, export regressions.

Example::

    tausim hunt --domain retail --agent reference:wrong_item=0.05,skip_confirmation=0.05 --user rule \\
        --personas all --budget 1000 --seed 7 --export regressions.json
    tausim run --domain retail --tasks regressions.json --user rule --agent reference:...

See :mod:`simulator.hunt` for the search, the signatures and the regression cases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from personas.loader import PersonaError, load_personas
from simulator.build import build_runner
from simulator.cli._common import console, fail, write_json_atomic
from simulator.errors import TausimError
from simulator.hunt import HuntResult, export_cases, hunt
from simulator.preflight import check_credentials, preflight
from simulator.spec import RunSpec

__all__ = ["hunt_command"]


def _spec(domain: str, tasks: str | None, task_ids: str | None, agent: str, user: str, personas: str | None,
          seed: int, max_turns: int, max_steps: int) -> RunSpec:
    persona_list = None
    if personas is not None:
        try:
            persona_list = load_personas(personas)
        except PersonaError as e:
            raise ValueError(f"--personas {personas}: {e}") from e
    ids = [t.strip() for t in task_ids.split(",") if t.strip()] if task_ids else None
    return RunSpec.model_validate({
        "domain": domain, "tasks": tasks, "task_ids": ids, "agent": {"name": agent}, "user": {"name": user},
        "personas": [p.name for p in persona_list] if persona_list else None,
        "persona_defs": {p.name: p.model_dump(mode="json") for p in persona_list} if persona_list else None,
        "seed": seed, "max_turns": max_turns, "max_steps": max_steps, "preflight": False})


def summary(result: HuntResult) -> dict[str, Any]:
    """Return the JSON summary of a hunt: budget spent, turns saved, clusters (signature, count, share, example).

    Args:
        result: the hunt's result.

    Returns:
        ``{"agent_turns", "saved_turns", "trials", "forks", "signatures", "clusters": [...]}``.
    """
    spent = max(result.agent_turns, 1)
    return {
        "agent_turns": result.agent_turns, "saved_turns": result.saved_turns, "trials": len(result.trials),
        "forks": sum(1 for t in result.trials if t.parent is not None), "signatures": len(result.clusters),
        "clusters": [{
            "id": c.case_id, "signature": list(c.signature), "count": len(c.trials),
            "budget_share": round(sum(t.fresh_agent_turns for t in c.trials) / spent, 4),
            "example": {"task_id": c.shortest.result.task_id, "persona": c.shortest.result.persona,
                        "seed": c.shortest.result.seed, "moves": {str(k): v for k, v in c.shortest.moves.items()},
                        "user_turns": c.script if c.script is not None else c.shortest.user_turns()},
        } for c in result.clusters],
    }


def hunt_command(
    domain: Annotated[str, typer.Option(help="Domain name.")] = "retail",
    tasks: Annotated[str | None, typer.Option(help="Task file or split name (default: built-in tasks).")] = None,
    task_ids: Annotated[str | None, typer.Option(help="Comma-separated task ids to hunt on.")] = None,
    agent: Annotated[str, typer.Option(help="The agent under test (as for tausim run).")] = "reference",
    user: Annotated[str, typer.Option(help="The simulated user (rule, llm:MODEL, py:...).")] = "rule",
    personas: Annotated[str | None, typer.Option(help="Personas of the root trials: all, or comma-separated.")] = None,
    budget: Annotated[int, typer.Option(min=1, help="Agent turns to spend (forks pay only for their suffix).")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the search (and of the trials); same seed, same hunt.")] = 0,
    max_turns: Annotated[int, typer.Option(min=1, help="Most messages of user and agent per trial.")] = 30,
    max_steps: Annotated[int, typer.Option(min=1, help="Most agent actions per trial.")] = 60,
    export: Annotated[Path | None, typer.Option(help="Write the clusters as regression cases (task file v2).")] = None,
    prefix: Annotated[bool, typer.Option(help="With --export: also a trajectory-prefix case per cluster (state "
                                              "before the first error, next turn graded).")] = False,
    clean_agent: Annotated[str | None, typer.Option(
        help="Keep only cases this agent passes (default for reference:KNOBS: the clean reference agent).")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the hunt's summary (JSON).")] = None,
) -> None:
    """Search task x persona x seed x user move for failures; cluster them by signature; export regressions.

    Exit codes: 0 done; 2 bad input or a set-up that cannot work (a missing API key, an unknown model, an
    unreachable server, a factory that raises: checked before the hunt by the run's pre-flight), an output path
    in a missing directory, ``--prefix`` without ``--export``.
    """
    if prefix and export is None:
        raise fail("--prefix: trajectory-prefix cases are written with the regression cases; add --export FILE")
    for flag, path in (("--export", export), ("--out", out)):
        if path is not None and path.is_dir():
            raise fail(f"{flag} {path}: is a directory; give a file name such as {path / 'hunt.json'}")
        if path is not None and not path.parent.is_dir():
            raise fail(f"{flag} {path}: directory {path.parent} does not exist")
    try:
        spec = _spec(domain, tasks, task_ids, agent, user, personas, seed, max_turns, max_steps)
        check_credentials(spec)  # a missing key is reported before the data and tasks are loaded
        runner = build_runner(spec)
        preflight(runner)
        result = hunt(runner, budget, seed=seed)
        notes: list[str] = []
        if export is not None:
            clean = clean_agent or ("reference" if agent.startswith("reference:") else None)
            clean_runner = build_runner(spec.model_copy(update={"agent": spec.agent.model_copy(
                update={"name": clean})})) if clean else None
            doc, notes = export_cases(runner, result, clean=clean_runner, domain=domain, prefix=prefix)
            write_json_atomic(export, doc)
    except (TausimError, ValueError) as e:
        raise fail(str(e)) from e
    table = Table(title=f"Failure clusters ({len(result.clusters)} signatures, {result.agent_turns} agent turns, "
                        f"{result.saved_turns} saved by forking)")
    for col in ("id", "layer", "termination", "first difference", "rule", "diverged after", "user flags", "count"):
        table.add_column(col)
    for c in result.clusters:
        table.add_row(c.case_id, *c.signature, str(len(c.trials)))
    console.print(table)
    for n in notes:
        console.print(f"note: {n}", highlight=False)
    if export is not None:
        console.print(f"wrote {export} ({len(doc['tasks'])} cases)", highlight=False)
    if out is not None:
        write_json_atomic(out, summary(result))
        console.print(f"wrote {out}", highlight=False)
    if out is None and export is None:
        console.print_json(json.dumps({k: v for k, v in summary(result).items() if k != "clusters"}))
