"""The LLM paths over real HTTP: agent, user and judge through litellm against an OpenAI-compatible server.

The server (``tests/_support/openai_server.py``) listens on 127.0.0.1 only and answers from scripts, as vLLM, llama.cpp
or Ollama would: chat completions with tool calls, 429 and 500 answers, a slow answer, malformed JSON and a
dropped connection. Retries are immediate (no backoff) and timeouts short, so the module stays quick.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.agents import agent_factory
from simulator.cli import app
from simulator.execution.runner import Runner
from simulator.grading.judge import Judge
from simulator.models.llm import LLMClient, LLMInfraError, LLMRequestError, LLMResponseError
from simulator.types.spec import RunSpec
from simulator.types.tasks import parse_tasks
from simulator.users import user_factory
from tests._support.openai_server import openai_server
from tests._support.toy import BankDomain, write_data

FAST = {"api_key": "test-key", "wait_initial": 0.0, "wait_max": 0.0}
"""Client settings: a key (the server checks none), no backoff between attempts."""


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests to 127.0.0.1 must never go through a proxy from the environment."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


def _ask(client: LLMClient, **kw: Any) -> Any:
    return client.complete([{"role": "user", "content": "hello"}], **kw)


@pytest.mark.parametrize("failure", [
    {"status": 429}, {"status": 500}, {"malformed": True}, {"drop": True}, {"slow": 1.5, "then": "too late"},
], ids=["429", "500", "malformed-json", "dropped-connection", "slow"])
def test_a_transient_failure_is_retried_then_answered(failure: dict[str, Any]) -> None:
    with openai_server({"m": [failure, "hello back"]}) as server:
        client = LLMClient("openai/m", api_base=server.api_base, max_attempts=3, timeout=0.5, **FAST)
        result = _ask(client)
        assert (result.message.content, result.attempts) == ("hello back", 2)
        assert len(server.requests["m"]) == 2 and server.left("m") == 0
        assert result.usage.prompt_tokens == 11 and result.usage.completion_tokens == 7
        assert server.requests["m"][0]["messages"] == [{"role": "user", "content": "hello"}]


def test_failures_past_the_last_attempt_and_requests_that_cannot_succeed() -> None:
    with openai_server({"m": [{"status": 500}, {"drop": True}], "bad": [{"status": 400}, "never asked"]}) as server:
        with pytest.raises(LLMInfraError) as e:
            _ask(LLMClient("openai/m", api_base=server.api_base, max_attempts=2, timeout=2, **FAST))
        assert e.value.attempts == 2 and "openai/m" in str(e.value)
        with pytest.raises(LLMRequestError) as bad:
            _ask(LLMClient("openai/bad", api_base=server.api_base, max_attempts=3, timeout=2, **FAST))
        assert bad.value.attempts == 1 and server.left("bad") == 1  # a 400 is not retried


def test_tool_calls_over_http() -> None:
    tools = BankDomain().toolbox().schemas()
    script = [{"tool_calls": [("c1", "get_balance", '{"account_id": "A1"}'), ("c2", "transfer", '{"src": ')]}]
    with openai_server({"m": script}) as server:
        result = _ask(LLMClient("openai/m", api_base=server.api_base, timeout=2, **FAST), tools=tools)
        sent = server.requests["m"][0]
    calls = result.message.tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [("c1", "get_balance", {"account_id": "A1"}),
                                                            ("c2", "transfer", None)]
    assert calls[1].raw_arguments == '{"src": ' and result.finish_reason == "tool_calls"
    assert [t["function"]["name"] for t in sent["tools"]] == [t["function"]["name"] for t in tools]


def _answer(message: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A script entry: a complete chat completion whose assistant message (and other fields) the test chose."""
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}
    return {"body": {**body, **fields}}


