"""Plans and executes trials: seeds, per-trial databases, concurrency, grading.

Trials are submitted to any :class:`concurrent.futures.Executor` (a thread pool by default), so the same run
can be spread over machines by an executor such as Dask's. Each trial derives its seed from
``sha256(run seed, task id, trial index)`` and owns a ``numpy.random.Generator(PCG64(seed))``.
"""

from __future__ import annotations

import hashlib
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, as_completed
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from simulator._protocols import AgentFactory, TrialContext, UserFactory
from simulator.database import TemplateDatabase, diff_against
from simulator.domain import Domain
from simulator.grading import Grade, Judge, check_assertions, check_env_assertions, grade_trial
from simulator.metrics import reliability, run_metrics
from simulator.orchestrator import Limits, TerminationReason, Trajectory, run_conversation
from simulator.outcomes import history_messages
from simulator.persona import Persona
from simulator.replay import GoldToolBug, goal_database, initial_database, prepare_trial, replay_trajectory
from simulator.sinks import read_events
from simulator.tasks import Budget, Task
from simulator.tools import ToolContext

__all__ = ["RunConfig", "RunResult", "Runner", "TrialKey", "TrialResult", "derive_seed", "regrade_trial",
           "run_summary_json", "trial_key"]


def derive_seed(run_seed: int, task_id: str, trial_index: int) -> int:
    """Derive a trial's seed: the first 8 bytes of ``sha256("run_seed/task_id/trial_index")`` as an int.

    Args:
        run_seed: the run's seed.
        task_id: the task id.
        trial_index: 0-based trial index.

    Returns:
        A non-negative int below 2**64; independent of process, platform and Python's hash salt.
    """
    digest = hashlib.sha256(f"{run_seed}/{task_id}/{trial_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class RunConfig(BaseModel):
    """What a run is: recorded with its results so the run can be rebuilt."""

    domain: str
    data_dir: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    """Domain options the tools ran with (e.g. ``{"mode": "tau-bench"}``)."""
    tasks: str | None = None
    """Task file or split name (None: the domain's built-in tasks)."""
    split: str | None = None
    """Split of a tau2-bench task file (``tausim run --split``; None: tau2's default, ``base``)."""
    task_ids: list[str] | None = None
    agent: str = "oracle"
    user: str = "scripted"
    personas: list[str] | None = None
    """Persona names the simulated user plays (``tausim run --personas``): the run is the product task x persona
    x trial, and pass^k is computed per task cell (task, persona) and per persona; None: no persona dimension."""
    persona_defs: dict[str, dict[str, Any]] | None = None
    """The personas' definitions (their JSON, by name) as they were when the run started: a run records how its
    users behaved, and a resumed run must use the same (a persona file may be edited in between)."""
    trials: int = 1
    concurrency: int = 1
    seed: int = 0
    max_turns: int = 30
    max_steps: int = 60
    budgets: dict[str, Budget] | None = None
    """Per-task trajectory budgets (``tausim run --budgets``), applied with each task's own budget (the
    tighter ceiling wins); None: only the tasks' own."""
    judge: str | None = None
    """The LLM judge's model (``tausim run --judge``) for tasks with judge assertions; None: no judge."""
    judge_gating: bool = False
    """Whether the judge's verdicts count in ``passed`` (a calibrated judge, see :mod:`simulator.grading.judge`)."""
    judge_note: str | None = None
    """Why the judge gates or not (calibration model, kappa)."""
    policy_sha256: str | None = None
    """sha256 of the policy text the agent got (an imported suite's own policy, e.g. tau2's ``policy.md``, or
    the domain's); set by the :class:`Runner`."""


class TrialResult(BaseModel):
    """One finished trial."""

    task_id: str
    trial: int
    seed: int
    persona: str | None = None
    """The persona the simulated user played (None: a run without personas)."""
    passed: bool
    termination_reason: str
    grade: Grade | None
    """None when the trial could not be graded (its goal state could not be computed)."""
    trajectory: Trajectory
    duration_s: float
    """Wall time of the whole trial in seconds (database copy, conversation, grading)."""
    error: str | None = None


class RunResult(BaseModel):
    """A run's configuration, trials (in task, trial order) and metrics."""

    config: RunConfig
    trials: list[TrialResult]
    metrics: dict[str, float] = Field(default_factory=dict)
    """pass^k, pass@k and success rate; empty when the trials do not cover every planned (task, trial)."""
    termination_reasons: dict[str, int] = Field(default_factory=dict)
    wall_seconds: float = 0.0
    planned: int | None = None
    """Planned trials of the run (tasks x personas x trials); None when unknown."""


TrialKey = tuple[str, str | None, int]
"""A planned trial: (task id, persona name or None, trial index)."""


def trial_key(result: TrialResult) -> TrialKey:
    """Return the (task id, persona, trial index) key of a trial."""
    return (result.task_id, result.persona, result.trial)


class Runner:
    """Runs ``config.trials`` trials of every task.

    Args:
        domain: the domain.
        template: the template database of the data set.
        tasks: the tasks to run (ids unique).
        agent_factory: builds the agent of each trial.
        user_factory: builds the simulated user of each trial.
        config: the run configuration (trials, seed, caps, concurrency, persona names).
        log: the run's structlog logger (see :mod:`simulator.runlog`), or None for no log. Each trial binds
            ``task_id`` and ``trial`` to it and emits ``trial_start``, ``tool_call``, ``model_call`` (from LLM
            agents and users) and ``trial_end``.
        judge: the LLM judge for tasks with ``judge`` assertions (None: recorded as ``not_graded``).
        personas: the personas named by ``config.personas``, in that order (each trial's user gets one in
            ``TrialContext.persona``). Trials of the same (task, trial index) share their seed across personas
            (common random numbers: persona effects are compared on the same draws).

    Raises:
        ValueError: ``config.trials`` < 1, duplicate task ids, or ``personas`` not matching ``config.personas``.
    """

    def __init__(
        self,
        domain: Domain,
        template: TemplateDatabase,
        tasks: Sequence[Task],
        agent_factory: AgentFactory,
        user_factory: UserFactory,
        config: RunConfig,
        log: Any = None,
        judge: Judge | None = None,
        personas: Sequence[Persona] | None = None,
    ):
        names = [p.name for p in personas or []]
        if names != list(config.personas or []):
            raise ValueError(f"personas {names} do not match the run configuration's {config.personas}")
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate persona in {names}")
        if config.trials < 1:
            raise ValueError(f"--trials must be >= 1, got {config.trials}")
        ids = [t.id for t in tasks]
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate task ids in the task set")
        self.domain = domain
        self.template = template
        self.tasks = list(tasks)
        self.agent_factory = agent_factory
        self.user_factory = user_factory
        self.config = config
        self.log = log
        self.judge = judge
        self.personas: dict[str, Persona] = {p.name: p for p in personas or []}
        self._spec = domain.state_spec()
        self._toolbox = domain.toolbox_for(template.options)  # a tool mode may add or hide tools (tau2)
        self._tools = self._toolbox.schemas()
        self._kinds = {name: ("ending" if spec.ends_conversation else spec.kind)
                       for name, spec in self._toolbox.specs.items()}
        self._policy = domain.policy_for(template.data_dir, template.options)
        config.policy_sha256 = hashlib.sha256(self._policy.encode()).hexdigest()
        self._goals: dict[str, bytes | GoldToolBug] = {}
        self._initials: dict[str, bytes] = {}
        self._goal_locks: dict[str, threading.Lock] = {t.id: threading.Lock() for t in self.tasks}

    def goal(self, task: Task) -> bytes:
        """Return the task's goal database (serialized), computed once per runner and shared by its trials.

        Raises:
            GoldToolBug: a gold action hit a bug in a tool.
        """
        with self._goal_locks[task.id]:
            if task.id not in self._goals:
                try:
                    self._goals[task.id] = goal_database(self.domain, self.template, task)
                except GoldToolBug as e:
                    self._goals[task.id] = e
            goal = self._goals[task.id]
        if isinstance(goal, GoldToolBug):
            raise goal
        return goal

    def initial(self, task: Task) -> bytes | None:
        """Return the task's initial database (template plus fixture, serialized) when it has assertions.

        Computed once per runner, after :meth:`goal` succeeded (the same fixture).

        Returns:
            The serialized database, or None for a task without assertions.
        """
        if not task.assertions:
            return None
        with self._goal_locks[task.id]:
            if task.id not in self._initials:
                self._initials[task.id] = initial_database(self.domain, self.template, task)
            return self._initials[task.id]

    def run_trial(self, task: Task, trial_index: int, persona: str | None = None) -> TrialResult:
        """Run and grade one trial on a fresh copy of the template.

        Args:
            task: the task.
            trial_index: 0-based index of the trial.
            persona: the persona the user plays (one of the runner's), or None.

        Returns:
            The :class:`TrialResult`; a goal state that cannot be computed is recorded as ``tool_bug``.
        """
        if persona is not None and persona not in self.personas:
            raise ValueError(f"persona {persona!r} is not one of this run's {list(self.personas)}")
        if self.log is None:
            return self._run_trial(task, trial_index, None, persona)
        log = self.log.bind(task_id=task.id, trial=trial_index, **({"persona": persona} if persona else {}))
        log.info("trial_start", seed=derive_seed(self.config.seed, task.id, trial_index))
        try:
            res = self._run_trial(task, trial_index, log, persona)
        except Exception as e:
            log.exception("trial_crash", error=f"{type(e).__name__}: {e}")
            raise
        traj = res.trajectory
        cost = None if traj.agent_usage.cost_usd is None or traj.user_usage.cost_usd is None else (
            traj.agent_usage.cost_usd + traj.user_usage.cost_usd)
        log.info("trial_end", termination=res.termination_reason, passed=res.passed,
                 duration_s=round(res.duration_s, 6), turns=traj.turns, steps=traj.steps,
                 tool_calls=len(traj.tool_calls), model_calls=traj.agent_usage.calls + traj.user_usage.calls,
                 cost_usd=cost, error=res.error)
        return res

    def _run_trial(self, task: Task, trial_index: int, log: Any, persona: str | None) -> TrialResult:
        t0 = time.perf_counter()
        seed = derive_seed(self.config.seed, task.id, trial_index)

        def not_run(reason: TerminationReason, error: str) -> TrialResult:
            traj = Trajectory(termination_reason=reason, error=error)
            return TrialResult(task_id=task.id, trial=trial_index, seed=seed, persona=persona, passed=False,
                               termination_reason=str(reason), grade=None, trajectory=traj,
                               duration_s=time.perf_counter() - t0, error=error)

        try:
            goal = self.goal(task)
            initial = self.initial(task)
        except GoldToolBug as e:
            return not_run(TerminationReason.TOOL_BUG, f"goal replay failed: {e}")
        ctx = TrialContext(
            task=task, tools=self._tools, policy=self._policy, seed=seed,
            rng=np.random.Generator(np.random.PCG64(seed)), domain=self.domain.name, trial_index=trial_index,
            log=log, extra={"tool_kinds": dict(self._kinds)},
            persona=self.personas[persona] if persona is not None else None,
        )
        try:
            agent = self.agent_factory(ctx)
        except Exception:  # noqa: BLE001 - user-supplied factory: recorded as the trial's agent_error
            return not_run(TerminationReason.AGENT_ERROR, "agent factory failed:\n" + traceback.format_exc())
        try:
            user = self.user_factory(ctx)
        except Exception:  # noqa: BLE001 - user-supplied factory: recorded as the trial's user_error
            return not_run(TerminationReason.USER_ERROR, "user factory failed:\n" + traceback.format_exc())
        conduct = task.conduct
        limits = Limits(max_turns=task.max_turns or self.config.max_turns, max_steps=self.config.max_steps,
                        max_tool_errors=conduct.max_tool_errors if conduct else None,
                        greeting=conduct.greeting if conduct else None)
        history = history_messages(task.initial_state.history) if task.initial_state is not None else None
        with self.template.trial() as db:
            prepare_trial(self.domain, db, task)
            traj = run_conversation(agent, user, self._toolbox, ToolContext(db.session, db.options), limits, log=log,
                                    history=history)
            diff = diff_against(db.raw, goal, self._spec)
            checks = check_assertions(task.assertions, db.raw, initial, read_events(db.raw), traj, self._spec)
            env = check_env_assertions(self.domain, db, task.env_assertions) if task.env_assertions else None
        grade = grade_trial(task, traj, diff, self._toolbox, domain=self.domain,
                            budget=(self.config.budgets or {}).get(task.id), judge=self.judge, trial_seed=seed,
                            assertions=checks, env_assertions=env,
                            communicate=str(self.template.options.get("communicate", "tausim")))
        return TrialResult(
            task_id=task.id, trial=trial_index, seed=seed, persona=persona, passed=grade.passed,
            termination_reason=str(traj.termination_reason), grade=grade, trajectory=traj,
            duration_s=time.perf_counter() - t0, error=traj.error,
        )

    def planned(self) -> list[TrialKey]:
        """Return every planned (task id, persona, trial index) key, in task, persona, then trial order."""
        personas: list[str | None] = list(self.personas) or [None]
        return [(t.id, p, i) for t in self.tasks for p in personas for i in range(self.config.trials)]

    def run(
        self,
        executor: Executor | None = None,
        on_trial: Callable[[TrialResult], None] | None = None,
        only: set[TrialKey] | None = None,
    ) -> RunResult:
        """Run the planned (task, persona, trial) keys (or a subset of them) and compute the metrics.

        Args:
            executor: where trials run; default a thread pool of ``config.concurrency`` workers.
            on_trial: called (in the calling thread) with each trial as soon as it finishes, e.g. to
                record it; the order is completion order.
            only: run just these (task id, persona, trial index) keys (e.g. the ones a resumed run has not
                recorded yet); None runs every planned key.

        Returns:
            The :class:`RunResult`, trials sorted by task order then trial index. Its metrics are computed
            when the trials cover every planned pair, and are empty otherwise (a subset cannot give pass^k).

        Raises:
            ValueError: ``only`` names a key that is not planned.
        """
        t0 = time.perf_counter()
        plan = self.planned()
        if only is not None:
            unknown = set(only) - set(plan)
            if unknown:
                raise ValueError(f"not planned in this run: {sorted(unknown, key=str)[:5]}")
            plan = [p for p in plan if p in only]
        by_id = {t.id: t for t in self.tasks}
        own = executor is None
        ex = executor or ThreadPoolExecutor(max_workers=max(1, self.config.concurrency))
        results: list[TrialResult] = []
        interrupted = False
        try:
            futures: list[Future[TrialResult]] = [ex.submit(self.run_trial, by_id[tid], i, p)
                                                  for tid, p, i in plan]
            for fut in as_completed(futures):
                res = fut.result()
                results.append(res)
                if on_trial is not None:
                    on_trial(res)
        except KeyboardInterrupt:
            interrupted = True  # drop queued trials and do not wait for running ones (a stuck agent never ends)
            raise
        finally:
            if own:
                ex.shutdown(wait=not interrupted, cancel_futures=True)
        order = {key: i for i, key in enumerate(self.planned())}
        results.sort(key=lambda r: order[trial_key(r)])
        rel = reliability([r.model_dump(include={"task_id", "persona", "trial", "passed"}) for r in results],
                          [t.id for t in self.tasks], self.config.trials, personas=list(self.personas),
                          incomplete="count") if self.tasks else None
        metrics = rel.suite if rel is not None and rel.complete else {}
        reasons = Counter(r.termination_reason for r in results)
        return RunResult(config=self.config, trials=results, metrics=metrics,
                         termination_reasons=dict(sorted(reasons.items())),
                         wall_seconds=time.perf_counter() - t0, planned=len(self.planned()))


def regrade_trial(
    domain: Domain, template: TemplateDatabase, task: Task, result: TrialResult, goal: bytes | None = None,
    budget: Budget | None = None,
) -> tuple[TrialResult, int]:
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
        goal: the task's goal database if already computed (see :func:`simulator.replay.goal_database`).
        budget: the run's budget for the task (its ``--budgets`` entry), if any.

    The judge component recorded for the trial is kept (no model is called) when the task's assertions are
    unchanged; otherwise it becomes ``not_graded``.

    Returns:
        ``(new result, diverged)``: the trial with its new grade and ``passed`` (trajectory untouched), and
        the number of replayed tool calls whose status or output differs from the recorded one. A trial that
        never ran its conversation (its goal state could not be computed then) is returned unchanged.
    """
    if result.grade is None and (result.error or "").startswith("goal replay failed"):
        return result, 0
    try:
        goal = goal if goal is not None else goal_database(domain, template, task)
    except GoldToolBug as e:
        return result.model_copy(update={"passed": False, "grade": None,
                                         "error": f"goal replay failed: {e}"}), 0
    toolbox = domain.toolbox_for(template.options)
    traj = result.trajectory
    spec = domain.state_spec()
    initial = initial_database(domain, template, task) if task.assertions else None
    with template.trial() as db:
        prepare_trial(domain, db, task)
        outcomes = replay_trajectory(toolbox, db, traj)
        diff = diff_against(db.raw, goal, spec)
        checks = check_assertions(task.assertions, db.raw, initial, read_events(db.raw), traj, spec)
        env = check_env_assertions(domain, db, task.env_assertions) if task.env_assertions else None
    diverged = sum(1 for i, o in outcomes
                   if o.status != traj.tool_calls[i].status or o.content != traj.tool_calls[i].content)
    grade = grade_trial(task, traj, diff, toolbox, domain=domain, budget=budget,
                        recorded_judge=result.grade.judge if result.grade is not None else None, assertions=checks,
                        env_assertions=env, communicate=str(template.options.get("communicate", "tausim")))
    return result.model_copy(update={"passed": grade.passed, "grade": grade}), diverged


def run_summary_json(result: RunResult, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return the ``--out`` JSON document of a run.

    Args:
        result: the finished run.
        extra: extra top-level fields (e.g. git revision, package versions).

    Returns:
        ``{"format": "tausim.run", "version": 1, "config", "metrics", "termination_reasons", "trials",
        "planned", "recorded", "duplicates", ...}``; ``recorded`` counts the trials present and ``duplicates``
        the trials beyond the first of a (task, persona, trial) key; with personas, ``by_persona`` (see
        :func:`simulator.metrics.persona_metrics`) is also copied to the top level. ``metrics`` are those of
        :func:`simulator.metrics.run_metrics` (the same as ``tausim report``'s): a complete run is checked
        strictly (a duplicated trial is refused); a partial one (a results-store run still missing trials) counts
        its missing trials as failed and reports them in ``missing_trials``.
    """
    doc: dict[str, Any] = {"format": "tausim.run", "version": 1}
    doc.update(extra or {})
    doc.update(result.model_dump(mode="json"))
    pairs = Counter(trial_key(t) for t in result.trials)
    doc["recorded"] = len(pairs)
    doc["duplicates"] = sum(n - 1 for n in pairs.values())
    if doc.get("planned") is None:
        doc["planned"] = len(pairs)
    tasks = doc.get("task_ids") or result.config.task_ids or list(dict.fromkeys(t.task_id for t in result.trials))
    if tasks and result.trials:
        complete = doc["recorded"] == doc["planned"] and not doc["duplicates"]
        doc["metrics"] = run_metrics(doc["trials"], [str(t) for t in tasks], result.config.trials,
                                     personas=result.config.personas,
                                     incomplete="refuse" if complete else "count")
        if "by_persona" in doc["metrics"]:
            doc["by_persona"] = doc["metrics"]["by_persona"]
    return doc
