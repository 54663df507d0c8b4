"""Scripted agents: the oracle (replays gold actions) and the null agent (talks, never writes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from simulator.types.messages import AgentTurn, Message, ToolCall
from simulator.types.protocols import TrialContext

__all__ = ["NullAgent", "OracleAgent", "oracle_factory"]

class OracleAgent:
    """Performs the task's gold actions, one tool call per step, then states the required outputs.

    It is the upper bound of the task: if the oracle fails, the task or the tools are wrong. It reads the
    task's gold actions, which no other agent may do.

    Its turns depend on the task alone (which action is next, whether it has closed once): each is made once per
    agent (a repeated closing is the same record). Trials do not share them (:func:`oracle_factory`): a turn goes
    into the trajectory as it is, and a caller may change a trial's records.

    Args:
        ctx: the trial context.
        turns: turns made so far, filled as steps are taken (``(next action, closed once) -> (turn, next action
            after it, closed once after it)``); None: a new dict. Whoever passes one owns the records in it.
    """

    def __init__(self, ctx: TrialContext, *, turns: dict[tuple[int, bool], tuple[AgentTurn, int, bool]] | None = None):
        self._actions = list(ctx.task.gold_actions)
        self._outputs = list(ctx.task.required_outputs)
        self._next = 0
        self._done = False
        self._turns = {} if turns is None else turns

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Return the next gold action as a tool call, then a closing message with the outputs.

        The oracle does all of a task's gold actions at once; a user that then asks for its next request (it had
        several) is told, each time, that it has been handled, with the outputs again.

        A gold action the user performs (``requestor: user``, dual control) is asked of the user instead: the
        oracle names the run of consecutive user actions in one message (``Please do this on your side, in
        order: toggle_roaming(); reboot_device().``) and goes on once the user has answered.
        """
        key = (self._next, self._done)
        made = self._turns.get(key)
        if made is None:
            made = self._turns[key] = self._turn(*key)
        turn, self._next, self._done = made
        return turn

    def _turn(self, at: int, done: bool) -> tuple[AgentTurn, int, bool]:
        """The turn when action ``at`` is next (``done``: the oracle has closed once); and the position after it."""
        actions = self._actions
        if at < len(actions) and actions[at].requestor == "user":
            run = []
            while at < len(actions) and actions[at].requestor == "user":
                run.append(actions[at])
                at += 1
            steps = "; ".join(f"{a.name}({', '.join(f'{k}={v!r}' for k, v in a.arguments.items())})" for a in run)
            return AgentTurn(message=Message(role="assistant",
                                             content=f"Please do this on your side, in order: {steps}.")), at, done
        if at < len(actions):
            a = actions[at]
            call = ToolCall(id=f"oracle_{at}", name=a.name, arguments=dict(a.arguments))
            return AgentTurn(message=Message(role="assistant", tool_calls=[call])), at + 1, done
        text = "Your request has been handled." if not done else "That has been handled as well."
        if self._outputs:
            text += " The answer: " + ", ".join(self._outputs) + "."
        if done:  # the user asks for more of what the gold already did (a user with several requests)
            text += " Is there anything else I can help with?"
        return AgentTurn(message=Message(role="assistant", content=text)), at, True


def oracle_factory() -> Callable[[TrialContext], OracleAgent]:
    """Return a factory building an :class:`OracleAgent` per trial, each with turns of its own.

    Turns are not shared between trials: they are mutable records that go into each trial's trajectory as they are,
    and a caller changing one trial's record (an ``on_trial`` hook redacting arguments) must not change another's.

    Returns:
        ``Callable[[TrialContext], OracleAgent]``.
    """

    def make(ctx: TrialContext) -> OracleAgent:
        return OracleAgent(ctx)

    return make


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
