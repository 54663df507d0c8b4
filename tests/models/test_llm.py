"""Tests of simulator/llm.py, driving the real litellm code path offline.

Two offline drivers: ``mock_response=`` (text, a ModelResponse with tool calls, or an exception instance), and
an in-process provider registered through ``litellm.custom_provider_map`` that follows a script (raise these
errors, then answer) and records what it received.
"""

from __future__ import annotations

from typing import Any

import pytest

from simulator.models.llm import (
    LLMClient,
    LLMContextOverflow,
    LLMInfraError,
    LLMRequestError,
    LLMResult,
    LLMSetupError,
    model_seed,
)
from simulator.types.messages import ToolCall
from tests._support.fake_llm import register, tool_calls_response

PROVIDER = "tausimfake"
MSGS = [{"role": "user", "content": "hello"}]


@pytest.fixture
def fake(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Register a scripted in-process provider; returns a function (script) -> provider."""
    return lambda script: register(monkeypatch, litellm, {PROVIDER: script})[PROVIDER]


def client(model: str = "openai/gpt-4o-mini", **kw: Any) -> LLMClient:
    kw.setdefault("wait_initial", 0.0)
    kw.setdefault("wait_max", 0.0)
    return LLMClient(model, **kw)


# --- mock_response: text, tool calls, malformed arguments ---------------------------------------------------


def test_mock_text_response(litellm: Any) -> None:
    r = client().complete(MSGS, mock_response="Hello there")
    assert isinstance(r, LLMResult)
    assert r.message.role == "assistant"
    assert r.message.content == "Hello there"
    assert r.message.tool_calls == []
    assert r.finish_reason == "stop"
    assert r.attempts == 1
    assert r.latency_s >= 0.0
    assert r.model == "openai/gpt-4o-mini"


def test_mock_priced_model_cost_and_tokens(litellm: Any) -> None:
    resp = tool_calls_response(litellm, [("c1", "f", "{}")], prompt_tokens=1000, completion_tokens=500)
    r = client().complete(MSGS, mock_response=resp)
    assert r.usage.prompt_tokens == 1000
    assert r.usage.completion_tokens == 500
    assert r.usage.calls == 1
    info = litellm.model_cost["gpt-4o-mini"]
    expected = 1000 * info["input_cost_per_token"] + 500 * info["output_cost_per_token"]
    assert r.usage.cost_usd == pytest.approx(expected)
    assert r.usage.cost_usd is not None and r.usage.cost_usd > 0


def test_two_tool_calls_parsed_in_order_with_ids(litellm: Any) -> None:
    resp = tool_calls_response(litellm, [
        ("call_a", "get_order_details", '{"order_id": "#W1"}'),
        ("call_b", "get_user_details", '{"user_id": "u_2", "verbose": true}'),
    ])
    r = client().complete(MSGS, tools=[{"type": "function", "function": {"name": "x"}}], mock_response=resp)
    assert r.finish_reason == "tool_calls"
    assert r.message.content is None
    assert r.message.tool_calls == [
        ToolCall(id="call_a", name="get_order_details", arguments={"order_id": "#W1"},
                 raw_arguments='{"order_id": "#W1"}'),
        ToolCall(id="call_b", name="get_user_details", arguments={"user_id": "u_2", "verbose": True},
                 raw_arguments='{"user_id": "u_2", "verbose": true}'),
    ]


def test_mock_tool_calls_parameter(litellm: Any) -> None:
    r = client().complete(MSGS, mock_response="ok", mock_tool_calls=[
        {"id": "t1", "type": "function", "function": {"name": "think", "arguments": '{"x": 1}'}}])
    assert [(c.id, c.name, c.arguments) for c in r.message.tool_calls] == [("t1", "think", {"x": 1})]


def test_empty_text_beside_tool_calls_becomes_none(litellm: Any) -> None:
    r = client().complete(MSGS, mock_response=tool_calls_response(litellm, [("c1", "f", "{}")], content=""))
    assert r.message.content is None
    resp = tool_calls_response(litellm, [("c1", "f", "{}")], content="Let me check.")
    r = client().complete(MSGS, mock_response=resp)
    assert r.message.content == "Let me check."


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", '"text"'])
def test_malformed_tool_arguments_never_raise(litellm: Any, raw: str) -> None:
    resp = tool_calls_response(litellm, [("c1", "ok_tool", '{"a": 1}'), ("c2", "bad_tool", raw)])
    r = client().complete(MSGS, mock_response=resp)
    good, bad = r.message.tool_calls
    assert good.arguments == {"a": 1}
    assert bad == ToolCall(id="c2", name="bad_tool", arguments=None, raw_arguments=raw)
    assert bad.openai()["function"]["arguments"] == raw


def test_empty_tool_call_id_gets_deterministic_unique_ids(litellm: Any) -> None:
    resp1 = tool_calls_response(litellm, [("", "f", "{}"), ("", "f", "{}")])
    resp2 = tool_calls_response(litellm, [("", "f", "{}"), ("", "f", "{}")])
    ids1 = [c.id for c in client().complete(MSGS, mock_response=resp1).message.tool_calls]
    ids2 = [c.id for c in client().complete(MSGS, mock_response=resp2).message.tool_calls]
    assert len(set(ids1)) == 2 and all(i.startswith("call_") for i in ids1)
    assert ids1 == ids2


def test_unpriced_model_cost_is_none_not_zero(litellm: Any) -> None:
    r = client("openai/tausim-no-such-model").complete(MSGS, mock_response="hi")
    assert r.usage.prompt_tokens > 0
    assert r.usage.cost_usd is None


# --- errors via mock_response exception instances ---------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda lt: lt.AuthenticationError("bad key", "openai", "m"),
    lambda lt: lt.BadRequestError("bad request", "m", "openai"),
    lambda lt: lt.NotFoundError("no such model", "m", "openai"),
])
def test_request_errors_not_retried_via_mock(litellm: Any, make: Any) -> None:
    with pytest.raises(LLMRequestError) as ei:
        client(max_attempts=4).complete(MSGS, mock_response=make(litellm))
    assert ei.value.attempts == 1
    assert "openai/gpt-4o-mini" in str(ei.value)


def test_context_overflow_mock(litellm: Any) -> None:
    with pytest.raises(LLMContextOverflow) as ei:
        client().complete(MSGS, mock_response="litellm.ContextWindowExceededError")
    assert ei.value.attempts == 1
    assert "openai/gpt-4o-mini" in str(ei.value)


def test_rate_limit_mock_exhausts_retries(litellm: Any) -> None:
    with pytest.raises(LLMInfraError) as ei:
        client(max_attempts=3).complete(MSGS, mock_response=litellm.RateLimitError("slow down", "openai", "m"))
    assert ei.value.attempts == 3
    assert ei.value.cause == "RateLimitError"
    assert "3 attempt" in str(ei.value) and "openai/gpt-4o-mini" in str(ei.value)


def test_unknown_provider_is_request_error_naming_model(litellm: Any) -> None:
    with pytest.raises(LLMRequestError) as ei:
        client("nosuchprovider-model-xyz").complete(MSGS)
    assert "nosuchprovider-model-xyz" in str(ei.value)
    assert ei.value.attempts == 1


# --- retries with a scripted in-process provider ---------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda lt: lt.RateLimitError("rate limited", PROVIDER, "m"),
    lambda lt: lt.InternalServerError("boom", PROVIDER, "m"),
    lambda lt: lt.ServiceUnavailableError("unavailable", PROVIDER, "m"),
    lambda lt: lt.APIConnectionError("refused", PROVIDER, "m"),
], ids=["rate_limit", "500", "503", "connection"])
def test_transient_errors_retried_then_succeed(litellm: Any, fake: Any, make: Any) -> None:
    provider = fake([make(litellm), make(litellm), "finally"])
    r = client(f"{PROVIDER}/m1", max_attempts=4).complete(MSGS)
    assert r.message.content == "finally"
    assert r.attempts == 3
    assert len(provider.calls) == 3


def test_a_timeout_is_retried_once_only(litellm: Any, fake: Any) -> None:
    """A server that accepts and never answers costs two request timeouts, not one per attempt."""
    provider = fake([litellm.Timeout("timed out", "m", PROVIDER), "finally"])
    r = client(f"{PROVIDER}/m1", max_attempts=4).complete(MSGS)
    assert r.message.content == "finally" and r.attempts == 2
    provider = fake([litellm.Timeout("timed out", "m", PROVIDER), litellm.Timeout("timed out", "m", PROVIDER),
                     "never reached"])
    with pytest.raises(LLMInfraError) as ei:
        client(f"{PROVIDER}/m1", max_attempts=4).complete(MSGS)
    assert ei.value.attempts == 2 and len(provider.calls) == 2
    # other transient failures do not use up the timeout allowance
    provider = fake([litellm.RateLimitError("rl", PROVIDER, "m"), litellm.Timeout("timed out", "m", PROVIDER),
                     litellm.RateLimitError("rl", PROVIDER, "m"), "finally"])
    assert client(f"{PROVIDER}/m1", max_attempts=4).complete(MSGS).attempts == 4


def test_retries_exhausted_raise_infra_error(litellm: Any, fake: Any) -> None:
    provider = fake([litellm.InternalServerError("boom", PROVIDER, "m") for _ in range(5)])
    with pytest.raises(LLMInfraError) as ei:
        client(f"{PROVIDER}/m1", max_attempts=4).complete(MSGS)
    assert len(provider.calls) == 4
    assert ei.value.attempts == 4
    assert f"{PROVIDER}/m1" in str(ei.value)


def test_default_attempts_is_four(litellm: Any, fake: Any) -> None:
    provider = fake([litellm.RateLimitError("rl", PROVIDER, "m") for _ in range(6)])
    with pytest.raises(LLMInfraError):
        client(f"{PROVIDER}/m1").complete(MSGS)
    assert len(provider.calls) == 4


@pytest.mark.parametrize("make,error", [
    (lambda lt: lt.AuthenticationError("bad key", PROVIDER, "m"), LLMSetupError),
    (lambda lt: lt.BadRequestError("bad", "m", PROVIDER), LLMRequestError),
    (lambda lt: lt.NotFoundError("no model", "m", PROVIDER), LLMSetupError),
    (lambda lt: lt.ContextWindowExceededError("too long", "m", PROVIDER), LLMContextOverflow),
    # litellm reports a missing key as a 500; it is an auth error all the same
    (lambda lt: lt.InternalServerError("OpenAIException - Missing credentials. Please pass an `api_key`", PROVIDER,
                                       "m"), LLMSetupError),
], ids=["auth", "bad_request", "not_found", "context_window", "missing_key_as_500"])
def test_non_transient_errors_not_retried(litellm: Any, fake: Any, make: Any, error: type) -> None:
    provider = fake([make(litellm), "never reached"])
    with pytest.raises(error) as ei:
        client(f"{PROVIDER}/m1", max_attempts=4).complete(MSGS)
    assert type(ei.value) is error  # set-up errors (credentials, unknown model) apart from other bad requests
    assert len(provider.calls) == 1
    assert f"{PROVIDER}/m1" in str(ei.value)


def test_backoff_is_exponential_with_full_jitter_and_capped(litellm: Any, fake: Any,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import tenacity.nap
    import tenacity.wait

    sleeps: list[float] = []
    monkeypatch.setattr(tenacity.nap.time, "sleep", lambda s: sleeps.append(s))
    # full jitter draws uniform(0, window); take the top of each window to check the windows themselves
    monkeypatch.setattr(tenacity.wait.random, "uniform", lambda a, b: b)
    fake([litellm.RateLimitError("rl", PROVIDER, "m") for _ in range(3)] + ["ok"])
    r = LLMClient(f"{PROVIDER}/m1", max_attempts=4, wait_initial=0.5, wait_max=1.5).complete(MSGS)
    assert r.attempts == 4
    assert sleeps == [0.5, 1.0, 1.5]  # 0.5 * 2**n, capped at wait_max


def test_params_reach_provider(litellm: Any, fake: Any) -> None:
    provider = fake(["ok"])
    c = client(f"{PROVIDER}/m1", temperature=0.3, seed=5, max_tokens=64, api_base="http://127.0.0.1:9")
    c.complete(MSGS, seed=1234, tools=[{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {}}}}])
    call = provider.calls[0]
    assert call["model"] == "m1"
    assert call["messages"] == MSGS
    assert call["api_base"] == "http://127.0.0.1:9"
    op = call["optional_params"]
    assert op["temperature"] == 0.3
    assert op["seed"] == 1234  # the call's parameter overrides the client default
    assert op["max_tokens"] == 64
    assert op["tools"][0]["function"]["name"] == "f"


def test_none_params_not_sent(litellm: Any, fake: Any) -> None:
    provider = fake(["ok"])
    client(f"{PROVIDER}/m1", seed=5).complete(MSGS, seed=None)
    assert "seed" not in provider.calls[0]["optional_params"]


def test_custom_provider_without_price_has_cost_none(litellm: Any, fake: Any) -> None:
    fake(["ok"])
    r = client(f"{PROVIDER}/m1").complete(MSGS)
    assert r.usage.cost_usd is None


def test_response_cache_keyed_by_trial_seed(litellm: Any, fake: Any) -> None:
    provider = fake(["first", "second"])
    cache: dict[str, LLMResult] = {}
    c = client(f"{PROVIDER}/m1", cache=cache)
    a = c.complete(MSGS, trial_seed=1)
    b = c.complete(MSGS, trial_seed=1)
    d = c.complete(MSGS, trial_seed=2)
    assert (a.message.content, a.cached) == ("first", False)
    assert (b.message.content, b.cached) == ("first", True)
    assert (d.message.content, d.cached) == ("second", False)
    assert len(provider.calls) == 2


def test_model_seed_range() -> None:
    assert model_seed(7) == 7
    assert model_seed(2**31 + 3) == 3
    assert 0 <= model_seed(2**200 - 1) < 2**31


def test_invalid_configuration() -> None:
    with pytest.raises(ValueError):
        LLMClient("openai/x", max_attempts=0)
    with pytest.raises(ValueError):
        LLMClient("openai/x", wait_initial=-1)


# --- litellm's own success logging: skipped while no callback listens ------------------------------------


@pytest.fixture
def logging_submits(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the names of the functions litellm hands to its logging thread pool (then run them as usual)."""
    from litellm.litellm_core_utils.thread_pool_executor import executor

    names: list[str] = []
    submit = executor.submit

    def recording(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        names.append(getattr(args[0], "__name__", repr(args[0])) if args else getattr(fn, "__name__", repr(fn)))
        return submit(fn, *args, **kwargs)

    monkeypatch.setattr(executor, "submit", recording)
    return names


def test_no_success_logging_without_callbacks_and_cost_still_priced(litellm: Any, logging_submits: list[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("callbacks", "success_callback", "_async_success_callback"):
        monkeypatch.setattr(litellm, name, [])
    resp = tool_calls_response(litellm, [("c1", "f", "{}")], prompt_tokens=1200, completion_tokens=300)
    r = client().complete(MSGS, mock_response=resp)
    assert "success_handler" not in logging_submits
    info = litellm.model_cost["gpt-4o-mini"]  # priced from the map, independently of litellm's cost code
    assert r.usage.cost_usd == pytest.approx(1200 * info["input_cost_per_token"] + 300 * info["output_cost_per_token"])
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (1200, 300)


def test_a_registered_litellm_callback_still_gets_success_events(litellm: Any, logging_submits: list[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from litellm.integrations.custom_logger import CustomLogger

    seen = threading.Event()

    class Listener(CustomLogger):  # type: ignore[misc]
        def log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
            seen.set()

    monkeypatch.setattr(litellm, "callbacks", [Listener()])
    r = client().complete(MSGS, mock_response="hi")
    assert r.message.content == "hi"
    assert logging_submits.count("success_handler") == 1
    assert seen.wait(30), "the registered callback never saw the call's success event"
