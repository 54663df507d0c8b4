"""Conversation.arun: the same loop as run, awaiting an ``async def step``; what run says of a coroutine."""

from __future__ import annotations

import asyncio

import pytest

from simulator.dialogue.conversation import Conversation, is_async_agent
from simulator.types.messages import AgentTurn
from simulator.types.trajectory import TerminationReason
from simulator.users import ScriptedUser
from tests._support.convo import bank_trial, call, say


@pytest.fixture()
def env(tmp_path):
    with bank_trial(tmp_path / "d") as trial:
        yield trial


class SyncList:
    def __init__(self, *messages):
        self.messages = list(messages)

    def step(self, messages):
        return AgentTurn(message=self.messages.pop(0) if len(self.messages) > 1 else self.messages[0])


class AsyncList(SyncList):
    async def step(self, messages):
        await asyncio.sleep(0)
        return SyncList.step(self, messages)


def _script():
    return call("transfer", src="A1", dst="B2", amount=5), say("Done, moved $5.")


def test_arun_gives_the_trajectory_run_gives(env, tmp_path):
    tb, ctx, _ = env
    sync = Conversation(SyncList(*_script()), ScriptedUser(["move 5 dollars"]), tb, ctx).run()
    with bank_trial(tmp_path / "again") as (tb2, ctx2, _):
        asyn = asyncio.run(Conversation(AsyncList(*_script()), ScriptedUser(["move 5 dollars"]), tb2, ctx2).arun())
    assert asyn.termination_reason == sync.termination_reason == TerminationReason.USER_STOP
    assert [m.model_dump(include={"role", "content", "tool_calls"}) for m in asyn.messages] == \
        [m.model_dump(include={"role", "content", "tool_calls"}) for m in sync.messages]
    assert [(c.name, c.status, c.content) for c in asyn.tool_calls] == [("transfer", "ok", "ok")]
    assert (asyn.turns, asyn.steps) == (sync.turns, sync.steps) == (2, 2)


def test_an_async_step_that_raises_is_an_agent_error_with_its_traceback(env):
    tb, ctx, _ = env

    class Broken:
        async def step(self, messages):
            raise ValueError("model said nonsense")

    traj = asyncio.run(Conversation(Broken(), ScriptedUser(["hi"]), tb, ctx).arun())
    assert traj.termination_reason == TerminationReason.AGENT_ERROR
    assert "ValueError: model said nonsense" in traj.error and "in step" in traj.error


def test_run_explains_a_coroutine_instead_of_warning(env, recwarn):
    tb, ctx, _ = env

    class Disguised:  # a plain method that returns a coroutine: not recognisably async
        def step(self, messages):
            return asyncio.sleep(0, result=AgentTurn(message=say("hi")))

    assert not is_async_agent(Disguised()) and is_async_agent(AsyncList(say("x")))
    traj = Conversation(Disguised(), ScriptedUser(["hi"]), tb, ctx).run()
    assert traj.termination_reason == TerminationReason.AGENT_ERROR
    assert "returned a coroutine" in traj.error and "async def step" in traj.error
    traj = Conversation(AsyncList(say("x")), ScriptedUser(["hi"]), tb, ctx).run()
    assert "runs with Conversation.arun" in traj.error
    assert not [w for w in recwarn if "never awaited" in str(w.message)]


def test_cancelling_arun_leaves_a_trajectory_to_end(env):
    tb, ctx, _ = env
    cancelled = []

    class Hung:
        async def step(self, messages):
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

    conv = Conversation(Hung(), ScriptedUser(["hi"]), tb, ctx)

    async def bounded():
        async with asyncio.timeout(0.05):
            await conv.arun()

    with pytest.raises(TimeoutError):
        asyncio.run(bounded())
    traj = conv.end(TerminationReason.TIMEOUT, "stopped")
    assert cancelled == [True] and traj.termination_reason == TerminationReason.TIMEOUT
    assert [m.role for m in traj.messages] == ["user"] and traj.agent_seconds > 0


def test_arun_takes_a_synchronous_agent_as_it_is(env):
    tb, ctx, _ = env
    traj = asyncio.run(Conversation(SyncList(*_script()), ScriptedUser(["move 5 dollars"]), tb, ctx).arun())
    assert traj.termination_reason == TerminationReason.USER_STOP
    assert [(c.name, c.status) for c in traj.tool_calls] == [("transfer", "ok")]


