"""``--agent a2a:URL``: the agent under test is a remote A2A agent (the ``a2a-sdk`` package, extra ``tausim[a2a]``).

tausim talks to the agent as the user would: each user message of a trial is one A2A message (``SendMessage``, role
user, one text part); all the messages of a trial share one A2A context (``context_id``), and a task the agent leaves
``input-required`` is continued by the next message. The agent's text replies are its messages to the simulated user.

The agent reaches the trial's tools over MCP: every message carries, in its metadata, ``mcp_url`` (a streamable HTTP
MCP endpoint on ``127.0.0.1``, one per trial, so the agent must run on this machine) and ``tausim`` (``policy``: the
domain policy text, ``domain``, ``seed``: the trial seed as a decimal string, since the numbers of a metadata
``Struct`` are doubles). A tool call arriving there is handed to tausim's
conversation loop as the agent's next step, run on the trial's own database and recorded exactly like a native call
(requestor ``agent``, same grading); its result goes back to the agent as the MCP result (``is_error`` for an
``Error: ...`` result). The MCP server is one per run (:mod:`simulator.agents.mcp_tools`), each trial with its own URL.

Nothing waits forever: each step waits at most ``timeout`` seconds for the agent's next tool call or reply, each A2A
request at most ``turn_timeout``; failures before the agent made any tool call (refused or dropped connections, 429
and 5xx answers) are retried a bounded number of times with exponential backoff (tenacity), never after one (a
retried message could repeat what the agent did). Each failure is one line naming the URL; a misbehaving agent (an
HTTP error, a body that is not JSON-RPC, a failed or rejected task) ends the trial ``agent_error``.
:meth:`A2AAgentClient.preflight` fetches the agent card in under 5 s (``tausim run`` does it before any trial and exits
2 when nothing answers)::

    from simulator.agents.a2a_agent import build_a2a_agent
    factory = build_a2a_agent("http://127.0.0.1:9999", timeout=60)
    factory.client.preflight()   # SetupError naming the URL when no agent card answers there
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import queue
import threading
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
from tenacity import AsyncRetrying, retry_if_result, stop_after_attempt, stop_after_delay, wait_random_exponential

from simulator.agents._a2a_wire import (
    CARD_PATH,
    A2AFailure,
    Working,
    failure_of,
    parse_card,
    poll_delays,
    reply_of,
    retry_last_result,
    user_message,
)
from simulator.agents._adapters import failed_turn
from simulator.agents._loop import LoopThread
from simulator.errors import SetupError, TausimError
from simulator.types.messages import AgentTurn, Message, ToolCall, Usage
from simulator.types.protocols import TrialContext

__all__ = ["MCP_URL_KEY", "A2AAgent", "A2AAgentClient", "build_a2a_agent"]

MCP_URL_KEY = "mcp_url"
"""The key of the trial's MCP endpoint URL in every A2A message's metadata."""

PREFLIGHT_SECONDS = 2.0
"""Connect and read timeout of the pre-flight's agent-card request (the whole check stays under 5 s)."""

_CLIENT_OPTIONS = ("timeout", "turn_timeout", "connect_timeout", "max_attempts", "wait_initial", "wait_max",
                   "headers", "api_key", "call_timeout")
_IGNORED_OPTIONS = ("domain", "cache", "limiters")


