"""Caps: budgets that compose around the conversation loop and end it with their own termination reason.

As Gymnasium's ``TimeLimit`` wraps an environment (the environment itself never truncates), the loop
(:class:`simulator.dialogue.conversation.Conversation`) knows nothing of turn, step, tool-error or time budgets: each
is a :class:`Cap`, an object with any of four optional checkpoints, each returning a
:class:`~simulator.types.trajectory.TerminationReason` to end the conversation, or None to go on:

- ``at_user_turn(state)``: before the user is asked for a reply (after the observers' ``on_user_turn``);
- ``at_agent_turn(state)``: before the agent's turn starts;
- ``at_step(state)``: before each step: each ``agent.step`` call and each tool call of agent or user;
- ``after_tool_call(state, record)``: after each of the agent's tool calls that did not already end the trial.

:func:`limit_caps` turns a :class:`~simulator.types.trajectory.Limits` into the standard caps.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from simulator.dialogue.state import ConversationState
from simulator.types.trajectory import Limits, TerminationReason, ToolCallRecord

__all__ = ["CAP_HOOKS", "Cap", "StepLimit", "TimeLimit", "ToolErrorLimit", "TurnLimit", "limit_caps", "limit_hooks"]

CAP_HOOKS = ("at_user_turn", "at_agent_turn", "at_step", "after_tool_call")
"""The checkpoints a cap may define (each optional; the loop calls only those a cap has)."""


class Cap(Protocol):
    """A budget around the loop: any of the checkpoints of :data:`CAP_HOOKS` (see the module docstring).

    Each checkpoint gets the live :class:`~simulator.dialogue.state.ConversationState` (to read, never to
    change) and returns the termination reason that ends the conversation, or None.
    """


class TurnLimit:
    """Ends the conversation with ``max_turns`` once it has ``max_turns`` messages of user and agent.

    Checked before each user turn and before each agent turn.

    Args:
        max_turns: the most messages of user and agent together (tool messages excluded).
    """

    def __init__(self, max_turns: int):
        self.max_turns = max_turns

    def at_user_turn(self, state: ConversationState) -> TerminationReason | None:
        """Return ``max_turns`` when the turn budget is spent, else None."""
        return TerminationReason.MAX_TURNS if state.trajectory.turns >= self.max_turns else None

    at_agent_turn = at_user_turn


class StepLimit:
    """Ends the conversation with ``max_steps`` before a step past ``max_steps`` (tool calls and agent messages).

    Args:
        max_steps: the most steps (each tool call of agent or user and each agent message counts one).
    """

    def __init__(self, max_steps: int):
        self.max_steps = max_steps

    def at_step(self, state: ConversationState) -> TerminationReason | None:
        """Return ``max_steps`` when the step budget is spent, else None."""
        return TerminationReason.MAX_STEPS if state.trajectory.steps >= self.max_steps else None


class ToolErrorLimit:
    """Ends the conversation with ``too_many_errors`` at the agent's ``max_tool_errors``-th failed tool call.

    One instance per conversation (it counts). A user's failed calls do not count.

    Args:
        max_tool_errors: failed agent tool calls that end the trial (tau2's suites use 10).
    """

    def __init__(self, max_tool_errors: int):
        self.max_tool_errors = max_tool_errors
        self.errors = 0

    def after_tool_call(self, state: ConversationState, record: ToolCallRecord) -> TerminationReason | None:
        """Count a failed call; return ``too_many_errors`` at the limit, else None."""
        if record.status == "ok":
            return None
        self.errors += 1
        return TerminationReason.TOO_MANY_ERRORS if self.errors >= self.max_tool_errors else None


class TimeLimit:
    """Ends the conversation with ``timeout`` at the first checkpoint past a wall-time budget or after a stop signal.

    Checked before each user turn, agent turn and step: a user, agent or tool that does not return is not
    interrupted (Python cannot), but the conversation ends at the next checkpoint after it does. The runner's
    ``trial_timeout`` gives its abandoned trial threads one with ``stop`` so that they end instead of running on.
    One instance per conversation (its clock starts at its first checkpoint).

    Args:
        seconds: the wall-time budget, counted from the first checkpoint; None: no budget (``stop`` only).
        stop: an event that ends the conversation once set; None: none.
        clock: the clock, in seconds (default :func:`time.monotonic`).
    """

    def __init__(self, seconds: float | None = None, *, stop: threading.Event | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.seconds = seconds
        self.stop = stop
        self.clock = clock
        self.deadline: float | None = None

    def at_step(self, state: ConversationState) -> TerminationReason | None:
        """Return ``timeout`` when the budget ran out or the stop event is set, else None."""
        if self.stop is not None and self.stop.is_set():
            return TerminationReason.TIMEOUT
        if self.seconds is None:
            return None
        now = self.clock()
        if self.deadline is None:
            self.deadline = now + self.seconds
        return TerminationReason.TIMEOUT if now >= self.deadline else None

    at_user_turn = at_step
    at_agent_turn = at_step


def limit_caps(limits: Limits) -> list[Cap]:
    """Return the caps a :class:`Limits` states: turns, steps and, when set, failed tool calls.

    Args:
        limits: the trial's limits (its ``greeting`` is no cap: the loop says it).

    Returns:
        ``[TurnLimit, StepLimit]`` plus a :class:`ToolErrorLimit` when ``max_tool_errors`` is set.
    """
    caps: list[Cap] = [TurnLimit(limits.max_turns), StepLimit(limits.max_steps)]
    if limits.max_tool_errors is not None:
        caps.append(ToolErrorLimit(limits.max_tool_errors))
    return caps


def limit_hooks(limits: Limits) -> dict[str, tuple[Callable[..., TerminationReason | None], ...]]:
    """Return the checkpoints of the caps :func:`limit_caps` states, by hook name (:data:`CAP_HOOKS`), in cap order.

    The same bound methods one would collect from ``limit_caps(limits)`` by looking each hook up, without looking
    them up. (The loop itself checks the turn and step limits inline, first, as these checkpoints check them.)

    Args:
        limits: the trial's limits.

    Returns:
        Hook name -> the caps' bound checkpoints (new cap instances).
    """
    turns = TurnLimit(limits.max_turns)
    after = () if limits.max_tool_errors is None else (ToolErrorLimit(limits.max_tool_errors).after_tool_call,)
    return {"at_user_turn": (turns.at_user_turn,), "at_agent_turn": (turns.at_agent_turn,),
            "at_step": (StepLimit(limits.max_steps).at_step,), "after_tool_call": after}
