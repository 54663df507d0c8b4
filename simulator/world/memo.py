"""Answers of deterministic read tools, remembered per template and reused on unchanged trial copies.

Every trial of a data set starts from a copy of the same template database, so a read tool whose answer depends only
on the database, its arguments and the domain options gives the same answer on every copy nobody has written to yet.
:class:`ReadMemo` (one per :class:`~simulator.world.database.TemplateDatabase`, shared by the threads running its
trials) keeps such answers; :class:`TrialMemo` (one per trial copy, reached through the trial session's ``info``)
serves them while the copy is unchanged.

"Unchanged" is sqlite's own count of the rows the connection inserted, updated or deleted
(``sqlite3.Connection.total_changes``: statements of trigger programs and statements later rolled back count too),
compared with the count taken when the copy was handed out, before any task set-up. One write, a set-up's included,
turns the memo off for the rest of the trial, so an answer is never served from a state it was not computed on.

Only tools that declare it (``@tool("read", memo=True)``) are remembered: a tool whose answer depends on anything
else (the clock, the trial's seed, device or retrieval state outside the database, the call's step) must not
declare it, and a domain's own tools are not remembered unless their author says so.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MEMO_KEY", "ReadMemo", "TrialMemo", "memo_key"]

MEMO_KEY = "tausim.read_memo"
"""The key of a trial's :class:`TrialMemo` in its session's ``info`` (absent: nothing is remembered)."""

_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> bool:
    """True when ``value`` is JSON data of the built-in types (str keys), so that its ``repr`` identifies it."""
    t = type(value)
    if t in _SCALARS:
        return True
    if t is list:
        return all(_plain(v) for v in value)
    if t is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    return False


def memo_key(fn: Callable[..., Any], arguments: Mapping[str, Any]) -> tuple[Callable[..., Any], str] | None:
    """The memo key of a call: the tool's function and the ``repr`` of its arguments, or None when not plain JSON.

    ``repr`` of plain JSON data (dicts with string keys, lists, strings, numbers, booleans, None) tells every two
    different values apart, types and key order included (``1``, ``1.0`` and ``True`` differ), as the tool may.

    Args:
        fn: the tool's implementation (its identity, not its name: a wrapped tool is another key).
        arguments: the call's arguments as the agent gave them.

    Returns:
        ``(fn, text)``, or None for arguments of other types (then the call is not remembered).
    """
    if type(arguments) is not dict or not _plain(arguments):
        return None
    return fn, repr(arguments)


class ReadMemo:
    """The remembered answers of one template: ``{(tool function, arguments text): (content, status)}``.

    Shared by the threads running trials of the template: the values are immutable, a look-up is one dict read and
    a new answer is added under a lock. Bounded: once the remembered contents reach ``limit_chars`` characters, new
    answers are no longer kept (those kept are still served).

    Args:
        limit_chars: the most characters of content kept (default 16 million, about 16 MB of ASCII text).
    """

    def __init__(self, limit_chars: int = 16_000_000):  # noqa: D107 - documented on the class
        self.limit_chars = limit_chars
        self._answers: dict[tuple[Callable[..., Any], str], tuple[str, str]] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: tuple[Callable[..., Any], str]) -> tuple[str, str] | None:
        """Return the remembered ``(content, status)`` of a call, or None."""
        return self._answers.get(key)

    def put(self, key: tuple[Callable[..., Any], str], content: str, status: str) -> None:
        """Remember a call's answer (nothing when the memo is full or the answer is already kept).

        Args:
            key: the call's :func:`memo_key`.
            content: what the agent saw.
            status: ``ok`` or ``tool_error``.
        """
        with self._lock:
            if key in self._answers or self._chars + len(content) > self.limit_chars:
                return
            self._answers[key] = (content, status)
            self._chars += len(content)


class TrialMemo:
    """A trial copy's access to its template's :class:`ReadMemo`: served only while the copy is unchanged.

    Args:
        memo: the template's memo.
        conn: the copy's sqlite3 connection.
        options: the template's domain options (a call whose context has other options is not served).
    """

    __slots__ = ("baseline", "conn", "memo", "options")

    def __init__(self, memo: ReadMemo, conn: sqlite3.Connection, options: Mapping[str, Any]):  # noqa: D107
        self.memo = memo
        self.conn = conn
        self.options = options
        self.baseline = conn.total_changes
        """The connection's change count when the copy was handed out (before any set-up)."""

    def unchanged(self, options: Mapping[str, Any]) -> bool:
        """True while nothing was written on the copy since it was handed out and ``options`` are the template's."""
        return self.conn.total_changes == self.baseline and options == self.options
