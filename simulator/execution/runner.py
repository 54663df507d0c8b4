"""Plans and executes trials: seeds, per-trial databases, concurrency, grading.

Trials are submitted to any :class:`concurrent.futures.Executor` (a thread pool by default), so the same run
can be spread over machines by an executor such as Dask's. Each trial derives its seed from
``sha256(run seed, task id, trial index)`` and owns a ``numpy.random.Generator(PCG64(seed))``; ``RunSpec.vary``
may hold the agent's or the user's side fixed across a task's trials (:mod:`simulator.execution.seeds`).

Time limit (``RunSpec.trial_timeout``): a trial then runs in a thread of its own, and the runner waits for it at
most that long. A thread cannot be killed in Python: past the limit the trial is recorded ``timeout`` and its
thread is *abandoned*: a daemon thread, left to finish (or hang) in the background on its own copy of the
database; its conversation ends (``timeout``, :class:`~simulator.dialogue.caps.TimeLimit`) at its next turn or
step once the call it was stuck in returns. Its result is dropped and, from the moment it was abandoned, its log
events are muted, so it never writes anything about a trial that is already recorded; a daemon thread does not keep
the process alive. An async agent's conversation is handed back to the worker thread and runs on its event loop,
where the time limit cancels the agent's pending step for real (:mod:`simulator.execution.aio`).

Stopping early (:meth:`Runner.run`): the first trial ending ``setup_error`` (missing credentials, unknown
model: no other trial can succeed) stops the run, and so does an error rate above ``RunSpec.max_error_rate``
once :data:`ERROR_RATE_MIN_TRIALS` trials finished. Queued trials are cancelled, running ones are waited for and
kept; :attr:`RunResult.aborted` says why. A shorter run's error rate is checked when it ends
(:func:`run_error_rate`).
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from simulator.dialogue.actors import actor_traceback, call_actor, is_actor_failure
from simulator.dialogue.caps import TimeLimit
from simulator.dialogue.conversation import Conversation, is_async_agent
from simulator.dialogue.observers import DualControlSync, Observer, ToolCallLog
from simulator.dialogue.prefix import apply_state, check_next_step, run_next_turn
from simulator.execution.aio import CANCEL_GRACE_S, WorkerLoops, run_within
from simulator.execution.prepare import graded_outcome, prepare_task, prepare_tasks
from simulator.execution.seeds import Side, TrialSeeds, derive_seed, trial_seeds
from simulator.grading import GradingMemo, Judge, check_assertions, check_env_assertions, grade_trial
from simulator.grading.safety import record_owners
from simulator.stats.faults import fault_counts
from simulator.stats.summaries import complete_suite
from simulator.storage.documents import run_summary_json
from simulator.types.persona import Persona
from simulator.types.prepared import GoldReplay, PreparedTask, user_needs
from simulator.types.protocols import AgentFactory, TrialContext, UserFactory
from simulator.types.results import RunResult, TrialKey, TrialResult, trial_key
from simulator.types.spec import RunSpec
from simulator.types.state import StateDelta, StateDiff
from simulator.types.tasks import Task
from simulator.types.trajectory import ERROR_REASONS, Limits, TerminationReason, Trajectory
from simulator.users._moves import MovedUser
from simulator.users.review import ReviewMatchers, review_user
from simulator.world.database import TemplateDatabase, TrialDatabase, diff_against
from simulator.world.domain import Domain
from simulator.world.dual import env_caller, syncer
from simulator.world.events import read_events
from simulator.world.faults import FaultyToolbox
from simulator.world.fixtures import history_messages
from simulator.world.replay import GoldToolBug, prepare_trial, provision_trial
from simulator.world.tools import Toolbox, ToolContext

__all__ = ["ERROR_RATE_MIN_TRIALS", "RUN_GC_THRESHOLDS", "RUN_SWITCH_INTERVAL_S", "RunResult", "Runner", "TrialKey",
           "TrialResult", "derive_seed", "error_rate_excess", "failure_signature", "run_error_rate", "run_summary_json",
           "settle_heap", "trial_key"]

ERROR_RATE_MIN_TRIALS = 10
"""Finished trials before ``RunSpec.max_error_rate`` is checked (a few early errors do not stop a run)."""

_ERRORS = frozenset(str(r) for r in ERROR_REASONS)

RUN_GC_THRESHOLDS = (10_000, 20, 50)
"""The cyclic GC's thresholds of a process running trials (default ``(700, 10, 10)``; :func:`settle_heap`)."""
RUN_SWITCH_INTERVAL_S = 0.05
"""The thread switch interval (s; Python's default 0.005) of a process running trials (:func:`settle_heap`)."""


