"""Re-grading a stored run from its trajectories, without calling any model.

After a fix to a task (its gold actions, required outputs or process rules) or to a grader, every recorded
trial is graded again: its final state is rebuilt by replaying its successful tool calls on a fresh copy of
the template (:func:`simulator.replay.replay_trajectory`), the goal state is recomputed from the task as it is
now, and :func:`simulator.grading.grade_trial` runs again. The stored grades and outcomes are updated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from simulator.domain import DomainError, get_domain
from simulator.metrics import cell_id
from simulator.replay import GoldToolBug, goal_database
from simulator.runner import regrade_trial
from simulator.store import ResultsStore, data_hash, tasks_hash

__all__ = ["RegradeReport", "regrade_run"]


@dataclass
class RegradeReport:
    """What a regrade changed.

    Attributes:
        run_id: the run.
        old_metrics: pass^k, pass@k and success rate before.
        new_metrics: the same after.
        regraded: trials graded again.
        changed: ``(task id, trial, passed before, passed after)`` of every trial whose outcome flipped.
        diverged: ``(task id, trial, calls)``: trials whose replayed tool calls gave another status or output
            than recorded (the tools changed since the run; its state may not be the one the agent saw).
        skipped: ``(task id, trial, why)``: trials left as they were.
        tasks_hash_before: the run's task-set hash before.
        tasks_hash_after: the task-set hash now recorded.
    """

    run_id: str
    old_metrics: dict[str, float]
    new_metrics: dict[str, float]
    regraded: int = 0
    changed: list[tuple[str, int, bool, bool]] = field(default_factory=list)
    diverged: list[tuple[str, int, int]] = field(default_factory=list)
    skipped: list[tuple[str, int, str]] = field(default_factory=list)
    tasks_hash_before: str | None = None
    tasks_hash_after: str | None = None


def regrade_run(store: ResultsStore, run_id: str, tasks: str | None = None, data: Path | None = None) -> RegradeReport:
    """Grade every recorded trial of a run again and update the store.

    Args:
        store: the results store.
        run_id: the run.
        tasks: task file or split to grade against; default the run's own task source (as it is now).
        data: the data directory; default the run's own. Its contents must still hash to the recorded value.

    Returns:
        The :class:`RegradeReport`.

    Raises:
        simulator.store.StoreError: no such run.
        simulator.domain.DomainError: unknown domain or split, unreadable data.
        simulator.tasks.TaskFileError: malformed task file.
        ValueError: the data set changed since the run (its trials cannot be replayed faithfully).
    """
    info = store.require_run(run_id)
    cfg = info.config
    dom = get_domain(cfg.domain)
    folder = data if data is not None else (Path(info.data_dir) if cfg.data_dir and info.data_dir else None)
    used = folder if folder is not None else dom.default_data_dir()
    if not used.is_dir():
        raise DomainError(f"--data {used}: not a directory (the run's data set must still exist to regrade it)")
    if info.data_hash is not None and data_hash(used) != info.data_hash:
        raise ValueError(f"data set {used} changed since run {run_id!r} was recorded (content hash differs); "
                         f"give the original data with --data")
    template = dom.template(folder, cfg.options)
    by_id = {t.id: t for t in dom.load_tasks(tasks if tasks is not None else cfg.tasks,
                                             split=cfg.split if tasks is None else None)}
    planned = [by_id[t] for t in info.task_ids if t in by_id]
    before = store.load_run_result(run_id)
    report = RegradeReport(run_id=run_id, old_metrics=before.metrics, new_metrics={},
                           tasks_hash_before=info.tasks_hash)
    goals: dict[str, bytes | None] = {}
    for t in before.trials:
        task = by_id.get(t.task_id)
        if task is None:
            report.skipped.append((cell_id(t.task_id, t.persona), t.trial, "task no longer in the task set"))
            continue
        if task.id not in goals:
            try:
                goals[task.id] = goal_database(dom, template, task)
            except GoldToolBug:
                goals[task.id] = None  # regrade_trial recomputes it and records the failure
        new, diverged = regrade_trial(dom, template, task, t, goals[task.id], (cfg.budgets or {}).get(task.id))
        if new is t:
            report.skipped.append((cell_id(t.task_id, t.persona), t.trial,
                                   "never ran: its goal state could not be computed"))
            continue
        report.regraded += 1
        if diverged:
            report.diverged.append((cell_id(t.task_id, t.persona), t.trial, diverged))
        if new.passed != t.passed:
            report.changed.append((cell_id(t.task_id, t.persona), t.trial, t.passed, new.passed))
        if new.passed != t.passed or new.grade != t.grade or new.error != t.error:
            store.update_grade(run_id, new)
    report.tasks_hash_after = tasks_hash(planned) if len(planned) == len(info.task_ids) else info.tasks_hash
    history = list(info.extra.get("regrades", []))
    history.append({"at": datetime.now(UTC).isoformat(), "tasks": tasks if tasks is not None else cfg.tasks,
                    "tasks_hash_before": report.tasks_hash_before, "tasks_hash_after": report.tasks_hash_after,
                    "regraded": report.regraded, "changed": len(report.changed)})
    store.update_run(run_id, tasks_hash=report.tasks_hash_after, extra={"regrades": history})
    report.new_metrics = store.load_run_result(run_id).metrics
    return report
