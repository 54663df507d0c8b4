"""The scripted user: says fixed lines in order, then stops."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from simulator._messages import Message, UserTurn
from simulator._protocols import TrialContext
from simulator.cues import asks_confirmation

__all__ = ["ConfirmingUser", "ScriptedUser", "confirming_user_factory", "scripted_user_factory"]

STOP_TOKEN = "###STOP###"


class ScriptedUser:
    """Says ``lines`` one per turn, then stops (an empty stop turn).

    A line that contains the stop token ``###STOP###`` delivers the text before the token and stops.

    Args:
        lines: what the user says, in order (at least one).

    Raises:
        ValueError: ``lines`` is empty.
    """

    def __init__(self, lines: Sequence[str]):
        if not lines:
            raise ValueError("ScriptedUser needs at least one line")
        self._lines = list(lines)
        self._i = 0

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        """Return the next line, or a stop once the lines are used up."""
        if self._i >= len(self._lines):
            return UserTurn(content="", stop=True)
        line = self._lines[self._i]
        self._i += 1
        if STOP_TOKEN in line:
            return UserTurn(content=line.split(STOP_TOKEN, 1)[0].strip(), stop=True)
        return UserTurn(content=line)


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
        opening = ctx.task.scenario.opening or "Hi, I need some help with my account and orders."
        return ScriptedUser([opening])

    return make


class ConfirmingUser:
    """Says its opening line, then "yes, go ahead" to each confirmation question, and stops otherwise.

    A confirmation question is an agent message for which :func:`simulator.cues.asks_confirmation` holds.

    Args:
        opening: the first message.
    """

    def __init__(self, opening: str):
        self._opening = opening

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        """Return the opening, a yes to a confirmation question, or a stop."""
        if not messages:
            return UserTurn(content=self._opening)
        last = messages[-1]
        if last.role == "assistant" and asks_confirmation(last.content):
            return UserTurn(content="yes, go ahead")
        return UserTurn(content="", stop=True)


def confirming_user_factory() -> Callable[[TrialContext], ConfirmingUser]:
    """Return a factory building a :class:`ConfirmingUser` per trial (the ``confirming`` user spec).

    Its opening is the task's ``scenario.opening`` or a generic request.
    """

    def make(ctx: TrialContext) -> ConfirmingUser:
        return ConfirmingUser(ctx.task.scenario.opening or "Hi, I need some help with my account and orders.")

    return make
