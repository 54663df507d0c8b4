"""Re-grading recorded trials from their trajectories, without calling any model.

After a fix to a task (its gold actions, required outputs or process rules) or to a grader, every recorded
trial is graded again: its final state is rebuilt by replaying its successful tool calls on a fresh copy of
the template (:func:`simulator.world.replay.replay_trajectory`), each task is prepared again as it is now (as a run
prepares it, :func:`simulator.execution.prepare.prepare_task`: gold replayed once, rules and the run's budget merged
once),
and :func:`simulator.grading.grade_trial` runs again.

The trials come from a results-store run (:func:`regrade_run`, which updates the stored grades), from a run
document (``tausim run --out``; :func:`regrade_document`, which returns the regraded document), or from a peer's
results imported with :mod:`simulator.interop.peer_results`. Trials that carry a peer's reward
(``trajectory.agent_metadata["peer_reward"]``) are compared with it: the report counts agreement and lists every
disagreement with its state differences.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simulator.errors import RunDocumentError
from simulator.execution.build import build_runner
from simulator.execution.prepare import prepare_task
from simulator.execution.runner import failure_signature
from simulator.grading import check_assertions, check_env_assertions, grade_trial
from simulator.grading.safety import record_owners
from simulator.stats.estimators import reliability
from simulator.stats.summaries import cell_id
from simulator.stats.user_review import review_summary
from simulator.storage.store import ResultsStore, data_hash, tasks_hash
from simulator.types.prepared import GoldReplay, PreparedTask
from simulator.types.results import PEER_REWARD, TrialResult
from simulator.types.spec import ComponentSpec, RunSpec
from simulator.types.state import StateDelta
from simulator.types.tasks import Budget, Task
from simulator.users.review import review_user
from simulator.world.database import TemplateDatabase, diff_against
from simulator.world.domain import Domain, DomainError, get_domain
from simulator.world.dual import env_caller, has_user_side
from simulator.world.events import read_events
from simulator.world.replay import GoldToolBug, diverging_calls, initial_database, prepare_trial, replay_trajectory
from simulator.world.tools import ToolContext

__all__ = ["PeerDisagreement", "RegradeReport", "regrade_document", "regrade_run", "regrade_trial", "regrade_trials"]


def regrade_trial(
    domain: Domain, template: TemplateDatabase, task: Task, result: TrialResult,
    goal: StateDelta | bytes | None = None,
    budget: Budget | None = None, prepared: PreparedTask | None = None,
) -> tuple[TrialResult, list[str]]:
    """Grade a recorded trial again from its trajectory, without calling any model.

    The trial's final state is rebuilt by replaying its successful tool calls on a fresh copy of the template
    (with the task's fixture applied first), its events and assertions are evaluated again,
    the goal state is recomputed from ``task`` (which may have been fixed since), and :func:`grade_trial` runs
    again.

    Args:
        domain: the trial's domain.
        template: the template database the trial ran on.
        task: the task, as it is now.
        result: the recorded trial.
        goal: the task's goal state if already computed (see :func:`simulator.world.replay.goal_database`).
        budget: the run's budget for the task (its ``--budgets`` entry), if any.
        prepared: the task prepared as for a run (:func:`simulator.execution.prepare.prepare_task` with the run's
        budget):
            its goal state and merged rules are used (``goal`` and ``budget`` are then not read); it must be of
            ``task``. None: prepared here.

    The judge component recorded for the trial is kept (no model is called) when the task's assertions are
    unchanged; otherwise it becomes ``not_graded``.

    Returns:
        ``(new result, diverged)``: the trial with its new grade and ``passed`` (trajectory untouched), and
        the tool names of the replayed calls whose observation differs in meaning from the recorded one
        (:func:`simulator.world.replay.same_observation`: an error where a success was recorded or the reverse, or
        another JSON value). A trial that never ran its conversation (its goal state could not be computed then)
        is returned unchanged.
    """
    if result.grade is None and (result.error or "").startswith("goal replay failed"):
        return result, []
    toolbox = domain.toolbox_for(template.options)
    if prepared is None:
        gold = GoldReplay(task.id, tuple(task.gold_actions), (), goal) if goal is not None else None
        prepared = prepare_task(domain, template, task, budget=budget, toolbox=toolbox, gold=gold)
    elif not (prepared.task is task or prepared.task == task):
        raise ValueError(f"regrade_trial: prepared task {prepared.task.id!r} is not task {task.id!r} as given")
    try:
        goal_state = prepared.gold.goal_state()
    except GoldToolBug as e:
        return result.model_copy(update={"passed": False, "grade": None,
                                         "error": f"goal replay failed: {e}"}), []
    traj = result.trajectory
    spec = domain.state_spec()
    initial = prepared.gold.initial
    if initial is None and task.assertions:  # a goal state given without its initial state
        initial = initial_database(domain, template, task)
    with template.trial() as db:
        prepare_trial(domain, db, task)
        outcomes = replay_trajectory(toolbox, db, traj, user_toolbox=domain.user_toolbox(),
                                     sync=domain.sync if has_user_side(domain) else None)
        diff = diff_against(db.raw, goal_state, spec)
        checks = check_assertions(task.assertions, db.raw, initial, read_events(db.raw), traj, spec,
                                  env=env_caller(domain, ToolContext(db.session, db.options)))
        env = check_env_assertions(domain, db, task.env_assertions) if task.env_assertions else None
        owners = record_owners(domain, traj, db)
    diverged = [c.name for c in diverging_calls(traj, outcomes)]
    grade = grade_trial(task, traj, diff, toolbox, prepared=prepared,
                        recorded_judge=result.grade.judge if result.grade is not None else None, assertions=checks,
                        owners=owners, env_assertions=env,
                        communicate=str(template.options.get("communicate", "tausim")))
    regraded = result.model_copy(update={"passed": grade.passed, "grade": grade})
    kinds = {name: ("ending" if spec.ends_conversation else spec.kind) for name, spec in toolbox.specs.items()}
    regraded.signature = failure_signature(task, regraded, kinds)
    return regraded, diverged


@dataclass
class PeerDisagreement:
    """An imported trial whose tausim verdict differs from the peer's reward.

    Attributes:
        task_id: the trial's cell (task, or ``task@persona``).
        trial: the trial index.
        peer_reward: the reward the peer gave.
        passed: tausim's verdict.
        failure: tausim's failure summary (``state``, ``outputs``, ...; None when it passed).
        differences: the state differences (``{"table", "key", "field", "expected", "actual"}``, then added and
            removed rows as ``{"table", "key", "added" | "removed": row}``).
    """

    task_id: str
    trial: int
    peer_reward: float
    passed: bool
    failure: str | None
    differences: list[dict[str, Any]]


@dataclass
class RegradeReport:
    """What a regrade changed.

    Attributes:
        run_id: the run (the file name for a run document).
        old_metrics: pass^k, pass@k and success rate before.
        new_metrics: the same after.
        regraded: trials graded again.
        changed: ``(task id, trial, passed before, passed after)`` of every trial whose outcome flipped.
        diverged: ``(task id, trial, calls)``: trials whose replayed tool calls saw another observation than
            recorded, compared by meaning (:func:`simulator.world.replay.same_observation`); the tools changed since the
            run, or behave unlike the peer's; its state may not be the one the agent saw.
        diverged_by_tool: the number of diverging calls per tool name.
        peer_compared: imported trials (with a peer reward) graded again.
        peer_agreed: of those, the ones where tausim's verdict equals the peer's (reward 1 = pass).
        disagreements: the others, with their state differences.
        user_review: the user-simulator review's flags over the regraded trials (:mod:`simulator.users.review`):
            trials per flag; imported peer conversations had real (often LLM) simulated users.
        simulator_caused: ``(task id, trial, causes)`` of trials whose outcome the simulated user caused (it
            stopped before a pending write, invented a fact the agent acted on, leaked the answer).
        review: the review over the plan (:func:`simulator.stats.user_review.review_summary`): failures per cause,
            failures with a simulator weakness only, pass^k as measured and with simulator-caused trials set apart.
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
    diverged_by_tool: dict[str, int] = field(default_factory=dict)
    peer_compared: int = 0
    peer_agreed: int = 0
    disagreements: list[PeerDisagreement] = field(default_factory=list)
    user_review: dict[str, int] = field(default_factory=dict)
    simulator_caused: list[tuple[str, int, list[str]]] = field(default_factory=list)
    review: dict[str, Any] = field(default_factory=dict)
    skipped: list[tuple[str, int, str]] = field(default_factory=list)
    tasks_hash_before: str | None = None
    tasks_hash_after: str | None = None


def _state_differences(trial: TrialResult) -> list[dict[str, Any]]:
    if trial.grade is None:
        return []
    state = trial.grade.state
    added = [{"table": r.get("table"), "key": r.get("key"), "added": r.get("row")} for r in state.added]
    removed = [{"table": r.get("table"), "key": r.get("key"), "removed": r.get("row")} for r in state.removed]
    return [dict(d) for d in state.differences] + added + removed


def regrade_trials(config: RunSpec, task_ids: Sequence[str], trials: Sequence[TrialResult], *,
                   run_id: str, recorded_data_dir: str | None = None, recorded_data_hash: str | None = None,
                   tasks: str | None = None, data: Path | None = None, old_metrics: Mapping[str, float] | None = None,
                   tasks_hash_before: str | None = None) -> tuple[RegradeReport, list[TrialResult]]:
    """Grade recorded trials again; nothing is written.

    Args:
        config: the run's spec (domain, data set, options, tasks, budgets).
        task_ids: the run's planned task ids.
        trials: the recorded trials.
        run_id: the run's id or name (for the report).
        recorded_data_dir: the data directory the run recorded (used when ``data`` is None and the run named one).
        recorded_data_hash: the data set's recorded content hash; when given, the data used must still match it.
        tasks: task file or split to grade against; default the run's own task source (as it is now).
        data: the data directory; default the run's own.
        old_metrics: the metrics before (for the report).
        tasks_hash_before: the recorded task-set hash.

    Returns:
        ``(report, trials)``: the :class:`RegradeReport` (``new_metrics`` left empty: the caller computes them
        over its plan) and every trial, regraded or as it was, in the given order.

    Raises:
        simulator.world.domain.DomainError: unknown domain or split, unreadable data.
        simulator.types.tasks.TaskFileError: malformed task file.
        ValueError: the data set changed since the run (its trials cannot be replayed faithfully).
    """
    dom = get_domain(config.domain)
    folder = data if data is not None else (Path(recorded_data_dir) if config.data_dir and recorded_data_dir
                                             else (Path(config.data_dir) if config.data_dir else None))
    used = folder if folder is not None else dom.default_data_dir()
    if not used.exists():
        raise DomainError(f"--data {used}: not a directory or data file (the run's data set must still exist to "
                          "regrade it)")
    if recorded_data_hash is not None and data_hash(used) != recorded_data_hash:
        raise ValueError(f"data set {used} changed since run {run_id!r} was recorded (content hash differs); "
                         f"give the original data with --data")
    # the run as recorded, on the data and task set given now; no model is called, so no agent, user or judge
    runner = build_runner(config.model_copy(update={
        "data_dir": str(folder) if folder is not None else None,
        "tasks": tasks if tasks is not None else config.tasks, "split": config.split if tasks is None else None,
        "task_ids": None, "tags": None, "exclude_tags": None,
        "agent": ComponentSpec(name="null"), "user": ComponentSpec(name="scripted"), "judge": None,
        "personas": None, "persona_defs": None, "cache": None, "rpm": None, "log_file": None}))
    dom = runner.domain
    template = runner.template
    by_id = {t.id: t for t in runner.tasks}
    planned = [by_id[t] for t in task_ids if t in by_id]
    report = RegradeReport(run_id=run_id, old_metrics=dict(old_metrics or {}), new_metrics={},
                           tasks_hash_before=tasks_hash_before)
    prepared: dict[str, PreparedTask] = {}
    toolbox = dom.toolbox()
    by_tool: Counter[str] = Counter()
    flags: Counter[str] = Counter()
    out: list[TrialResult] = []
    for t in trials:
        cell = cell_id(t.task_id, t.persona)
        task = by_id.get(t.task_id)
        if task is None:
            report.skipped.append((cell, t.trial, "task not in the task set"))
            out.append(t)
            continue
        if task.id not in prepared:
            prepared[task.id] = prepare_task(dom, template, task, budget=(config.budgets or {}).get(task.id),
                                             toolbox=toolbox)
        new, diverged = regrade_trial(dom, template, task, t, prepared=prepared[task.id])
        if new is t:
            out.append(new)
            report.skipped.append((cell, t.trial, "never ran: its goal state could not be computed"))
            continue
        review = review_user(task, new.trajectory, passed=new.passed,
                             goal_reached=new.grade.state.passed if new.grade is not None else None,
                             derived=prepared[task.id].scenario)
        new = new.model_copy(update={"trajectory": new.trajectory.model_copy(update={
            "user_metadata": {**new.trajectory.user_metadata, "review": review.as_dict()}})})
        out.append(new)
        flags.update(review.flags)
        if review.simulator_caused:
            report.simulator_caused.append((cell, t.trial, list(review.causes)))
        report.regraded += 1
        if diverged:
            report.diverged.append((cell, t.trial, len(diverged)))
            by_tool.update(diverged)
        if new.passed != t.passed:
            report.changed.append((cell, t.trial, t.passed, new.passed))
        peer = t.trajectory.agent_metadata.get(PEER_REWARD)
        if isinstance(peer, int | float) and not isinstance(peer, bool):
            report.peer_compared += 1
            if (peer >= 1 - 1e-6) == new.passed:
                report.peer_agreed += 1
            else:
                report.disagreements.append(PeerDisagreement(
                    cell, t.trial, float(peer), new.passed, new.grade.failure if new.grade else new.error,
                    _state_differences(new)))
    report.user_review = dict(flags.most_common())
    report.diverged_by_tool = dict(sorted(by_tool.items(), key=lambda kv: (-kv[1], kv[0])))
    report.tasks_hash_after = tasks_hash(planned) if len(planned) == len(task_ids) else tasks_hash_before
    return report, out


def _review(records: Sequence[Mapping[str, Any]], task_ids: Sequence[str], config: RunSpec) -> dict[str, Any]:
    """The user review over the plan (task cells with personas)."""
    personas = list(config.personas or [])
    cells = [cell_id(t, p) for t in task_ids for p in personas] if personas else list(task_ids)
    return review_summary(records, cells, config.trials)


def _history(report: RegradeReport, tasks: str | None, config: RunSpec) -> dict[str, Any]:
    return {"at": datetime.now(UTC).isoformat(), "tasks": tasks if tasks is not None else config.tasks,
            "tasks_hash_before": report.tasks_hash_before, "tasks_hash_after": report.tasks_hash_after,
            "regraded": report.regraded, "changed": len(report.changed)}


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
        simulator.storage.store.StoreError: no such run.
        simulator.world.domain.DomainError: unknown domain or split, unreadable data.
        simulator.types.tasks.TaskFileError: malformed task file.
        ValueError: the data set changed since the run (its trials cannot be replayed faithfully).
    """
    info = store.require_run(run_id)
    before = store.load_run_result(run_id)
    report, regraded = regrade_trials(
        info.config, info.task_ids, before.trials, run_id=run_id, recorded_data_dir=info.data_dir,
        recorded_data_hash=info.data_hash, tasks=tasks, data=data, old_metrics=before.metrics,
        tasks_hash_before=info.tasks_hash)
    for old, new in zip(before.trials, regraded, strict=True):
        if new is not old and (new.passed != old.passed or new.grade != old.grade or new.error != old.error):
            store.update_grade(run_id, new)
    history = list(info.extra.get("regrades", []))
    history.append(_history(report, tasks, info.config))
    store.update_run(run_id, tasks_hash=report.tasks_hash_after, extra={"regrades": history})
    after = store.load_run_result(run_id)
    report.new_metrics = after.metrics
    report.review = _review([t.model_dump(mode="json") for t in after.trials], info.task_ids, info.config)
    return report


def regrade_document(doc: Mapping[str, Any], *, name: str = "run document", tasks: str | None = None,
                     data: Path | None = None) -> tuple[RegradeReport, dict[str, Any]]:
    """Grade every trial of a run document (``tausim run --out``) again, without a store.

    Args:
        doc: the decoded run document (``{"format": "tausim.run", "config", "trials", ...}``).
        name: the document's name (its file), for the report and error messages.
        tasks: task file or split to grade against; default the run's own task source (as it is now).
        data: the data directory; default the run's own. When the document records a ``data_hash``, the data
            must still hash to it.

    Returns:
        ``(report, new document)``: the document with its trials regraded, its ``metrics`` recomputed over its
        plan (missing trials count as failed) and the regrade appended to ``regrades``.

    Raises:
        RunDocumentError: the configuration or a trial does not fit tausim's records.
        simulator.world.domain.DomainError: unknown domain or split, unreadable data.
        simulator.types.tasks.TaskFileError: malformed task file.
        ValueError: the data set changed since the run.
    """
    try:
        config = RunSpec.model_validate(doc.get("config") or {})
        trials = [TrialResult.model_validate(t) for t in doc.get("trials") or []]
    except ValidationError as e:
        raise RunDocumentError(f"{name}: not a tausim run document: {e.errors()[0]['loc']}: "
                               f"{e.errors()[0]['msg']}") from None
    task_ids = (doc.get("planned_task_ids") or doc.get("task_ids") or config.task_ids
                or list(dict.fromkeys(t.task_id for t in trials)))
    report, regraded = regrade_trials(
        config, task_ids, trials, run_id=str(doc.get("run_id") or name), recorded_data_dir=doc.get("data_dir"),
        recorded_data_hash=doc.get("data_hash"), tasks=tasks, data=data, old_metrics=doc.get("metrics") or {},
        tasks_hash_before=doc.get("tasks_hash"))
    records = [t.model_dump(mode="json") for t in regraded]
    report.new_metrics = reliability(records, task_ids, config.trials, personas=config.personas,
                                     incomplete="count").suite
    report.review = _review(records, task_ids, config)
    new = dict(doc)
    new["trials"] = records
    new["metrics"] = report.new_metrics
    new["tasks_hash"] = report.tasks_hash_after
    new["regrades"] = [*list(doc.get("regrades") or []), _history(report, tasks, config)]
    return report, new
