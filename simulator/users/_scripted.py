"""The scripted user: says fixed lines in order, then stops."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from simulator.dialogue.cues import asks_confirmation
from simulator.types.messages import Message, ToolCall, UserTurn
from simulator.types.protocols import TrialContext
from simulator.types.tasks import Action

__all__ = ["ConfirmingUser", "ScriptedUser", "UserActions", "confirming_user_factory", "scripted_user_factory"]

STOP_TOKEN = "###STOP###"


class ScriptedUser:
    """Says ``lines`` one per turn, then stops (an empty stop turn).

    A line that contains the stop token ``###STOP###`` delivers the text before the token and stops.

    Args:
        lines: what the user says, in order (at least one).

    Raises:
        ValueError: ``lines`` is empty.
    """

    def __init__(self, lines: Sequence[str], actions: Sequence[Action] = ()):
        if not lines:
            raise ValueError("ScriptedUser needs at least one line")
        self._lines = list(lines)
        self._i = 0
        self._acts = UserActions(actions)

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        """Return the user's own tool calls the agent asked for, the next line, or a stop once lines are used up."""
        acted = self._acts.reply(messages)
        if acted is not None:
            return acted
        if self._i >= len(self._lines):
            return UserTurn(content="", stop=True)
        line = self._lines[self._i]
        self._i += 1
        if STOP_TOKEN in line:
            return UserTurn(content=line.split(STOP_TOKEN, 1)[0].strip(), stop=True)
        return UserTurn(content=line)


class UserActions:
    """The actions a rule-following user performs on its own side when the agent asks for them (dual control).

    The user holds a queue of actions (its part of the task's gold actions, ``requestor: user``). When the
    agent's last message names the next queued action's tool (``toggle_roaming``), the user performs it and the
    following queued actions the message also names, in order, as tool calls, a tool as many times as the message
    names it (two mentions of a tool queued four times perform two); after their results it says what it did.
    Anything else is left to the user's own rules.

    Args:
        actions: the queue, in order.
    """

    def __init__(self, actions: Sequence[Action]):
        self._queue = list(actions)
        self._next = 0
        self._calls = 0

    def reply(self, messages: Sequence[Message]) -> UserTurn | None:
        """Return tool calls for the actions the agent asked for, a report after their results, or None.

        Args:
            messages: the conversation as the user sees it (its own tool calls and results included).
        """
        if not messages or not self._queue:
            return None
        last = messages[-1]
        if last.role == "tool" and last.requestor == "user":
            done = [m.content or "" for m in reversed(messages) if m.role == "tool" and m.requestor == "user"]
            return UserTurn(content="I did that. " + " ".join(done[:1]).strip())
        if last.role != "assistant" or not last.content or self._next >= len(self._queue):
            return None
        calls = []
        text = last.content
        named: dict[str, int] = {}  # mentions of each queued tool in the message not yet performed
        while self._next < len(self._queue):
            a = self._queue[self._next]
            if a.name not in named:
                named[a.name] = len(re.findall(rf"\b{re.escape(a.name)}\b", text))
            if named[a.name] <= 0:
                break
            named[a.name] -= 1
            calls.append(ToolCall(id=f"user_{self._calls}", name=a.name, arguments=dict(a.arguments)))
            self._calls += 1
            self._next += 1
        return UserTurn(content="", tool_calls=calls) if calls else None


def scripted_user_factory(lines: Sequence[str] | None = None) -> Callable[[TrialContext], ScriptedUser]:
    """Return a factory building a :class:`ScriptedUser` per trial.

    Args:
        lines: fixed lines; None uses the task's ``scenario.opening`` or a generic request.

    Returns:
        ``Callable[[TrialContext], ScriptedUser]``.
    """
    fixed = tuple(lines) if lines is not None else None

    def make(ctx: TrialContext) -> ScriptedUser:
        if fixed is not None:
            return ScriptedUser(fixed)
        if ctx.task.scenario.script:
            return ScriptedUser(ctx.task.scenario.script, [a for a in ctx.task.gold_actions if a.requestor == "user"])
        opening = ctx.task.scenario.opening or "Hi, I need some help with my account and orders."
        return ScriptedUser([opening], [a for a in ctx.task.gold_actions if a.requestor == "user"])

    return make


class ConfirmingUser:
    """Says its opening line, then "yes, go ahead" to each confirmation question, and stops otherwise.

    A confirmation question is an agent message for which :func:`simulator.dialogue.cues.asks_confirmation` holds. Like
    :class:`ScriptedUser`, it performs its side of the task (``actions``, see :class:`UserActions`) when the
    agent asks for them. Its first turn is always its opening, also after an agent greeting or a prior
    conversation (tau2 ``message_history``, whose user messages are not its own).

    Args:
        opening: the first message.
        actions: the user-side actions it performs when asked, in order (the task's gold actions with
            ``requestor: user``); empty by default.
    """

    def __init__(self, opening: str, actions: Sequence[Action] = ()):
        self._opening = opening
        self._opened = False
        self._acts = UserActions(actions)

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        """Return the opening (first turn), the tool calls the agent asked for, a yes to a confirmation, or a stop."""
        if not self._opened:
            self._opened = True
            return UserTurn(content=self._opening)
        acted = self._acts.reply(messages)
        if acted is not None:
            return acted
        last = messages[-1] if messages else None
        if last is not None and last.role == "assistant" and asks_confirmation(last.content):
            return UserTurn(content="yes, go ahead")
        return UserTurn(content="", stop=True)


def confirming_user_factory() -> Callable[[TrialContext], ConfirmingUser]:
    """Return a factory building a :class:`ConfirmingUser` per trial (the ``confirming`` user spec).

    Its opening is the task's ``scenario.opening`` or a generic request; its actions are the task's gold
    actions with ``requestor: user``.
    """

    def make(ctx: TrialContext) -> ConfirmingUser:
        return ConfirmingUser(ctx.task.scenario.opening or "Hi, I need some help with my account and orders.",
                              [a for a in ctx.task.gold_actions if a.requestor == "user"])

    return make
