"""Async agents (``async def step``) run natively: awaited on one event loop per worker thread, cancelled on timeout.

The twins below replay the task's gold actions with the same logic; one's ``step`` is synchronous, the other's is a
coroutine that yields to its loop before answering. Run over every built-in retail task, they must make the same
tool calls with the same results and get the same grades; the sync twin is checked against the built-in oracle too.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Sequence

import pytest

from simulator.agents import OracleAgent
from simulator.execution.build import build_runner
from simulator.execution.preflight import preflight
from simulator.types.messages import AgentTurn, Message, ToolCall
from simulator.types.protocols import TrialContext
from simulator.types.spec import RunSpec

TASK = "cancel-no-longer-needed"
RETAIL_TASKS = 29  # the built-in retail task set (domains/retail/tasks), counted by hand


class _GoldTwin:
    """Replays the gold actions (one tool call per step), then states the required outputs."""

    def __init__(self, ctx: TrialContext):
        self.actions = list(ctx.task.gold_actions)
        self.outputs = list(ctx.task.required_outputs)
        self.done = 0

    def next_turn(self) -> AgentTurn:
        if self.done < len(self.actions):
            a = self.actions[self.done]
            self.done += 1
            call = ToolCall(id=f"gold_{self.done}", name=a.name, arguments=dict(a.arguments))
            return AgentTurn(message=Message(role="assistant", tool_calls=[call]))
        text = "Done. " + ", ".join(self.outputs) if self.outputs else "Done."
        return AgentTurn(message=Message(role="assistant", content=text))


class SyncGold(_GoldTwin):
    def step(self, messages: Sequence[Message]) -> AgentTurn:
        return self.next_turn()


class AsyncGold(_GoldTwin):
    loops: set[int]
    threads: set[int]

    async def step(self, messages: Sequence[Message]) -> AgentTurn:
        await asyncio.sleep(0)  # gives the loop a turn, as an agent awaiting its model would
        AsyncGold.loops.add(id(asyncio.get_running_loop()))
        AsyncGold.threads.add(threading.get_ident())
        return self.next_turn()


def _records(run):
    return {t.task_id: (t.passed, t.termination_reason,
                        [(c.name, c.arguments, c.status, c.content, c.requestor) for c in t.trajectory.tool_calls],
                        t.grade.model_dump(mode="json") if t.grade is not None else None)
            for t in run.trials}


def test_an_async_agent_passes_what_its_sync_twin_passes_on_every_built_in_retail_task():
    AsyncGold.loops, AsyncGold.threads = set(), set()
    runs = {}
    for name, factory in (("sync", SyncGold), ("async", AsyncGold), ("oracle", OracleAgent)):
        runner = build_runner(RunSpec(domain="retail", user="rule", concurrency=2, preflight=False))
        runner.agent_factory = factory
        runs[name] = runner.run()
        assert len(runner.loops) == 0  # the pool's loops were closed with the run
    sync, asyn, oracle = (_records(runs[n]) for n in ("sync", "async", "oracle"))
    assert len(sync) == RETAIL_TASKS
    assert sum(passed for passed, *_ in asyn.values()) == RETAIL_TASKS
    assert asyn == sync
    assert {k: v[:2] for k, v in sync.items()} == {k: v[:2] for k, v in oracle.items()}
    # 29 trials on at most 2 worker threads: they shared the workers' loops instead of one loop each
    assert 1 <= len(AsyncGold.loops) <= 2 and len(AsyncGold.threads) <= 2


def test_with_a_trial_timeout_async_trials_still_share_their_workers_loops():
    AsyncGold.loops, AsyncGold.threads = set(), set()
    runner = build_runner(RunSpec(domain="retail", user="rule", trials=3, concurrency=2, trial_timeout=60,
                                  task_ids=[TASK, "modify-order-address"], preflight=False))
    runner.agent_factory = AsyncGold
    run = runner.run()
    assert [t.passed for t in run.trials] == [True] * 6
    # the agents were built in a thread of each trial's own, but every conversation ran on a worker's loop
    assert 1 <= len(AsyncGold.loops) <= 2 and len(AsyncGold.threads) <= 2


class HungAsync:
    """Answers the first step, then awaits forever; records whether its pending step was cancelled."""

    cancelled: list[bool]

    def __init__(self, ctx: TrialContext):
        self.steps = 0

    async def step(self, messages: Sequence[Message]) -> AgentTurn:
        self.steps += 1
        if self.steps == 1:
            return AgentTurn(message=Message(role="assistant", content="Let me look into that."))
        try:
            await asyncio.Event().wait()  # never set
        except asyncio.CancelledError:
            HungAsync.cancelled.append(True)
            raise
        raise AssertionError("unreachable")


class StubbornAsync(HungAsync):
    """Swallows the cancellation and answers; then hangs again (its next step must never be asked for)."""

    async def step(self, messages: Sequence[Message]) -> AgentTurn:
        try:
            return await super().step(messages)
        except asyncio.CancelledError:
            return AgentTurn(message=Message(role="assistant", content="Still here."))


@pytest.mark.parametrize("agent", [HungAsync, StubbornAsync])
def test_a_hung_async_agent_times_out_and_its_pending_step_is_cancelled(agent):
    HungAsync.cancelled = []
    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[TASK], trial_timeout=0.3,
                                  preflight=False))
    runner.agent_factory = agent
    (trial,) = runner.run().trials
    assert trial.termination_reason == "timeout" and not trial.passed
    assert HungAsync.cancelled == [True]
    traj = trial.trajectory
    assert traj.messages[0].role == "user" and traj.messages[1].content == "Let me look into that."
    assert trial.grade is not None and trial.grade.failure  # graded on what it did: nothing
    if agent is HungAsync:
        assert "trial timeout of 0.3 s" in trial.error and "cancelled" in trial.error
    assert not [t for t in threading.enumerate() if t.name.startswith("tausim-trial-") and t.is_alive()
                and t.name.endswith(f"{TASK}-0")]  # nothing abandoned: the trial thread only built the agent


async def _async_factory(ctx: TrialContext) -> AsyncGold:
    await asyncio.sleep(0)
    return AsyncGold(ctx)


def test_an_async_factory_is_awaited_by_the_preflight_and_the_trials():
    AsyncGold.loops, AsyncGold.threads = set(), set()
    for timeout in (None, 30.0):
        runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[TASK], trial_timeout=timeout,
                                      preflight=False))
        runner.agent_factory = _async_factory
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a coroutine never awaited warns
            assert preflight(runner)[0] == "agent: built"
            (trial,) = runner.run().trials
        assert trial.passed, trial.error


async def _failing_factory(ctx: TrialContext) -> AsyncGold:
    raise RuntimeError("no model configured")


def test_an_async_factory_that_raises_is_a_setup_error_and_an_agent_error():
    from simulator.errors import SetupError

    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[TASK], preflight=False))
    runner.agent_factory = _failing_factory
    with pytest.raises(SetupError, match="RuntimeError: no model configured"):
        preflight(runner)
    (trial,) = runner.run().trials
    assert trial.termination_reason == "agent_error" and "no model configured" in trial.error


def test_an_async_trial_in_a_thread_running_a_loop_is_refused_clearly():
    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[TASK], preflight=False))
    runner.agent_factory = AsyncGold
    AsyncGold.loops, AsyncGold.threads = set(), set()

    async def inside_a_loop():
        return runner.run_trial(runner.tasks[0], 0)

    with pytest.raises(RuntimeError, match="already runs an event loop"):
        asyncio.run(inside_a_loop())
    assert asyncio.run(asyncio.to_thread(runner.run_trial, runner.tasks[0], 0)).passed  # as the message says


def test_tausim_hunt_refuses_an_async_agent_before_hunting():
    from typer.testing import CliRunner

    from simulator.cli import app

    for factory in ("AsyncGold", "_async_factory"):
        res = CliRunner().invoke(app, ["hunt", "--domain", "retail", "--agent",
                                       f"py:tests.execution.test_async_agents:{factory}", "--user", "rule",
                                       "--task-ids", TASK, "--budget", "4"])
        assert res.exit_code == 2, res.output
        assert "synchronous agents only" in res.output and factory in res.output


class DeafAsync(HungAsync):
    """Swallows every cancellation and keeps awaiting: its step never returns."""

    async def step(self, messages: Sequence[Message]) -> AgentTurn:
        self.steps += 1
        if self.steps == 1:
            return AgentTurn(message=Message(role="assistant", content="Let me look into that."))
        while True:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                HungAsync.cancelled.append(True)


def test_an_async_agent_that_ignores_its_cancellation_is_abandoned_and_the_run_ends():
    HungAsync.cancelled = []
    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[TASK], trials=2, concurrency=2,
                                  trial_timeout=0.3, preflight=False))
    runner.agent_factory = DeafAsync
    trials = runner.run().trials  # before: never returned
    assert [t.termination_reason for t in trials] == ["timeout", "timeout"]
    assert all("ignored it" in (t.error or "") and "abandoned" in (t.error or "") for t in trials)
    assert HungAsync.cancelled == [True, True]
    assert all(t.trajectory.messages[1].content == "Let me look into that." for t in trials)


class _Own(BaseException):
    """An agent's own BaseException subclass."""


