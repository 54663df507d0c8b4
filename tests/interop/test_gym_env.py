"""The Gymnasium environments tausim/Agent-v0 and tausim/User-v0 (simulator.interop.gym_env)."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import pytest

gymnasium = pytest.importorskip("gymnasium")

import simulator.interop.gym_env as gym_env  # noqa: E402 - registers the environments
from simulator.execution.build import build_runner  # noqa: E402
from simulator.types.messages import Message  # noqa: E402
from simulator.types.spec import RunSpec  # noqa: E402
from simulator.types.tasks import Task  # noqa: E402
from simulator.users import user_factory  # noqa: E402
from simulator.world.domain import get_domain  # noqa: E402
from tests._support.peers import TAU2, needs_tau2  # noqa: E402

DOMAINS = ["retail", "airline", "returns",
           *(pytest.param(name, marks=pytest.mark.skipif(not (TAU2 / name / "tasks.json").is_file(),
                                                         reason=f"tau2-bench {name} data absent ({TAU2 / name})"))
             for name in ("telecom", "mock", "banking_knowledge"))]
"""The built-in domains; telecom, mock and banking_knowledge read tau2-bench's data from the peer folder."""


def first_task(domain: str) -> Task:
    return get_domain(domain).load_tasks(None)[0]


def gold_actions(task: Task) -> list[str]:
    """The task's gold actions as Agent-v0 actions: each agent action a tool call (JSON text); a run of the user's
    own actions (dual control) asked of the user in one message; then a closing message with the required outputs."""
    acts: list[str] = []
    i, gold = 0, task.gold_actions
    while i < len(gold):
        if gold[i].requestor == "user":
            run = []
            while i < len(gold) and gold[i].requestor == "user":
                run.append(gold[i])
                i += 1
            steps = "; ".join(f"{a.name}({', '.join(f'{k}={v!r}' for k, v in a.arguments.items())})" for a in run)
            acts.append(f"Please do this on your side, in order: {steps}.")
        else:
            acts.append(json.dumps({"name": gold[i].name, "arguments": gold[i].arguments}))
            i += 1
    outputs = f" The answer: {', '.join(task.required_outputs)}." if task.required_outputs else ""
    return [*acts, f"Your request has been handled.{outputs}"]


def play(env: Any, actions: Sequence[Any], filler: str) -> tuple[float, bool, bool, dict[str, Any], int]:
    """Step ``actions``, then ``filler`` until the episode ends (at most 40 steps); return the last step's values."""
    steps = 0
    for a in [*actions, *[filler] * 40]:
        _, reward, terminated, truncated, info = env.step(a)
        steps += 1
        if terminated or truncated:
            return reward, terminated, truncated, info, steps
    raise AssertionError("the episode did not end")


@pytest.mark.parametrize("domain", DOMAINS)
def test_agent_env_gold_actions_pass_and_nothing_fails(domain: str) -> None:
    task = first_task(domain)
    assert task.gold_actions, "the test needs a task with gold actions"
    env = gymnasium.make("tausim/Agent-v0", domain=domain, task_id=task.id, user="scripted")
    try:
        obs, info = env.reset(seed=11)
        assert obs  # the user's opening message
        assert info["task_id"] == task.id and info["tools"] and info["policy"]
        reward, terminated, truncated, info, _ = play(env, gold_actions(task), "Is there anything else?")
        assert (reward, terminated, truncated) == (1.0, True, False), info["grade"]
        assert info["passed"] is True and info["grade"]["passed"] is True
        calls = [c.name for c in info["result"].trajectory.tool_calls if c.requestor == "agent"]
        assert calls == [a.name for a in task.gold_actions if a.requestor != "user"]

        env.reset()  # the next episode, on a fresh database: nothing done, nothing passed
        reward, terminated, truncated, info, _ = play(env, [], "Sorry, I cannot do anything for you.")
        assert (reward, info["passed"]) == (0.0, False)
        assert info["result"].trajectory.tool_calls == []
        assert info["grade"]["state"]["passed"] is False or info["grade"]["passed"] is False
    finally:
        env.close()


def test_tool_call_observation_is_the_tools_answer_and_bad_calls_are_tool_errors() -> None:
    task = first_task("retail")
    env = gymnasium.make("tausim/Agent-v0", domain="retail", task_id=task.id)
    try:
        env.reset(seed=0)
        first = task.gold_actions[0]
        obs, reward, terminated, _, info = env.step({"name": first.name, "arguments": first.arguments})
        assert (reward, terminated) == (0.0, False)
        assert info["messages"][0]["role"] == "tool" and info["messages"][0]["content"] == obs
        assert obs == task.user_id  # the lookup by name and zip answers the user's id
        obs, _, terminated, _, _ = env.step('{"name": "no_such_tool", "arguments": {}}')
        assert not terminated and "no_such_tool" in obs
        obs, _, _, _, _ = env.step({"name": first.name, "arguments": "{not json"})
        assert not terminated and obs  # the argument error is shown to the agent, the episode goes on
    finally:
        env.close()


def test_seeded_resets_replay_and_episodes_differ() -> None:
    env = gymnasium.make("tausim/Agent-v0", domain="retail", user="rule")
    try:
        a = env.reset(seed=5)
        b = env.reset()
        c = env.reset(seed=5)
        assert (a[0], a[1]["task_id"], a[1]["seed"]) == (c[0], c[1]["task_id"], c[1]["seed"])
        assert (a[1]["episode"], b[1]["episode"]) == (0, 1)
        assert a[1]["seed"] != b[1]["seed"]
    finally:
        env.close()


