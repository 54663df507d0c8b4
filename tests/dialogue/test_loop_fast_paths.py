"""The conversation loop's fast paths make the same records as the slow ones and step aside for anything unusual.

- :func:`simulator.types.built.built` makes the same instance as the model's constructor (compared field by field,
  by ``model_fields_set``, dumped and pickled);
- :func:`simulator.dialogue.state.dispatch` builds its records without validation only from values of the exact
  field types: a tool answering with a ``str`` subclass or an ``int`` duration (a custom toolbox) goes through the
  constructors, which convert them, exactly as before;
- trials never share records (a caller changing one trial's records changes no other);
- the progress judge's call key is ``json.dumps(..., sort_keys=True, default=str)``, errors included.
"""

from __future__ import annotations

import datetime
import enum
import json
import math
import pickle
from typing import Any

import pytest

from simulator.dialogue.conversation import Conversation
from simulator.dialogue.signals import _call_key
from simulator.dialogue.state import dispatch
from simulator.types.built import buildable, built
from simulator.types.messages import AgentTurn, Message, ToolCall, Usage, UserTurn
from simulator.types.protocols import TrialContext
from simulator.types.tasks import Action, Task, UserScenario
from simulator.types.trajectory import ToolCallRecord, Trajectory
from simulator.users import ScriptedUser
from simulator.world.tools import CallOutcome
from tests._support.convo import bank_trial


class Color(enum.StrEnum):
    RED = "red"


RECORD = {"step": 3, "call_id": "c1", "name": "transfer", "arguments": {"a": [1, 2.5]}, "raw_arguments": None,
          "kind": "write", "status": "ok", "content": "ok", "duration_s": 0.25, "bug": None, "requestor": "agent",
          "fault": None}


@pytest.mark.parametrize("cls", [ToolCallRecord, Message, ToolCall, AgentTurn, UserTurn, Usage, Trajectory])
def test_the_record_models_can_be_built(cls):
    assert buildable(cls)


@pytest.mark.parametrize("cls, fields, given", [
    (ToolCallRecord, RECORD, None),
    (Message, {"role": "tool", "content": "ok", "tool_calls": [], "tool_call_id": "c1", "name": "transfer",
               "requestor": None}, ("role", "content", "tool_call_id", "name", "requestor")),
])
def test_built_is_the_constructors_instance(cls, fields, given):
    made = built(cls, dict(fields), given)
    expected = cls(**{k: v for k, v in fields.items() if given is None or k in given})
    assert made == expected and made.__dict__ == expected.__dict__
    assert made.model_fields_set == expected.model_fields_set
    assert made.model_dump_json() == expected.model_dump_json()
    assert pickle.loads(pickle.dumps(made)) == expected
    assert made.model_copy(update={"content": "x"}).content == "x" and made.content == "ok"


class OddToolbox:
    """A custom toolbox answering with a str subclass and an int duration (as a user-side function may)."""

    def dispatch(self, ctx: Any, name: str, arguments: Any) -> CallOutcome:
        return CallOutcome(Color.RED, "ok", "read", 0)  # type: ignore[arg-type]


def test_dispatch_converts_odd_outcome_values_as_the_constructors_do(tmp_path):
    with bank_trial(tmp_path / "d") as (_, ctx, _t):
        traj = Trajectory()
        call = ToolCall(id="c1", name="look", arguments={"k": "v"})
        result, _, _, _ = dispatch(OddToolbox(), ctx, call, traj, "agent")  # type: ignore[arg-type]
    record = traj.tool_calls[0]
    assert type(record.content) is str and record.content == "red"
    assert type(result.content) is str and type(record.duration_s) is float and record.duration_s == 0.0
    assert record.model_dump() == ToolCallRecord(
        step=0, call_id="c1", name="look", arguments={"k": "v"}, raw_arguments=None, kind="read", status="ok",
        content="red", duration_s=0.0, bug=None, requestor="agent", fault=None).model_dump()


