"""The ``tausim regrade`` command: grade a stored run again from its trajectories."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from simulator.cli._common import (
    connect_store,
    console,
    err,
    fail,
)
from simulator.domain import DomainError
from simulator.store import DEFAULT_STORE_URL, StoreError
from simulator.tasks import TaskFileError


def regrade_command(
    run_id: Annotated[str, typer.Argument(help="The run to grade again.")],
    store: Annotated[str, typer.Option(help="Results store URL.")] = DEFAULT_STORE_URL,
    tasks: Annotated[str | None, typer.Option(help="Task file or split (default: the run's own, as now).")] = None,
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the run's own).")] = None,
) -> None:
    """Grade a stored run again from its trajectories (after a task or grader fix); no model is called.

    Each trial's final state is rebuilt by replaying its successful tool calls on a fresh database, the goal
    is recomputed from the task file, and the stored grades are updated. Prints pass^k before and after.
    """
    from simulator.regrade import regrade_run

    results_store = connect_store(store, must_exist=True)
    try:
        report = regrade_run(results_store, run_id, tasks=tasks, data=data)
    except (StoreError, DomainError, TaskFileError, ValueError) as e:
        raise fail(str(e)) from e
    table = Table(title=f"regrade of run {run_id}: {report.regraded} trials graded again")
    table.add_column("metric")
    table.add_column("before", justify="right")
    table.add_column("after", justify="right")
    for key in sorted(report.new_metrics, key=lambda k: (k[:5], len(k), k)):
        if key.startswith("pass^"):
            table.add_row(key, f"{report.old_metrics.get(key, float('nan')):.4f}", f"{report.new_metrics[key]:.4f}")
    console.print(table)
    gained = sum(1 for c in report.changed if c[3])
    console.print(f"trials changed: {len(report.changed)} ({gained} now pass, {len(report.changed) - gained} "
                  f"now fail)", highlight=False)
    for task_id, trial, was, now in report.changed[:20]:
        console.print(f"  {task_id} trial {trial}: {'pass' if was else 'fail'} -> {'pass' if now else 'fail'}",
                      highlight=False)
    if report.diverged:
        err.print(f"[yellow]warning:[/] {len(report.diverged)} trials replayed differently than recorded (the "
                  f"tools changed since the run), e.g. {report.diverged[0][0]} trial {report.diverged[0][1]}",
                  highlight=False)
    for task_id, trial, why in report.skipped[:10]:
        err.print(f"[yellow]skipped:[/] {task_id} trial {trial}: {why}", highlight=False)