def settle_heap(*, collect: bool = True) -> None:
    """Set a process that runs trials (``tausim run``, a Dask worker) up for its run, once the run is built.

    The objects alive now (the run's data: template, tasks, prepared goal states) live to the end: they are
    collected once and frozen out of the GC's passes (``gc.freeze``). The young generation is collected every
    :data:`RUN_GC_THRESHOLDS` allocations instead of every 700: with many trials in flight (128 at once), the
    objects of trials half-way through a model call survive a young pass made every 700 allocations and are then
    scanned again and again by the older passes, about 0.3 ms of CPU per trial (measured with
    ``scripts/bench-concurrency``); garbage cycles are still collected, a little later.

    The interpreter lock goes from thread to thread every :data:`RUN_SWITCH_INTERVAL_S`, not 5 ms: a trial's thread
    computes a few ms at a time (a model call's CPU, grading) between waits; with 64 trials in flight a waking thread
    made the running one hand the lock over mid-work (64 threads of 200 ms model calls, 3 pairs in turn: 4.32 / 3.37
    / 2.65 ms of CPU per call at 5 ms, 3.57 / 2.55 / 2.46 ms at 50 ms, wall no longer; docs/benchmarks.md).
    Process-wide: call it only in a process whose job is the run. ``collect=False``: no collection (a forked worker).
    """
    if collect:
        gc.collect()
    gc.freeze()
    gc.set_threshold(*RUN_GC_THRESHOLDS)
    sys.setswitchinterval(RUN_SWITCH_INTERVAL_S)


class _MutedWhenAbandoned:
    """A structlog logger proxy that drops every event once its trial was abandoned (``trial_timeout``)."""

    def __init__(self, log: Any, abandoned: threading.Event) -> None:
        self._log, self._abandoned = log, abandoned

    def bind(self, **values: Any) -> _MutedWhenAbandoned:
        return _MutedWhenAbandoned(self._log.bind(**values), self._abandoned)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._log, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            return None if self._abandoned.is_set() else attr(*args, **kwargs)

        return call


@dataclass
class _TrialSetup:
    """A trial made ready to converse: its seed, prepared task, agent (or an async factory's coroutine), user."""

    task: Task
    trial_index: int
    persona: str | None
    log: Any
    t0: float
    prepared: PreparedTask
    goal: StateDelta | bytes
    initial: bytes | None
    agent: Any
    user: Any
    limits: Limits

    @property
    def is_async(self) -> bool:
        """True when the conversation runs on an event loop: an async factory's agent, or an ``async def step``."""
        return inspect.isawaitable(self.agent) or is_async_agent(self.agent)