UNREADABLE = {
    # (answer, what the reason names: the exception litellm met while reading it, and its detail)
    "tool-calls-not-a-list": (_answer({"role": "assistant", "content": None, "tool_calls": "get_balance(A1)"}),
                              ("AttributeError",)),
    "arguments-a-number": (_answer({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_balance", "arguments": 42}}]}),
        ("ValidationError", "arguments", "valid string")),
    "content-an-object": (_answer({"role": "assistant", "content": {"text": "hi"}}), ("ValidationError", "content")),
    "nan-token-count": (_answer({"role": "assistant", "content": "hi"},
                                usage={"prompt_tokens": float("nan"), "completion_tokens": 7, "total_tokens": 18}),
                        ("ValidationError", "prompt_tokens")),
    "json-not-an-object": ({"body": "a bare string"}, ("not", "'a bare string'")),
    "no-choices": ({"body": {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m"}},
                   ("no 'choices'",)),
}


@pytest.mark.parametrize("answer,named", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_answer_is_the_models_and_not_retried(answer: dict[str, Any], named: tuple[str, ...]) -> None:
    # litellm reports these as InternalServerError (status 500, though the server answered 200): they are the
    # model's answer, not a failure of the service, so they are neither retried nor an LLMInfraError
    with openai_server({"m": [answer, "never asked"]}) as server:
        with pytest.raises(LLMResponseError) as e:
            _ask(LLMClient("openai/m", api_base=server.api_base, max_attempts=3, timeout=2, **FAST))
        assert server.left("m") == 1
    message = str(e.value)
    assert e.value.attempts == 1 and isinstance(e.value, LLMRequestError) and not isinstance(e.value, LLMInfraError)
    assert message.startswith("model openai/m: its answer cannot be read") and "\n" not in message
    assert all(part in message for part in named), message
    assert "Traceback" not in message and len(message) < 700


def test_a_body_that_is_not_json_is_asked_again_then_is_the_models() -> None:
    # a reply cut short may come whole next time (test_a_transient_failure_is_retried_then_answered); a server that
    # answers nothing but broken bodies gave its answer: the agent's (user's) failure, as for --agent http:URL
    with openai_server({"m": [{"malformed": True}] * 3, "down": [{"status": 500}] * 3}) as server:
        with pytest.raises(LLMResponseError) as e:
            _ask(LLMClient("openai/m", api_base=server.api_base, max_attempts=3, timeout=2, **FAST))
        with pytest.raises(LLMInfraError):  # a server that answers 500 every time is still the service's failure
            _ask(LLMClient("openai/down", api_base=server.api_base, max_attempts=3, timeout=2, **FAST))
        assert server.left("m") == server.left("down") == 0
    assert e.value.attempts == 3 and "the body is not JSON: JSONDecodeError" in str(e.value), str(e.value)


@pytest.mark.parametrize("role", ["agent", "user"])
def test_a_trial_whose_model_answers_garbage_ends_on_its_own_error(tmp_path: Path, role: str) -> None:
    garbage = UNREADABLE["arguments-a-number"][0]
    scripts: dict[str, list[Any]] = {"agent": ["How can I help?"], "user": ["Hi, move $10 from A1 to B2.", "ok"]}
    scripts[role] = [garbage] * 3  # before: retried three times, then the trial was an infra_error
    with openai_server(scripts) as server:
        common = {"api_base": server.api_base, "max_attempts": 3, "timeout": 2, **FAST}
        dom = BankDomain()
        runner = Runner(dom, dom.template(write_data(tmp_path / "d")), parse_tasks(JUDGED),
                        agent_factory("litellm:openai/agent", **common), user_factory("llm:openai/user", **common),
                        RunSpec(domain="bank", agent="litellm:openai/agent", user="llm:openai/user"))
        (trial,) = runner.run().trials
        assert server.left(role) == 2  # not asked again
    assert trial.termination_reason == f"{role}_error", trial.error
    assert trial.error is not None and "its answer cannot be read" in trial.error and "arguments" in trial.error
    assert not trial.passed


def test_adapters_read_the_same_failure_as_the_agents_own(litellm: Any) -> None:
    # a framework agent whose model is reached through litellm (LangGraph's ChatLiteLLM) sees litellm's exception
    from simulator.agents._adapters import describe_error, error_kind

    errors = {}
    with openai_server({"bad": [UNREADABLE["arguments-a-number"][0]], "down": [{"status": 500}]}) as server:
        for model in ("bad", "down"):
            with pytest.raises(Exception) as e:
                litellm.completion(model=f"openai/{model}", messages=[{"role": "user", "content": "hi"}],
                                   api_base=server.api_base, api_key="test-key", num_retries=0, timeout=2)
            errors[model] = e.value
    assert type(errors["bad"]).__name__ == type(errors["down"]).__name__ == "InternalServerError"  # alike on top
    assert error_kind(errors["bad"]) == "agent_error" and error_kind(errors["down"]) == "infra_error"
    line = describe_error("langgraph", errors["bad"])
    assert line.startswith("langgraph: the model's answer cannot be read: ValidationError") and "arguments" in line
    assert "\n" not in line and "Traceback" not in line


JUDGED = {"format": "tausim.tasks", "version": 1, "tasks": [
    {"id": "move", "scenario": {"instructions": "Move $10 from A1 to B2.", "known_info": {"account": "A1"}},
     "gold_actions": [{"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 10}}],
     "required_outputs": ["90"], "judge": ["the agent told the user the new balance"]}]}


def test_agent_user_and_judge_run_a_trial_over_http(tmp_path: Path) -> None:
    scripts: dict[str, list[Any]] = {
        "agent": [
            {"status": 429},  # rate limited once: retried
            {"tool_calls": [("c1", "get_balance", '{"account_id": "A1"}')]},
            {"drop": True},  # the connection drops once: retried
            {"tool_calls": [("c2", "transfer", '{"src": "A1", "dst": "B2", "amount": 10}')]},
            "I moved $10 from A1 to B2. Your new balance is 90.",
        ],
        "user": [{"status": 500}, "Hi, please move $10 from my account A1 to B2.", "Thank you! ###STOP###"],
        "judge": [{"slow": 1.5, "then": "late"}, '{"verdict": "yes", "reason": "it said 90"}'],
    }
    with openai_server(scripts) as server:
        common = {"api_base": server.api_base, "max_attempts": 3, "timeout": 0.8, **FAST}
        dom = BankDomain()
        judge = Judge("openai/judge", **common)
        runner = Runner(dom, dom.template(write_data(tmp_path / "d")), parse_tasks(JUDGED),
                        agent_factory("litellm:openai/agent", **common), user_factory("llm:openai/user", **common),
                        RunSpec(domain="bank", agent="litellm:openai/agent", user="llm:openai/user",
                                  judge="openai/judge"), judge=judge)
        (trial,) = runner.run().trials
        requests = server.requests
        assert all(server.left(m) == 0 for m in scripts)
    traj = trial.trajectory
    assert trial.termination_reason == "user_stop", trial.error
    assert trial.passed, trial.grade
    assert [(c.name, c.status) for c in traj.tool_calls] == [("get_balance", "ok"), ("transfer", "ok")]
    assert trial.grade is not None and trial.grade.judge is not None and trial.grade.judge.status == "passed"
    # usage: calls made versus requests sent (retries included)
    assert (traj.agent_usage.calls, traj.agent_usage.attempts) == (3, 5)
    assert (traj.user_usage.calls, traj.user_usage.attempts) == (2, 3)
    assert trial.grade.judge.usage.calls == 1 and trial.grade.judge.usage.attempts == 2
    # what went over the wire: the agent got the tools and the tool results; the judge the transcript
    assert requests["agent"][-1]["tools"] and [m["role"] for m in requests["agent"][-1]["messages"]].count("tool") == 2
    assert "move $10" in json.dumps(requests["judge"][-1]["messages"]).lower()
    assert "gold" not in json.dumps(requests["user"]).lower() and "90" not in json.dumps(requests["user"][0])


def test_cli_run_with_api_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    tasks = json.loads((Path(__file__).resolve().parents[2] / "domains" / "retail" / "tasks" / "builtin.json")
                       .read_text())
    tasks["tasks"] = [next(t for t in tasks["tasks"] if t["id"] == "cancel-no-longer-needed")]
    task_file = tmp_path / "tasks.json"
    task_file.write_text(json.dumps(tasks))
    out = tmp_path / "run.json"
    scripts = {"agent": ["Could you give me your order id, please?"],
               "user": ["Hi, I want to cancel an order.", "It is the one I no longer need. ###STOP###"]}
    with openai_server(scripts) as server:
        res = CliRunner().invoke(app, ["run", "--tasks", str(task_file), "--agent", "litellm:openai/agent",
                                       "--user", "llm:openai/user", "--api-base", server.api_base, "--out", str(out),
                                       "--no-progress", "--no-preflight"])  # exact call counts: no pre-flight call
        assert res.exit_code == 0, res.output
        assert len(server.requests["agent"]) == 1 and len(server.requests["user"]) == 2
    (trial,) = json.loads(out.read_text())["trials"]
    assert trial["termination_reason"] == "user_stop" and not trial["passed"]  # the agent cancelled nothing
    assert trial["trajectory"]["agent_usage"]["calls"] == 1 and trial["trajectory"]["user_usage"]["calls"] == 2


def test_a_body_with_a_character_cut_in_half_is_asked_again_then_is_the_models() -> None:
    # half an emoji: the body is JSON in every other way, but not valid UTF-8 (litellm reports a 500, as for a body
    # that is not JSON); asked again as a reply cut short, then the model's answer, never the service's failure
    whole = json.dumps(_answer({"role": "assistant", "content": "hi \U0001F600 there"})["body"],
                       ensure_ascii=False).encode()
    cut = whole.replace("\U0001F600".encode(), "\U0001F600".encode()[:2])
    assert cut != whole
    with openai_server({"m": [{"raw": cut}] * 2}) as server:
        with pytest.raises(LLMResponseError) as e:
            _ask(LLMClient("openai/m", api_base=server.api_base, max_attempts=2, timeout=2, **FAST))
        assert server.left("m") == 0
    message = str(e.value)
    assert e.value.attempts == 2 and not isinstance(e.value, LLMInfraError), message
    assert "the body is not valid UTF-8: UnicodeDecodeError" in message and "\n" not in message, message


def test_an_answer_whose_fields_do_not_fit_prints_no_library_warning() -> None:
    # litellm's response models made pydantic print a serializer-warning block (a site-packages path, the model's
    # value) on the run's terminal, once per process; the trial records the reason already
    import warnings

    garbage = UNREADABLE["arguments-a-number"][0]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with openai_server({"m": [garbage]}) as server:
            with pytest.raises(LLMResponseError):
                _ask(LLMClient("openai/m", api_base=server.api_base, max_attempts=1, timeout=2, **FAST))
    assert not [w for w in seen if "serializer" in str(w.message)], [str(w.message)[:200] for w in seen]