class _Trial:
    """One trial's meeting point: MCP calls (on the MCP server's loop) and the agent's steps (the trial's thread).

    A call posts ``("call", ToolCall)`` on :attr:`events` and waits for its result; the step that returned the call
    gives the result back (:meth:`resolve`). The A2A exchange posts ``("reply", AgentTurn)`` or ``("error",
    A2AFailure)`` when the agent answered. :meth:`close` answers every waiting call and cancels the exchange.
    """

    def __init__(self, schemas: list[dict[str, Any]], call_timeout: float) -> None:
        self.token = uuid.uuid4().hex
        self.context_id = f"tausim-{uuid.uuid4().hex}"
        self.task_id: str | None = None  # a task the agent left input-required, continued by the next message
        self.schemas = schemas
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.calls = 0  # MCP calls received (a failed exchange after one is not retried)
        self.awaiting: set[str] = set()  # ids of the calls handed to the loop, whose results the next step brings
        self.exchange: concurrent.futures.Future[None] | None = None
        self._timeout = call_timeout
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._pending: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[str]]] = {}
        self._closed = False

    async def call(self, name: str, arguments: dict[str, Any] | None) -> tuple[str, bool]:
        """Hand one MCP call to the trial's loop and wait for its result: ``(text, is an error)``."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._closed:
                return "Error: the trial has ended; no more tool calls", True
            call_id = f"a2a_{next(self._ids)}"
            future: asyncio.Future[str] = loop.create_future()
            self._pending[call_id] = (loop, future)
            self.calls += 1
        self.events.put(("call", ToolCall(id=call_id, name=name, arguments=dict(arguments or {}))))
        try:
            text = await asyncio.wait_for(future, self._timeout)
        except TimeoutError:
            return f"Error: no result for {name} within {self._timeout:g} s (the trial has ended)", True
        finally:
            with self._lock:
                self._pending.pop(call_id, None)
        return text, text.startswith("Error:")  # the toolbox answers "Error: ..." for every call not ok

    def resolve(self, call_id: str, content: str) -> None:
        """Give a call its result (from the step that got the tool result message; thread-safe)."""
        with self._lock:
            found = self._pending.get(call_id)
        if found is not None:
            found[0].call_soon_threadsafe(_set_result, found[1], content)

    def close(self) -> None:
        """End the trial's side: waiting calls answer an error, the exchange in progress is cancelled (idempotent)."""
        with self._lock:
            self._closed = True
            pending = list(self._pending.values())
        for loop, future in pending:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_set_result, future, "Error: the trial has ended; no more tool calls")
        if self.exchange is not None:
            self.exchange.cancel()


def _set_result(future: asyncio.Future[str], text: str) -> None:
    if not future.done():
        future.set_result(text)


class _Servers:
    """A client's threads: the run's MCP server (started on first use) and the A2A loop; no reference to the client.

    Args:
        loop: the client's loop thread.
    """

    def __init__(self, loop: LoopThread) -> None:
        self._loop = loop
        self._mcp: Any = None
        self._lock = threading.Lock()

    def mcp_port(self, trials: weakref.WeakValueDictionary[str, _Trial]) -> int:
        """The port of the MCP server answering the open ``trials`` (each at ``/mcp?trial=TOKEN``)."""
        with self._lock:
            if self._mcp is None:
                self._mcp = _start_mcp(trials)
            return int(self._mcp.port)

    def close(self) -> None:
        """Stop the MCP server and the loop (idempotent)."""
        with self._lock:
            mcp, self._mcp = self._mcp, None
        if mcp is not None:
            mcp.stop()
        self._loop.stop()


def _start_mcp(trials: weakref.WeakValueDictionary[str, _Trial]) -> Any:
    """Start the MCP server of a client's trials on 127.0.0.1 (a free port).

    Raises:
        RuntimeError: the server did not start.
        ImportError: the ``mcp`` extra is not installed.
    """
    from simulator.agents.mcp_tools import LOOPBACK, LoopbackServer, bind_loopback, tools_server

    def trial_of(request: Any) -> _Trial | None:
        token = request.query_params.get("trial") if request is not None else None
        return trials.get(token) if token else None

    def schemas(request: Any) -> list[dict[str, Any]]:
        trial = trial_of(request)
        return trial.schemas if trial is not None else []

    async def call(request: Any, name: str, arguments: dict[str, Any] | None) -> tuple[str, bool]:
        trial = trial_of(request)
        if trial is None:
            return "Error: no open trial at this MCP URL (the trial has ended)", True
        return await trial.call(name, arguments)

    server = tools_server(schemas, call, name="tausim", instructions="The tools of one tausim trial; every call "
                          "runs on that trial's own database.")
    app = server.streamable_http_app(host=LOOPBACK, stateless_http=True, json_response=True)
    return LoopbackServer(app, bind_loopback(0), name="tausim-a2a-mcp").start()