class Runner:
    """Runs ``config.trials`` trials of every task.

    Args:
        domain: the domain.
        template: the template database of the data set.
        tasks: the tasks to run (ids unique).
        agent_factory: builds the agent of each trial.
        user_factory: builds the simulated user of each trial.
        config: the run configuration (trials, seed, caps, concurrency, persona names).
        log: the run's structlog logger (see :mod:`simulator.storage.runlog`), or None for no log. Each trial binds
            ``task_id`` and ``trial`` to it and emits ``trial_start``, ``tool_call``, ``model_call`` (from LLM
            agents and users) and ``trial_end``.
        judge: the LLM judge for tasks with ``judge`` assertions (None: recorded as ``not_graded``).
        personas: the personas named by ``config.personas``, in that order (each trial's user gets one in
            ``TrialContext.persona``). Trials of the same (task, trial index) share their seed across personas
            (common random numbers: persona effects are compared on the same draws).
        gold: task id -> gold replay already made (e.g. by the CLI's "written for other data" check); used by
            :meth:`prepare` instead of replaying those tasks again.

    Each task is prepared once (:meth:`prepare`, a :class:`~simulator.types.prepared.PreparedTask`: gold replayed once,
    rules and budgets merged once, and what ``user_factory.needs`` declares) before its trials; trials share it.
        policy: the policy text the agent gets (``--policy FILE``); None: :meth:`Domain.policy_for` the data set
            (an imported suite's own policy file next to its data, else the domain's policy).
        tracing: a :class:`simulator.execution.tracing.Tracing` (OpenTelemetry spans of the run, its trials, turns, tool
            and model calls; each trial's ids in ``TrialResult.trace`` and bound to its log events), or None.
            Only trials run in this process (threads) are traced.

    Raises:
        ValueError: ``config.trials`` < 1, duplicate task ids, ``personas`` not matching ``config.personas``, or
            a user factory declaring an unknown need.
    """

    def __init__(
        self,
        domain: Domain,
        template: TemplateDatabase,
        tasks: Sequence[Task],
        agent_factory: AgentFactory,
        user_factory: UserFactory,
        config: RunSpec,
        log: Any = None,
        judge: Judge | None = None,
        personas: Sequence[Persona] | None = None,
        gold: Mapping[str, GoldReplay] | None = None,
        tracing: Any = None,
        policy: str | None = None,
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
        self.domain, self.template = domain, template
        self.tasks = list(tasks)
        self.agent_factory = agent_factory
        self.user_factory = user_factory
        self.config = config
        self.log = log
        self.judge = judge
        self.tracing = tracing
        self.personas: dict[str, Persona] = {p.name: p for p in personas or []}
        self._spec = domain.state_spec()
        self._toolbox = domain.toolbox_for(template.options)  # a tool mode may add or hide tools (tau2)
        self._tools = self._toolbox.schemas()
        self._kinds = {name: ("ending" if spec.ends_conversation else spec.kind)
                       for name, spec in self._toolbox.specs.items()}
        # the policy the agent gets: given (--policy), else the suite's own next to the data, else the domain's
        self._policy = policy if policy is not None else domain.policy_for(template.data_dir, template.options)
        self._user_toolbox = domain.user_toolbox()
        self._user_tools = self._user_toolbox.schemas() if self._user_toolbox is not None else []
        self._needs = user_needs(user_factory)
        self._gold = dict(gold or {})
        self.prepared: dict[str, PreparedTask] = {}
        """Task id -> the task as prepared for this run (filled by :meth:`prepare`)."""
        self._matchers = ReviewMatchers()  # each prepared task's user-review leak matcher, built once
        self._grading = GradingMemo()  # each task's gold and reference call keys, made once
        self.loops = WorkerLoops()
        """The event loops of the threads that ran async agents' trials (:mod:`simulator.execution.aio`)."""

    def trial_seed(self, task: Task, trial_index: int) -> int:
        """Return a trial's seed: the task's pinned ``seed`` when it has one, else :func:`derive_seed`.

        Args:
            task: the task.
            trial_index: 0-based trial index.
        """
        return task.seed if task.seed is not None else derive_seed(self.config.seed, task.id, trial_index)

    def side_seeds(self, task: Task, trial_index: int) -> TrialSeeds:
        """Return a trial's seeds of agent, user and faults under ``config.vary`` (:mod:`simulator.execution.seeds`)."""
        vary, trial = self.config.vary, self.trial_seed(task, trial_index)
        return trial_seeds(trial, trial if vary == "both" else self.trial_seed(task, 0), vary)  # both: none held

    def agent_toolbox(self, task: Task, trial_index: int, base: Toolbox | None = None) -> Toolbox:
        """Return the toolbox a trial's agent calls: ``base`` wrapped in the run's environment faults, if any.

        Args:
            task: the task.
            trial_index: 0-based trial index (the faults are seeded by the trial seed, see
            :mod:`simulator.world.faults`).
            base: the toolbox to wrap; None: the run's toolbox.

        Returns:
            A :class:`~simulator.world.faults.FaultyToolbox` when ``config.faults`` has a rate above 0, else ``base``.
        """
        box = base if base is not None else self._toolbox
        faults = self.config.faults
        if faults is None or not faults.active():
            return box
        return FaultyToolbox(box, faults, self.side_seeds(task, trial_index).faults)

    def record_faults(self, traj: Trajectory) -> dict[str, int] | None:
        """Return a trial's fault counts (``TrialResult.faults``): None when the run injects no faults."""
        faults = self.config.faults
        return fault_counts(traj.tool_calls) if faults is not None and faults.active() else None

    def prepare(self, task_ids: Iterable[str] | None = None) -> dict[str, PreparedTask]:
        """Prepare tasks once (see :mod:`simulator.execution.prepare`); tasks already prepared are left as they are.

        Call it single-threaded before running trials from several threads (:meth:`run` does; a worker that
        rebuilds the runner calls it once after building it). :meth:`run_trial` prepares a task not prepared yet
        itself, which is right for a single caller.

        Args:
            task_ids: the tasks to prepare (ids of the runner's tasks); None: every task.

        Returns:
            :attr:`prepared` (task id -> :class:`~simulator.types.prepared.PreparedTask`).

        Raises:
            KeyError: an id that is not one of the runner's tasks.
        """
        by_id = {t.id: t for t in self.tasks}
        wanted = list(by_id) if task_ids is None else list(dict.fromkeys(task_ids))
        todo = [by_id[i] for i in wanted if i not in self.prepared]
        if todo:
            self.prepared.update(prepare_tasks(self.domain, self.template, todo, budgets=self.config.budgets,
                                               needs=self._needs, toolbox=self._toolbox, gold=self._gold))
        return self.prepared

    def _prepared(self, task: Task) -> PreparedTask:
        p = self.prepared.get(task.id)
        if p is None and any(t.id == task.id for t in self.tasks):
            p = self.prepare([task.id])[task.id]
        if p is not None and (p.task is task or p.task == task):  # equal: e.g. a copy sent to a worker process
            return p
        # not one of the runner's tasks (or another version of one): prepared for this call only
        return prepare_task(self.domain, self.template, task, budget=(self.config.budgets or {}).get(task.id),
                            needs=self._needs, toolbox=self._toolbox, policy=self._policy)

    def goal(self, task: Task) -> StateDelta | bytes:
        """Return the task's goal state (:class:`~simulator.types.state.StateDelta`), from its preparation (once).

        Raises:
            GoldToolBug: a gold action hit a bug in a tool.
        """
        return self._prepared(task).gold.goal_state()

    def initial(self, task: Task) -> bytes | None:
        """Return the task's initial database (template plus fixture, serialized) when it has assertions.

        Made with the task's gold replay when the task was prepared (the same fixture, applied once).

        Returns:
            The serialized database, or None for a task without assertions.
        """
        return self._prepared(task).gold.initial

    def run_trial(self, task: Task, trial_index: int, persona: str | None = None) -> TrialResult:
        """Run and grade one trial on a fresh copy of the template.

        Args:
            task: the task.
            trial_index: 0-based index of the trial.
            persona: the persona the user plays (one of the runner's), or None.

        Returns:
            The :class:`TrialResult`; a goal state that cannot be computed is recorded as ``tool_bug``; with a side
            held (``config.vary``), its ``side_seeds``.
        """
        if persona is not None and persona not in self.personas:
            raise ValueError(f"persona {persona!r} is not one of this run's {list(self.personas)}")
        res = (self._traced_trial(task, trial_index, persona) if self.tracing is not None
               else self._logged_trial(task, trial_index, persona, None))
        seeds = None if self.config.vary == "both" else self.side_seeds(task, trial_index)
        if seeds is not None and not seeds.shared:  # one side held (config.vary): record what each side used
            res.side_seeds = {"agent": seeds.agent, "user": seeds.user, "faults": seeds.faults}
        return res

    def _traced_trial(self, task: Task, trial_index: int, persona: str | None) -> TrialResult:
        from simulator.execution.tracing import span_ids

        span = self.tracing.start_trial(task.id, trial_index, self.trial_seed(task, trial_index),
                                        persona)
        passed, reason = False, "crash"
        try:
            res = self._logged_trial(task, trial_index, persona, span)
            passed, reason = res.passed, res.termination_reason
            return res.model_copy(update={"trace": span_ids(span)})
        finally:
            self.tracing.end_trial(span, passed, reason)

    def _logged_trial(self, task: Task, trial_index: int, persona: str | None, span: Any) -> TrialResult:
        if self.log is None:
            return self._run_bounded(task, trial_index, None, persona, span)
        log = self.log.bind(task_id=task.id, trial=trial_index, **({"persona": persona} if persona else {}))
        if span is not None:
            from simulator.execution.tracing import span_ids

            log = log.bind(**span_ids(span))
        log.info("trial_start", seed=self.trial_seed(task, trial_index))
        try:
            res = self._run_bounded(task, trial_index, log, persona, span)
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

    def _not_run(self, task: Task, trial_index: int, persona: str | None, reason: TerminationReason, error: str,
                 t0: float) -> TrialResult:
        """The result of a trial that ended before (or without) its conversation: failed, not graded."""
        traj = Trajectory(termination_reason=reason, error=error)
        res = TrialResult(task_id=task.id, trial=trial_index, seed=self.trial_seed(task, trial_index),
                          persona=persona, passed=False, termination_reason=str(reason), grade=None,
                          trajectory=traj, duration_s=time.perf_counter() - t0, error=error)
        res.signature = failure_signature(task, res, self._kinds)
        return res

    def _run_bounded(self, task: Task, trial_index: int, log: Any, persona: str | None, span: Any = None
                     ) -> TrialResult:
        """Run a trial within ``config.trial_timeout`` (see the module docstring); without one, in this thread."""
        timeout = self.config.trial_timeout
        if timeout is None:
            return self._run_trial(task, trial_index, log, persona, span)
        t0 = time.perf_counter()
        abandoned = threading.Event()
        done = threading.Event()
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                setup = self._setup_trial(task, trial_index, None if log is None else
                                          _MutedWhenAbandoned(log, abandoned), persona, t0)
                if isinstance(setup, TrialResult):
                    box["result"] = setup
                elif setup.is_async:  # handed back: its conversation runs on the waiting worker's event loop
                    box["async"] = setup
                else:
                    box["result"] = self._converse(setup, span, abandoned)
            except BaseException as e:  # noqa: BLE001 - handed to the waiting thread, which raises it
                box["error"] = e
            finally:
                done.set()

        thread = threading.Thread(target=target, name=f"tausim-trial-{task.id}-{trial_index}", daemon=True)
        thread.start()
        if not done.wait(timeout):
            abandoned.set()  # the thread runs on in the background; its result and events are dropped
            return self._not_run(task, trial_index, persona, TerminationReason.TIMEOUT,
                                 f"the trial ran past the trial timeout of {timeout:g} s (an agent, user or tool "
                                 "that did not return); its thread was abandoned", t0)
        if "error" in box:
            raise box["error"]
        if "async" in box:
            return self.loops.run(self._arun_trial(box["async"], span, t0 + timeout))
        result: TrialResult = box["result"]
        return result

    def trial_context(self, task: Task, trial_index: int, persona: str | None = None, log: Any = None, *,
                      side: Side | None = None) -> TrialContext:
        """Return the :class:`TrialContext` a trial's agent and user are built with (the task prepared first).

        Args:
            task: one of the runner's tasks.
            trial_index: 0-based trial index.
            persona: the persona the user plays, or None (then the task's pinned ``scenario.persona``, if any).
            log: the trial's logger, or None.
            side: None: the context of both sides, with the trial seed; ``"agent"`` or ``"user"``: that side's, with
                its seed under ``config.vary`` (:meth:`side_seeds`) and a generator of its own.

        Raises:
            GoldToolBug: the task's goal state cannot be computed.
        """
        seeds = None if side is None else self.side_seeds(task, trial_index)
        seed = self.trial_seed(task, trial_index) if seeds is None else seeds.agent if side == "agent" else seeds.user
        prepared = self._prepared(task)
        return TrialContext(
            task=task, tools=self._tools, policy=self.domain.task_policy(self._policy, task, self.template.options),
            seed=seed, rng=None,  # Generator(PCG64(seed)), made when a component first reads it
            domain=self.domain.name, trial_index=trial_index,
            log=log, extra={"tool_kinds": dict(self._kinds)},
            persona=self.personas[persona] if persona is not None else task.scenario.persona, prepared=prepared,
            user_tools=self._task_user_tools(task),
        )

    def _task_user_tools(self, task: Task) -> list[dict[str, Any]]:
        """The schemas of the user tools a task allows (``task.user_tools``; None: all of the domain's)."""
        if task.user_tools is None:
            return list(self._user_tools)
        allowed = set(task.user_tools)
        return [s for s in self._user_tools if s["function"]["name"] in allowed]

    def _task_user_toolbox(self, task: Task) -> Toolbox | None:
        """The user toolbox of a task's trial: the domain's, restricted to ``task.user_tools`` when set."""
        box = self._user_toolbox
        if box is None or task.user_tools is None:
            return box
        allowed = set(task.user_tools)
        return Toolbox([s for n, s in box.specs.items() if n in allowed], uses_session=box.uses_session)

    def _run_trial(self, task: Task, trial_index: int, log: Any, persona: str | None, span: Any = None
                   ) -> TrialResult:
        """Run and grade one trial in this thread (an async agent's on this thread's event loop), no time limit."""
        setup = self._setup_trial(task, trial_index, log, persona, time.perf_counter())
        if isinstance(setup, TrialResult):
            return setup
        return self.loops.run(self._arun_trial(setup, span)) if setup.is_async else self._converse(setup, span)

    def _setup_trial(self, task: Task, trial_index: int, log: Any, persona: str | None, t0: float
                     ) -> TrialResult | _TrialSetup:
        """Build a trial's agent and user; a trial that cannot start is returned as its (failed) result."""
        def not_run(reason: TerminationReason, error: str) -> TrialResult:
            return self._not_run(task, trial_index, persona, reason, error, t0)

        prepared = self._prepared(task)
        try:
            goal = prepared.gold.goal_state()
            initial = prepared.gold.initial
        except GoldToolBug as e:
            return not_run(TerminationReason.TOOL_BUG, f"goal replay failed: {e}")
        seeds = self.side_seeds(task, trial_index)
        ctx = self.trial_context(task, trial_index, persona, log, side=None if seeds.shared else "agent")
        agent, failed = call_actor(self.agent_factory, ctx)  # its failure is the trial's agent_error, not a Ctrl-C
        if failed is not None:
            return not_run(TerminationReason.AGENT_ERROR, "agent factory failed:\n" + failed)
        if task.prefix is not None:  # a trajectory-prefix regression case: only the agent's next turn runs
            if inspect.iscoroutine(agent) or is_async_agent(agent):
                return not_run(TerminationReason.AGENT_ERROR, "trajectory-prefix cases run synchronous agents only "
                               f"(an async agent: {type(agent).__name__})")
            return self._run_prefix(task, trial_index, persona, agent, prepared, t0)
        user, failed = call_actor(self.user_factory, ctx if seeds.shared else self.trial_context(
            task, trial_index, persona, log, side="user"))  # its failure is the trial's user_error
        if failed is not None:
            if inspect.iscoroutine(agent):
                agent.close()  # an async factory's coroutine, never awaited
            return not_run(TerminationReason.USER_ERROR, "user factory failed:\n" + failed)
        if task.scenario.moves:  # a regression case's pinned user moves (tausim hunt)
            user = MovedUser(user, [], task.scenario.moves, {p.name: p for p in task.scenario.move_personas})
        conduct = task.conduct
        limits = Limits(max_turns=task.max_turns or self.config.max_turns, max_steps=self.config.max_steps,
                        max_tool_errors=conduct.max_tool_errors if conduct else None,
                        greeting=conduct.greeting if conduct else None)
        return _TrialSetup(task, trial_index, persona, log, t0, prepared, goal, initial, agent, user, limits)

    def _conversation(self, setup: _TrialSetup, db: TrialDatabase, span: Any, caps: Sequence[Any]) -> Conversation:
        """The trial's conversation on its database ``db``, with the run's observers."""
        task = setup.task
        history = history_messages(task.initial_state.history) if task.initial_state is not None else None
        provision_trial(self.domain, self.template, db, task, setup.prepared.gold)
        tool_ctx = ToolContext(db.session, db.options)
        user_toolbox = self._task_user_toolbox(task)
        observers: list[Observer] = []
        if self.tracing is not None:
            observers.append(self.tracing.observer(span, setup.agent, setup.user))
        if setup.log is not None:
            observers.append(ToolCallLog(setup.log))
        user_ctx = None
        if user_toolbox is not None:
            user_ctx = ToolContext(db.session, db.options)
            user_ctx.source = "user"
            observers.append(DualControlSync(syncer(self.domain, tool_ctx)))
        return Conversation(setup.agent, setup.user, self.agent_toolbox(task, setup.trial_index), tool_ctx,
                            setup.limits, caps=caps, observers=observers, user_toolbox=user_toolbox,
                            user_ctx=user_ctx, history=history)

    def _converse(self, setup: _TrialSetup, span: Any, stop: threading.Event | None = None) -> TrialResult:
        """Run a synchronous agent's conversation and grade it; ``stop`` (set when abandoned) ends it."""
        with self.template.trial() as db:
            conv = self._conversation(setup, db, span, [TimeLimit(stop=stop)] if stop is not None else [])
            return self._graded(setup, db, conv, conv.run())

    async def _arun_trial(self, setup: _TrialSetup, span: Any, deadline: float | None = None) -> TrialResult:
        """Run an async agent's conversation on this thread's loop, cancelled at ``deadline`` (perf_counter)."""
        timeout = self.config.trial_timeout
        left = None if deadline is None else max(0.0, deadline - time.perf_counter())
        try:
            async with asyncio.timeout(left):
                if inspect.isawaitable(setup.agent):
                    try:
                        setup.agent = await setup.agent
                    except BaseException as e:  # noqa: BLE001 - user-supplied factory: the trial's agent_error
                        if not is_actor_failure(e):  # the user's Ctrl-C, or cancelled at the time limit
                            raise
                        return self._not_run(setup.task, setup.trial_index, setup.persona,
                                             TerminationReason.AGENT_ERROR,
                                             "agent factory failed:\n" + actor_traceback(), setup.t0)
        except TimeoutError:
            return self._not_run(setup.task, setup.trial_index, setup.persona, TerminationReason.TIMEOUT,
                                 f"the trial ran past the trial timeout of {timeout:g} s while its async agent "
                                 "factory ran; the factory was cancelled", setup.t0)
        with self.template.trial() as db:
            left = None if deadline is None else max(0.0, deadline - time.perf_counter())
            conv = self._conversation(setup, db, span, [TimeLimit(left)] if left is not None else [])
            status, ended = await run_within(conv.arun(), left)
            traj = ended if ended is not None else conv.end(TerminationReason.TIMEOUT, (
                f"the trial ran past the trial timeout of {timeout:g} s; the agent's pending step was cancelled"
                + ("" if status == "cancelled" else f" and ignored it for {CANCEL_GRACE_S:g} s: abandoned")))
            return self._graded(setup, db, conv, traj)

    def _graded(self, s: _TrialSetup, db: TrialDatabase, conv: Conversation, traj: Trajectory) -> TrialResult:
        """Grade the finished conversation of trial ``s`` on its trial database ``db``."""
        try:  # a user that changed its mind: graded against the goal of the alternative it ended up wanting
            outcome, prepared, goal, initial = graded_outcome(s.prepared, traj.user_metadata, s.goal, s.initial)
        except GoldToolBug as e:
            return self._not_run(s.task, s.trial_index, s.persona, TerminationReason.TOOL_BUG, str(e), s.t0)
        task, seed = prepared.task, self.trial_seed(s.task, s.trial_index)
        diff = diff_against(db.raw, goal, self._spec)
        checks = check_assertions(task.assertions, db.raw, initial, read_events(db.raw), traj, self._spec,
                                  env=env_caller(self.domain, conv.ctx)) if task.assertions else None
        env = check_env_assertions(self.domain, db, task.env_assertions) if task.env_assertions else None
        grade = grade_trial(task, traj, diff, self._toolbox, judge=self.judge, trial_seed=seed, prepared=prepared,
                            assertions=checks, owners=record_owners(self.domain, traj, db), env_assertions=env,
                            communicate=str(self.template.options.get("communicate", "tausim")), memo=self._grading)
        grade.outcome = outcome
        shared = self.prepared.get(s.task.id) is s.prepared and task is s.task  # the run's own matcher, else a new one
        derived = s.prepared.scenario
        traj.user_metadata["review"] = review_user(
            task, traj, passed=grade.passed, goal_reached=grade.state.passed, derived=derived,
            matcher=self._matchers.get(task, derived) if shared else None,
            known=self._matchers.known(task, derived) if shared else None).as_dict()
        res = TrialResult(task_id=s.task.id, trial=s.trial_index, seed=seed, persona=s.persona, passed=grade.passed,
                          termination_reason=str(traj.termination_reason), grade=grade, trajectory=traj,
                          duration_s=time.perf_counter() - s.t0, error=traj.error, faults=self.record_faults(traj))
        res.signature = failure_signature(s.task, res, self._kinds)
        return res

    def _run_prefix(self, task: Task, trial_index: int, persona: str | None, agent: Any, prepared: PreparedTask,
                    t0: float) -> TrialResult:
        """Run a trajectory-prefix case: resume its saved state, run and grade the agent's next turn only."""
        prefix = task.prefix
        assert prefix is not None
        limits = Limits(max_turns=task.max_turns or self.config.max_turns, max_steps=self.config.max_steps)
        with self.template.trial() as db:
            try:
                prepare_trial(self.domain, db, task)
                apply_state(db.raw, self.template.metadata, prefix, f"task {task.id!r}")
            except (GoldToolBug, ValueError) as e:
                return self._not_run(task, trial_index, persona, TerminationReason.TOOL_BUG,
                                     f"prefix state: {e}", t0)
            traj = run_next_turn(agent, prefix, self._toolbox, ToolContext(db.session, db.options), limits)
        step = check_next_step(prefix.next_step, prefix, traj, self._kinds)
        base = grade_trial(task.model_copy(update={"grade": []}), traj, StateDiff(), self._toolbox,
                           prepared=prepared)  # no component decides but an error or cap ending
        failures = [f for f in [base.failure, None if step.passed else "next_step"] if f]
        grade = base.model_copy(update={"next_step": step, "passed": not failures, "basis": ["next_step"],
                                        "failure": ", ".join(failures) or None})
        return TrialResult(task_id=task.id, trial=trial_index, seed=self.trial_seed(task, trial_index),
                           persona=persona, passed=grade.passed, termination_reason=str(traj.termination_reason),
                           grade=grade, trajectory=traj, duration_s=time.perf_counter() - t0, error=traj.error)

    def planned(self) -> list[TrialKey]:
        """Return every planned (task id, persona, trial index) key, in task, persona, then trial order."""
        personas: list[str | None] = list(self.personas) or [None]
        return [(t.id, p, i) for t in self.tasks for p in personas for i in range(self.config.trials)]

    def run(self, executor: Executor | None = None, on_trial: Callable[[TrialResult], None] | None = None,
            only: set[TrialKey] | None = None) -> RunResult:
        """Run the planned (task, persona, trial) keys (or a subset of them) and compute the metrics.

        The planned tasks are prepared first (:meth:`prepare`), in this thread, unless the executor has a true
        ``prepares_in_workers`` attribute (its trials run on runners rebuilt elsewhere, which prepare themselves).
        An executor with a ``submit_trials(fn, calls)`` method (Dask's) gets every trial at once, as a list of
        ``(task, trial_index, persona)``, and returns one future per trial in that order (it may batch them).

        Args:
            executor: where trials run; default a thread pool of ``config.concurrency`` workers.
            on_trial: called (in the calling thread) with each trial as soon as it finishes, e.g. to
                record it; the order is completion order.
            only: run just these (task id, persona, trial index) keys (e.g. the ones a resumed run has not
                recorded yet); None runs every planned key.

        Returns:
            The :class:`RunResult`, trials sorted by task order then trial index. Its metrics are computed
            when the trials cover every planned pair, and are empty otherwise (a subset cannot give pass^k).
            A run stopped early (a ``setup_error`` trial, or ``config.max_error_rate`` exceeded) has
            ``aborted`` (why) and ``abort_kind`` (``setup_error`` or ``error_rate``) set.

        Raises:
            ValueError: ``only`` names a key that is not planned.
        """
        if self.tracing is not None and self.tracing.run_span is None:  # the run's root span around its trials
            with self.tracing.run(domain=self.config.domain, agent=self.config.agent.name,  # spec strings
                                  user=self.config.user.name, trials=self.config.trials, seed=self.config.seed):
                return self._run(executor, on_trial, only)
        return self._run(executor, on_trial, only)

    def _run(self, executor: Executor | None, on_trial: Callable[[TrialResult], None] | None,
             only: set[TrialKey] | None) -> RunResult:
        t0 = time.perf_counter()
        plan = self.planned()
        if only is not None:
            unknown = set(only) - set(plan)
            if unknown:
                raise ValueError(f"not planned in this run: {sorted(unknown, key=str)[:5]}")
            plan = [p for p in plan if p in only]
        by_id = {t.id: t for t in self.tasks}
        if not getattr(executor, "prepares_in_workers", False):
            self.prepare(tid for tid, _, _ in plan)
        own = executor is None
        ex = executor or ThreadPoolExecutor(max_workers=max(1, self.config.concurrency))
        results: list[TrialResult] = []
        errors: Counter[str] = Counter()  # termination reasons of the finished trials that ended on an error
        interrupted = False
        aborted: tuple[str, str] | None = None
        try:
            calls = [(by_id[tid], i, p) for tid, p, i in plan]
            submit_trials = getattr(ex, "submit_trials", None)  # an executor that batches trials (Dask)
            futures: list[Future[TrialResult]] = (
                submit_trials(self.run_trial, calls) if submit_trials is not None
                else [ex.submit(self.run_trial, *call) for call in calls])
            for fut in as_completed(futures):
                if fut.cancelled():  # dropped after the run was stopped
                    continue
                res = fut.result()
                results.append(res)
                if res.termination_reason in _ERRORS:
                    errors[res.termination_reason] += 1
                if on_trial is not None:
                    on_trial(res)
                if aborted is None:
                    aborted = self._stop_reason(results, errors)
                    if aborted is not None:
                        for f in futures:  # queued trials are dropped; running ones finish and are kept
                            f.cancel()
        except KeyboardInterrupt:
            interrupted = True  # drop queued trials and do not wait for running ones (a stuck agent never ends)
            raise
        finally:
            if own:
                ex.shutdown(wait=not interrupted, cancel_futures=True)
            self.loops.close()  # idle loops closed (a thread that runs another trial later makes a new one)
        order = {key: i for i, key in enumerate(self.planned())}
        results.sort(key=lambda r: order[trial_key(r)])
        metrics = complete_suite([r.model_dump(include={"task_id", "persona", "trial", "passed"}) for r in results],
                                 [t.id for t in self.tasks], self.config.trials, list(self.personas))
        reasons = Counter(r.termination_reason for r in results)
        return RunResult(config=self.config, trials=results, metrics=metrics,
                         termination_reasons=dict(sorted(reasons.items())),
                         wall_seconds=time.perf_counter() - t0, planned=len(self.planned()),
                         abort_kind=aborted[0] if aborted else None, aborted=aborted[1] if aborted else None)

    def _stop_reason(self, results: Sequence[TrialResult], errors: Mapping[str, int]) -> tuple[str, str] | None:
        """Return ``(kind, message)`` when the run must stop after its latest trial (see the module docstring).

        ``errors`` counts the error termination reasons among ``results`` (kept up to date by the caller: counting
        them again after every trial would cost time quadratic in the number of trials).
        """
        last = results[-1]
        if last.termination_reason == TerminationReason.SETUP_ERROR:
            first = (last.error or "").strip().splitlines()
            return ("setup_error", f"trial {last.task_id}#{last.trial} ended setup_error: "
                                   f"{first[0] if first else 'no detail'}")
        rate = self.config.max_error_rate
        if rate is None or len(results) < ERROR_RATE_MIN_TRIALS:
            return None
        excess = error_rate_excess(errors, len(results), rate)
        return None if excess is None else ("error_rate", f"of the first {excess}")


def error_rate_excess(errors: Mapping[str, int], finished: int, rate: float) -> str | None:
    """Say how a run's trials exceed ``max_error_rate``, or return None when they do not.

    Args:
        errors: count per error termination reason among the finished trials.
        finished: the number of finished trials (> 0).
        rate: ``RunSpec.max_error_rate``.

    Returns:
        ``"{finished} finished trials: {count} ended on an error ({top reasons}), above max_error_rate {rate}"``
        when ``count / finished > rate``, else None.
    """
    count = sum(errors.values())
    if count / finished <= rate:
        return None
    top = ", ".join(f"{k} {v}" for k, v in Counter(errors).most_common(3))
    return f"{finished} finished trials: {count} ended on an error ({top}), above max_error_rate {rate:g}"


def run_error_rate(trials: Sequence[TrialResult], rate: float | None) -> str | None:
    """Check the error rate of trials that ended: :func:`error_rate_excess` over all of them, or None.

    A run stops early only from its :data:`ERROR_RATE_MIN_TRIALS`-th trial on (a few early errors do not stop it);
    a shorter run (or a resumed run's shorter session: ``tausim run`` passes the trials it ran now) is checked here
    once it ended, so that trials that all ended on errors never report success (``tausim run`` exits 1).

    Args:
        trials: the finished trials.
        rate: ``RunSpec.max_error_rate`` (None: never).
    """
    if rate is None or not trials:
        return None
    errors = Counter(t.termination_reason for t in trials if t.termination_reason in _ERRORS)
    return error_rate_excess(errors, len(trials), rate)


def failure_signature(task: Task, result: TrialResult, kinds: Mapping[str, str | None]) -> list[str] | None:
    """Return a trial's failure signature (:func:`simulator.grading.signature.signature`) as a list, or None for a pass.

    Args:
        task: the trial's task.
        result: the graded trial.
        kinds: tool name -> ``read``, ``write`` or ``ending``.
    """
    if result.passed:
        return None
    from simulator.grading.signature import signature  # the hunt module builds on this one: imported when first needed

    sig = signature(task, result, kinds)
    return list(sig) if sig is not None else None


def infra_error_result(spec: RunSpec, task_id: str, trial: int, persona: str | None, error: str,
                       duration_s: float) -> TrialResult:
    """Return the ``infra_error`` result of a trial that could not run (its workers died).

    Args:
        spec: the run spec (for the trial's seed).
        task_id: the task id.
        trial: the trial index.
        persona: the persona name or None.
        error: what happened.
        duration_s: seconds since the trial was submitted.
    """
    reason = TerminationReason.INFRA_ERROR
    return TrialResult(task_id=task_id, trial=trial, seed=derive_seed(spec.seed, task_id, trial), persona=persona,
                       passed=False, termination_reason=str(reason), grade=None, duration_s=duration_s, error=error,
                       trajectory=Trajectory(termination_reason=reason, error=error))