def test_dispatch_records_own_their_arguments(tmp_path):
    with bank_trial(tmp_path / "d") as (tb, ctx, _t):
        traj = Trajectory()
        call = ToolCall(id="c1", name="get_balance", arguments={"account_id": "A1"})
        result, out, _, _ = dispatch(tb, ctx, call, traj, "user")
    record = traj.tool_calls[0]
    call.arguments["account_id"] = "changed"  # type: ignore[index]
    assert record.arguments == {"account_id": "A1"} and record.requestor == "user"
    assert result.requestor == "user" and result.tool_call_id == "c1" and result.content == out.content
    assert result.model_fields_set == {"role", "content", "tool_call_id", "name", "requestor"}
    assert traj.steps == 1 and traj.messages == [result]


def _ctx(task: Task) -> TrialContext:
    return TrialContext(task=task, tools=[], policy="", seed=0, rng=None, domain="bank")


def _task(amount: int) -> Task:
    return Task(id="t1", scenario=UserScenario(instructions="", opening="move money"),
                gold_actions=[Action(name="transfer", arguments={"src": "A1", "dst": "B2", "amount": amount})],
                required_outputs=[f"{amount} moved"])


def _run(tmp_path, agent, name):
    with bank_trial(tmp_path / name) as (tb, ctx, _t):
        user = ScriptedUser(["move money", "and more?"])
        return Conversation(agent, user, tb, ctx).run().model_dump(exclude={"agent_seconds", "user_seconds",
                                                                            "tool_seconds", "tool_calls"})


KEYED = [
    ["n", {"b": 1, "a": [1, 2.5, -0.0, True, None, "x\u00e9\ud83d"]}],
    ["n", None], ["n", "raw {"], ["n", {1: 2, 3: 3}], ["n", {"x": math.nan, "y": -math.inf}],
    ["n", {"d": datetime.date(2020, 1, 1), "e": Color.RED, "t": (1, 2)}],
    ["caf\u00e9", {"k": {"z": {"y": 1}}}], ["n", {"big": 10**30, "f": 1e300}],
]


@pytest.mark.parametrize("value", KEYED)
def test_the_call_key_is_json_dumps(value):
    assert _call_key(value) == json.dumps(value, sort_keys=True, default=str)


def test_the_call_key_fails_as_json_dumps_does():
    circular: dict[str, Any] = {}
    circular["self"] = circular
    with pytest.raises(ValueError, match="Circular reference"):
        _call_key(["n", circular])
    with pytest.raises(TypeError):
        _call_key(["n", {1: 1, "a": 2}])  # keys that cannot be sorted


def test_trials_never_share_records(tmp_path):
    """A caller changing one trial's records (an on_trial hook redacting arguments) changes no other trial.

    The oracle's and the scripted user's turns were shared by the trials of a task: redacting trial 0's order id
    made trial 2 call the tools with "<redacted>" (fresh-user tour of 2026-12-06).
    """
    import simulator
    from simulator.types.spec import RunSpec

    def redact(trial):
        for m in trial.trajectory.messages:
            for c in m.tool_calls:
                if "order_id" in c.arguments:
                    c.arguments["order_id"] = "<redacted>"
            if m.role == "user":
                m.content = ""

    spec = RunSpec(domain="retail", agent="oracle", user="scripted", trials=3, concurrency=1,
                   task_ids=["cancel-no-longer-needed"], preflight=False)
    result = simulator.run(spec, on_trial=redact)
    assert [t.passed for t in result.trials] == [True, True, True]
    assert all(r.status == "ok" for t in result.trials for r in t.trajectory.tool_calls)
    first, second = (t.trajectory.messages for t in result.trials[:2])
    assert all(a is not b for a, b in zip(first, second, strict=True))


def test_the_loop_marks_the_trajectory_fields_it_writes_as_set(tmp_path):
    """The loop writes the trajectory's counters straight into its fields: its model_fields_set is as if assigned."""
    from simulator.agents import OracleAgent

    with bank_trial(tmp_path / "d") as (tb, ctx, _t):
        traj = Conversation(OracleAgent(_ctx(_task(5))), ScriptedUser(["move money"]), tb, ctx).run()
    assert traj.turns == 2 and traj.steps == 2 and traj.tool_seconds > 0 and traj.agent_seconds > 0
    # every field assigned by a conversation with a tool call, a user line and an agent line (by hand)
    assert traj.model_fields_set == {"turns", "steps", "agent_seconds", "user_seconds", "tool_seconds",
                                     "termination_reason", "error", "agent_metadata", "user_metadata"}