class A2AAgentClient:
    """The connection to one A2A agent, shared by the trials of a run (thread-safe; the pre-flight checks it).

    Args:
        url: the agent's base URL (its card at ``URL/.well-known/agent-card.json``), or the card's URL itself.
        timeout: seconds a step waits for the agent's next tool call or reply.
        turn_timeout: seconds one A2A request may take (the agent's whole turn, tool calls included).
        connect_timeout: seconds allowed to connect.
        max_attempts: requests per message at most (the first and its retries).
        wait_initial: backoff unit in seconds (random exponential: up to 1, 2, 4, ... units).
        wait_max: longest backoff in seconds.
        headers: further request headers (e.g. credentials).
        api_key: sent as ``Authorization: Bearer KEY`` when given.
        call_timeout: seconds an MCP call waits for tausim to run it.

    Attributes:
        url: the base URL.
        card_url: the agent card's URL.
        api_base: the base URL (the pre-flight's server name).

    Raises:
        ValueError: the URL is not ``http://`` or ``https://``, or ``max_attempts`` < 1.
    """

    def __init__(self, url: str, *, timeout: float = 300.0, turn_timeout: float = 600.0, connect_timeout: float = 5.0,
                 max_attempts: int = 4, wait_initial: float = 0.5, wait_max: float = 8.0,
                 headers: Mapping[str, str] | None = None, api_key: str | None = None,
                 call_timeout: float = 300.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"--agent a2a:{url}: expected a2a:http://HOST:PORT (an http:// or https:// URL)")
        if max_attempts < 1:
            raise ValueError(f"--agent a2a:{url}: max_attempts must be >= 1, got {max_attempts}")
        self.url = url.rstrip("/").removesuffix("/" + CARD_PATH)
        self.card_url = f"{self.url}/{CARD_PATH}"
        self.api_base = self.url
        self.timeout = timeout
        self.turn_timeout = turn_timeout
        self.connect_timeout = connect_timeout
        self.max_attempts = max_attempts
        self.wait_initial = wait_initial
        self.wait_max = wait_max
        self.call_timeout = call_timeout
        self.headers = dict(headers or {})
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.loop = LoopThread("tausim-a2a")
        self._servers = _Servers(self.loop)
        weakref.finalize(self, self._servers.close)  # a client no longer used stops its threads
        self._card: Any = None
        self._client: Any = None
        self._http: httpx.AsyncClient | None = None
        self._client_lock: asyncio.Lock | None = None
        self._trials: weakref.WeakValueDictionary[str, _Trial] = weakref.WeakValueDictionary()

    @property
    def model(self) -> str:
        """The agent's name from its card once fetched, else ``a2a``."""
        name = getattr(self._card, "name", "")
        return str(name) if name else "a2a"

    # ------------------------------------------------------------------------------------------ pre-flight
    def preflight(self) -> None:
        """Check in under 5 s that an A2A agent answers at the URL: its agent card is fetched and understood.

        Raises:
            SetupError: ``kind="server"`` (unreachable, timeout, an error status, no card, a card tausim cannot use)
                or ``"credentials"`` (401/403); the message is one line naming the URL.
        """
        try:
            with httpx.Client(timeout=httpx.Timeout(PREFLIGHT_SECONDS), headers=self.headers,
                              trust_env=False) as http:
                response = http.get(self.card_url)
        except httpx.HTTPError as e:
            raise SetupError(f"A2A agent {self.url} is unreachable: {_describe(e)}", kind="server") from e
        if response.status_code in (401, 403):
            raise SetupError(f"A2A agent {self.url} refused the credentials ({response.status_code})",
                             kind="credentials")
        if response.status_code != 200:
            raise SetupError(f"A2A agent {self.url}: no agent card at {self.card_url} (HTTP {response.status_code} "
                             f"{response.reason_phrase})", kind="server")
        card = parse_card(response, self.url)
        if isinstance(card, A2AFailure):
            raise SetupError(card.message, kind="server")
        self._factory(httpx.AsyncClient()).create(card)  # a transport tausim can use (ValueError: none)
        self._card = card

    def _factory(self, http: httpx.AsyncClient) -> Any:
        from a2a.client import ClientConfig, ClientFactory
        from a2a.utils.constants import TransportProtocol

        return ClientFactory(ClientConfig(streaming=False, httpx_client=http, supported_protocol_bindings=[
            TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON]))

    # ------------------------------------------------------------------------------------------ the trials' MCP
    def open_trial(self, schemas: list[dict[str, Any]]) -> _Trial:
        """Register a trial's tools (the MCP server answers its URL while the trial object lives)."""
        trial = _Trial(schemas, self.call_timeout)
        self._trials[trial.token] = trial
        return trial

    def mcp_url(self, trial: _Trial) -> str:
        """Return the trial's MCP endpoint, starting the run's MCP server on first use.

        Raises:
            RuntimeError: the server did not start.
            ImportError: the ``mcp`` extra is not installed.
        """
        port = self._servers.mcp_port(self._trials)
        return f"http://127.0.0.1:{port}/mcp?trial={trial.token}"

    # ------------------------------------------------------------------------------------------ A2A exchanges
    async def _a2a(self) -> Any:
        """The SDK client (made once, on the loop; the card fetched now when no pre-flight fetched it)."""
        if self._client_lock is None:
            self._client_lock = asyncio.Lock()
        async with self._client_lock:
            if self._client is None:
                self._http = httpx.AsyncClient(
                    timeout=httpx.Timeout(self.turn_timeout, connect=self.connect_timeout), headers=self.headers,
                    trust_env=False)
                if self._card is None:
                    response = await self._http.get(self.card_url)
                    if response.status_code != 200:
                        raise _Refused(A2AFailure(f"A2A agent {self.url}: no agent card at {self.card_url} (HTTP "
                                                  f"{response.status_code})", "agent_error"))
                    card = parse_card(response, self.url)
                    if isinstance(card, A2AFailure):
                        raise _Refused(card)
                    self._card = card
                self._client = self._factory(self._http).create(self._card)
            return self._client

    async def exchange(self, trial: _Trial, text: str, metadata: dict[str, Any]) -> None:
        """Send one user message and post the agent's reply (or the failure) on the trial's events.

        Args:
            trial: the trial.
            text: the user's message.
            metadata: the message's metadata (``mcp_url``, ``tausim``).
        """
        request = user_message(text, trial.context_id, trial.task_id, metadata)
        attempts = 0

        async def attempt() -> tuple[str, str | None] | A2AFailure:
            nonlocal attempts
            attempts += 1
            before = trial.calls
            result = await self._attempt(request)
            if isinstance(result, A2AFailure) and result.transient and trial.calls != before:
                return A2AFailure(result.message + " (not retried: the agent had called tools)", result.kind)
            return result

        stop = stop_after_attempt(self.max_attempts) | stop_after_delay(self.turn_timeout)
        retrying = AsyncRetrying(stop=stop, wait=wait_random_exponential(multiplier=self.wait_initial,
                                                                          max=self.wait_max),
                                 retry=retry_if_result(lambda r: isinstance(r, A2AFailure) and r.transient),
                                 retry_error_callback=retry_last_result)
        result: tuple[str, str | None] | A2AFailure = await retrying(attempt)
        if isinstance(result, A2AFailure):
            trial.events.put(("error", result))
            return
        reply, trial.task_id = result
        trial.events.put(("reply", AgentTurn(message=Message(role="assistant", content=reply),
                                             usage=Usage(cost_usd=None, calls=1, attempts=attempts))))

    async def _attempt(self, request: Any) -> tuple[str, str | None] | A2AFailure:
        """One request (and the polls of a task still working): ``(reply text, task to continue)`` or the failure."""
        try:
            client = await self._a2a()
            events = [e async for e in client.send_message(request)]
            if not events:
                return A2AFailure(f"A2A agent {self.url} answered no message and no task", "agent_error")
            result = reply_of(events[-1], self.url)
            for delay in poll_delays(self.turn_timeout):
                if not isinstance(result, Working):
                    break
                await asyncio.sleep(delay)  # a task still working: ask for it again
                result = reply_of(await client.get_task(_get_task(result.task_id)), self.url)
            if isinstance(result, Working):
                return A2AFailure(f"A2A agent {self.url}: the task is still working after {self.turn_timeout:g} s",
                                  "agent_error")
            return result
        except asyncio.CancelledError:
            raise
        except _Refused as e:
            return e.failure
        except Exception as e:  # noqa: BLE001 - whatever the remote agent or its transport did ends the trial
            return failure_of(e, self.url)

    def close(self) -> None:
        """Stop the MCP server and close the connections (idempotent)."""
        if self._http is not None:
            http, self._http = self._http, None
            with contextlib.suppress(concurrent.futures.TimeoutError):
                self.loop.submit(http.aclose()).result(5)
        self._client = self._client_lock = None  # a later use makes them again, on the loop then running
        self._servers.close()


