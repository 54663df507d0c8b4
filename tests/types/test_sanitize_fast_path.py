"""The admission's fast path (a turn with nothing to change is returned as it is) never lets a hostile value by.

Each case below is a clean turn with exactly one hostile value in one place; every one must be changed and noted,
so a fast path that skipped any field (or looked only at the first levels of the arguments, or only at ASCII
strings) fails here. The expected changes are the module's rules, worked out by hand per case.
"""

import math

import pytest

from simulator.types.messages import AgentTurn, Message, ToolCall, Usage, UserTurn
from simulator.types.sanitize import (
    ERROR_LIMIT,
    REPLACEMENT,
    admit_agent_turn,
    admit_user_turn,
    plain_agent_turn,
    plain_user_turn,
)

CLEAN_ARGS = {"order_id": "#W1", "items": ["a", "b"], "n": 2, "x": 1.5, "ok": True, "none": None}


def _call(**change):
    fields = {"id": "c1", "name": "get_order_details", "arguments": dict(CLEAN_ARGS)} | change
    return ToolCall(**fields)


def _agent(message=None, usage=None, error=None):
    return AgentTurn(message=message or Message(role="assistant", content="Sure, here it is."),
                     usage=usage or Usage(), error=error)


def test_the_clean_turns_of_these_cases_take_the_fast_path():
    turn = _agent(Message(role="assistant", content="caf\u00e9 \x1b[2J", tool_calls=[_call()]),
                  Usage(prompt_tokens=3, cost_usd=0.25))
    assert admit_agent_turn(turn) == (turn, []) and admit_agent_turn(turn)[0] is turn
    user = UserTurn(content="na\u00efve", tool_calls=[_call()], usage=Usage(cost_usd=None))
    assert admit_user_turn(user)[0] is user and admit_user_turn(user)[1] == []
    assert plain_agent_turn(turn) and plain_user_turn(user)  # the loop skips the admission (and its notes' names)


AGENT_CASES = {
    "content surrogate": (_agent(Message(role="assistant", content="hi \ud83d")),
                          lambda t: t.message.content == f"hi {REPLACEMENT}"),
    "content surrogate after non-ASCII": (_agent(Message(role="assistant", content="caf\u00e9 \udfff")),
                                          lambda t: t.message.content == f"caf\u00e9 {REPLACEMENT}"),
    "message name": (_agent(Message(role="assistant", content="x", name="n\ud800")),
                     lambda t: t.message.name == f"n{REPLACEMENT}"),
    "message tool_call_id": (_agent(Message(role="assistant", content="x", tool_call_id="i\ud800")),
                             lambda t: t.message.tool_call_id == f"i{REPLACEMENT}"),
    "call name": (_agent(Message(role="assistant", tool_calls=[_call(name="get\ud83d")])),
                  lambda t: t.message.tool_calls[0].name == f"get{REPLACEMENT}"),
    "call id": (_agent(Message(role="assistant", tool_calls=[_call(id="c\ud83d")])),
                lambda t: t.message.tool_calls[0].id == f"c{REPLACEMENT}"),
    "raw arguments": (_agent(Message(role="assistant", tool_calls=[_call(arguments=None, raw_arguments="{\ud83d")])),
                      lambda t: t.message.tool_calls[0].raw_arguments == "{" + REPLACEMENT),
    "second call NaN": (_agent(Message(role="assistant", tool_calls=[_call(), _call(arguments={"n": math.nan})])),
                        lambda t: t.message.tool_calls[1].arguments is None),
    "NaN in a list": (_agent(Message(role="assistant", tool_calls=[_call(arguments={"n": [1, 2.0, math.nan]})])),
                      lambda t: t.message.tool_calls[0].arguments is None),
    "infinity in a dict in a list": (
        _agent(Message(role="assistant", tool_calls=[_call(arguments={"a": [{"b": -math.inf}]})])),
        lambda t: t.message.tool_calls[0].arguments is None),
    "NaN top-level value": (_agent(Message(role="assistant", tool_calls=[_call(arguments={"x": math.nan})])),
                            lambda t: t.message.tool_calls[0].arguments is None),
    "surrogate key": (_agent(Message(role="assistant", tool_calls=[_call(arguments={"k\udfff": 1})])),
                      lambda t: t.message.tool_calls[0].arguments == {f"k{REPLACEMENT}": 1}),
    "surrogate in a nested list": (
        _agent(Message(role="assistant", tool_calls=[_call(arguments={"k": [["x", "\ud83d"]]})])),
        lambda t: t.message.tool_calls[0].arguments == {"k": [["x", REPLACEMENT]]}),
    "NaN cost": (_agent(usage=Usage(cost_usd=math.nan)), lambda t: t.usage.cost_usd is None),
    "negative cost": (_agent(usage=Usage(cost_usd=-0.5)), lambda t: t.usage.cost_usd is None),
    "huge cost": (_agent(usage=Usage(cost_usd=1e12)), lambda t: t.usage.cost_usd is None),
    "negative tokens": (_agent(usage=Usage(completion_tokens=-3)), lambda t: t.usage.completion_tokens == 0),
    "negative attempts": (_agent(usage=Usage(attempts=-1)), lambda t: t.usage.attempts == 0),
    "tokens past a store's INTEGER": (_agent(usage=Usage(prompt_tokens=2**63, completion_tokens=5)),
                                      lambda t: (t.usage.prompt_tokens, t.usage.completion_tokens) == (0, 5)),
    "attempts one past the limit": (_agent(usage=Usage(attempts=10**12 + 1)), lambda t: t.usage.attempts == 0),
}


