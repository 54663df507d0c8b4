"""``openai-agents:module:factory``: an OpenAI Agents SDK agent, its tool calls run and recorded by tausim.

The SDK agent's model is an ``OpenAIChatCompletionsModel`` on the loopback scripted server (127.0.0.1 only); the
SDK's tracing export is off.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("agents")

from agents import Agent, OpenAIChatCompletionsModel, set_tracing_disabled  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from simulator.agents.openai_agents import build_openai_agents, to_response_items  # noqa: E402
from simulator.interop.loopback import openai_server, oracle_script  # noqa: E402
from simulator.types.messages import Message, ToolCall  # noqa: E402
from tests._support.adapter_runs import assert_same_as_oracle, retail_task, run_task  # noqa: E402

set_tracing_disabled(True)


def make_agent(policy: str) -> Agent:
    """The factory under test: a plain SDK agent on the loopback model (its URL from the environment)."""
    client = AsyncOpenAI(base_url=os.environ["TAUSIM_TEST_MODEL_URL"], api_key="test", max_retries=0)
    return Agent(name="support", instructions=policy,
                 model=OpenAIChatCompletionsModel(model="sdk", openai_client=client))


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def test_an_sdk_agent_replaying_the_gold_actions_passes_like_the_oracle(monkeypatch: pytest.MonkeyPatch) -> None:
    oracle = run_task()
    with openai_server({"sdk": oracle_script(retail_task())}) as server:
        monkeypatch.setenv("TAUSIM_TEST_MODEL_URL", server.api_base)
        trial = run_task(build_openai_agents("tests.agents.test_agent_openai_agents:make_agent", step_timeout=20))
        requests = server.requests["sdk"]
    assert_same_as_oracle(trial, oracle)
    first = requests[0]
    assert first["messages"][0]["role"] == "system" and "policy" in first["messages"][0]["content"].lower()
    assert {t["function"]["name"] for t in first["tools"]} >= {a.name for a in retail_task().gold_actions}
    # the second request carries the first call's result as tausim produced it
    assert requests[1]["messages"][-1]["role"] == "tool"
    assert requests[1]["messages"][-1]["content"] == trial.trajectory.tool_calls[0].content
    assert trial.trajectory.agent_usage.calls == len(requests)


def test_parallel_calls_are_one_step(monkeypatch: pytest.MonkeyPatch) -> None:
    oracle = run_task()
    script = oracle_script(retail_task())
    a, b = script[0]["tool_calls"][0], script[1]["tool_calls"][0]  # two reads, independent in the script
    with openai_server({"sdk": [{"tool_calls": [a, b]}, *script[2:]]}) as server:
        monkeypatch.setenv("TAUSIM_TEST_MODEL_URL", server.api_base)
        trial = run_task(build_openai_agents("tests.agents.test_agent_openai_agents:make_agent", step_timeout=20))
        second = server.requests["sdk"][1]["messages"]
    assert_same_as_oracle(trial, oracle)
    both = [m for m in trial.trajectory.messages if m.role == "assistant" and len(m.tool_calls) == 2]
    assert len(both) == 1 and [c.id for c in both[0].tool_calls] == [a[0], b[0]]
    assert [m["role"] for m in second[-2:]] == ["tool", "tool"]


def test_a_failing_model_or_an_unknown_tool_ends_the_trial(monkeypatch: pytest.MonkeyPatch) -> None:
    unknown = {"tool_calls": [("u1", "no_such_tool", "{}")]}
    with openai_server({"sdk": [unknown]}) as server:
        monkeypatch.setenv("TAUSIM_TEST_MODEL_URL", server.api_base)
        trial = run_task(build_openai_agents("tests.agents.test_agent_openai_agents:make_agent", step_timeout=20))
    assert trial.termination_reason == "agent_error" and "no_such_tool" in (trial.trajectory.error or "")
    with openai_server({"sdk": [{"status": 500}]}) as server:
        monkeypatch.setenv("TAUSIM_TEST_MODEL_URL", server.api_base)
        trial = run_task(build_openai_agents("tests.agents.test_agent_openai_agents:make_agent", step_timeout=20))
    assert trial.termination_reason == "infra_error" and "openai-agents" in (trial.trajectory.error or "")


def test_conversation_to_sdk_items() -> None:
    messages = [Message(role="user", content="hi"),
                Message(role="assistant", tool_calls=[ToolCall(id="c1", name="f", arguments={"a": 1})]),
                Message(role="tool", tool_call_id="c1", name="f", content="ok"),
                Message(role="assistant", content="done")]
    assert to_response_items(messages) == [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"role": "assistant", "content": "done"}]


def test_a_bad_factory_reference_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="openai-agents:package.module:factory"):
        build_openai_agents("nomodule")


def test_a_model_that_does_not_answer_in_time_ends_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    with openai_server({"sdk": [{"slow": 4, "then": "late"}]}) as server:
        monkeypatch.setenv("TAUSIM_TEST_MODEL_URL", server.api_base)
        t0 = time.monotonic()
        trial = run_task(build_openai_agents("tests.agents.test_agent_openai_agents:make_agent", step_timeout=1))
        assert time.monotonic() - t0 < 4
    assert trial.termination_reason == "agent_error" and "in 1 s" in (trial.trajectory.error or "")
