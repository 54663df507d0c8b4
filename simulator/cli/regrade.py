"""The ``tausim regrade`` command: grade a stored run, a run file or a peer's results again from their trajectories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from simulator.cli._common import (
    check_outputs,
    connect_store,
    console,
    domain_options,
    err,
    fail,
    write_json_atomic,
)
from simulator.errors import PeerResultsError, RunDocumentError
from simulator.execution.regrade import RegradeReport
from simulator.report import user_review_lines
from simulator.storage.store import DEFAULT_STORE_URL, StoreError
from simulator.types.tasks import TaskFileError
from simulator.world.domain import DomainError, get_domain

__all__ = ["print_regrade_report", "regrade_command"]


def _show(value: Any) -> str:
    return json.dumps(value, default=str) if not isinstance(value, str) else repr(value)


def print_regrade_report(report: RegradeReport, title: str) -> None:
    """Print a regrade: pass^k before and after, flipped trials, agreement with a peer, diverging tool calls.

    Args:
        report: the regrade.
        title: the table's title.
    """
    table = Table(title=title)
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
                      highlight=False, markup=False)
    if report.peer_compared:
        share = report.peer_agreed / report.peer_compared
        console.print(f"agreement with the peer's reward: {report.peer_agreed}/{report.peer_compared} "
                      f"({share:.1%})", highlight=False, markup=False)
        for d in report.disagreements:
            verdict = f"{'pass' if d.passed else 'fail'}{f' ({d.failure})' if d.failure else ''}"
            console.print(f"  DISAGREE task {d.task_id} trial {d.trial}: peer reward {d.peer_reward:g}, tausim "
                          f"{verdict}", highlight=False, markup=False)
            for diff in d.differences[:10]:
                cell = diff.get("key")
                shown_key = ", ".join(map(str, cell)) if isinstance(cell, list) else cell
                where = f"{diff.get('table')}[{shown_key}]"
                if "added" in diff:
                    console.print(f"    {where}: row added {_show(diff['added'])}", highlight=False, markup=False)
                elif "removed" in diff:
                    console.print(f"    {where}: row missing {_show(diff['removed'])}", highlight=False, markup=False)
                else:
                    console.print(f"    {where}.{diff.get('field')}: expected {_show(diff.get('expected'))}, "
                                  f"actual {_show(diff.get('actual'))}", highlight=False, markup=False)
    for line in user_review_lines(report.review):
        console.print(line, highlight=False, markup=False)
    if report.diverged:
        by_tool = ", ".join(f"{name} {n}" for name, n in report.diverged_by_tool.items())
        err.print(f"[yellow]warning:[/] {len(report.diverged)} trials replayed differently than recorded (an error "
                  f"where a success was recorded, the reverse, or another JSON result); diverging calls by tool: "
                  f"{escape(by_tool)}; e.g. {escape(str(report.diverged[0][0]))} trial {report.diverged[0][1]}",
                  highlight=False)
    for task_id, trial, why in report.skipped[:10]:
        err.print(f"[yellow]skipped:[/] {escape(f'{task_id} trial {trial}: {why}')}", highlight=False)


def regrade_command(
    run: Annotated[str, typer.Argument(help="A run id in --store, or a run file (`tausim run --out`), or a peer's "
                                            "results file with --format.")],
    store: Annotated[str, typer.Option(help="Results store URL (when RUN is a run id).")] = DEFAULT_STORE_URL,
    tasks: Annotated[str | None, typer.Option(help="Task file or split (default: the run's own, as now).")] = None,
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the run's own).")] = None,
    format: Annotated[str | None, typer.Option(
        "--format", help="RUN is a peer's results file: tau-bench or tau2 (graded in memory, nothing stored).")
    ] = None,
    domain: Annotated[str | None, typer.Option(help="With --format: the domain the conversations ran in.")] = None,
    out: Annotated[Path | None, typer.Option(help="With a file: write the regraded run document here.")] = None,
) -> None:
    """Grade a run again from its trajectories (after a task or grader fix); no model is called.

    Each trial's final state is rebuilt by replaying its successful tool calls on a fresh database, the goal
    is recomputed from the task file, and the grades are updated (in the store; for a file, in --out). Prints
    pass^k before and after, and for imported peer results the agreement with the peer's reward, with every
    disagreement's state differences.
    """
    from simulator.execution.regrade import regrade_document, regrade_run

    check_outputs([("--out", out)], [("RUN", run), ("--tasks", tasks)])
    path = Path(run)
    if format is not None or path.is_file():
        try:
            if format is not None:
                doc = _peer_document(path, format, domain, data, tasks)
            else:
                from simulator.report import load_run_document

                doc = load_run_document(path)
            report, new = regrade_document(doc, name=str(path), tasks=tasks, data=data)
        except (RunDocumentError, PeerResultsError, DomainError, TaskFileError, ValueError) as e:
            raise fail(str(e)) from e
        print_regrade_report(report, f"regrade of {path}: {report.regraded} trials graded again")
        if out is not None:
            write_json_atomic(out, new)
            err.print(f"wrote {out}", highlight=False)
        return
    if path.suffix in (".json", ".jsonl"):  # a run file, not a run id: say so rather than look for it in a store
        raise fail(f"{run}: no such file (RUN is a run file, or a run id in --store)")
    results_store = connect_store(store, must_exist=True)
    try:
        report = regrade_run(results_store, run, tasks=tasks, data=data)
    except (StoreError, DomainError, TaskFileError, ValueError) as e:
        raise fail(str(e)) from e
    finally:
        results_store.close()
    print_regrade_report(report, f"regrade of run {run}: {report.regraded} trials graded again")


def _peer_document(path: Path, fmt: str, domain: str | None, data: Path | None, tasks: str | None) -> dict[str, Any]:
    """A peer's results file as a run document (not stored)."""
    from simulator.interop.peer_results import default_peer_tasks, read_peer_results

    if domain is None:
        raise PeerResultsError("--format needs --domain (the domain the conversations ran in)")
    dom = get_domain(domain)
    imported = read_peer_results(path, fmt, dom, data_dir=data,
                                 tasks=tasks if tasks is not None else default_peer_tasks(fmt, data),
                                 options=domain_options(dom, data, None))
    trials = [t.model_dump(mode="json") for t in imported.trials]
    from simulator.stats.estimators import reliability

    metrics = reliability(trials, imported.task_ids, imported.config.trials, personas=imported.config.personas,
                          incomplete="count").suite
    return {"format": "tausim.run", "version": 1, "config": imported.config.model_dump(mode="json"),
            "task_ids": imported.task_ids, "trials": trials, "metrics": metrics, "imported": imported.source}