class _Own(BaseException):
    """An agent's own BaseException subclass."""


def _in_a_thread(fn):
    """Call ``fn`` in a thread (as a run's trial threads do) and return what it returned or raised."""
    import threading

    got = {}

    def target():
        try:
            got["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            got["raised"] = e

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    if "raised" in got:
        raise AssertionError(f"raised {got['raised']!r}")
    return got["value"]


@pytest.mark.parametrize("raised", [KeyboardInterrupt, GeneratorExit, _Own, SystemExit])
def test_a_base_exception_from_an_async_step_in_a_trial_thread_is_an_agent_error(env, raised):
    """A KeyboardInterrupt (or GeneratorExit, or its own BaseException) from an async agent stopped the whole run."""
    tb, ctx, _ = env

    class Raising:
        async def step(self, messages):
            await asyncio.sleep(0)
            raise raised("from the agent")

    traj = _in_a_thread(lambda: asyncio.run(Conversation(Raising(), ScriptedUser(["hi"]), tb, ctx).arun()))
    assert traj.termination_reason == TerminationReason.AGENT_ERROR
    assert f"{raised.__name__}: from the agent" in traj.error


def test_a_keyboard_interrupt_from_an_agent_s_own_task_in_a_trial_thread_is_an_agent_error(env):
    """Raised in a task the agent made (asyncio.gather), it left the event loop itself and stopped the run."""
    tb, ctx, _ = env

    class Gathering:
        async def step(self, messages):
            async def part():
                await asyncio.sleep(0)
                raise KeyboardInterrupt("from the agent's task")

            await asyncio.gather(part())

    from simulator.execution.aio import WorkerLoops

    loops = WorkerLoops()
    try:
        traj = _in_a_thread(lambda: loops.run(Conversation(Gathering(), ScriptedUser(["hi"]), tb, ctx).arun()))
    finally:
        _in_a_thread(loops.close)
    assert traj.termination_reason == TerminationReason.AGENT_ERROR
    assert "KeyboardInterrupt: from the agent's task" in traj.error


def test_a_cancelled_error_the_agent_raises_unasked_is_an_agent_error(env):
    """Only a cancellation of arun itself propagates (a time limit); one the agent's code raised is its error."""
    tb, ctx, _ = env

    class Raising:
        async def step(self, messages):
            raise asyncio.CancelledError("the agent's own")

    traj = asyncio.run(Conversation(Raising(), ScriptedUser(["hi"]), tb, ctx).arun())
    assert traj.termination_reason == TerminationReason.AGENT_ERROR and "CancelledError" in traj.error


def test_a_keyboard_interrupt_in_an_async_step_in_the_main_thread_is_raised_on(env):
    """In the main thread it may be the user's Ctrl-C: raised on, as run does."""
    tb, ctx, _ = env

    class Interrupted:
        async def step(self, messages):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(Conversation(Interrupted(), ScriptedUser(["hi"]), tb, ctx).arun())


def test_closing_a_pending_arun_ends_it_without_recording_an_agent_error(env):
    """An abandoned conversation's coroutine, closed when collected, is not the agent's GeneratorExit."""
    tb, ctx, _ = env
    ended = []

    class Hung:
        async def step(self, messages):
            await asyncio.Event().wait()

    class Ends:
        def on_end(self, state):
            ended.append(state.trajectory.termination_reason)

    conv = Conversation(Hung(), ScriptedUser(["hi"]), tb, ctx, observers=[Ends()])
    loop = asyncio.new_event_loop()
    coro = conv.arun()
    task = loop.create_task(coro)
    loop.run_until_complete(asyncio.sleep(0.01))  # arun is pending at the agent's step
    loop.close()
    conv.end(TerminationReason.TIMEOUT, "abandoned")  # as the runner ends an abandoned conversation
    coro.close()  # as the garbage collector closes the abandoned task's coroutine
    assert ended == [TerminationReason.TIMEOUT]  # ended once, from outside
    assert conv.state.trajectory.termination_reason == TerminationReason.TIMEOUT
    assert not task.done()