def _get_task(task_id: str) -> Any:
    from a2a.types.a2a_pb2 import GetTaskRequest

    return GetTaskRequest(id=task_id)


class _Refused(TausimError):
    """No usable agent card (raised inside an attempt, returned as its failure)."""

    def __init__(self, failure: A2AFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class A2AAgent:
    """An :class:`~simulator.types.protocols.Agent` that is a remote A2A agent, for one trial (see the module).

    Args:
        ctx: the trial context (``tools``, ``policy``, ``domain`` and ``seed`` are read; never the task's gold).
        client: the agent's client.
        send_policy: send the domain policy in the metadata (False: the agent has its own).

    Attributes:
        resumes_from_history: False: the agent keeps the conversation on its side (the A2A context).
    """

    resumes_from_history = False

    def __init__(self, ctx: TrialContext, client: A2AAgentClient, *, send_policy: bool = True) -> None:
        self.client = client
        self._trial = client.open_trial(list(ctx.tools))
        self._about: dict[str, Any] = {"domain": ctx.domain, "seed": str(ctx.seed)}  # a Struct's numbers are doubles
        if send_policy:
            self._about["policy"] = ctx.policy
        self._seen = 0
        weakref.finalize(self, self._trial.close)  # a trial that ends mid-turn frees the agent's waiting calls

    @property
    def model(self) -> str:
        """The agent's name (from its card)."""
        return self.client.model

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Return the agent's next tool call (made over MCP) or its reply to the user.

        Args:
            messages: all messages of the trial in order.

        Returns:
            One tool call (tausim runs it; its result goes back to the agent at the next step), or the agent's text
            reply; an ``agent_error`` / ``infra_error`` / ``setup_error`` turn (one line naming the URL) when the
            agent failed or gave nothing within ``timeout``.
        """
        trial = self._trial
        new = messages[self._seen:]
        self._seen = len(messages)
        if trial.awaiting:
            for m in new:
                if m.role == "tool" and m.tool_call_id in trial.awaiting:
                    trial.awaiting.discard(m.tool_call_id)
                    trial.resolve(m.tool_call_id, m.content or "")
        else:
            text = "\n".join(m.content for m in new if m.role == "user" and m.requestor is None and m.content)
            try:
                metadata = {MCP_URL_KEY: self.client.mcp_url(trial), "tausim": self._about}
            except (RuntimeError, OSError) as e:
                return failed_turn(f"a2a: the trial's MCP server did not start: {e}", "infra_error")
            trial.exchange = self.client.loop.submit(self.client.exchange(trial, text, metadata))
        try:
            kind, value = trial.events.get(timeout=self.client.timeout)
        except queue.Empty:
            trial.close()
            return failed_turn(f"A2A agent {self.client.url}: no tool call and no reply within "
                               f"{self.client.timeout:g} s", "agent_error")
        if kind == "call":
            trial.awaiting.add(value.id)
            return AgentTurn(message=Message(role="assistant", content=None, tool_calls=[value]),
                             usage=Usage(cost_usd=None))
        if kind == "error":
            return failed_turn(value.message, value.kind)
        turn: AgentTurn = value
        return turn


def _describe(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def build_a2a_agent(arg: str, **options: Any) -> Callable[[TrialContext], A2AAgent]:
    """Return the factory of ``--agent a2a:URL``: one :class:`A2AAgent` per trial, sharing one client.

    Args:
        arg: the agent's base URL (``http://HOST:PORT``; its card at ``/.well-known/agent-card.json``).
        **options: :class:`A2AAgentClient` options (``timeout``, ``turn_timeout``, ``connect_timeout``,
            ``max_attempts``, ``wait_initial``, ``wait_max``, ``headers``, ``api_key``, ``call_timeout``) and
            ``send_policy`` (:class:`A2AAgent`); run-wide options the registry passes (``domain``, ``cache``,
            ``limiters``) are ignored.

    Returns:
        A callable taking a :class:`~simulator.types.protocols.TrialContext`; its ``client`` attribute is the shared
        :class:`A2AAgentClient` (the run's pre-flight calls its ``preflight``).

    Raises:
        ValueError: not an http(s) URL, the ``a2a-sdk`` package is missing, or an option a2a agents do not take
            (model parameters such as ``temperature``: the remote agent has its own model).
    """
    try:
        import a2a.client  # noqa: F401
    except ImportError as e:
        raise ValueError("--agent a2a: the A2A SDK is not installed (pip install 'tausim[a2a]')") from e
    client_options = {k: options.pop(k) for k in _CLIENT_OPTIONS if options.get(k) is not None}
    agent_options = {k: bool(options.pop(k)) for k in ("send_policy",) if k in options}
    unknown = sorted(k for k, v in options.items() if v is not None and k not in _IGNORED_OPTIONS
                     and k not in _CLIENT_OPTIONS)
    if unknown:
        raise ValueError(f"--agent a2a:{arg}: a2a agents take no {', '.join(unknown)} (the remote agent has its own "
                         "model and settings)")
    client = A2AAgentClient(arg, **client_options)

    def build(ctx: TrialContext) -> A2AAgent:
        return A2AAgent(ctx, client, **agent_options)

    build.client = client  # type: ignore[attr-defined]
    return build
