"""Tests of LiteLLMAgent, offline: a scripted in-process litellm provider records what the model received."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from simulator.agents.litellm_agent import DEFAULT_AGENT_INSTRUCTION, LiteLLMAgent, litellm_agent_factory
from simulator.types.messages import AgentTurn, Message, ToolCall
from simulator.types.protocols import Agent, TrialContext
from simulator.types.tasks import Action, Task, UserScenario
from tests._support.fake_llm import register, tool_calls_response

PROVIDER = "tausimfakeagent"
MODEL = f"{PROVIDER}/agent-model"
POLICY = "# Retail policy\nAuthenticate the user before any change."
TOOLS = [
    {"type": "function", "function": {"name": "get_order_details", "description": "Get an order.",
                                      "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                                     "required": ["order_id"]}}},
    {"type": "function", "function": {"name": "cancel_pending_order", "description": "Cancel.",
                                      "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                                     "required": ["order_id"]}}},
]
NO_WAIT: dict[str, Any] = {"wait_initial": 0.0, "wait_max": 0.0}


@pytest.fixture
def fake(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Register a scripted provider: items are text, a ModelResponse, or an exception to raise."""
    return lambda script: register(monkeypatch, litellm, {PROVIDER: script})[PROVIDER]


SECRET_ORDER = "#W8675309"
SECRET_OUTPUT = "4242.17"


def make_ctx(seed: int = 12345) -> TrialContext:
    task = Task(
        id="t1", user_id="yusuf_rossi_9620",
        scenario=UserScenario(instructions="You want to cancel an order.", known_info={"name": "Yusuf Rossi"}),
        gold_actions=[Action(name="cancel_pending_order", arguments={"order_id": SECRET_ORDER})],
        required_outputs=[SECRET_OUTPUT],
    )
    return TrialContext(task=task, tools=TOOLS, policy=POLICY, seed=seed,
                        rng=np.random.Generator(np.random.PCG64(seed)), domain="retail")


def test_is_an_agent() -> None:
    agent = litellm_agent_factory(MODEL)(make_ctx())
    assert isinstance(agent, Agent)
    assert agent.model == MODEL


def test_request_has_policy_tools_and_conversation(litellm: Any, fake: Any) -> None:
    provider = fake(["Hello, how can I help?"])
    agent = litellm_agent_factory(MODEL, **NO_WAIT)(make_ctx())
    turn = agent.step([Message(role="user", content="Hi, I need help.")])
    assert isinstance(turn, AgentTurn) and turn.error is None
    assert turn.message == Message(role="assistant", content="Hello, how can I help?")
    sent = provider.calls[0]
    assert sent["messages"] == [
        {"role": "system", "content": f"{POLICY}\n\n{DEFAULT_AGENT_INSTRUCTION}"},
        {"role": "user", "content": "Hi, I need help."},
    ]
    assert [t["function"]["name"] for t in sent["optional_params"]["tools"]] == [
        "get_order_details", "cancel_pending_order"]


def test_agent_prompt_has_no_gold_or_required_outputs(litellm: Any, fake: Any) -> None:
    provider = fake(["ok"])
    litellm_agent_factory(MODEL, **NO_WAIT)(make_ctx()).step([Message(role="user", content="hi")])
    dumped = json.dumps(provider.calls[0]["messages"])
    assert SECRET_ORDER not in dumped and SECRET_OUTPUT not in dumped


def test_two_tool_calls_in_one_message_with_usage(litellm: Any, fake: Any) -> None:
    fake([tool_calls_response(litellm, [("c1", "get_order_details", '{"order_id": "#W1"}'),
                                        ("c2", "get_order_details", '{"order_id": "#W2"}')],
                                   prompt_tokens=40, completion_tokens=9)])
    turn = litellm_agent_factory(MODEL, **NO_WAIT)(make_ctx()).step([Message(role="user", content="two orders")])
    assert turn.error is None
    assert [(c.id, c.name, c.arguments) for c in turn.message.tool_calls] == [
        ("c1", "get_order_details", {"order_id": "#W1"}), ("c2", "get_order_details", {"order_id": "#W2"})]
    assert (turn.usage.prompt_tokens, turn.usage.completion_tokens, turn.usage.calls) == (40, 9, 1)
    assert turn.usage.cost_usd is None  # the fake provider's model has no price


