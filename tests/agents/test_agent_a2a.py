"""``a2a:URL`` agents: a remote A2A agent converses over A2A and calls the trial's tools over MCP.

The agents here are served on 127.0.0.1 by the a2a-sdk's own server (:mod:`simulator.interop.a2a_server`); their logic
is scripted: read the trial's MCP URL from the message metadata, call tools there with the ``mcp`` SDK client, reply.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("a2a.client")
pytest.importorskip("mcp")

from a2a.helpers import new_text_message  # noqa: E402
from a2a.server.agent_execution import AgentExecutor  # noqa: E402
from google.protobuf.json_format import MessageToDict  # noqa: E402
from mcp import Client  # noqa: E402

from simulator.agents.a2a_agent import MCP_URL_KEY, build_a2a_agent  # noqa: E402
from simulator.agents.mcp_tools import LoopbackServer, bind_loopback  # noqa: E402
from simulator.errors import SetupError  # noqa: E402
from simulator.interop.a2a_server import a2a_server, agent_card  # noqa: E402
from tests._support.adapter_runs import assert_same_as_oracle, retail_task, run_task  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FAST = {"wait_initial": 0.0, "wait_max": 0.0, "timeout": 30.0}


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


class ScriptedAgent(AgentExecutor):
    """An A2A agent whose first answer in a context makes ``calls`` over the MCP URL of the message's metadata.

    It answers as the oracle does: the first reply after its calls, the further ones for a user who asks again.
    """

    def __init__(self, calls: list[tuple[str, dict[str, Any]]], first: str, later: str) -> None:
        self.calls, self.first, self.later = calls, first, later
        self.done: set[str] = set()
        self.metadata: list[dict[str, Any]] = []
        self.results: list[Any] = []
        self.tools: list[Any] = []

    async def execute(self, context: Any, event_queue: Any) -> None:
        metadata = MessageToDict(context.message.metadata)
        self.metadata.append(metadata)
        text = self.later
        if context.context_id not in self.done:
            self.done.add(context.context_id)
            text = self.first
            if self.calls:
                async with Client(metadata[MCP_URL_KEY]) as mcp:
                    self.tools = (await mcp.list_tools()).tools
                    for name, args in self.calls:
                        self.results.append(await mcp.call_tool(name, args))
        await event_queue.enqueue_event(new_text_message(text, context_id=context.context_id))

    async def cancel(self, context: Any, event_queue: Any) -> None:
        raise NotImplementedError


def _gold_agent(task: Any) -> ScriptedAgent:
    answer = " The answer: " + ", ".join(task.required_outputs) + "." if task.required_outputs else ""
    calls = [(a.name, dict(a.arguments)) for a in task.gold_actions]
    return ScriptedAgent(calls, "Your request has been handled." + answer,
                         "That has been handled as well." + answer + " Is there anything else I can help with?")


def _agent_tools() -> list[dict[str, Any]]:
    from simulator.execution.build import build_runner
    from simulator.types.spec import RunSpec

    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=["cancel-gift-card-balance"],
                                  preflight=False))
    return runner.trial_context(runner.tasks[0], 0).tools


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_agent_calling_the_gold_actions_over_mcp_passes_like_the_oracle() -> None:
    oracle = run_task()
    task = retail_task()
    agent = _gold_agent(task)
    with a2a_server(agent) as url:
        factory = build_a2a_agent(url, **FAST)
        factory.client.preflight()  # type: ignore[attr-defined]
        trial = run_task(factory)
        factory.client.close()  # type: ignore[attr-defined]
    assert_same_as_oracle(trial, oracle)
    assert [m.content for m in trial.trajectory.messages if m.role != "tool"] == \
        [m.content for m in oracle.trajectory.messages if m.role != "tool"]  # the same conversation, word for word
    assert all(not r.is_error for r in agent.results) and len(agent.results) == len(task.gold_actions)
    schemas = {s["function"]["name"]: s["function"] for s in _agent_tools()}  # what a native agent is given
    assert sorted(t.name for t in agent.tools) == sorted(schemas)
    assert all((t.description, t.input_schema) == (schemas[t.name]["description"], schemas[t.name]["parameters"])
               for t in agent.tools)
    first = agent.metadata[0]  # every message: the trial's MCP URL, the policy, the domain and the seed
    assert first[MCP_URL_KEY].startswith("http://127.0.0.1:") and "/mcp?trial=" in first[MCP_URL_KEY]
    assert first["tausim"]["domain"] == "retail" and first["tausim"]["policy"].strip()
    assert first["tausim"]["seed"] == str(trial.seed)  # exact: a string, not a double
    assert len({m[MCP_URL_KEY] for m in agent.metadata}) == 1 and len(agent.metadata) >= 2


def test_concurrent_trials_share_one_mcp_server_each_with_its_own_url_and_database() -> None:
    from simulator.execution.build import build_runner
    from simulator.types.spec import RunSpec
    from tests._support.adapter_runs import records

    oracle = run_task()
    agent = _gold_agent(retail_task())
    with a2a_server(agent) as url:
        runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[oracle.task_id], trials=4,
                                      concurrency=4, seed=5, preflight=False))
        runner.agent_factory = build_a2a_agent(url, **FAST)
        result = runner.run()
    assert len(result.trials) == 4 and all(t.passed for t in result.trials)
    assert all(records(t) == records(oracle) for t in result.trials)  # no call landed in another trial
    assert len({m[MCP_URL_KEY] for m in agent.metadata}) == 4 and len(agent.done) == 4


def test_a_trial_that_ends_mid_turn_frees_the_agent_s_calls_and_the_run_goes_on() -> None:
    from simulator.execution.build import build_runner
    from simulator.types.spec import RunSpec

    task = retail_task()
    agent = _gold_agent(task)
    with a2a_server(agent) as url:
        runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[task.id], trials=2, max_steps=2,
                                      preflight=False))
        runner.agent_factory = build_a2a_agent(url, call_timeout=20.0, **FAST)
        result = runner.run()
        deadline = time.monotonic() + 15  # the agent goes on after its trial ended: wait for its next call's answer
        while len(agent.results) < 2 * 3 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert [(t.termination_reason, len(t.trajectory.tool_calls)) for t in result.trials] == [("max_steps", 2)] * 2
    # the calls after the cap were answered that the trial had ended (not left to their 20 s timeout)
    late = [r.content[0].text for r in agent.results if r.is_error]
    assert late
    assert all(text in ("Error: the trial has ended; no more tool calls",  # the trial was closed
                        "Error: no open trial at this MCP URL (the trial has ended)") for text in late)  # and gone


def test_an_agent_that_does_nothing_fails_and_bad_calls_are_recorded_as_natively() -> None:
    idle = ScriptedAgent([], "I cannot make any changes right now.", "Still nothing I can do.")
    clumsy = ScriptedAgent([("no_such_tool", {}), ("get_order_details", {})], "Done.", "Done again.")
    with a2a_server(idle) as idle_url, a2a_server(clumsy) as clumsy_url:
        nothing = run_task(build_a2a_agent(idle_url, **FAST))
        bad = run_task(build_a2a_agent(clumsy_url, **FAST))
    assert not nothing.passed and nothing.trajectory.tool_calls == [] and nothing.trajectory.error is None
    assert nothing.grade is not None and nothing.grade.state.passed is False
    assert [(c.name, c.status, c.requestor) for c in bad.trajectory.tool_calls] == \
        [("no_such_tool", "unknown_tool", "agent"), ("get_order_details", "invalid_arguments", "agent")]
    assert [r.is_error for r in clumsy.results] == [True, True]  # the agent saw the errors as MCP errors
    assert all(r.content[0].text.startswith("Error:") for r in clumsy.results)
    assert not bad.passed


def test_an_unreachable_url_fails_preflight_within_5s_naming_it() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    runner = _runner(build_a2a_agent(url))
    from simulator.execution.preflight import preflight

    t0 = time.monotonic()
    with pytest.raises(SetupError) as e:
        preflight(runner)
    assert time.monotonic() - t0 < 5.0
    assert e.value.kind == "server" and url in str(e.value) and "unreachable" in str(e.value)
    assert "\n" not in str(e.value)
    trial = run_task(build_a2a_agent(url, max_attempts=2, wait_initial=0.0, timeout=10.0))  # no pre-flight: each
    assert trial.termination_reason == "infra_error" and not trial.passed  # trial fails, naming the URL
    assert url in (trial.trajectory.error or "") and "unreachable" in (trial.trajectory.error or "")


def test_the_cli_exits_2_from_preflight_naming_an_unreachable_url(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from simulator.cli import app

    url = f"http://127.0.0.1:{_closed_port()}"
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent", f"a2a:{url}", "--user", "rule",
                                   "--task-ids", "cancel-gift-card-balance", "--no-progress",
                                   "--out", str(tmp_path / "run.json")])
    assert res.exit_code == 2, res.output
    assert "set-up error (server)" in res.output and url in res.output


def _runner(factory: Any) -> Any:
    from simulator.execution.build import build_runner
    from simulator.types.spec import RunSpec

    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=["cancel-gift-card-balance"]))
    runner.agent_factory = factory
    return runner


def _misbehaving(answer: Callable[[], Any]) -> Iterator[str]:
    """An endpoint with a valid agent card whose JSON-RPC route answers ``answer()`` (a Starlette response)."""

    async def handle(body: dict[str, Any]) -> Any:
        return answer()

    yield from _endpoint(handle)


def _endpoint(handle: Callable[[dict[str, Any]], Awaitable[Any]]) -> Iterator[str]:
    """An endpoint with a valid agent card whose JSON-RPC route answers ``await handle(request body)``."""
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    sock = bind_loopback(0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = agent_card_to_dict(agent_card(url, "scripted", "answers as scripted"))

    async def card_route(request: Any) -> Any:
        return JSONResponse(card)

    async def rpc(request: Any) -> Any:
        return await handle(await request.json())

    app = Starlette(routes=[Route("/.well-known/agent-card.json", card_route), Route("/", rpc, methods=["POST"])])
    server = LoopbackServer(app, sock).start()
    try:
        yield url
    finally:
        server.stop()


@pytest.mark.parametrize("answer, cause", [
    (lambda: _response(500, "Internal Server Error"), "answered HTTP 500"),
    (lambda: _response(200, "<html>not json</html>"), "not JSON"),
    (lambda: _response(200, '{"jsonrpc": "2.0", "id": "x", "result": {"neither": 1}}'), "misbehaved"),
])
def test_a_misbehaving_endpoint_ends_the_trial_agent_error_and_the_run_goes_on(answer: Any, cause: str) -> None:
    from simulator.execution.build import build_runner
    from simulator.types.spec import RunSpec

    for url in _misbehaving(answer):
        factory = build_a2a_agent(url, max_attempts=2, **FAST)
        factory.client.preflight()  # type: ignore[attr-defined]  # the card is fine: the pre-flight passes
        runner = build_runner(RunSpec(domain="retail", user="rule", trials=2, preflight=False,
                                      task_ids=["cancel-gift-card-balance", "cancel-no-longer-needed"]))
        runner.agent_factory = factory
        result = runner.run()
    assert len(result.trials) == 4  # every planned trial ran and was recorded
    for trial in result.trials:
        assert trial.termination_reason == "agent_error" and not trial.passed
        error = trial.trajectory.error or ""
        assert url in error and cause in error and "\n" not in error


def _response(status: int, body: str) -> Any:
    from starlette.responses import Response

    return Response(body, status_code=status, media_type="application/json")


def test_options_and_spec() -> None:
    with pytest.raises(ValueError, match="http://"):
        build_a2a_agent("127.0.0.1:9999")
    with pytest.raises(ValueError, match="temperature"):
        build_a2a_agent("http://127.0.0.1:9", temperature=0.2)
    factory = build_a2a_agent("http://127.0.0.1:9/.well-known/agent-card.json", timeout=7.0, domain=None, cache=None,
                              max_tokens=None)
    client = factory.client  # type: ignore[attr-defined]
    assert client.url == "http://127.0.0.1:9" and client.card_url.endswith("/.well-known/agent-card.json")
    assert client.timeout == 7.0 and client.model == "a2a"


def test_the_a2a_scheme_is_a_registered_agent_entry_point() -> None:
    from importlib.metadata import entry_points

    found = {ep.name: ep.value for ep in entry_points(group="tausim.agents")}
    assert found.get("a2a") == "simulator.agents.a2a_agent:build_a2a_agent"


def _said(body: dict[str, Any], text: str) -> Any:
    """A JSON-RPC answer to ``body``: an agent message saying ``text``."""
    from starlette.responses import JSONResponse

    return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": {"message": {
        "messageId": "m1", "role": "ROLE_AGENT", "parts": [{"text": text}]}}})


def test_transient_failures_before_any_tool_call_are_retried() -> None:
    answers = [lambda b: _response(503, "busy"), lambda b: _response(502, "gateway"), lambda b: _said(b, "Hello.")]
    seen: list[dict[str, Any]] = []

    async def handle(body: dict[str, Any]) -> Any:
        seen.append(body)
        return answers[min(len(seen), len(answers)) - 1](body)

    for url in _endpoint(handle):
        trial = run_task(build_a2a_agent(url, max_attempts=3, **FAST))
    first = trial.trajectory.messages[1]
    assert (first.role, first.content) == ("assistant", "Hello.") and trial.trajectory.error is None
    assert trial.trajectory.agent_usage.attempts >= 3  # the first message took three requests
    ids = {b["params"]["message"]["messageId"] for b in seen[:3]}
    assert len(ids) == 1  # a retry sends the same message again


def test_a_failure_after_a_tool_call_is_not_retried() -> None:
    seen: list[dict[str, Any]] = []

    async def handle(body: dict[str, Any]) -> Any:  # calls a tool over MCP, then fails
        seen.append(body)
        async with Client(body["params"]["message"]["metadata"][MCP_URL_KEY]) as mcp:
            await mcp.call_tool("get_order_details", {"order_id": "#W2148336"})
        return _response(503, "busy")

    for url in _endpoint(handle):
        trial = run_task(build_a2a_agent(url, max_attempts=4, **FAST))
    assert len(seen) == 1 and [c.name for c in trial.trajectory.tool_calls] == ["get_order_details"]
    assert trial.termination_reason == "infra_error" and "not retried" in (trial.trajectory.error or "")


def test_an_agent_that_never_answers_ends_the_trial_within_the_step_timeout() -> None:
    import asyncio

    async def handle(body: dict[str, Any]) -> Any:
        await asyncio.sleep(60)

    for url in _endpoint(handle):
        trial = run_task(build_a2a_agent(url, max_attempts=1, wait_initial=0.0, timeout=0.5))
    assert trial.termination_reason == "agent_error"
    assert "no tool call and no reply within 0.5 s" in (trial.trajectory.error or "")


class AskingAgent(AgentExecutor):
    """Answers through a task: asks for input first (the task stays open), completes it at the next message."""

    def __init__(self) -> None:
        self.tasks: list[tuple[str, str]] = []

    async def execute(self, context: Any, event_queue: Any) -> None:
        from a2a.helpers import new_task_from_user_message
        from a2a.server.tasks import TaskUpdater

        self.tasks.append((context.task_id or "", context.current_task.id if context.current_task else ""))
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if len(self.tasks) % 2:
            await updater.requires_input(updater.new_agent_message([_part("Which order is it?")]))
        else:
            await updater.complete(updater.new_agent_message([_part("Thank you, noted.")]))

    async def cancel(self, context: Any, event_queue: Any) -> None:
        raise NotImplementedError


def _part(text: str) -> Any:
    from a2a.types.a2a_pb2 import Part

    return Part(text=text)


def test_a_task_left_input_required_is_continued_by_the_next_message() -> None:
    agent = AskingAgent()
    with a2a_server(agent) as url:
        trial = run_task(build_a2a_agent(url, **FAST))
    said = [m.content for m in trial.trajectory.messages if m.role == "assistant"]
    assert said[:2] == ["Which order is it?", "Thank you, noted."]
    assert agent.tasks[1][1] == agent.tasks[0][0] != ""  # the second message continued the first one's task
    assert agent.tasks[2][1] == ""  # a completed task is not continued: the next message starts a new one


def test_a_client_no_longer_used_stops_its_mcp_server_and_loop() -> None:
    import gc
    import threading

    def ours() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name in ("tausim-a2a", "tausim-a2a-mcp") and t.is_alive()}

    gc.collect()
    before = ours()  # other tests' clients may still be collected meanwhile: only the new threads are checked
    with a2a_server(_gold_agent(retail_task())) as url:
        factory = build_a2a_agent(url, **FAST)
        trial = run_task(factory)
        new = ours() - before
        assert trial.passed and sorted(t.name for t in new) == ["tausim-a2a", "tausim-a2a-mcp"]
        del factory
        gc.collect()
        deadline = time.monotonic() + 10
        while any(t.is_alive() for t in new) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert not any(t.is_alive() for t in new)
