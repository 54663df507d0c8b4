"""Conversation records shared by agents, users, the orchestrator and the store.

Messages follow the OpenAI chat shape (role, content, tool calls) so that LLM agents can send them to a
model unchanged, and scripted components can read them without a model.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

Role = Literal["system", "user", "assistant", "tool"]


class Usage(BaseModel):
    """Token and money usage of one or more model calls.

    Attributes are additive; ``cost_usd`` is None when any contributing call came from an unpriced model
    (never recorded as $0).
    """

    prompt_tokens: int = 0
    """Input tokens."""
    completion_tokens: int = 0
    """Output tokens."""
    cost_usd: float | None = 0.0
    """Cost in USD, or None when unknown."""
    calls: int = 0
    """Number of model calls counted."""
    attempts: int = 0
    """API requests made for those calls, retries of transient failures included (``attempts - calls``
    requests were retried)."""

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=cost,
            calls=self.calls + other.calls,
            attempts=self.attempts + other.attempts,
        )


class ToolCall(BaseModel):
    """One tool call requested by the agent.

    ``arguments`` is the parsed JSON object; when the model produced text that is not a JSON object,
    ``arguments`` is None and ``raw_arguments`` keeps the text so that the error can be shown to the agent.
    """

    id: str
    """Call id, unique within the trial (used to pair the tool result)."""
    name: str
    """Tool name as requested (may be unknown to the domain)."""
    arguments: dict[str, Any] | None = None
    """Parsed arguments, or None when they could not be parsed."""
    raw_arguments: str | None = None
    """The raw argument text as produced by a model, when there was one."""

    def openai(self) -> dict[str, Any]:
        """Return the call in OpenAI chat-completions form.

        Returns:
            ``{"id", "type": "function", "function": {"name", "arguments": str}}``.
        """
        args = self.raw_arguments if self.arguments is None else json.dumps(self.arguments)
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": args or ""}}


class Message(BaseModel):
    """One message of a trial's conversation."""

    role: Role
    content: str | None = None
    """Text of the message (None for an assistant message made only of tool calls)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls of an assistant message, in order."""
    tool_call_id: str | None = None
    """For role ``tool``: the id of the call this result answers."""
    name: str | None = None
    """For role ``tool``: the tool name."""
    requestor: Literal["user"] | None = None
    """``user`` for the simulated user's own tool calls and their results (dual control): they stay on the user's
    side (the agent never sees them); None for every other message."""

    def openai(self) -> dict[str, Any]:
        """Return the message as an OpenAI chat-completions message dict."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.openai() for c in self.tool_calls]
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id
            out["name"] = self.name
        return out


class AgentTurn(BaseModel):
    """What an agent returns for one step: a message (text and/or tool calls) plus its usage.

    A reply with tool calls continues the agent's turn (the orchestrator runs the calls and asks again);
    a reply without tool calls ends the agent's turn and is shown to the user.
    """

    message: Message
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None
    """Set when the agent failed (e.g. the model API failed after retries); ends the trial."""
    error_kind: Literal["agent_error", "infra_error", "context_overflow", "setup_error"] | None = None
    """Termination reason to use when ``error`` is set."""


class UserTurn(BaseModel):
    """What a simulated user returns for one turn."""

    content: str
    """Text delivered to the agent (may be empty when the user only stops)."""
    stop: bool = False
    """The user considers the conversation finished (stop token)."""
    abandon: bool = False
    """The user gives up without its goal met."""
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None
    """Set when the simulator failed; ends the trial with ``user_error`` or ``infra_error``."""
    error_kind: Literal["user_error", "infra_error", "setup_error"] | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Calls of the user's own tools (dual-control domains, see :meth:`simulator.world.domain.Domain.user_toolbox`): the
    orchestrator runs them on the user's side of the trial database, shows the results to the user only, and asks
    the user again; ``content`` of such a turn stays on the user's side. Empty for every other domain."""