def _run(runner):
    """``runner.run()``; a KeyboardInterrupt escaping it fails the test (instead of stopping the test session)."""
    try:
        return runner.run()
    except KeyboardInterrupt as e:  # pragma: no cover - the failure these tests are about
        stopped = repr(e)
    pytest.fail(f"the run was stopped by {stopped}", pytrace=False)


class InterruptingAsync(AsyncGold):
    """The async gold twin; trial 0 of the task ``TASK`` raises ``raised`` at its first step."""

    raised: type[BaseException] = KeyboardInterrupt

    def __init__(self, ctx: TrialContext):
        super().__init__(ctx)
        self.interrupts = ctx.task.id == TASK and ctx.trial_index == 0

    async def step(self, messages: Sequence[Message]) -> AgentTurn:
        if self.interrupts:
            raise InterruptingAsync.raised("from the agent")
        return await super().step(messages)


@pytest.mark.parametrize("timeout", [None, 30.0])
@pytest.mark.parametrize("raised", [KeyboardInterrupt, GeneratorExit, _Own])
def test_an_async_agent_raising_keyboard_interrupt_is_its_trial_s_agent_error_and_the_run_goes_on(raised, timeout):
    AsyncGold.loops, AsyncGold.threads = set(), set()
    InterruptingAsync.raised = raised
    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[TASK, "modify-order-address"], trials=2,
                                  concurrency=2, trial_timeout=timeout, preflight=False))
    runner.agent_factory = InterruptingAsync
    run = _run(runner)  # before: the KeyboardInterrupt stopped the run
    got = {(t.task_id, t.trial): (t.termination_reason, t.passed) for t in run.trials}
    assert got == {(TASK, 0): ("agent_error", False), (TASK, 1): ("user_stop", True),
                   ("modify-order-address", 0): ("user_stop", True), ("modify-order-address", 1): ("user_stop", True)}
    (failed,) = [t for t in run.trials if not t.passed]
    assert f"{raised.__name__}: from the agent" in failed.error


