"""Agents whose values no record can hold as they are (``--agent py:tests._support.hostile_values:big_tokens``).

Usage counts a store's INTEGER cannot take, metadata and tool arguments that are not JSON (a plain ``object()``,
an object whose ``repr`` and ``str`` raise). Each agent makes one tool call, then says "done" at every step.
"""

from __future__ import annotations

from typing import Any

from simulator.types.messages import AgentTurn, Message, ToolCall, Usage


class Unprintable:
    """An object whose ``repr`` and ``str`` raise (as a broken class's may)."""

    def __repr__(self) -> str:
        raise RuntimeError("repr raises")

    __str__ = __repr__


class ValueAgent:
    """Calls ``get_order_details`` once with ``arguments``, then says "done"; every step reports ``usage``."""

    def __init__(self, arguments: dict[str, Any] | None = None, usage: Usage | None = None,
                 metadata: dict[str, Any] | None = None):
        self.arguments = arguments if arguments is not None else {"order_id": "#W0000000"}
        self.usage = usage if usage is not None else Usage()
        self.metadata = metadata if metadata is not None else {}
        self.steps = 0

    def step(self, messages: list[Message]) -> AgentTurn:
        self.steps += 1
        usage = self.usage.model_copy()
        if self.steps == 1:
            call = ToolCall(id="c1", name="get_order_details", arguments=self.arguments)
            return AgentTurn(message=Message(role="assistant", tool_calls=[call]), usage=usage)
        return AgentTurn(message=Message(role="assistant", content="done"), usage=usage)


def big_tokens(ctx: Any) -> ValueAgent:
    """Each step: 2**63 prompt tokens (one past a signed 64-bit INTEGER), 7 completion tokens, 2**70 calls."""
    return ValueAgent(usage=Usage(prompt_tokens=2**63, completion_tokens=7, cost_usd=0.5, calls=2**70))


def bad_cost(ctx: Any) -> ValueAgent:
    """Each step: -3 prompt tokens and a cost that is not a number (set after the usage was built)."""
    usage = Usage(prompt_tokens=-3, completion_tokens=2, calls=1)
    usage.cost_usd = Unprintable()  # type: ignore[assignment]  # what validation would refuse: set afterwards
    return ValueAgent(usage=usage)


def object_metadata(ctx: Any) -> ValueAgent:
    """Metadata holding a plain ``object()``."""
    return ValueAgent(metadata={"o": object()})


def object_arguments(ctx: Any) -> ValueAgent:
    """Tool arguments holding a plain ``object()``."""
    return ValueAgent(arguments={"order_id": object()})


def unprintable_arguments(ctx: Any) -> ValueAgent:
    """Tool arguments holding an object whose ``repr`` raises."""
    return ValueAgent(arguments={"order_id": Unprintable()})


def unprintable_metadata(ctx: Any) -> ValueAgent:
    """Metadata holding an object whose ``repr`` raises."""
    return ValueAgent(metadata={"w": [Unprintable()]})