@pytest.mark.parametrize("case", AGENT_CASES)
def test_one_hostile_value_in_an_agent_turn_takes_the_full_admission(case):
    turn, check = AGENT_CASES[case]
    assert not plain_agent_turn(turn)  # the loop admits it
    out, notes = admit_agent_turn(turn, "agent step 1")
    assert out is not turn and check(out), out
    assert notes and all(n.startswith("agent step 1: ") for n in notes)
    out.model_dump_json().encode("utf-8")


@pytest.mark.parametrize("error, expected", [
    ("boom \ud83d", f"boom {REPLACEMENT}"),
    ("x" * (ERROR_LIMIT + 1000), None),
])
def test_an_agent_error_is_always_admitted(error, expected):
    assert not plain_agent_turn(_agent(error=error))
    out, _ = admit_agent_turn(_agent(error=error))
    if expected is not None:
        assert out.error == expected
    else:
        assert out.error is not None and "[... 1,000 characters cut ...]" in out.error


USER_CASES = {
    "content surrogate": (UserTurn(content="yes \ud83d"), lambda t: t.content == f"yes {REPLACEMENT}"),
    "call NaN": (UserTurn(content="", tool_calls=[_call(arguments={"v": [math.inf]})]),
                 lambda t: t.tool_calls[0].arguments is None),
    "call name surrogate": (UserTurn(content="", tool_calls=[_call(name="toggle\udfff")]),
                            lambda t: t.tool_calls[0].name == f"toggle{REPLACEMENT}"),
    "cost infinity": (UserTurn(content="ok", usage=Usage(cost_usd=math.inf)), lambda t: t.usage.cost_usd is None),
    "negative calls": (UserTurn(content="ok", usage=Usage(calls=-2)), lambda t: t.usage.calls == 0),
    "calls past a store's INTEGER": (UserTurn(content="ok", usage=Usage(calls=2**64)), lambda t: t.usage.calls == 0),
    "error surrogate": (UserTurn(content="", error="down \ud800"), lambda t: t.error == f"down {REPLACEMENT}"),
}


@pytest.mark.parametrize("case", USER_CASES)
def test_one_hostile_value_in_a_user_turn_takes_the_full_admission(case):
    turn, check = USER_CASES[case]
    assert not plain_user_turn(turn)  # the loop admits it
    out, _ = admit_user_turn(turn, "user turn 2")
    assert out is not turn and check(out), out
    out.model_dump_json().encode("utf-8")
