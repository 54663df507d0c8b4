"""What the agent adapters share: loading a framework factory, reading OpenAI tool calls, failed turns.

The adapters (:mod:`simulator.agents.http_agent`, :mod:`simulator.agents.openai_agents`,
:mod:`simulator.agents.langgraph_agent`) turn an outside agent into tausim's ``step(messages) -> AgentTurn``: the
outside agent decides, tausim runs every tool call on the trial's own database and records it like a native one.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any, Literal

from simulator.models.llm import unreadable_answer
from simulator.types.messages import AgentTurn, Message, ToolCall
from simulator.types.protocols import TrialContext
from simulator.world.plugins import load_reference

__all__ = ["ErrorKind", "call_factory", "describe_error", "error_kind", "failed_turn", "load_factory",
           "parse_arguments", "tool_call_from_openai"]

ErrorKind = Literal["agent_error", "infra_error", "context_overflow", "setup_error"]


def failed_turn(error: str, kind: ErrorKind = "agent_error") -> AgentTurn:
    """Return the turn of an agent that failed: an empty assistant message with ``error`` and ``error_kind``.

    Args:
        error: one line naming the cause.
        kind: the trial's termination reason.

    Returns:
        The :class:`AgentTurn` (the conversation ends the trial with ``kind``).
    """
    return AgentTurn(message=Message(role="assistant", content=None), error=error, error_kind=kind)


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Read a tool call's arguments as a model gave them.

    Args:
        raw: a JSON object text, a dict, or None/empty (no arguments).

    Returns:
        ``(arguments, None)`` for a JSON object, else ``(None, raw text)`` so the error can be shown to the agent.
    """
    if isinstance(raw, Mapping):
        return dict(raw), None
    text = "" if raw is None else str(raw)
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # not JSON, or nested past the parser's depth
        return None, text
    return (value, None) if isinstance(value, dict) else (None, text)


def tool_call_from_openai(call: Mapping[str, Any], fallback_id: str) -> ToolCall:
    """Return the :class:`ToolCall` of one OpenAI chat-completions tool call.

    Args:
        call: ``{"id", "type": "function", "function": {"name", "arguments": str}}``.
        fallback_id: the id to use when the call has none.

    Returns:
        The tool call (``arguments`` None and ``raw_arguments`` set when they are not a JSON object).

    Raises:
        ValueError: the call has no function name.
    """
    function = call.get("function") or {}
    name = function.get("name") if isinstance(function, Mapping) else None
    if not name:
        raise ValueError(f"a tool call without a function name: {json.dumps(call)[:200]}")
    args, raw = parse_arguments(function.get("arguments"))
    return ToolCall(id=str(call.get("id") or fallback_id), name=str(name), arguments=args, raw_arguments=raw)


def load_factory(kind: str, arg: str) -> Callable[..., Any]:
    """Import the factory named by ``module:factory`` (the part of an ``--agent KIND:module:factory`` spec).

    Args:
        kind: the adapter's scheme (``openai-agents``, ``langgraph``), for messages.
        arg: ``package.module:factory`` (a dotted attribute path after the colon works too).

    Returns:
        The callable.

    Raises:
        ValueError: malformed reference, module not importable, attribute missing or not callable.
    """
    module, _, attr = arg.partition(":")
    if not module or not attr:
        raise ValueError(f"--agent {kind}:{arg}: expected {kind}:package.module:factory")
    return load_reference(f"py:{arg}", "agent")  # type: ignore[no-any-return]


def call_factory(factory: Callable[..., Any], ctx: TrialContext, **offered: Any) -> Any:
    """Call a user's factory with what it asks for, by parameter name.

    A factory may take nothing, the trial context (a parameter named ``ctx`` or ``context``, or a single positional
    parameter of another name), and any of the names in ``offered`` (e.g. ``tools``, ``policy``).

    Args:
        factory: the user's callable.
        ctx: the trial context.
        **offered: further values the factory may ask for by name.

    Returns:
        What the factory returns.
    """
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable: give it the context
        return factory(ctx)
    values = {"ctx": ctx, "context": ctx, "policy": ctx.policy, "seed": ctx.seed, **offered}
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return factory(**{"ctx": ctx, **offered})
    kwargs = {name: values[name] for name in params if name in values}
    rest = [p for p in params.values() if p.name not in kwargs and p.default is p.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(rest) == 1 and "ctx" not in kwargs and "context" not in kwargs:  # one unnamed parameter: the context
        if rest[0].kind is rest[0].POSITIONAL_ONLY:
            return factory(ctx, **kwargs)
        kwargs[rest[0].name] = ctx
    return factory(**kwargs)


def describe_error(who: str, error: BaseException) -> str:
    """Return ``"WHO: ExceptionName: first line of its message"`` (one line).

    Args:
        who: the adapter (``openai-agents``, ``langgraph``).
        error: the exception.

    Returns:
        The line; for a model answer litellm could not read, ``"WHO: the model's answer cannot be read: REASON"``
        (:func:`simulator.models.llm.unreadable_answer`).
    """
    reason = unreadable_answer(error)
    if reason is not None:
        return f"{who}: the model's answer cannot be read: {reason}"
    lines = str(error).strip().splitlines()
    return f"{who}: {type(error).__name__}: {lines[0]}" if lines else f"{who}: {type(error).__name__}"


def error_kind(error: BaseException) -> ErrorKind:
    """Return the trial's end of a framework run that raised ``error``.

    Args:
        error: the exception (the OpenAI client's exceptions are recognised by class name).

    Returns:
        ``infra_error`` for a transient model failure (rate limit, 5xx, connection, timeout), ``setup_error`` for
        refused credentials or an unknown model, else ``agent_error``: a model answer litellm could not read is
        ``agent_error`` too, though litellm reports it as a 500 (:func:`simulator.models.llm.unreadable_answer`).
    """
    if unreadable_answer(error) is not None:
        return "agent_error"
    seen: BaseException | None = error
    for _ in range(5):  # the error and the causes it wraps (a framework may wrap the model client's error)
        if seen is None:
            break
        kind = _one_kind(seen)
        if kind is not None:
            return kind
        seen = seen.__cause__ or seen.__context__
    return "agent_error"


def _one_kind(error: BaseException) -> ErrorKind | None:
    name = type(error).__name__
    if name in ("RateLimitError", "APIConnectionError", "APITimeoutError", "InternalServerError", "TimeoutError",
                "ConnectError", "ReadTimeout"):
        return "infra_error"
    if name in ("AuthenticationError", "PermissionDeniedError", "NotFoundError"):
        return "setup_error"
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(status, int) and (status == 429 or status >= 500):
        return "infra_error"
    if isinstance(status, int) and status in (401, 403, 404):
        return "setup_error"
    return None
