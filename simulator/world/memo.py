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

The same holds one level down, for the statements a tool reads with: the rows a ``SELECT`` returns on an unchanged
copy are the rows it returns on every unchanged copy. :class:`MemoReads` (``ToolContext.reads``) serves them from the
template's :class:`ReadMemo` while the copy is unchanged and runs them on the connection once anything was written,
so a write tool's checks before its first write (the first write of most trials) read no table. Only statements a
tool sends through ``ctx.reads`` are remembered: deterministic ``SELECT`` statements, never one reading the clock
(``datetime('now')``), ``random()`` or anything else outside the database.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

__all__ = ["MEMO_KEY", "MemoReads", "ReadMemo", "Reads", "TrialMemo", "memo_key"]

MEMO_KEY = "tausim.read_memo"
"""The key of a trial's :class:`TrialMemo` in its session's ``info`` (absent: nothing is remembered)."""

_SCALARS = (str, int, float, bool, type(None))

_PARAMETERS = frozenset((str, int, type(None)))
"""The types of the parameters :class:`MemoReads` remembers a statement with (floats are not: a NaN never finds its
key again; ``True`` is not an ``int`` here, so ``(1,)`` and ``(True,)``, equal tuples, are never mixed up)."""


class Fetched(Protocol):
    """What a read statement gives back: its rows, one at a time or all at once (a ``sqlite3.Cursor`` is one)."""

    def fetchone(self) -> Any:
        """The next row, or None."""
        ...

    def fetchall(self) -> list[Any]:
        """The remaining rows."""
        ...

    def __iter__(self) -> Iterator[Any]:
        """The remaining rows, one at a time."""
        ...


class Reads(Protocol):
    """Where a tool reads from: the trial's ``sqlite3.Connection`` or its :class:`MemoReads`."""

    def execute(self, sql: str, parameters: Any = (), /) -> Fetched:
        """Run a read statement and return its rows."""
        ...


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
        self._rows: dict[tuple[str, tuple[Any, ...], tuple[type, ...]], tuple[Any, ...]] = {}
        """The rows of read statements (:class:`MemoReads`), by statement, parameters and the parameters' types."""
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


    def rows(self, key: tuple[str, tuple[Any, ...], tuple[type, ...]]) -> tuple[Any, ...] | None:
        """Return the remembered rows of a read statement (:class:`MemoReads`), or None."""
        return self._rows.get(key)

    def put_rows(self, key: tuple[str, tuple[Any, ...], tuple[type, ...]], rows: tuple[Any, ...]) -> None:
        """Remember the rows of a read statement (nothing when the memo is full or they are already kept).

        Their size counts towards ``limit_chars`` as their text values' lengths and 8 per other value.

        Args:
            key: statement, parameters and the parameters' types.
            rows: the statement's rows (tuples of immutable values).
        """
        size = sum(len(v) if type(v) is str else 8 for row in rows for v in row)
        with self._lock:
            if key in self._rows or self._chars + size > self.limit_chars:
                return
            self._rows[key] = rows
            self._chars += size


class _Fetched:
    """Remembered rows handed out as a cursor hands them out (:class:`Fetched`)."""

    __slots__ = ("_rows", "_next")

    def __init__(self, rows: tuple[Any, ...]):
        self._rows = rows
        self._next = 0

    def fetchone(self) -> Any:
        i = self._next
        if i >= len(self._rows):
            return None
        self._next = i + 1
        return self._rows[i]

    def fetchall(self) -> list[Any]:
        rest = list(self._rows[self._next:])
        self._next = len(self._rows)
        return rest

    def __iter__(self) -> Iterator[Any]:
        rows, self._next = self._rows[self._next:], len(self._rows)
        return iter(rows)


class MemoReads:
    """A trial copy's read statements, answered from its template's memo while the copy is unchanged (:class:`Reads`).

    ``execute(sql, parameters)`` on an unchanged copy returns the rows the statement returned on an unchanged copy
    of the same template before (run once and remembered); once anything was written on the copy, and for
    parameters other than a tuple of strings, integers and None, it runs the statement on the connection. Only for
    deterministic ``SELECT`` statements (see the module docstring); never for a statement that writes.

    Args:
        trial: the copy's :class:`TrialMemo`.
    """

    __slots__ = ("trial",)

    def __init__(self, trial: TrialMemo):  # noqa: D107 - documented on the class
        self.trial = trial

    def execute(self, sql: str, parameters: Any = (), /) -> Fetched:
        """Return the rows of the read statement ``sql`` with ``parameters`` (remembered ones while unchanged)."""
        trial = self.trial
        conn = trial.conn
        if conn.total_changes != trial.baseline or type(parameters) is not tuple or conn.row_factory is not None:
            return conn.execute(sql, parameters)
        types = tuple(type(p) for p in parameters)
        if not _PARAMETERS.issuperset(types):
            return conn.execute(sql, parameters)
        key = (sql, parameters, types)
        rows = trial.memo.rows(key)
        if rows is None:
            rows = tuple(conn.execute(sql, parameters).fetchall())
            trial.memo.put_rows(key, rows)
        return _Fetched(rows)


class TrialMemo:
    """A trial copy's access to its template's :class:`ReadMemo`: served only while the copy is unchanged.

    Args:
        memo: the template's memo.
        conn: the copy's sqlite3 connection.
        options: the template's domain options (a call whose context has other options is not served).
    """

    __slots__ = ("baseline", "conn", "memo", "options", "reads")

    def __init__(self, memo: ReadMemo, conn: sqlite3.Connection, options: Mapping[str, Any]):  # noqa: D107
        self.memo = memo
        self.conn = conn
        self.options = options
        self.baseline = conn.total_changes
        """The connection's change count when the copy was handed out (before any set-up)."""
        self.reads = MemoReads(self)
        """The copy's read statements, remembered while it is unchanged."""

    def unchanged(self, options: Mapping[str, Any]) -> bool:
        """True while nothing was written on the copy since it was handed out and ``options`` are the template's."""
        return self.conn.total_changes == self.baseline and options == self.options
