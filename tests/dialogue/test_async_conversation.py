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
