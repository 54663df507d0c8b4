"""``http:URL`` agents: a chat-completions service decides, tausim runs and records its tool calls.

The service is the loopback scripted server (:mod:`simulator.interop.loopback`, 127.0.0.1 only).
"""

from __future__ import annotations

import time

import pytest

from simulator.agents.http_agent import HttpAgent, HttpAgentClient, build_http_agent
from simulator.errors import SetupError
from simulator.interop.loopback import openai_server, oracle_script
from simulator.types.messages import Message
from tests._support.adapter_runs import assert_same_as_oracle, retail_task, run_task

FAST = {"wait_initial": 0.0, "wait_max": 0.0, "timeout": 2.0}


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_service_replaying_the_gold_actions_passes_like_the_oracle() -> None:
    oracle = run_task()
    task = retail_task()
    with openai_server({"svc": oracle_script(task)}) as server:
        factory = build_http_agent(server.api_base, model="svc", **FAST)
        factory.client.preflight()  # type: ignore[attr-defined]
        trial = run_task(factory)
        first = server.requests["svc"][0]
    assert_same_as_oracle(trial, oracle)
    assert first["messages"][0]["role"] == "system" and first["messages"][1]["role"] == "user"
    names = {t["function"]["name"] for t in first["tools"]}
    assert {a.name for a in task.gold_actions} <= names and first["tool_choice"] == "auto"
    assert trial.trajectory.agent_usage.prompt_tokens == 11 * trial.trajectory.agent_usage.calls


def test_transient_failures_are_retried_and_counted() -> None:
    script = [{"status": 429}, {"status": 503}, {"drop": True}, {"malformed": True}, "hello"]
    with openai_server({"m": script}) as server:
        client = HttpAgentClient(server.api_base, model="m", max_attempts=5, **FAST)
        agent = HttpAgent(_ctx(), client)
        turn = agent.step([Message(role="user", content="hi")])
    assert turn.error is None and turn.message.content == "hello" and turn.usage.attempts == 5


def test_failures_are_one_line_naming_the_url() -> None:
    with openai_server({"m": [{"status": 500}, {"status": 500}], "bad": [{"status": 400}],
                        "odd": [{"tool_calls": [("c1", "", "{}")]}],
                        "slow": [{"slow": 1.0, "then": "late"}]}) as server:
        ctx = _ctx()
        hi = [Message(role="user", content="hi")]
        down = HttpAgent(ctx, HttpAgentClient(server.api_base, model="m", max_attempts=2, **FAST)).step(hi)
        bad = HttpAgent(ctx, HttpAgentClient(server.api_base, model="bad", **FAST)).step(hi)
        odd = HttpAgent(ctx, HttpAgentClient(server.api_base, model="odd", **FAST)).step(hi)
        t0 = time.monotonic()
        slow = HttpAgent(ctx, HttpAgentClient(server.api_base, model="slow", max_attempts=1, wait_initial=0,
                                              timeout=0.3)).step(hi)
        assert time.monotonic() - t0 < 1.0
    for turn, kind in ((down, "infra_error"), (bad, "agent_error"), (odd, "agent_error"), (slow, "infra_error")):
        assert turn.error_kind == kind and turn.error is not None
        assert server.api_base in turn.error and "\n" not in turn.error
    assert "answered 500" in (down.error or "") and "answered 400" in (bad.error or "")


def test_an_unreachable_endpoint_fails_preflight_within_5s_and_trials_end_infra_error() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    factory = build_http_agent(url, max_attempts=2, wait_initial=0.0, timeout=1.0)
    t0 = time.monotonic()
    with pytest.raises(SetupError) as e:
        factory.client.preflight()  # type: ignore[attr-defined]
    assert time.monotonic() - t0 < 5.0
    assert e.value.kind == "server" and url in str(e.value) and "unreachable" in str(e.value)
    trial = run_task(factory)
    assert trial.termination_reason == "infra_error" and not trial.passed
    assert url in (trial.trajectory.error or "")


@pytest.mark.parametrize(("status", "kind"), [(401, "credentials"), (403, "credentials"), (502, "server")])
def test_a_refusing_preflight_names_the_url_it_checked(status: int, kind: str) -> None:
    import http.server
    import threading

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server hook
            self.send_response(status)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass  # quiet

    server = http.server.HTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}/v1"
        factory = build_http_agent(f"{base}/chat/completions", **FAST)
        with pytest.raises(SetupError) as e:
            factory.client.preflight()  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
    assert e.value.kind == kind and f"GET {base}/models" in str(e.value) and str(status) in str(e.value)
    assert f"{base}/chat/completions" in str(e.value) and "\n" not in str(e.value)


