"""``tausim play``: a person plays the simulated user of one task in the terminal.

The person sees the task's scenario (what the user wants and knows; never the gold actions), types the user's
messages, and watches the agent's replies and tool calls. The trial is graded like any other, so a task author
can check that a task is playable and fair, and anyone can probe an agent by hand.

Commands typed as a message: ``/stop`` ends the conversation (goal met or not pursued further), ``/abandon``
gives up (termination reason ``user_abandon``), ``/help`` shows them again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape

from simulator.types.messages import Message, UserTurn
from simulator.types.protocols import TrialContext
from simulator.types.sanitize import shown
from simulator.types.tasks import UserScenario

__all__ = ["TerminalUser", "scenario_text", "terminal_user_factory"]

HELP = "Type the customer's messages. /stop ends the conversation, /abandon gives up, /help shows this."


def scenario_text(scenario: UserScenario) -> str:
    """Return the scenario as a person playing the user should read it.

    Args:
        scenario: the task's scenario (instructions, known and unknown information, identity, agenda).

    Returns:
        Plain text: the instructions, then what the user knows, what it does not know, and its agenda.
    """
    lines = [scenario.instructions.strip()]
    known = {**scenario.identity, **scenario.known_info}
    if known:
        lines.append("")
        lines.append("You know:")
        lines += [f"  {k}: {v if isinstance(v, str) else json.dumps(v)}" for k, v in known.items()]
    if scenario.unknown_info:
        lines.append("You do not know: " + ", ".join(scenario.unknown_info))
    if scenario.agenda:
        lines.append("")
        lines.append("What you want, in order:")
        for i, intent in enumerate(scenario.agenda, 1):
            lines.append(f"  {i}. {intent.request[0]}" + (f" (then ask: {intent.ask})" if intent.ask else ""))
            if intent.fallback is not None:
                lines.append(f"     if that is impossible: {intent.fallback.request[0]}")
    return "\n".join(lines)


class TerminalUser:
    """A simulated user played by a person at the terminal.

    Args:
        read: returns the next line the person types (``input``-like; its argument is the prompt); EOFError or
            KeyboardInterrupt ends the conversation as ``/abandon``.
        console: where the agent's messages are shown.
    """

    def __init__(self, read: Callable[[str], str], console: Console):
        self._read = read
        self._console = console
        self._shown = 0
        self.metadata: dict[str, Any] = {"played_by": "person"}

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        """Show the agent's new messages, then return what the person types.

        Args:
            messages: the conversation as the user sees it.

        Returns:
            The person's message; ``/stop`` and ``/abandon`` end the conversation.
        """
        for m in messages[self._shown:]:
            if m.role == "assistant" and m.content:
                self._console.print(f"[bold cyan]agent:[/] {escape(shown(m.content))}", highlight=False)
        self._shown = len(messages) + 1  # the reply below is appended after them
        while True:
            try:
                text = self._read("you: ").strip()
            except (EOFError, KeyboardInterrupt):
                return UserTurn(content="", abandon=True)
            if text == "/help" or not text:
                self._console.print(HELP, highlight=False)
                continue
            if text == "/stop":
                return UserTurn(content="", stop=True)
            if text == "/abandon":
                return UserTurn(content="", abandon=True)
            return UserTurn(content=text)


def terminal_user_factory(read: Callable[[str], str], console: Console) -> Callable[[TrialContext], TerminalUser]:
    """Return a user factory that shows the task's scenario and lets a person play the user.

    Args:
        read: the line reader (``input``, or a scripted reader in tests).
        console: where the scenario and the agent's messages are shown.

    Returns:
        A factory for :class:`~simulator.execution.runner.Runner`.
    """
    def build(ctx: TrialContext) -> TerminalUser:
        console.rule(f"task {escape(shown(ctx.task.id, one_line=True))}: you are the customer")
        console.print(shown(scenario_text(ctx.task.scenario)), highlight=False, markup=False)
        console.rule()
        console.print(HELP, highlight=False)
        return TerminalUser(read, console)

    return build
