"""The oracle's turns are the instances the record constructors make, each owning its arguments."""

from __future__ import annotations

from simulator.agents import OracleAgent
from simulator.types.messages import AgentTurn, Message, ToolCall
from simulator.types.protocols import TrialContext
from simulator.types.tasks import Action, Task, UserScenario


def test_the_oracles_turns_are_the_constructors_instances():
    gold = [Action(name="find", arguments={"k": "v", "items": [1, 2]}), Action(name="cancel", arguments={})]
    task = Task(id="t", scenario=UserScenario(instructions="", opening="hi"), gold_actions=gold,
                required_outputs=["42"])
    agent = OracleAgent(TrialContext(task=task, tools=[], policy="", seed=0, rng=None, domain="d"))
    turns = [agent.step([]) for _ in range(3)]
    expected = [
        AgentTurn(message=Message(role="assistant", tool_calls=[ToolCall(id="oracle_0", name="find",
                                                                         arguments={"k": "v", "items": [1, 2]})])),
        AgentTurn(message=Message(role="assistant", tool_calls=[ToolCall(id="oracle_1", name="cancel",
                                                                         arguments={})])),
        AgentTurn(message=Message(role="assistant", content="Your request has been handled. The answer: 42.")),
    ]
    assert turns == expected
    for got, want in zip(turns, expected, strict=True):
        assert got.model_fields_set == want.model_fields_set == {"message"}
        assert got.message.model_fields_set == want.message.model_fields_set
        assert got.usage.model_fields_set == set() and got.model_dump_json() == want.model_dump_json()
        for c, w in zip(got.message.tool_calls, want.message.tool_calls, strict=True):
            assert c.model_fields_set == w.model_fields_set == {"id", "name", "arguments"}
    first = turns[0].message.tool_calls[0].arguments
    assert first is not gold[0].arguments  # the call owns its arguments: changing them leaves the task's as they are
    first["k"] = "changed"
    assert gold[0].arguments["k"] == "v" and agent.step([]).message.content.endswith("42. Is there anything else "
                                                                                    "I can help with?")


def test_hostile_task_values_reach_the_record_sanitized(tmp_path):
    """The oracle's turns are built without validation, but the loop still admits them: a lone surrogate in a tool
    name and in an output is replaced, a NaN argument refuses the call, a terminal escape stays data in the record."""
    from simulator.dialogue.conversation import Conversation
    from simulator.users import ScriptedUser
    from tests._support.convo import bank_trial

    gold = [Action(name="get_balance", arguments={"account_id": "A1", "x": float("nan")}),
            Action(name="no\ud800pe", arguments={"k": "\x1b[2J"})]
    task = Task(id="t", scenario=UserScenario(instructions="", opening="hi"), gold_actions=gold,
                required_outputs=["4\ud8002 \x1b[31m"])
    agent = OracleAgent(TrialContext(task=task, tools=[], policy="", seed=0, rng=None, domain="d"))
    with bank_trial(tmp_path / "d") as (tb, ctx, _t):
        traj = Conversation(agent, ScriptedUser(["hi"]), tb, ctx).run()
    first, second = traj.tool_calls
    assert first.arguments is None and first.status == "invalid_arguments" and "NaN" in (first.raw_arguments or "")
    assert second.name == "no\ufffdpe" and second.status == "unknown_tool" and second.arguments == {"k": "\x1b[2J"}
    closing = [m.content for m in traj.messages if m.role == "assistant" and m.content]
    assert closing == ["Your request has been handled. The answer: 4\ufffd2 \x1b[31m."]
    assert any("non-finite" in n for n in traj.notes) and any("surrogate" in n for n in traj.notes)
    traj.model_dump_json()  # storable: no lone surrogate left