@needs_tau2
def test_step_before_reset_and_after_the_end_needs_a_reset() -> None:
    task = first_task("mock")
    env = gymnasium.make("tausim/Agent-v0", domain="mock", task_id=task.id)
    try:
        with pytest.raises(gymnasium.error.ResetNeeded):
            env.step("hello")
        env.reset(seed=1)
        play(env, [], "I cannot help.")
        with pytest.raises(gymnasium.error.ResetNeeded):
            env.step("hello")
    finally:
        env.close()


def test_close_and_reset_end_a_running_episode() -> None:
    task = first_task("retail")
    env = gymnasium.make("tausim/Agent-v0", domain="retail", task_id=task.id)
    env.reset(seed=0)
    first = env.unwrapped._worker
    assert first is not None and first.is_alive()  # waiting for the caller
    env.reset()
    assert not first.is_alive()
    second = env.unwrapped._worker
    env.close()
    assert second is not None and not second.is_alive()
    assert not [t for t in threading.enumerate() if t.name.startswith("tausim-gym-")]


def test_an_idle_caller_ends_the_trial() -> None:
    task = first_task("retail")
    env = gym_env.AgentEnv("retail", task.id, idle_timeout=0.05)
    try:
        env.reset(seed=0)
        env._worker.join(10)
        assert not env._worker.is_alive()
        _, reward, terminated, _, info = env._next()
        assert (reward, terminated, info["termination_reason"]) == (0.0, True, "agent_error")
        assert "idle_timeout" in (info["error"] or "")
    finally:
        env.close()


def test_user_env_with_the_reference_agent_matches_a_run_of_the_same_trial() -> None:
    """The caller plays tausim's rule user through User-v0; the grade equals the runner's own trial (same seed)."""
    task = first_task("retail")
    env = gymnasium.make("tausim/User-v0", domain="retail", task_id=task.id, agent="reference")
    try:
        obs, info = env.reset(seed=4)
        assert obs == "" and info["messages"] == []  # the user speaks first
        runner = env.unwrapped.runner
        ctx = runner.trial_context(task, info["episode"])
        user = user_factory("rule", domain=runner.domain, template=runner.template)(ctx)
        seen: list[Message] = []
        for _ in range(60):
            turn = user.reply(list(seen))
            action = turn.content + (gym_env.STOP_TOKEN if turn.stop else "")
            seen.append(Message(role="user", content=turn.content))
            obs, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
            seen.extend(Message(role=m["role"], content=m["content"]) for m in info["messages"])
        else:
            raise AssertionError("the episode did not end")
        spec = RunSpec(domain="retail", task_ids=[task.id], agent="reference", user="rule", seed=4, preflight=False)
        expected = build_runner(spec).run_trial(task, 0)
        assert expected.passed  # the reference agent solves this task with the rule user
        assert (reward, info["passed"], info["termination_reason"]) == (1.0, True, expected.termination_reason)
        played = [c.name for c in info["result"].trajectory.tool_calls]
        assert played == [c.name for c in expected.trajectory.tool_calls]
    finally:
        env.close()


def test_user_env_stop_and_abandon_tokens() -> None:
    task = first_task("retail")
    env = gymnasium.make("tausim/User-v0", domain="retail", task_id=task.id, agent="reference")
    try:
        env.reset(seed=0)
        obs, reward, terminated, _, info = env.step("Hi, I need help with an order.")
        assert not terminated and obs  # the reference agent answered
        _, reward, terminated, _, info = env.step("Never mind. ###ABANDON###")
        assert (reward, terminated, info["termination_reason"]) == (0.0, True, "user_abandon")
        env.reset()
        _, reward, terminated, _, info = env.step("Thanks, bye ###STOP###")
        assert (terminated, info["termination_reason"]) == (True, "user_stop")
        assert info["result"].trajectory.messages[0].content == "Thanks, bye"
    finally:
        env.close()


def test_parse_tool_call() -> None:
    call = gym_env.parse_tool_call('{"name": "f", "arguments": {"x": 1}}', "c1")
    assert call is not None and (call.name, call.arguments, call.id) == ("f", {"x": 1}, "c1")
    call = gym_env.parse_tool_call({"name": "f", "arguments": '{"x": 2}'}, "c2")
    assert call is not None and call.arguments == {"x": 2}
    call = gym_env.parse_tool_call({"name": "f", "arguments": [1]}, "c3")
    assert call is not None and call.arguments is None and call.raw_arguments == "[1]"
    assert gym_env.parse_tool_call("hello {there}", "c") is None
    assert gym_env.parse_tool_call('{"text": "no name"}', "c") is None
    assert gym_env.parse_tool_call("{broken json}", "c") is None


def test_a_forgotten_env_ends_its_episode_when_collected() -> None:
    import gc

    task = first_task("retail")
    env = gym_env.AgentEnv("retail", task.id)
    env.reset(seed=0)
    worker = env._worker
    assert worker is not None and worker.is_alive()
    del env
    gc.collect()
    worker.join(10)
    assert not worker.is_alive()
