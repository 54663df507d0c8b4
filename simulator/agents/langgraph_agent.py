"""``--agent langgraph:module:factory``: the agent under test is a compiled LangGraph graph.

The factory gets the trial's tools (LangChain tools, parameter ``tools``) and returns a compiled graph whose state has
a ``messages`` list, e.g. ``langgraph.prebuilt.create_react_agent(model, tools)`` (extra ``tausim[langgraph]``). It
may also take ``policy`` (the domain policy text: then the graph is in charge of it, e.g. ``prompt=policy``; a
factory that does not take it gets the policy as the conversation's first, system message), ``ctx``, ``seed`` and
``timeout`` (the run's ``--request-timeout`` in seconds, for the graph's model client; None outside a run).

tausim streams the graph (``stream_mode="updates"``) and stops at each update whose AI message has tool calls: those
calls are the step. tausim runs them on the trial's own database and records them like native calls; when the next
step brings their results, the stream goes on and the graph's tool node gets them from the tools (which run nothing
themselves). The graph's last AI message without tool calls is the agent's message to the user::

    # my_graph.py
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    def build(tools, policy, timeout):
        model = ChatOpenAI(model="my-model", base_url="http://127.0.0.1:8000/v1", api_key="test", timeout=timeout)
        return create_react_agent(model, tools, prompt=policy)

    # tausim run --domain retail --agent langgraph:my_graph:build

Nothing waits forever: the graph's stream runs on a worker thread of the trial (every step of the trial on the same
thread, in the trial's context variables), and a step waits at most ``step_timeout`` seconds for the graph's next
tool calls or answer: the run's ``--request-timeout`` when it is shorter than :data:`STEP_TIMEOUT`. Past it the trial
ends ``agent_error`` ("no tool call or answer from the graph in N s") and the stalled call is left to finish on its
thread (a model client given ``timeout`` ends it too).
"""

from __future__ import annotations

import contextvars
import inspect
import queue
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from simulator.agents._adapters import (
    call_factory,
    describe_error,
    error_kind,
    failed_turn,
    load_factory,
    parse_arguments,
)
from simulator.types.messages import AgentTurn, Message, ToolCall, Usage
from simulator.types.protocols import TrialContext

__all__ = ["LangGraphAdapter", "build_langgraph_agent", "to_langchain_messages", "trial_tools"]

RECURSION_LIMIT = 100
"""LangGraph's ``recursion_limit`` per user turn (graph steps before it gives up)."""

STEP_TIMEOUT = 300.0
"""Seconds a step waits for the graph's next tool calls or answer (then the trial ends ``agent_error``)."""


STALLED = object()
"""What :meth:`_Worker.call` returns when the graph did not give its next tool calls or answer within the timeout."""


