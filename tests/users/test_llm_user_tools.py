"""The LLM user calls its own tools (dual control), offline: a scripted litellm provider plays the user's model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simulator import Runner, RunSpec, get_domain
from simulator.agents import OracleAgent
from simulator.dialogue.conversation import Conversation
from simulator.dialogue.observers import DualControlSync
from simulator.types.trajectory import Limits
from simulator.users.llm_user import llm_user_factory
from simulator.world.dual import syncer
from simulator.world.replay import prepare_trial
from simulator.world.tau2_tasks import parse_tau2_tasks
from simulator.world.tools import ToolContext
from tests._support.fake_llm import register, tool_calls_response

TAU2 = Path(__file__).resolve().parents[2] / ".." / "shared" / "peers" / "tau2-bench"
PROVIDER = "tausimfakephoneuser"
MODEL = f"{PROVIDER}/user-model"
NO_WAIT: dict[str, Any] = {"wait_initial": 0.0, "wait_max": 0.0}


@pytest.fixture(scope="module")
def telecom() -> Any:
    if not (TAU2 / "telecom" / "db.toml").exists():
        pytest.skip(f"tau2-bench data not found at {TAU2}")
    return get_domain("telecom")


@pytest.fixture(scope="module")
def roaming_task(telecom: Any) -> Any:
    """The first telecom task: abroad with roaming off on the phone; its one gold action is the user's
    ``toggle_roaming``; graded by env assertions (mobile data works, the speed test says excellent)."""
    raw = json.loads((TAU2 / "telecom" / "tasks.json").read_text(encoding="utf-8"))[:1]
    task = parse_tau2_tasks(raw, "telecom/tasks.json")[0]
    assert [(a.requestor, a.name) for a in task.gold_actions] == [("user", "toggle_roaming")]
    return task


def _script(litellm: Any) -> list[Any]:
    return [
        "My mobile data is not working at all.",  # opening
        tool_calls_response(litellm, [("u1", "toggle_roaming", "{}")]),  # asked to toggle roaming
        "Done: data roaming is on now.",
        "Great, thanks. ###STOP###",
    ]


def test_llm_user_calls_a_phone_tool_and_the_trial_passes(litellm: Any, monkeypatch: pytest.MonkeyPatch,
                                                           telecom: Any, roaming_task: Any) -> None:
    fake = register(monkeypatch, litellm, {PROVIDER: _script(litellm)})[PROVIDER]
    runner = Runner(telecom, telecom.template(), [roaming_task], OracleAgent, llm_user_factory(MODEL, **NO_WAIT),
                    RunSpec(domain="telecom", concurrency=1))
    trial = runner.run().trials[0]
    traj = trial.trajectory
    assert trial.passed, (trial.termination_reason, trial.grade.failure if trial.grade else trial.error)
    assert str(traj.termination_reason) == "user_stop"
    user_calls = [c for c in traj.tool_calls if c.requestor == "user"]
    assert [(c.name, c.status) for c in user_calls] == [("toggle_roaming", "ok")]
    assert "Data Roaming is now ON" in user_calls[0].content
    # the tools went to the model: every user tool of the domain (the task names no subset), and the call's
    # result came back to it as a tool message answering its call
    sent = fake.calls[2]
    tools = sent["optional_params"].get("tools") or []
    assert sorted(t["function"]["name"] for t in tools) == sorted(telecom.user_toolbox().specs)
    tail = sent["messages"][-2:]
    assert tail[0]["role"] == "assistant" and tail[0]["tool_calls"][0]["function"]["name"] == "toggle_roaming"
    assert tail[1]["role"] == "tool" and tail[1]["tool_call_id"] == "u1"
    assert "Data Roaming is now ON" in str(tail[1]["content"])
    # the agent heard the user's words, never the call or its result
    agent_texts = [m.content for m in traj.messages if m.role == "user" and not m.tool_calls]
    assert agent_texts == ["My mobile data is not working at all.", "Done: data roaming is on now.",
                           "Great, thanks."]


def test_task_subset_of_user_tools_and_database_change(litellm: Any, monkeypatch: pytest.MonkeyPatch,
                                                       telecom: Any, roaming_task: Any) -> None:
    fake = register(monkeypatch, litellm, {PROVIDER: _script(litellm)})[PROVIDER]
    task = roaming_task.model_copy(update={"user_tools": ["toggle_roaming", "run_speed_test"]})
    runner = Runner(telecom, telecom.template(), [task], OracleAgent, llm_user_factory(MODEL, **NO_WAIT),
                    RunSpec(domain="telecom", concurrency=1))
    ctx = runner.trial_context(task, 0)
    assert sorted(t["function"]["name"] for t in ctx.user_tools) == ["run_speed_test", "toggle_roaming"]
    user = llm_user_factory(MODEL, **NO_WAIT)(ctx)
    with telecom.template().trial() as db:
        prepare_trial(telecom, db, task)
        before = telecom.dump(db)["device"]["1"]["roaming_enabled"]
        tool_ctx = ToolContext(db.session, db.options)
        user_ctx = ToolContext(db.session, db.options)
        user_ctx.source = "user"
        traj = Conversation(OracleAgent(ctx), user, telecom.toolbox(), tool_ctx,
                                Limits(greeting="Hi! How can I help you today?"),
                                user_toolbox=telecom.user_toolbox(), user_ctx=user_ctx,
                                observers=[DualControlSync(syncer(telecom, tool_ctx))]).run()
        after = telecom.dump(db)["device"]["1"]["roaming_enabled"]
    assert (before, after) == (False, True)
    assert [(c.requestor, c.name) for c in traj.tool_calls] == [("user", "toggle_roaming")]
    assert sorted(t["function"]["name"] for t in fake.calls[1]["optional_params"]["tools"]) == [
        "run_speed_test", "toggle_roaming"]


def test_a_user_without_tools_sends_none(litellm: Any, monkeypatch: pytest.MonkeyPatch, telecom: Any,
                                         roaming_task: Any) -> None:
    fake = register(monkeypatch, litellm, {PROVIDER: ["Hello."]})[PROVIDER]
    task = roaming_task.model_copy(update={"user_tools": []})
    runner = Runner(telecom, telecom.template(), [task], OracleAgent, llm_user_factory(MODEL, **NO_WAIT),
                    RunSpec(domain="telecom", concurrency=1))
    user = llm_user_factory(MODEL, **NO_WAIT)(runner.trial_context(task, 0))
    assert user.reply([]).content == "Hello."
    assert not fake.calls[0]["optional_params"].get("tools")
    assert "tools you are given" not in json.dumps(fake.calls[0]["messages"])


def test_leak_guard_on_a_tool_using_user(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from simulator.types.messages import Message, ToolCall
    from simulator.types.protocols import TrialContext
    from simulator.types.tasks import Action, Task, UserScenario

    fake = register(monkeypatch, litellm, {PROVIDER: [
        "My line is L1002 and my customer id is C1001.",  # C1001 was never given to the user: a leak
        "My line is L1002.",  # L1002 it read on its own phone: no leak
    ]})[PROVIDER]
    task = Task(id="t", scenario=UserScenario(instructions="Your phone has no service."),
                gold_actions=[Action(name="resume_line", arguments={"customer_id": "C1001", "line_id": "L1002"})])
    tool = {"type": "function", "function": {"name": "check_sim_status", "description": "",
                                             "parameters": {"type": "object", "properties": {}}}}
    ctx = TrialContext(task=task, tools=[], policy="", seed=1, rng=np.random.Generator(np.random.PCG64(1)),
                       domain="telecom", user_tools=[tool])
    user = llm_user_factory(MODEL, **NO_WAIT)(ctx)
    view = [Message(role="assistant", content="Which line is it? Check your SIM, please."),
            Message(role="user", tool_calls=[ToolCall(id="u1", name="check_sim_status", arguments={})],
                    requestor="user"),
            Message(role="tool", content="SIM active, line L1002", tool_call_id="u1", name="check_sim_status",
                    requestor="user")]
    turn = user.reply(view)
    assert turn.content == "My line is L1002."
    assert [(x["origin"], x["action"]) for x in user.metadata["leaks"]] == [("resume_line.customer_id",
                                                                             "regenerated")]
    assert len(fake.calls) == 2
    # without having read it on its phone, the line id is a secret too
    fake.script.extend(["My line is L1002.", "I don't know my line."])
    other = llm_user_factory(MODEL, **NO_WAIT)(ctx)
    assert other.reply(view[:1]).content == "I don't know my line."
    assert [x["origin"] for x in other.metadata["leaks"]] == ["resume_line.line_id"]
