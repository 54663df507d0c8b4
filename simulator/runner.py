"""Plans and executes trials: seeds, per-trial databases, concurrency, grading.

Trials are submitted to any :class:`concurrent.futures.Executor` (a thread pool by default), so the same run
can be spread over machines by an executor such as Dask's. Each trial derives its seed from
``sha256(run seed, task id, trial index)`` and owns a ``numpy.random.Generator(PCG64(seed))``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, as_completed
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from simulator._protocols import AgentFactory, TrialContext, UserFactory
from simulator.database import TemplateDatabase, diff_against
from simulator.domain import Domain
from simulator.grading import Grade, grade_trial
from simulator.metrics import suite_metrics
from simulator.orchestrator import Limits, TerminationReason, Trajectory, run_conversation
from simulator.replay import GoldToolBug, goal_database
from simulator.tasks import Task
from simulator.tools import ToolContext

__all__ = ["RunConfig", "RunResult", "Runner", "TrialResult", "derive_seed", "run_summary_json"]


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
    task_ids: list[str] | None = None
    agent: str = "oracle"
    user: str = "scripted"
    trials: int = 1
    concurrency: int = 1
    seed: int = 0
    max_turns: int = 30
    max_steps: int = 60


class TrialResult(BaseModel):
    """One finished trial."""

    task_id: str
    trial: int
    seed: int
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
    termination_reasons: dict[str, int] = Field(default_factory=dict)
    wall_seconds: float = 0.0


class Runner:
    """Runs ``config.trials`` trials of every task.

    Args:
        domain: the domain.
        template: the template database of the data set.
        tasks: the tasks to run (ids unique).
        agent_factory: builds the agent of each trial.
        user_factory: builds the simulated user of each trial.
        config: the run configuration (trials, seed, caps, concurrency).

    Raises:
        ValueError: ``config.trials`` < 1 or duplicate task ids.
    """

    def __init__(
        self,
        domain: Domain,
        template: TemplateDatabase,
        tasks: Sequence[Task],
        agent_factory: AgentFactory,
        user_factory: UserFactory,
        config: RunConfig,
    ):
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
        self._spec = domain.state_spec()
        self._toolbox = domain.toolbox()
        self._tools = self._toolbox.schemas()
        self._policy = domain.policy()
        self._goals: dict[str, bytes | GoldToolBug] = {}
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

    def run_trial(self, task: Task, trial_index: int) -> TrialResult:
        """Run and grade one trial on a fresh copy of the template.

        Args:
            task: the task.
            trial_index: 0-based index of the trial.

        Returns:
            The :class:`TrialResult`; a goal state that cannot be computed is recorded as ``tool_bug``.
        """
        t0 = time.perf_counter()
        seed = derive_seed(self.config.seed, task.id, trial_index)
        try:
            goal = self.goal(task)
        except GoldToolBug as e:
            traj = Trajectory(termination_reason=TerminationReason.TOOL_BUG, error=str(e))
            return TrialResult(task_id=task.id, trial=trial_index, seed=seed, passed=False,
                               termination_reason="tool_bug", grade=None, trajectory=traj,
                               duration_s=time.perf_counter() - t0, error=f"goal replay failed: {e}")
        ctx = TrialContext(
            task=task, tools=self._tools, policy=self._policy, seed=seed,
            rng=np.random.Generator(np.random.PCG64(seed)), domain=self.domain.name, trial_index=trial_index,
        )
        agent = self.agent_factory(ctx)
        user = self.user_factory(ctx)
        limits = Limits(max_turns=task.max_turns or self.config.max_turns, max_steps=self.config.max_steps)
        with self.template.trial() as db:
            traj = run_conversation(agent, user, self._toolbox, ToolContext(db.session, db.options), limits)
            diff = diff_against(db.raw, goal, self._spec)
        grade = grade_trial(task, traj, diff, self._toolbox)
        return TrialResult(
            task_id=task.id, trial=trial_index, seed=seed, passed=grade.passed,
            termination_reason=str(traj.termination_reason), grade=grade, trajectory=traj,
            duration_s=time.perf_counter() - t0, error=traj.error,
        )

    def run(
        self,
        executor: Executor | None = None,
        on_trial: Callable[[TrialResult], None] | None = None,
    ) -> RunResult:
        """Run every (task, trial) pair and compute the metrics.

        Args:
            executor: where trials run; default a thread pool of ``config.concurrency`` workers.
            on_trial: called (in the calling thread) with each trial as soon as it finishes, e.g. to
                record it; the order is completion order.

        Returns:
            The :class:`RunResult`, trials sorted by task order then trial index.
        """
        t0 = time.perf_counter()
        own = executor is None
        ex = executor or ThreadPoolExecutor(max_workers=max(1, self.config.concurrency))
        results: list[TrialResult] = []
        try:
            futures: list[Future[TrialResult]] = [
                ex.submit(self.run_trial, task, i) for task in self.tasks for i in range(self.config.trials)
            ]
            for fut in as_completed(futures):
                res = fut.result()
                results.append(res)
                if on_trial is not None:
                    on_trial(res)
        finally:
            if own:
                ex.shutdown(wait=True, cancel_futures=True)
        order = {t.id: i for i, t in enumerate(self.tasks)}
        results.sort(key=lambda r: (order[r.task_id], r.trial))
        outcomes: dict[str, list[bool]] = {t.id: [] for t in self.tasks}
        for r in results:
            outcomes[r.task_id].append(r.passed)
        metrics = suite_metrics(outcomes, self.config.trials)
        reasons = Counter(r.termination_reason for r in results)
        return RunResult(config=self.config, trials=results, metrics=metrics,
                         termination_reasons=dict(sorted(reasons.items())),
                         wall_seconds=time.perf_counter() - t0)


def run_summary_json(result: RunResult, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return the ``--out`` JSON document of a run.

    Args:
        result: the finished run.
        extra: extra top-level fields (e.g. git revision, package versions).

    Returns:
        ``{"format": "tausim.run", "version": 1, "config", "metrics", "termination_reasons", "trials", ...}``.
    """
    doc: dict[str, Any] = {"format": "tausim.run", "version": 1}
    doc.update(extra or {})
    doc.update(result.model_dump(mode="json"))
    return doc