class _Worker:
    """A daemon thread running one trial's graph stream: every job runs on it, in order, in one context.

    The thread starts at the first job, in a copy of the context variables of the thread that gave it (the trial's),
    and ends after :meth:`stop` once the job in progress, if any, returns (the adapter stops it when it is closed or
    garbage collected: the runner does not close agents).

    Args:
        name: the thread's name.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], dict[str, Any], threading.Event] | None] = \
            queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, box, done = job
            try:
                box["value"] = fn()
            except BaseException as e:  # noqa: BLE001 - handed to the waiting thread, which raises it
                box["error"] = e
            finally:
                done.set()
            del job, fn, box  # hold nothing of the adapter while idle: its finalizer stops this thread

    def call(self, fn: Callable[[], Any], timeout: float) -> Any:
        """Run ``fn`` on the thread and return its value, waiting at most ``timeout`` seconds.

        Returns:
            ``fn``'s value, or :data:`STALLED` when it did not return in time (it goes on running on the thread).

        Raises:
            BaseException: what ``fn`` raised.
        """
        if self._thread is None:
            self._thread = threading.Thread(target=contextvars.copy_context().run, args=(self._serve,),
                                            name=self._name, daemon=True)
            self._thread.start()
        box: dict[str, Any] = {}
        done = threading.Event()
        self._jobs.put((fn, box, done))
        if not done.wait(timeout):
            return STALLED
        if "error" in box:
            raise box["error"]
        return box["value"]

    def later(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on the thread after the job in progress, without waiting (nothing when the thread never ran)."""
        if self._thread is not None:
            self._jobs.put((fn, {}, threading.Event()))

    def stop(self) -> None:
        """Let the thread end after its queued jobs (idempotent; a later :meth:`call` starts a new thread)."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread = None


def _import_langchain() -> Any:
    try:
        from langchain_core import messages, tools
    except ImportError as e:
        raise ValueError("--agent langgraph: LangGraph is not installed (pip install 'tausim[langgraph]')") from e
    return messages, tools


class _Results:
    """The results tausim produced for the calls of the last step: call id -> tool output text."""

    def __init__(self) -> None:
        self.by_id: dict[str, str] = {}

    def take(self, call_id: str) -> str:
        return self.by_id.pop(call_id, f"Error: tausim has no result for tool call {call_id!r}")


def trial_tools(schemas: Sequence[Mapping[str, Any]], results: Any = None) -> list[Any]:
    """Return the trial's tools as LangChain tools that run nothing: each returns the result tausim produced.

    Args:
        schemas: the trial's OpenAI function schemas (``ctx.tools``).
        results: where the results are looked up by call id (a private holder of :class:`LangGraphAdapter`); None
            for tools built only to be shown to a model.

    Returns:
        One ``BaseTool`` per schema, with the schema's name, description and JSON-schema parameters.
    """
    _, lc_tools = _import_langchain()
    from langchain_core.messages import ToolMessage

    holder = results if results is not None else _Results()

    class TrialTool(lc_tools.BaseTool):  # type: ignore[misc,name-defined]
        """A tool of the trial; tausim runs its calls."""

        def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002 - LangChain's name
            if isinstance(input, dict) and input.get("type") == "tool_call":
                call_id = str(input.get("id") or "")
                return ToolMessage(content=holder.take(call_id), tool_call_id=call_id, name=self.name)
            return "Error: trial tools run only as tool calls of the graph"

        async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002
            return self.invoke(input, config, **kwargs)

        def _run(self, *args: Any, **kwargs: Any) -> Any:
            return "Error: trial tools run only as tool calls of the graph"

    out = []
    for schema in schemas:
        fn = schema["function"]
        out.append(TrialTool(name=fn["name"], description=fn.get("description") or fn["name"],
                             args_schema=fn.get("parameters") or {"type": "object", "properties": {}}))
    return out


def to_langchain_messages(messages: Sequence[Message], policy: str | None = None) -> list[Any]:
    """Convert trial messages to LangChain messages.

    Args:
        messages: the trial's messages in order (system messages and the user's own tool calls skipped).
        policy: a system message to put first, or None.

    Returns:
        ``SystemMessage``, ``HumanMessage``, ``AIMessage`` (with ``tool_calls``; calls whose arguments were not a
        JSON object as ``invalid_tool_calls``) and ``ToolMessage`` objects.
    """
    lc, _ = _import_langchain()
    out: list[Any] = [lc.SystemMessage(content=policy)] if policy else []
    for m in messages:
        if m.role == "system" or m.requestor == "user":
            continue
        if m.role == "user":
            out.append(lc.HumanMessage(content=m.content or ""))
        elif m.role == "tool":
            out.append(lc.ToolMessage(content=m.content or "", tool_call_id=m.tool_call_id or "", name=m.name))
        else:
            good = [{"name": c.name, "args": c.arguments, "id": c.id, "type": "tool_call"}
                    for c in m.tool_calls if c.arguments is not None]
            bad = [{"name": c.name, "args": c.raw_arguments, "id": c.id, "error": "arguments are not a JSON object",
                    "type": "invalid_tool_call"} for c in m.tool_calls if c.arguments is None]
            out.append(lc.AIMessage(content=m.content or "", tool_calls=good, invalid_tool_calls=bad))
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in parts if isinstance(p, str | dict))


def _usage(message: Any) -> Usage:
    meta = getattr(message, "usage_metadata", None) or {}
    return Usage(prompt_tokens=int(meta.get("input_tokens") or 0),
                 completion_tokens=int(meta.get("output_tokens") or 0), cost_usd=None, calls=1, attempts=1)


class LangGraphAdapter:
    """An :class:`~simulator.types.protocols.Agent` streaming a compiled LangGraph graph for one trial.

    Args:
        graph: the compiled graph (built with the tools of :func:`trial_tools` on ``results``).
        results: the holder the graph's tools read tausim's results from.
        policy: the system message put first in the graph's input, or None (the graph is in charge of it).
        recursion_limit: LangGraph's ``recursion_limit`` per user turn.
        step_timeout: seconds a step waits for the graph's next tool calls or answer.

    Attributes:
        resumes_from_history: True: between user turns the adapter keeps no state, each turn's stream starts from the
            messages given (a trajectory prefix needs no replay).
    """

    resumes_from_history = True

    def __init__(self, graph: Any, results: Any, *, policy: str | None = None,
                 recursion_limit: int = RECURSION_LIMIT, step_timeout: float = STEP_TIMEOUT) -> None:
        self.graph = graph
        self._results = results
        self._policy = policy
        self._limit = recursion_limit
        self._timeout = step_timeout
        self._worker = _Worker("tausim-langgraph")
        weakref.finalize(self, self._worker.stop)
        self._stream: Iterator[Any] | None = None
        self._usage = Usage(cost_usd=None)
        self._last: Any = None  # the last AI message seen in the stream
        self._waiting: set[str] = set()
        self._seen = 0

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Return the graph's next tool calls or its message.

        Args:
            messages: all messages of the trial in order.

        Returns:
            The tool calls of the graph's next AI message (their results go to the graph's tool node at the next
            step), or its last AI message as the message to the user; an error turn when the graph raised
            (``infra_error`` / ``setup_error`` / ``agent_error`` by :func:`~simulator.agents._adapters.error_kind`) or
            gave nothing within the step timeout (``agent_error``).
        """
        new = messages[self._seen:]
        self._seen = len(messages)
        if self._stream is not None and self._waiting:
            for m in new:
                if m.role == "tool" and m.tool_call_id in self._waiting:
                    self._results.by_id[m.tool_call_id] = m.content or ""
                    self._waiting.discard(m.tool_call_id)
        else:
            self._close()
            payload = {"messages": to_langchain_messages(messages, self._policy)}
            self._stream = iter(self.graph.stream(payload, {"recursion_limit": self._limit}, stream_mode="updates"))
            self._last = None
        try:
            turn = self._worker.call(self._advance, self._timeout)
        except Exception as e:  # noqa: BLE001 - any failure of the graph or its model ends the trial
            self._close()
            return failed_turn(describe_error("langgraph", e), error_kind(e))
        if turn is STALLED:
            self._close()
            return failed_turn(f"langgraph: no tool call or answer from the graph in {self._timeout:g} s")
        assert isinstance(turn, AgentTurn)
        return turn

    def _advance(self) -> AgentTurn:
        assert self._stream is not None
        for update in self._stream:
            for ai in _ai_messages(update):
                self._usage = self._usage + _usage(ai)
                self._last = ai
                if ai.tool_calls or getattr(ai, "invalid_tool_calls", None):
                    return self._calls_turn(ai)
        self._stream = None
        text = _text(self._last.content) if self._last is not None else ""
        return AgentTurn(message=Message(role="assistant", content=text), usage=self._take_usage())

    def _calls_turn(self, ai: Any) -> AgentTurn:
        calls = [ToolCall(id=str(c.get("id") or f"lg_{i}"), name=c["name"], arguments=dict(c.get("args") or {}))
                 for i, c in enumerate(ai.tool_calls)]
        for i, c in enumerate(getattr(ai, "invalid_tool_calls", None) or []):
            args, raw = parse_arguments(c.get("args"))
            calls.append(ToolCall(id=str(c.get("id") or f"lg_bad_{i}"), name=str(c.get("name") or ""),
                                  arguments=args, raw_arguments=raw))
        self._waiting = {c.id for c in calls}
        text = _text(ai.content) or None
        return AgentTurn(message=Message(role="assistant", content=text, tool_calls=calls), usage=self._take_usage())

    def _take_usage(self) -> Usage:
        usage, self._usage = self._usage, Usage(cost_usd=None)
        return usage

    def _close(self) -> None:
        """Drop the stream in progress; it is closed on the worker, after the job in progress (a stalled one)."""
        stream, self._stream = self._stream, None
        self._waiting = set()
        close = getattr(stream, "close", None)
        if callable(close):
            self._worker.later(close)

    def close(self) -> None:
        """Close the graph's stream in progress, if any, and let the worker thread end."""
        self._close()
        self._worker.stop()


