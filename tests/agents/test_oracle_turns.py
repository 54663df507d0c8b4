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
