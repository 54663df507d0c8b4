"""The trajectory of a trial: termination reasons, limits, tool-call records and the trajectory itself."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from simulator.types.messages import Message, Usage


class TerminationReason(enum.StrEnum):
    """Why a trial ended."""

    USER_STOP = "user_stop"
    USER_ABANDON = "user_abandon"
    AGENT_TRANSFER = "agent_transfer"
    MAX_TURNS = "max_turns"
    MAX_STEPS = "max_steps"
    BUDGET_EXCEEDED = "budget_exceeded"
    AGENT_ERROR = "agent_error"
    USER_ERROR = "user_error"
    TOOL_BUG = "tool_bug"
    INFRA_ERROR = "infra_error"
    CONTEXT_OVERFLOW = "context_overflow"
    SETUP_ERROR = "setup_error"
    """The run cannot work as set up (missing credentials, unknown model): the run stops after such a trial."""
    TIMEOUT = "timeout"
    """The trial ran past the run's ``trial_timeout``; its thread was abandoned (see
    :mod:`simulator.execution.runner`)."""
    TOO_MANY_ERRORS = "too_many_errors"
    NEXT_STEP = "next_step"
    """A trajectory-prefix regression case ended after the agent's next turn, the only one run (see
    :mod:`simulator.dialogue.prefix`)."""


ERROR_REASONS = frozenset({
    TerminationReason.AGENT_ERROR, TerminationReason.USER_ERROR, TerminationReason.TOOL_BUG,
    TerminationReason.INFRA_ERROR, TerminationReason.CONTEXT_OVERFLOW, TerminationReason.SETUP_ERROR,
    TerminationReason.TIMEOUT,
})
"""Reasons that mean the trial could not be completed; such a trial always counts as failed."""


CAP_REASONS = frozenset({
    TerminationReason.MAX_TURNS, TerminationReason.MAX_STEPS, TerminationReason.BUDGET_EXCEEDED,
    TerminationReason.TOO_MANY_ERRORS,
})
"""Reasons that mean the trial was cut off by a cap before the conversation ended. As in tau-bench (no reward
without the episode being done), such a trial counts as failed, whatever its final state."""


@dataclass(frozen=True)
class Limits:
    """Caps of one trial.

    Attributes:
        max_turns: messages of user and agent together (tool messages excluded).
        max_steps: agent actions (each tool call and each text message counts one).
        max_tool_errors: failed tool calls after which the trial ends with ``too_many_errors`` (None: no
            limit; tau2's suites use 10).
        greeting: the agent's fixed first message, said before the user's first turn (None: the user speaks
            first); it counts as a turn, not as an agent step.
    """

    max_turns: int = 30
    max_steps: int = 60
    max_tool_errors: int | None = None
    greeting: str | None = None


class ToolCallRecord(BaseModel):
    """One dispatched tool call."""

    step: int
    """Agent step index (0-based) at which the call was made."""
    call_id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str | None = None
    kind: str | None
    """``read``/``write``, or None for an unknown tool."""
    status: str
    """``ok``, ``tool_error``, ``unknown_tool``, ``invalid_arguments`` or ``tool_bug``."""
    content: str
    duration_s: float
    bug: str | None = None
    requestor: Literal["agent", "user", "setup"] = "agent"
    """Who made the call: the agent, the simulated user on its own side (dual control), or the task's setup."""
    fault: str | None = None
    """The environment fault injected into the call (:mod:`simulator.world.faults`: ``transient``, ``timeout``,
    ``partial_write``, ``slow``, ``lost_ack``), or None."""


class Trajectory(BaseModel):
    """The full record of one trial's conversation."""

    messages: list[Message] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    agent_usage: Usage = Field(default_factory=Usage)
    user_usage: Usage = Field(default_factory=Usage)
    turns: int = 0
    """Messages of user and agent."""
    steps: int = 0
    """Agent actions (tool calls and text messages)."""
    agent_seconds: float = 0.0
    """Wall time spent inside the agent, in seconds."""
    user_seconds: float = 0.0
    """Wall time spent inside the user simulator, in seconds."""
    tool_seconds: float = 0.0
    """Wall time spent inside tools, in seconds."""
    termination_reason: TerminationReason | None = None
    error: str | None = None
    """Error text (traceback or API message) when the trial ended on an error reason."""
    agent_metadata: dict[str, Any] = Field(default_factory=dict)
    """Facts the agent reports about its own trial (a copy of its ``metadata`` dict attribute at the end, when it
    has one), e.g. the fault a fault-injection agent injected: ``{"fault": "wrong_argument"}``."""

    progress: list[dict[str, Any]] = Field(default_factory=list)
    """Per finished agent turn (one ending with a text message), in order: its progress as
    ``{"made": bool, "signals": [...]}`` (see :class:`~simulator.types.protocols.Progress`)."""
    user_metadata: dict[str, Any] = Field(default_factory=dict)
    """Facts the simulated user reports about its own trial (a copy of its ``metadata`` dict attribute at the
    end, when it has one): its ``persona``, ``flags`` (e.g. ``["user_leak"]``), the simulator ``model`` and
    ``prompt_hash`` of an LLM user."""

    notes: list[str] = Field(default_factory=list)
    """What was changed in values from the agent or the user as they entered the trial
    (:mod:`simulator.types.sanitize`): lone surrogates replaced with U+FFFD, tool calls with non-finite numbers
    refused, unknown costs; one line each, e.g. ``agent step 2: message text: 1 lone surrogate(s) replaced with
    U+FFFD``. Empty when nothing was changed."""

    def agent_texts(self) -> list[str]:
        """Return the text of every assistant message, in order."""
        return [m.content for m in self.messages if m.role == "assistant" and m.content]
