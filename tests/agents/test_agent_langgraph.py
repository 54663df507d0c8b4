"""``langgraph:module:factory``: a compiled LangGraph graph, its tool calls run and recorded by tausim.

The graph is LangGraph's prebuilt ReAct agent on ``ChatOpenAI`` pointed at the loopback scripted server (127.0.0.1).
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langchain_openai")

from langchain_openai import ChatOpenAI  # noqa: E402

from simulator.agents.langgraph_agent import build_langgraph_agent, to_langchain_messages, trial_tools  # noqa: E402
from simulator.interop.loopback import openai_server, oracle_script  # noqa: E402
from simulator.types.messages import Message, ToolCall  # noqa: E402
from tests._support.adapter_runs import assert_same_as_oracle, retail_task, run_task  # noqa: E402


def make_graph(tools, policy):  # type: ignore[no-untyped-def]
    """The factory under test: the prebuilt ReAct agent on the loopback model (its URL from the environment)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent's deprecation notice in LangGraph 1.x
        from langgraph.prebuilt import create_react_agent

        model = ChatOpenAI(model="lg", base_url=os.environ["TAUSIM_TEST_MODEL_URL"], api_key="test", timeout=10,
                           max_retries=0)
        return create_react_agent(model, tools, prompt=policy)


def make_graph_without_policy(tools):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        model = ChatOpenAI(model="lg", base_url=os.environ["TAUSIM_TEST_MODEL_URL"], api_key="test", timeout=10,
                           max_retries=0)
        return create_react_agent(model, tools)


STALL = threading.Event()
"""Released by the stall test once its trial has ended: until then the stalling graph's model call hangs."""
STALLED: dict[str, Any] = {}
"""What the stalling graph saw: ``timeout`` (the factory's), ``returned`` (its model call came back)."""


def stalling_graph(tools, timeout):  # type: ignore[no-untyped-def]
    """A graph whose one node is a model call that hangs until the test releases it (the first call, at most 10 s)."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph

    STALLED["timeout"] = timeout

    def model(state: MessagesState) -> dict[str, Any]:
        if not STALLED.get("returned"):
            STALL.wait(10)
            STALLED["returned"] = True
        return {"messages": [AIMessage(content="late")]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_edge(START, "model")
    return graph.compile()


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize("factory", ["make_graph", "make_graph_without_policy"])
def test_a_graph_replaying_the_gold_actions_passes_like_the_oracle(monkeypatch: pytest.MonkeyPatch,
                                                                    factory: str) -> None:
    oracle = run_task()
    with openai_server({"lg": oracle_script(retail_task())}) as server:
        monkeypatch.setenv("TAUSIM_TEST_MODEL_URL", server.api_base)
        trial = run_task(build_langgraph_agent(f"tests.agents.test_agent_langgraph:{factory}"))
        requests = server.requests["lg"]
    assert_same_as_oracle(trial, oracle)
    first = requests[0]
    assert first["messages"][0]["role"] == "system" and "policy" in first["messages"][0]["content"].lower()
    assert {t["function"]["name"] for t in first["tools"]} >= {a.name for a in retail_task().gold_actions}
    assert requests[1]["messages"][-1]["role"] == "tool"
    assert requests[1]["messages"][-1]["content"] == trial.trajectory.tool_calls[0].content
    assert trial.trajectory.agent_usage.calls == len(requests)


def test_parallel_calls_are_one_step_and_a_failing_model_ends_the_trial(monkeypatch: pytest.MonkeyPatch) -> None:
    oracle = run_task()
    script = oracle_script(retail_task())
    a, b = script[0]["tool_calls"][0], script[1]["tool_calls"][0]
    with openai_server({"lg": [{"tool_calls": [a, b]}, *script[2:]]}) as server:
        monkeypatch.setenv("TAUSIM_TEST_MODEL_URL", server.api_base)
        trial = run_task(build_langgraph_agent("tests.agents.test_agent_langgraph:make_graph"))
    assert_same_as_oracle(trial, oracle)
    both = [m for m in trial.trajectory.messages if m.role == "assistant" and len(m.tool_calls) == 2]
    assert len(both) == 1 and [c.id for c in both[0].tool_calls] == [a[0], b[0]]
    with openai_server({"lg": [{"status": 500}]}) as server:
        monkeypatch.setenv("TAUSIM_TEST_MODEL_URL", server.api_base)
        trial = run_task(build_langgraph_agent("tests.agents.test_agent_langgraph:make_graph"))
    assert trial.termination_reason == "infra_error" and "langgraph" in (trial.trajectory.error or "")


def test_conversation_and_tools_to_langchain() -> None:
    messages = [Message(role="user", content="hi"),
                Message(role="assistant", tool_calls=[ToolCall(id="c1", name="f", arguments={"a": 1}),
                                                      ToolCall(id="c2", name="f", raw_arguments="{oops")]),
                Message(role="tool", tool_call_id="c1", name="f", content="ok")]
    out = to_langchain_messages(messages, "policy")
    assert [m.type for m in out] == ["system", "human", "ai", "tool"]
    assert out[2].tool_calls[0]["args"] == {"a": 1} and out[2].invalid_tool_calls[0]["args"] == "{oops"
    tools = trial_tools([{"type": "function", "function": {"name": "f", "description": "F.",
                                                          "parameters": {"type": "object", "properties": {}}}}])
    assert tools[0].name == "f" and "tausim" in tools[0].invoke({"type": "tool_call", "id": "x", "name": "f",
                                                                 "args": {}}).content
    with pytest.raises(ValueError, match="langgraph:package.module:factory"):
        build_langgraph_agent("nomodule")


def test_a_stalled_graph_ends_the_trial_at_the_request_timeout() -> None:
    """The graph used to run in the trial's thread with no bound: a model call that hangs held the trial until the
    model's own client gave up (or forever). Now --request-timeout bounds each step's wait, as for openai-agents."""
    import tests.agents.test_agent_langgraph as lg  # the module the factory reference imports (pytest's may differ)
    from simulator.execution.build import build_runner
    from simulator.types.spec import RunSpec
    from tests._support.adapter_runs import TASK_ID

    lg.STALL.clear()
    lg.STALLED.clear()
    runner = build_runner(RunSpec(domain="retail", agent="langgraph:tests.agents.test_agent_langgraph:stalling_graph",
                                  user="rule", task_ids=[TASK_ID], trials=1, seed=5, preflight=False,
                                  request_timeout=0.5))
    try:
        trial = runner.run().trials[0]
        returned = lg.STALLED.get("returned", False)  # read before the release: the model call still hangs
    finally:
        lg.STALL.set()
    assert not returned, "the trial waited for the stalled model call"
    assert lg.STALLED["timeout"] == 0.5  # the factory may take the run's request timeout for its model client
    assert trial.termination_reason == "agent_error", trial.trajectory.error
    assert "no tool call or answer from the graph in 0.5 s" in (trial.trajectory.error or "")
