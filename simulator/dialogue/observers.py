"""Observers: what watches the conversation loop without deciding anything (logs, traces, sync hooks, snapshots).

An :class:`Observer` is an object with any of the optional hooks of :data:`OBSERVER_HOOKS`; the loop
(:class:`simulator.dialogue.conversation.Conversation`) calls only the hooks an observer has, in the order the
observers were given. Each hook gets the live :class:`~simulator.dialogue.state.ConversationState` (to read, never to
change); an exception raised by a hook propagates (an observer is part of the harness, not of the trial):

- ``on_user_turn(state)``: at the start of every user turn, before the caps' ``at_user_turn``;
- ``on_user_reply(state, turn, start_ns, end_ns)``: the user's reply (a :class:`~simulator.types.messages.UserTurn`)
  and the :func:`time.time_ns` times around it, before its error, tool calls or text are handled;
- ``on_agent_turn(state)``: the agent's turn starts (after the caps' ``at_agent_turn``);
- ``on_agent_reply(state, turn, start_ns, end_ns)``: each ``agent.step`` result (an
  :class:`~simulator.types.messages.AgentTurn`) and its times, before its error or message are handled;
- ``on_tool_call(state, record, start_ns, end_ns)``: each dispatched call of agent or user (its
  :class:`~simulator.types.trajectory.ToolCallRecord`, already recorded) and the times around the tool;
- ``on_step(state)``: after each step of agent or user (each tool call, each text message);
- ``on_agent_turn_end(state, progress)``: the agent's closing message, its turn judged
  (:class:`~simulator.types.protocols.Progress`);
- ``on_end(state)``: the conversation ended (``state.trajectory.termination_reason`` set).

Tracing is an observer too (:meth:`simulator.execution.tracing.Tracing.observer`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from simulator.dialogue.state import ConversationState
from simulator.types.trajectory import ToolCallRecord

__all__ = ["OBSERVER_HOOKS", "DualControlSync", "Observer", "ToolCallLog"]

OBSERVER_HOOKS = ("on_user_turn", "on_user_reply", "on_agent_turn", "on_agent_reply", "on_tool_call", "on_step",
                  "on_agent_turn_end", "on_end")
"""The hooks an observer may define (each optional; the loop calls only those an observer has)."""


class Observer(Protocol):
    """Watches the loop through any of the hooks of :data:`OBSERVER_HOOKS` (see the module docstring)."""


class ToolCallLog:
    """Emits a structlog ``tool_call`` event (name, status, kind, step, duration) for each dispatched call.

    Args:
        log: the trial's structlog logger.
    """

    def __init__(self, log: Any):
        self.log = log

    def on_tool_call(self, state: ConversationState, record: ToolCallRecord, start_ns: int, end_ns: int) -> None:
        """Log the call (``requestor`` only for a call that is not the agent's)."""
        self.log.info("tool_call", step=record.step, call_id=record.call_id, name=record.name, kind=record.kind,
                      status=record.status, duration_s=round(record.duration_s, 6),
                      **({"requestor": record.requestor} if record.requestor != "agent" else {}))


class DualControlSync:
    """Runs a domain's sync hook after every step of agent or user (dual control).

    Args:
        sync: a no-argument callable (:func:`simulator.world.dual.syncer`).
    """

    def __init__(self, sync: Callable[[], None]):
        self.sync = sync

    def on_step(self, state: ConversationState) -> None:
        """Run the sync hook."""
        self.sync()