def _ai_messages(update: Any) -> list[Any]:
    """The AI messages of one ``updates`` chunk (``{node: {"messages": [...]}}``), in order."""
    out: list[Any] = []
    if not isinstance(update, Mapping):
        return out
    for value in update.values():
        items = value.get("messages") if isinstance(value, Mapping) else None
        if not isinstance(items, list | tuple):
            items = [items] if items is not None else []
        out.extend(m for m in items if getattr(m, "type", None) == "ai")
    return out


def build_langgraph_agent(arg: str, **options: Any) -> Callable[[TrialContext], LangGraphAdapter]:
    """Return the factory of ``--agent langgraph:module:factory``.

    Args:
        arg: ``package.module:factory``; the factory takes ``tools`` (and may take ``policy``, ``ctx``, ``seed``) and
            returns a compiled graph (see the module docstring).
        **options: ``recursion_limit`` and ``step_timeout`` (seconds, :class:`LangGraphAdapter`); the run's
            ``timeout`` (``--request-timeout``, seconds) is offered to the factory as ``timeout`` and is the step
            timeout when it is shorter than :data:`STEP_TIMEOUT` and none is given; other run-wide options
            (``domain``, model parameters) are ignored: the graph's own model configuration decides.

    Returns:
        A callable building one graph and one :class:`LangGraphAdapter` per trial.

    Raises:
        ValueError: LangGraph is not installed, or the factory reference is malformed or cannot be imported.
    """
    _import_langchain()
    factory = load_factory("langgraph", arg)
    limit = int(options.get("recursion_limit", RECURSION_LIMIT))
    timeout = options.get("timeout")  # the run's --request-timeout
    timeout = float(timeout) if isinstance(timeout, int | float) and timeout > 0 else None
    step = float(options.get("step_timeout") or (min(timeout, STEP_TIMEOUT) if timeout is not None else STEP_TIMEOUT))
    try:
        takes_policy = "policy" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        takes_policy = False

    def build(ctx: TrialContext) -> LangGraphAdapter:
        results = _Results()
        graph = call_factory(factory, ctx, tools=trial_tools(ctx.tools, results), timeout=timeout)
        if not callable(getattr(graph, "stream", None)):
            raise TypeError(f"--agent langgraph:{arg}: the factory returned {type(graph).__name__}, expected a "
                            "compiled graph (with .stream)")
        return LangGraphAdapter(graph, results, policy=None if takes_policy else ctx.policy, recursion_limit=limit,
                                step_timeout=step)

    return build