def test_the_spec_argument_and_options() -> None:
    with pytest.raises(ValueError, match="http://"):
        build_http_agent("127.0.0.1:8000")
    factory = build_http_agent("http://127.0.0.1:9/v1/chat/completions", model="x", temperature=0.0, domain=None,
                               max_tokens=None)
    client = factory.client  # type: ignore[attr-defined]
    assert client.endpoint == "http://127.0.0.1:9/v1/chat/completions" and client.api_base == "http://127.0.0.1:9/v1"
    assert client.params == {"temperature": 0.0}
    body = factory(_ctx()).build_request([Message(role="user", content="hi")])
    assert body["seed"] >= 0 and body["messages"][-1] == {"role": "user", "content": "hi"}


def _ctx():  # type: ignore[no-untyped-def]
    import numpy as np

    from simulator.types.protocols import TrialContext
    from simulator.types.tasks import Task, UserScenario

    return TrialContext(task=Task(id="t", scenario=UserScenario(instructions="")), tools=[], policy="Be kind.",
                        seed=1, rng=np.random.Generator(np.random.PCG64(1)), domain="retail")


def test_the_run_preflight_stops_an_unreachable_endpoint_within_5s() -> None:
    from simulator.execution.build import build_runner
    from simulator.execution.preflight import preflight
    from simulator.types.spec import RunSpec

    url = f"http://127.0.0.1:{_closed_port()}/v1"
    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=["cancel-gift-card-balance"]))
    runner.agent_factory = build_http_agent(url)
    t0 = time.monotonic()
    with pytest.raises(SetupError) as e:
        preflight(runner)
    assert time.monotonic() - t0 < 5.0 and url in str(e.value) and e.value.kind == "server"


def test_the_adapters_are_registered_as_agent_entry_points() -> None:
    from importlib.metadata import entry_points

    found = {ep.name: ep.value for ep in entry_points(group="tausim.agents")}
    assert found.get("http") == "simulator.agents.http_agent:build_http_agent"
    assert found.get("openai-agents") == "simulator.agents.openai_agents:build_openai_agents"
    assert found.get("langgraph") == "simulator.agents.langgraph_agent:build_langgraph_agent"
    assert all(callable(ep.load()) for ep in entry_points(group="tausim.agents") if ep.name in found)


def test_the_key_can_come_from_an_environment_variable_named_in_the_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """``api_key_env`` keeps the key itself out of the run spec (and so out of the run document and the store)."""
    monkeypatch.setenv("TAUSIM_TEST_AGENT_KEY", "sk-from-env")
    client = HttpAgentClient("http://127.0.0.1:9/v1", api_key_env="TAUSIM_TEST_AGENT_KEY")
    assert client.headers["Authorization"] == "Bearer sk-from-env"
    client.close()
    monkeypatch.delenv("TAUSIM_TEST_AGENT_KEY")
    with pytest.raises(ValueError, match="TAUSIM_TEST_AGENT_KEY"):
        build_http_agent("http://127.0.0.1:9/v1", api_key_env="TAUSIM_TEST_AGENT_KEY")


@pytest.mark.parametrize(("options", "named"), [
    ({"connect_timeout": -1}, "connect_timeout"),
    ({"timeout": float("nan")}, "timeout"),
    ({"max_attempts": 2.5}, "max_attempts"),
    ({"max_attempts": 0}, "max_attempts"),
    ({"deadline": float("nan")}, "deadline"),
    ({"send_policy": "false"}, "send_policy"),
    ({"headers": {"X-Key": "caf\udcff"}}, "X-Key"),
    ({"headers": {"X-Key": "a\x1b[31mb"}}, "X-Key"),
])
def test_unusable_option_values_are_refused_naming_the_option(options: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named) as e:
        build_http_agent("http://127.0.0.1:9/v1", **options)
    assert "\x1b" not in str(e.value) and "\udcff" not in str(e.value)


def test_extra_options_that_json_cannot_carry_are_refused_naming_them() -> None:
    with pytest.raises(ValueError, match="temperature"):
        build_http_agent("http://127.0.0.1:9/v1", temperature=float("nan"))