def test_tool_results_paired_by_tool_call_id(litellm: Any, fake: Any) -> None:
    provider = fake(["Both orders are pending."])
    history = [
        Message(role="user", content="check #W1 and #W2"),
        Message(role="assistant", content=None, tool_calls=[
            ToolCall(id="c1", name="get_order_details", arguments={"order_id": "#W1"}),
            ToolCall(id="c2", name="get_order_details", arguments=None, raw_arguments="{not json"),
        ]),
        Message(role="tool", tool_call_id="c1", name="get_order_details", content='{"status": "pending"}'),
        Message(role="tool", tool_call_id="c2", name="get_order_details", content="Error: invalid JSON"),
    ]
    agent = litellm_agent_factory(MODEL, **NO_WAIT)(make_ctx())
    turn = agent.step(history)
    assert turn.message.content == "Both orders are pending."
    sent = provider.calls[0]["messages"][1:]
    assert sent[0] == {"role": "user", "content": "check #W1 and #W2"}
    assert sent[1]["role"] == "assistant"
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in sent[1]["tool_calls"]] == [
        ("c1", "get_order_details", '{"order_id": "#W1"}'), ("c2", "get_order_details", "{not json")]
    assert sent[2] == {"role": "tool", "tool_call_id": "c1", "name": "get_order_details",
                       "content": '{"status": "pending"}'}
    assert sent[3] == {"role": "tool", "tool_call_id": "c2", "name": "get_order_details",
                       "content": "Error: invalid JSON"}
    # the orchestrator's own list was not modified
    assert history[1].tool_calls[1].raw_arguments == "{not json"


def test_tool_message_without_name_sends_no_null_name(litellm: Any, fake: Any) -> None:
    provider = fake(["done"])
    history = [
        Message(role="user", content="x"),
        Message(role="assistant", tool_calls=[ToolCall(id="c9", name="get_order_details", arguments={})]),
        Message(role="tool", tool_call_id="c9", content="result"),
    ]
    agent = litellm_agent_factory(MODEL, **NO_WAIT)(make_ctx())
    assert agent.build_request(history)[-1] == {"role": "tool", "tool_call_id": "c9", "content": "result"}
    agent.step(history)
    assert provider.calls[0]["messages"][-1] == {"role": "tool", "tool_call_id": "c9", "content": "result"}


def test_default_temperature_and_trial_seed_reach_provider(litellm: Any, fake: Any) -> None:
    provider = fake(["a", "b"])
    factory = litellm_agent_factory(MODEL, **NO_WAIT)
    factory(make_ctx(seed=2**40 + 17)).step([Message(role="user", content="hi")])
    factory(make_ctx(seed=99)).step([Message(role="user", content="hi")])
    assert provider.calls[0]["optional_params"]["temperature"] == 0.0
    assert provider.calls[0]["optional_params"]["seed"] == 17  # 2**40 + 17 mod 2**31
    assert provider.calls[1]["optional_params"]["seed"] == 99


def test_explicit_temperature_and_seed_win(litellm: Any, fake: Any) -> None:
    provider = fake(["a"])
    litellm_agent_factory(MODEL, temperature=0.7, seed=3, max_tokens=128, **NO_WAIT)(make_ctx(seed=99)).step(
        [Message(role="user", content="hi")])
    op = provider.calls[0]["optional_params"]
    assert (op["temperature"], op["seed"], op["max_tokens"]) == (0.7, 3, 128)


def test_infra_error_after_retries(litellm: Any, fake: Any) -> None:
    provider = fake([litellm.RateLimitError("rl", PROVIDER, "m") for _ in range(3)])
    turn = litellm_agent_factory(MODEL, max_attempts=3, **NO_WAIT)(make_ctx()).step(
        [Message(role="user", content="hi")])
    assert len(provider.calls) == 3
    assert turn.error_kind == "infra_error"
    assert turn.error is not None and MODEL in turn.error
    assert turn.message.tool_calls == []


@pytest.mark.parametrize("make,kind", [
    (lambda lt: lt.ContextWindowExceededError("too long", "m", PROVIDER), "context_overflow"),
    (lambda lt: lt.AuthenticationError("bad key", PROVIDER, "m"), "setup_error"),  # credentials: the set-up's
    (lambda lt: lt.BadRequestError("bad", "m", PROVIDER), "agent_error"),
])
def test_error_kinds(litellm: Any, fake: Any, make: Any, kind: str) -> None:
    provider = fake([make(litellm), "never"])
    turn = litellm_agent_factory(MODEL, **NO_WAIT)(make_ctx()).step([Message(role="user", content="hi")])
    assert len(provider.calls) == 1
    assert turn.error_kind == kind
    assert turn.error is not None and MODEL in turn.error


def test_mock_response_through_factory_params(litellm: Any) -> None:
    ctx = make_ctx()
    agent = LiteLLMAgent(ctx, litellm_agent_factory("openai/gpt-4o-mini", mock_response="mocked")(ctx).client)
    turn = agent.step([Message(role="user", content="hi")])
    assert turn.message.content == "mocked"
    assert turn.usage.cost_usd is not None and turn.usage.cost_usd > 0