def _raising_factory(raised: type[BaseException], side: str, is_async: bool = False, users=None):
    """A factory that raises ``raised`` for trial 0 of ``TASK`` and builds the gold twin (or with ``users``) else."""

    def fails(ctx: TrialContext) -> bool:
        return ctx.task.id == TASK and ctx.trial_index == 0 and not ctx.extra.get("preflight")

    if side == "user":
        def user(ctx: TrialContext):
            if fails(ctx):
                raise raised("from the user factory")
            return users(ctx)

        return user
    if is_async:
        async def async_agent(ctx: TrialContext):
            await asyncio.sleep(0)
            if fails(ctx):
                raise raised("from the agent factory")
            return SyncGold(ctx)

        return async_agent

    def agent(ctx: TrialContext):
        if fails(ctx):
            raise raised("from the agent factory")
        return SyncGold(ctx)

    return agent


@pytest.mark.parametrize("timeout", [None, 30.0])
@pytest.mark.parametrize("raised", [KeyboardInterrupt, GeneratorExit, _Own])
@pytest.mark.parametrize("side", ["agent", "async agent", "user"])
def test_a_factory_raising_keyboard_interrupt_is_its_trial_s_setup_error_and_the_run_goes_on(side, raised, timeout):
    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[TASK, "modify-order-address"], trials=2,
                                  concurrency=2, trial_timeout=timeout, preflight=False))
    runner.agent_factory = SyncGold
    made = _raising_factory(raised, side.split()[-1], side == "async agent", runner.user_factory)
    if side == "user":
        runner.user_factory = made
    else:
        runner.agent_factory = made
    run = _run(runner)  # before: the KeyboardInterrupt stopped the run
    reason = "user_error" if side == "user" else "agent_error"
    got = {(t.task_id, t.trial): (t.termination_reason, t.passed) for t in run.trials}
    assert got == {(TASK, 0): (reason, False), (TASK, 1): ("user_stop", True),
                   ("modify-order-address", 0): ("user_stop", True), ("modify-order-address", 1): ("user_stop", True)}
    (failed,) = [t for t in run.trials if not t.passed]
    who = "user" if side == "user" else "agent"
    assert f"{who} factory failed" in failed.error and f"{raised.__name__}: from the {who} factory" in failed.error


@pytest.mark.parametrize("side", ["agent", "async agent", "user"])
def test_a_keyboard_interrupt_in_a_factory_in_the_main_thread_is_raised_on(side):
    """A trial run in the main thread (``run_trial`` called directly): it may be the user's Ctrl-C."""
    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[TASK], preflight=False))
    made = _raising_factory(KeyboardInterrupt, side.split()[-1], side == "async agent", runner.user_factory)
    runner.agent_factory = SyncGold
    if side == "user":
        runner.user_factory = made
    else:
        runner.agent_factory = made
    with pytest.raises(KeyboardInterrupt):
        runner.run_trial(runner.tasks[0], 0)


@pytest.mark.parametrize("raised", [GeneratorExit, _Own])
def test_the_preflight_reports_a_factory_s_own_base_exception_as_a_setup_error(raised):
    from simulator.errors import SetupError

    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[TASK], preflight=False))

    def factory(ctx: TrialContext):
        raise raised("no agent today")

    runner.agent_factory = factory
    with pytest.raises(SetupError, match=f"{raised.__name__}: no agent today"):
        preflight(runner)
    runner.agent_factory = lambda ctx: (_ for _ in ()).throw(KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):  # the pre-flight runs in the main thread: maybe the user's Ctrl-C
        preflight(runner)