def test_a_zero_usage_turn_is_still_admitted(tmp_path):
    """An agent turn of zero usage takes the loop's quick path, which still refuses what admit_agent_turn refuses:
    a lone surrogate in the text, the tool name or the call id is replaced, a NaN argument refuses the call, a
    terminal escape stays data; an int or negative-zero cost adds as it did (the total becomes that float sum)."""
    from tests.dialogue.test_orchestrator import ListAgent

    class Agent(ListAgent):
        def step(self, messages):
            turn = super().step(messages)
            return turn.model_copy(update={"usage": Usage(cost_usd=self.costs.pop(0))})

    agent = Agent(Message(role="assistant", tool_calls=[ToolCall(id="c\ud800", name="get_balance",
                                                                 arguments={"account_id": "A1", "x": math.nan})]),
                  Message(role="assistant", tool_calls=[ToolCall(id="c2", name="get_bal\udc00ance",
                                                                 arguments={"account_id": "\x1b[2J"})]),
                  Message(role="assistant", content="done \ud83d \x1b[31m"))
    agent.costs = [0.0, -0.0, 0]
    with bank_trial(tmp_path / "d") as (tb, ctx, _t):
        traj = Conversation(agent, ScriptedUser(["hi"]), tb, ctx).run()
    first, second = traj.tool_calls
    assert (first.call_id, first.arguments, first.status) == ("c\ufffd", None, "invalid_arguments")
    assert (second.name, second.arguments, second.status) == ("get_bal\ufffdance", {"account_id": "\x1b[2J"},
                                                              "unknown_tool")
    assert traj.agent_texts() == ["done \ufffd \x1b[31m"]
    assert len(traj.notes) == 4 and traj.agent_usage.cost_usd == 0.0
    traj.model_dump_json()  # storable


@pytest.mark.parametrize("cost, total", [(0.0, 0.0), (-0.0, 0.0), (0, 0.0), (None, None), (0.5, 0.5)])
def test_the_agent_usage_total_is_the_sum_of_the_turns(tmp_path, cost, total):
    from tests.dialogue.test_orchestrator import ListAgent

    class Agent(ListAgent):
        def step(self, messages):
            return AgentTurn(message=super().step(messages).message, usage=Usage.model_construct(
                prompt_tokens=0, completion_tokens=0, cost_usd=cost, calls=0, attempts=0))

    with bank_trial(tmp_path / "d") as (tb, ctx, _t):
        traj = Conversation(Agent(Message(role="assistant", content="ok")), ScriptedUser(["hi"]), tb, ctx).run()
    expected = Usage() + Usage.model_construct(prompt_tokens=0, completion_tokens=0, cost_usd=cost, calls=0,
                                               attempts=0)
    assert traj.agent_usage.cost_usd == total and repr(traj.agent_usage.cost_usd) == repr(expected.cost_usd)


def test_a_users_hostile_turns_are_still_admitted(tmp_path):
    """The loop's quick path for a plain user turn (ASCII text, zero usage) leaves every other turn to
    admit_user_turn: a lone surrogate is replaced, a NaN cost is recorded as unknown, negative tokens as 0; a terminal
    escape is ASCII and stays data."""
    from tests.dialogue.test_orchestrator import ListAgent

    turns = [UserTurn(content="hi \ud800 there"), UserTurn(content="\x1b[2J clear"),
             UserTurn(content="cost", usage=Usage.model_construct(prompt_tokens=-3, completion_tokens=0,
                                                                 cost_usd=math.nan, calls=1, attempts=1)),
             UserTurn(content="bye", stop=True)]

    class User:
        def reply(self, messages):
            return turns.pop(0)

    with bank_trial(tmp_path / "d") as (tb, ctx, _t):
        traj = Conversation(ListAgent(Message(role="assistant", content="ok")), User(), tb, ctx).run()
    said = [m.content for m in traj.messages if m.role == "user"]
    assert said == ["hi \ufffd there", "\x1b[2J clear", "cost", "bye"]
    assert traj.user_usage.cost_usd is None and traj.user_usage.prompt_tokens == 0 and traj.user_usage.calls == 1
    assert len(traj.notes) == 3, traj.notes
    traj.model_dump_json()
