"""Scripted agents: the oracle (replays gold actions) and the null agent (talks, never writes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simulator.types.built import built
from simulator.types.messages import AgentTurn, Message, ToolCall, Usage
from simulator.types.protocols import TrialContext

__all__ = ["NullAgent", "OracleAgent"]

_turn = AgentTurn.__pydantic_validator__.validate_python
"""An :class:`AgentTurn` validated from one nested value: the same instances (values, ``model_fields_set``, the
arguments dict copied) as ``AgentTurn(message=Message(..., tool_calls=[ToolCall(...)]))``, in one validator call
instead of three constructors (:func:`_call_turn` builds the same without validating)."""

_CALL_SET = ("id", "name", "arguments")
_CALL_MESSAGE_SET = ("role", "tool_calls")
_TEXT_MESSAGE_SET = ("role", "content")
_TURN_SET = ("message",)


def _zero_usage() -> Usage:
    """``Usage()``, built: no tokens, no calls, a cost of 0.0."""
    return built(Usage, {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "calls": 0, "attempts": 0}, ())


def _turn_of(message: Message, usage: Usage) -> AgentTurn:
    """``AgentTurn(message=message, usage=usage)``, built (:func:`simulator.types.built.built`): no error.

    Its ``model_fields_set`` is that of ``AgentTurn(message=message)`` (the usage is the default's value).
    """
    return built(AgentTurn, {"message": message, "usage": usage, "error": None, "error_kind": None}, _TURN_SET)


def _call_turn(call_id: str, name: Any, arguments: Any, usage: Usage) -> AgentTurn:
    """The turn of one tool call: the instances ``_turn`` makes of it, built from the task's own values.

    Built only from values of the fields' exact types (a validated task's: a ``str`` name, a ``dict`` of arguments,
    copied as validation copies it); anything else is validated.
    """
    if type(name) is not str or type(arguments) is not dict:
        return _turn({"message": {"role": "assistant", "tool_calls": [
            {"id": call_id, "name": name, "arguments": arguments}]}})
    call = built(ToolCall, {"id": call_id, "name": name, "arguments": dict(arguments), "raw_arguments": None},
                 _CALL_SET)
    return _turn_of(built(Message, {"role": "assistant", "content": None, "tool_calls": [call], "tool_call_id": None,
                                    "name": None, "requestor": None}, _CALL_MESSAGE_SET), usage)


def _text_turn(text: str, usage: Usage) -> AgentTurn:
    """The turn of a closing message ``text`` (an exact ``str`` the agent made), as ``_turn`` makes it."""
    return _turn_of(built(Message, {"role": "assistant", "content": text, "tool_calls": [], "tool_call_id": None,
                                    "name": None, "requestor": None}, _TEXT_MESSAGE_SET), usage)


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
        self._usage = _zero_usage()  # the usage of each of its turns (no model: zero), read only, made once

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
            return _call_turn(f"oracle_{self._next - 1}", a.name, a.arguments, self._usage)
        text = "Your request has been handled." if not self._done else "That has been handled as well."
        if self._outputs:
            text += " The answer: " + ", ".join(self._outputs) + "."
        if self._done:  # the user asks for more of what the gold already did (a user with several requests)
            text += " Is there anything else I can help with?"
        self._done = True
        return _text_turn(text, self._usage)  # an exact str: literals and str.join


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
