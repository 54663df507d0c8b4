"""``--agent http:URL``: the agent under test is a service behind an OpenAI-compatible chat-completions endpoint.

Each step sends the conversation so far (the domain policy first, as the system message) and the trial's tool
schemas to ``URL/chat/completions``; the service answers one assistant message, text or tool calls. tausim runs the
tool calls on the trial's own database and records them like any agent's, then asks again with the results.

Nothing waits forever: every request has a timeout, 429, 5xx, timeouts, dropped connections and bodies that are not
JSON are retried a bounded number of times with exponential backoff (tenacity) under an overall deadline, and each
failure is one line naming the URL. :meth:`HttpAgentClient.preflight` checks, in under 5 s, that the endpoint
answers at all (``tausim run`` does it before any trial and exits 2 when it does not)::

    from simulator.agents.http_agent import build_http_agent
    factory = build_http_agent("http://127.0.0.1:8000/v1", model="my-agent", timeout=30)
    factory.client.preflight()   # SetupError naming the URL when nothing answers there
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_result,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from simulator.agents._adapters import ErrorKind, failed_turn, tool_call_from_openai
from simulator.agents.litellm_agent import to_openai_messages
from simulator.errors import SetupError
from simulator.types.messages import AgentTurn, Message, Usage
from simulator.types.protocols import TrialContext
from simulator.types.secrets import redact_url

__all__ = ["HttpAgent", "HttpAgentClient", "HttpFailure", "build_http_agent"]

PREFLIGHT_SECONDS = 2.0
"""Connect and read timeout of the pre-flight request (the whole check stays under 5 s)."""

_CLIENT_OPTIONS = ("model", "api_key", "api_key_env", "headers", "timeout", "connect_timeout", "max_attempts",
                   "wait_initial", "wait_max", "deadline")
_IGNORED_OPTIONS = ("domain", "api_base", "cache", "limiters", "instruction")


@dataclass(frozen=True)
class HttpFailure:
    """One failed exchange with the endpoint (a value, not an exception: the step turns it into an error turn).

    Attributes:
        message: one line naming the URL and the cause.
        kind: the trial's termination reason (``infra_error``: transient, retried; ``agent_error``: the service
            misbehaved; ``setup_error``: it can never work, e.g. no such route or refused credentials).
        transient: whether another attempt may succeed.
    """

    message: str
    kind: ErrorKind
    transient: bool = False


def _endpoint(url: str) -> tuple[str, str]:
    """Return ``(chat-completions URL, base URL)`` of a base URL or a full chat-completions URL."""
    url = url.rstrip("/")
    if url.endswith("/chat/completions"):
        return url, url.removesuffix("/chat/completions")
    return f"{url}/chat/completions", url


def _check_options(url: str, max_attempts: Any, seconds: Mapping[str, Any], headers: Mapping[str, str] | None) -> None:
    """Refuse option values the client cannot use, naming the option (the run stops before it starts, exit 2).

    Raises:
        ValueError: ``max_attempts`` not an integer >= 1; a number of seconds not finite and >= 0 (``deadline`` may
            be None); a header name or value that is not text HTTP can carry (ASCII without control characters).
    """
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ValueError(f"--agent http:{redact_url(url)}: max_attempts must be an integer >= 1, got {max_attempts!r}")
    for name, value in seconds.items():
        if value is None and name == "deadline":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"--agent http:{redact_url(url)}: {name} must be a number of seconds >= 0, got {value!r}")
    for key, text in (headers or {}).items():
        for part in (key, text):
            if not isinstance(part, str) or not part.isascii() or any(ord(c) < 32 or ord(c) == 127 for c in part):
                raise ValueError(f"--agent http:{redact_url(url)}: header {ascii(key)} must be printable ASCII "
                                 f"text, got {ascii(part)}")


class HttpAgentClient:
    """The connection to one agent endpoint, shared by the trials' agents (thread-safe; the pre-flight checks it).

    Args:
        url: the service's base URL (``http://HOST:PORT/v1``) or its full ``.../chat/completions`` URL.
        model: the ``model`` field sent (a service serving several agents may route by it).
        api_key: sent as ``Authorization: Bearer KEY`` when given (recorded as ``[redacted]``:
            :mod:`simulator.types.secrets`).
        api_key_env: the name of an environment variable holding the key (read here; only the name is recorded).
        headers: further request headers.
        timeout: seconds allowed for each request's read (a slow answer is a timeout, retried).
        connect_timeout: seconds allowed to connect.
        max_attempts: requests per step at most (the first and its retries).
        wait_initial: backoff unit in seconds (random exponential: up to 1, 2, 4, ... units).
        wait_max: longest backoff in seconds.
        deadline: seconds after which no further attempt starts (None: ``max_attempts`` only).
        params: further body fields sent with every request (``temperature``, ``max_tokens``, ...).

    Attributes:
        endpoint: the chat-completions URL.
        api_base: the base URL (also the pre-flight's server name).

    Raises:
        ValueError: the URL is not ``http://`` or ``https://``, a bad option value (:func:`_check_options`), or
            ``api_key_env`` names an unset or empty variable.
    """

    def __init__(self, url: str, *, model: str = "tausim-agent", api_key: str | None = None,
                 api_key_env: str | None = None, headers: Mapping[str, str] | None = None, timeout: float = 60.0,
                 connect_timeout: float = 5.0,
                 max_attempts: int = 4, wait_initial: float = 0.5, wait_max: float = 8.0,
                 deadline: float | None = 300.0, params: Mapping[str, Any] | None = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"--agent http:{redact_url(url)}: expected http:http://HOST:PORT/v1 (an http:// or "
                             "https:// URL)")
        _check_options(url, max_attempts, {"timeout": timeout, "connect_timeout": connect_timeout,
                                           "wait_initial": wait_initial, "wait_max": wait_max, "deadline": deadline},
                       headers)
        if api_key_env is not None:
            api_key = os.environ.get(str(api_key_env)) or None
            if api_key is None:
                raise ValueError(f"--agent http:{redact_url(url)}: api_key_env names {api_key_env!r}, an "
                                 "environment variable that is not set (or empty)")
        self.endpoint, self.api_base = _endpoint(url)
        self.model = model
        self.max_attempts = max_attempts
        self.wait_initial = wait_initial
        self.wait_max = wait_max
        self.deadline = deadline
        self.params = dict(params or {})
        self.timeout = httpx.Timeout(timeout, connect=connect_timeout)
        self.headers = {"Content-Type": "application/json", **dict(headers or {})}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(timeout=self.timeout, headers=self.headers, trust_env=False)

    def close(self) -> None:
        """Close the connection pool (idempotent)."""
        self._http.close()

    def preflight(self) -> None:
        """Check in under 5 s that something answers HTTP at the endpoint (``GET BASE/models``; no completion).

        Any answer but a server error counts (a service need not list models); nothing answering, a timeout, a
        refused key or a 5xx is a set-up error.

        Raises:
            SetupError: ``kind="server"`` (unreachable, timeout, 5xx) or ``"credentials"`` (401/403); the message
                names the URL.
        """
        url = f"{self.api_base}/models"
        try:
            with httpx.Client(timeout=httpx.Timeout(PREFLIGHT_SECONDS), headers=self.headers,
                              trust_env=False) as http:
                response = http.get(url)
        except httpx.HTTPError as e:
            raise SetupError(f"agent endpoint {redact_url(self.endpoint)} is unreachable: {_describe(e)}",
                             kind="server") from e
        # the URL that answered, not the endpoint
        checked = redact_url(f"agent endpoint {self.endpoint} (pre-flight GET {url})")
        if response.status_code in (401, 403):
            raise SetupError(f"{checked} refused the credentials ({response.status_code})", kind="credentials")
        if response.status_code >= 500 and response.status_code != 501:  # 501: no GET route, yet it answers
            raise SetupError(f"{checked} answered {response.status_code} {response.reason_phrase}", kind="server")

    def complete(self, body: Mapping[str, Any]) -> tuple[dict[str, Any] | HttpFailure, int]:
        """Send one chat-completions request, with retries of transient failures.

        Args:
            body: the request body (``model`` and the client's ``params`` are added unless present).

        Returns:
            ``(response JSON or the last failure, attempts made)``; never raises for a failed exchange.
        """
        request = {"model": self.model, **self.params, **body}
        attempts = 0

        def attempt() -> dict[str, Any] | HttpFailure:
            nonlocal attempts
            attempts += 1
            return self._post(request)

        stop = stop_after_attempt(self.max_attempts)
        if self.deadline is not None:
            stop = stop | stop_after_delay(self.deadline)  # type: ignore[assignment]
        retrying = Retrying(stop=stop, wait=wait_random_exponential(multiplier=self.wait_initial, max=self.wait_max),
                            retry=retry_if_result(lambda r: isinstance(r, HttpFailure) and r.transient),
                            retry_error_callback=_last_result)
        return retrying(attempt), attempts

    def _post(self, request: Mapping[str, Any]) -> dict[str, Any] | HttpFailure:
        """One request: the answer's JSON object, or the failure (transient or not)."""
        where = f"agent endpoint {redact_url(self.endpoint)}"
        try:
            response = self._http.post(self.endpoint, content=json.dumps(request))
        except httpx.TimeoutException as e:
            return HttpFailure(f"{where}: no answer in time ({_describe(e)})", "infra_error", transient=True)
        except httpx.HTTPError as e:
            return HttpFailure(f"{where} is unreachable: {_describe(e)}", "infra_error", transient=True)
        status = response.status_code
        if status != 200:
            detail = _error_detail(response)
            if status == 429 or status >= 500:
                return HttpFailure(f"{where} answered {status}{detail}", "infra_error", transient=True)
            kind: ErrorKind = "setup_error" if status in (401, 403, 404, 405) else "agent_error"
            return HttpFailure(f"{where} answered {status}{detail}", kind)
        try:
            data = response.json()
        except ValueError:
            return HttpFailure(f"{where} answered a body that is not JSON: {response.text[:120]!r}", "agent_error",
                               transient=True)
        if not isinstance(data, dict):
            return HttpFailure(f"{where} answered JSON that is not an object: {response.text[:120]!r}", "agent_error")
        return data


def _last_result(state: RetryCallState) -> Any:
    """After the last attempt: its failure, returned rather than raised."""
    assert state.outcome is not None
    return state.outcome.result()


def _describe(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def _error_detail(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = response.text
    message = " ".join(str(message or "").split())[:200]
    return f": {message}" if message else ""


def message_from_completion(data: Mapping[str, Any], step: int) -> tuple[Message, Usage]:
    """Return the assistant message and the usage of a chat-completions answer.

    Args:
        data: the response JSON (``choices[0].message``; ``usage`` if present).
        step: the agent's step number (tool calls without an id get ``http_STEP_I``).

    Returns:
        ``(message, usage)``; the usage's cost is None (a service's price is unknown).

    Raises:
        ValueError: no ``choices[0].message``, or a tool call without a function name.
    """
    choices = data.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise ValueError(f"the answer has no choices[0].message: {json.dumps(data)[:200]}")
    calls = [tool_call_from_openai(c, f"http_{step}_{i}") for i, c in enumerate(message.get("tool_calls") or [])]
    content = message.get("content")
    raw_usage = data.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    return (Message(role="assistant", content=content if isinstance(content, str) else None, tool_calls=calls),
            Usage(prompt_tokens=int(usage.get("prompt_tokens") or 0),
                  completion_tokens=int(usage.get("completion_tokens") or 0), cost_usd=None, calls=1))


class HttpAgent:
    """An :class:`~simulator.types.protocols.Agent` whose decisions come from an HTTP chat-completions service.

    Args:
        ctx: the trial context (``policy``, ``tools`` and ``seed`` are read; never the task's gold).
        client: the endpoint's client.
        send_policy: send the domain policy as the system message (False: the service has its own prompt).
        send_seed: send the trial seed as ``seed`` (reproducible sampling where the service honours it).

    Attributes:
        resumes_from_history: True: each step depends only on the messages it is given.
    """

    resumes_from_history = True

    def __init__(self, ctx: TrialContext, client: HttpAgentClient, *, send_policy: bool = True,
                 send_seed: bool = True) -> None:
        self.client = client
        self.policy = ctx.policy if send_policy else ""
        self.tools: list[dict[str, Any]] = list(ctx.tools)
        self.seed = ctx.seed % (2**31) if send_seed else None
        self._steps = 0

    @property
    def model(self) -> str:
        """The ``model`` field sent to the service."""
        return self.client.model

    def build_request(self, messages: Sequence[Message]) -> dict[str, Any]:
        """Return the request body for the conversation so far.

        Args:
            messages: the trial's messages (user, assistant, tool) in order.

        Returns:
            ``{"messages": [...], "tools": [...], "tool_choice": "auto", "seed": int}`` (tools and seed when any).
        """
        chat = ([{"role": "system", "content": self.policy}] if self.policy else []) + to_openai_messages(messages)
        body: dict[str, Any] = {"messages": chat}
        if self.tools:
            body["tools"] = self.tools
            body["tool_choice"] = "auto"
        if self.seed is not None:
            body["seed"] = self.seed
        return body

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Ask the service for its next message.

        Args:
            messages: all messages of the trial in order.

        Returns:
            Its message (tool calls or text) with usage; on failure an empty message with ``error`` (one line naming
            the URL) and ``error_kind`` (``infra_error`` after the retries, ``agent_error`` for a malformed answer,
            ``setup_error`` for a missing route or refused credentials).
        """
        self._steps += 1
        data, attempts = self.client.complete(self.build_request(messages))
        if isinstance(data, HttpFailure):
            return failed_turn(data.message, data.kind)
        try:
            message, usage = message_from_completion(data, self._steps)
        except ValueError as e:
            return failed_turn(f"agent endpoint {redact_url(self.client.endpoint)} misbehaved: {e}", "agent_error")
        usage.attempts = attempts
        return AgentTurn(message=message, usage=usage)


def build_http_agent(arg: str, **options: Any) -> Callable[[TrialContext], HttpAgent]:
    """Return the factory of ``--agent http:URL``: one :class:`HttpAgent` per trial, sharing one client.

    Args:
        arg: the URL (``http://HOST:PORT/v1`` or the full ``.../chat/completions`` URL).
        **options: :class:`HttpAgentClient` options (``model``, ``api_key``, ``api_key_env``, ``headers``, ``timeout``,
            ``connect_timeout``, ``max_attempts``, ``wait_initial``, ``wait_max``, ``deadline``); ``send_policy`` and
            ``send_seed`` (:class:`HttpAgent`); run-wide options the registry passes (``domain``, ``cache``, ...) are
            ignored; anything else not None is sent in the body (``temperature``, ``max_tokens``, ...).

    Returns:
        A callable taking a :class:`~simulator.types.protocols.TrialContext`; its ``client`` attribute is the
        shared :class:`HttpAgentClient` (the run's pre-flight calls its ``preflight``).

    Raises:
        ValueError: not an http(s) URL, or a bad option value.
    """
    client_options = {k: options.pop(k) for k in _CLIENT_OPTIONS if k in options}
    agent_options = {k: options.pop(k) for k in ("send_policy", "send_seed") if k in options}
    for flag, value in agent_options.items():
        if not isinstance(value, bool):
            raise ValueError(f"--agent http:{redact_url(arg)}: {flag} must be true or false, got {value!r}")
    for k in _IGNORED_OPTIONS:
        options.pop(k, None)
    params = {k: v for k, v in options.items() if v is not None}
    for k, v in params.items():  # sent in every request body: JSON has no NaN or infinity
        try:
            json.dumps(v, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValueError(f"--agent http:{redact_url(arg)}: option {ascii(k)} cannot be sent as JSON ({e})") from e
    client = HttpAgentClient(arg, params=params, **client_options)

    def build(ctx: TrialContext) -> HttpAgent:
        return HttpAgent(ctx, client, **agent_options)

    build.client = client  # type: ignore[attr-defined]
    return build

