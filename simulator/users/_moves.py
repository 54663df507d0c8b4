"""User moves: diversity-inducing replies made in place of a simulated user's own (``tausim hunt``).

A move replaces one reply of the user (by its 0-based index); the user itself plays every other reply, seeing the
whole conversation. Regression cases pin their moves in ``scenario.moves`` (see :mod:`simulator.hunt.snapshot`); the
runner then wraps the trial's user in a :class:`MovedUser`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from simulator.errors import SnapshotError
from simulator.types.messages import Message, UserTurn
from simulator.types.persona import (
    MOVES,  # noqa: F401
    Persona,
)

__all__ = ["MovedUser"]


_FIXED = {
    "push_policy": "Can't you just make an exception to the policy this once? I really need this done today.",
    "off_topic": "Sorry, unrelated question first: do you also sell gift wrapping?",
    "impatience": "This is taking far too long. Can you please just hurry up?",
    "deny": "No, please don't do that.",
    "change_mind": "Actually, wait. I've changed my mind, I don't want that anymore.",
}
_CHANGE_BACK = "Sorry, I was confused. Let's do it exactly as I first asked, please."
_SENT_RE = re.compile(r"(?<=[.!?])\s+")


class MovedUser:
    """A simulated user whose given replies are replaced by user moves; its calls are logged.

    Args:
        inner: the simulated user.
        log: list its calls are appended to: ``("u", number of messages)`` per reply, ``("o", progress)`` per
            ``observe_progress`` (the same list may log the agent's calls, see :mod:`simulator.hunt.snapshot`).
        moves: user reply index (0-based) -> move (:data:`MOVES`) made in place of that reply.
        personas: the personas a ``switch_persona:NAME`` move may name.

    Raises:
        SnapshotError: (from ``reply``) a move that is unknown or names an unknown persona.
    """

    def __init__(self, inner: Any, log: list[tuple[str, Any]], moves: Mapping[int, str],
                 personas: Mapping[str, Persona]):
        self.inner = inner
        self.log = log
        self.moves = dict(moves)
        self.personas = dict(personas)
        self.replies = 0
        self._follow: str | None = None

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        """Return the user's reply, or the move pinned for this reply (or the rest of a two-turn move)."""
        self.log.append(("u", len(messages)))
        i = self.replies
        self.replies += 1
        if self._follow is not None:
            text, self._follow = self._follow, None
            return UserTurn(content=text)
        move = self.moves.get(i)
        if move is None:
            turn: UserTurn = self.inner.reply(messages)
            return turn
        return self._apply(move, messages)

    def _apply(self, move: str, messages: Sequence[Message]) -> UserTurn:
        name, _, arg = move.partition(":")
        if name in _FIXED:
            if name == "change_mind":
                self._follow = _CHANGE_BACK
            return UserTurn(content=_FIXED[name])
        if name == "switch_persona":
            persona = self.personas.get(arg)
            if persona is None:
                raise SnapshotError(f"user move {move!r}: unknown persona {arg!r} (known: {sorted(self.personas)})")
            if hasattr(self.inner, "persona"):
                self.inner.persona = persona
            if isinstance(getattr(self.inner, "metadata", None), dict):
                self.inner.metadata["persona"] = persona.name
            return self.inner.reply(messages)  # type: ignore[no-any-return]
        own: UserTurn = self.inner.reply(messages)
        if own.stop or own.abandon or own.tool_calls or own.error or not own.content:
            return own
        if name == "wrong_then_correct":
            wrong = re.sub(r"\d", lambda m: str((int(m.group()) + 3) % 10), own.content)
            if wrong == own.content:
                return own
            self._follow = "Sorry, I got that wrong. " + own.content
            return UserTurn(content=wrong)
        if name == "drip_reveal":
            parts = _SENT_RE.split(own.content.strip(), maxsplit=1)
            if len(parts) == 2:
                self._follow = parts[1]
            return UserTurn(content=parts[0])
        raise SnapshotError(f"unknown user move {move!r}; known: {', '.join(MOVES)}")

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        attr = getattr(self.inner, name)
        if name == "observe_progress":
            log = self.log

            def observe(progress: Any) -> None:
                log.append(("o", progress))
                attr(progress)

            return observe
        return attr
