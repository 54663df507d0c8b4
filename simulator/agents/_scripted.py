"""Scripted agents: the oracle (replays gold actions) and the null agent (talks, never writes)."""

from __future__ import annotations

from collections.abc import Sequence

from simulator.types.messages import AgentTurn, Message
from simulator.types.protocols import TrialContext

__all__ = ["NullAgent", "OracleAgent"]

_turn = AgentTurn.__pydantic_validator__.validate_python
"""An :class:`AgentTurn` validated from one nested value: the same instances (values, ``model_fields_set``, the
arguments dict copied) as ``AgentTurn(message=Message(..., tool_calls=[ToolCall(...)]))``, in one validator call
instead of three constructors."""


class OracleAgent:
    """Performs the task's gold actions, one tool call per step, then states the required outputs.

    It is the upper bound of the task: if the oracle fails, the task or the tools are wrong. It reads the
    task's gold actions, which no other agent may do.

    Args:
        ctx: the trial context.
    """

    def __init__(self, ctx: TrialContext):
        self._actions = list(ctx.task.gold_actions)
        self._outputs = list(ctx.task.required_outputs)
        self._next = 0
        self._done = False

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Return the next gold action as a tool call, then a closing message with the outputs.

        The oracle does all of a task's gold actions at once; a user that then asks for its next request (it had
        several) is told, each time, that it has been handled, with the outputs again.

        A gold action the user performs (``requestor: user``, dual control) is asked of the user instead: the
        oracle names the run of consecutive user actions in one message (``Please do this on your side, in
        order: toggle_roaming(); reboot_device().``) and goes on once the user has answered.
        """
        if self._next < len(self._actions) and self._actions[self._next].requestor == "user":
            run = []
            while self._next < len(self._actions) and self._actions[self._next].requestor == "user":
                run.append(self._actions[self._next])
                self._next += 1
            steps = "; ".join(f"{a.name}({', '.join(f'{k}={v!r}' for k, v in a.arguments.items())})" for a in run)
            return AgentTurn(message=Message(role="assistant",
                                             content=f"Please do this on your side, in order: {steps}."))
        if self._next < len(self._actions):
            a = self._actions[self._next]
            self._next += 1
            return _turn({"message": {"role": "assistant", "tool_calls": [
                {"id": f"oracle_{self._next - 1}", "name": a.name, "arguments": a.arguments}]}})
        text = "Your request has been handled." if not self._done else "That has been handled as well."
        if self._outputs:
            text += " The answer: " + ", ".join(self._outputs) + "."
        if self._done:  # the user asks for more of what the gold already did (a user with several requests)
            text += " Is there anything else I can help with?"
        self._done = True
        return _turn({"message": {"role": "assistant", "content": text}})


class NullAgent:
    """Talks politely and never calls a tool: the do-nothing baseline.

    A task that this agent passes is one whose goal state equals the initial state and that requires no
    output; the conformance tests use it to find tasks a do-nothing agent would pass.

    Args:
        ctx: the trial context (unused).
    """

    def __init__(self, ctx: TrialContext):
        del ctx

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Return a polite message that does nothing."""
        return AgentTurn(message=Message(
            role="assistant", content="I understand. Unfortunately I cannot make any changes right now."
        ))
