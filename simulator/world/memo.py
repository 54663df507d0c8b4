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

A write tool may declare it too (``@tool("write", memo=True)``, on a toolbox whose tools use only ``ctx.conn``): its
answer *and its changes* then depend only on the database, its arguments, the domain options and the call's step and
source. Its first call on an unchanged copy runs with a :class:`WriteRecorder` in place of the connection, which
records every statement but the ``SELECT`` ones; the same call (same arguments, step and source) on a later unchanged
copy replays those statements, in order, in one transaction, and answers what the first call answered: the same rows
at the same rowids, the same write log, event log and ``sqlite_sequence``, without the tool's reads, checks and answer
building. A refused call (``tool_error``) that wrote nothing is remembered as a read tool's answer is.

A copy changed only by remembered write calls is as predictable as an unchanged one: its content follows from the
template and the sequence of those calls (its *path*). :class:`TrialMemo` keeps the path; every key of a copy whose path
is not empty carries it, so answers, rows and writes remembered after a sequence of write calls are served only after
the same sequence. Any other write (a call that could not be recorded, one rolled back, a set-up's raw write) turns
the memo off for the rest of the trial, as before.

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

from simulator.types.sanitize import MAX_INT_BITS

__all__ = ["MEMO_KEY", "MemoReads", "ReadMemo", "Reads", "TrialMemo", "WriteRecorder", "memo_key"]

MEMO_KEY = "tausim.read_memo"
"""The key of a trial's :class:`TrialMemo` in its session's ``info`` (absent: nothing is remembered)."""

_SCALARS = (str, int, float, bool, type(None))

_PARAMETERS = frozenset((str, int, type(None)))
"""The types of the parameters :class:`MemoReads` remembers a statement with (floats are not: a NaN never finds its
key again; ``True`` is not an ``int`` here, so ``(1,)`` and ``(True,)``, equal tuples, are never mixed up)."""


_VALUES = frozenset((str, int, float, bytes, bool, type(None)))
"""The parameter types of a statement a :class:`WriteRecorder` can replay (immutable values)."""

Statement = tuple[str, Any, bool]
"""A recorded statement: ``(sql, parameters, many)``; ``many``: run with ``executemany`` (parameters: a tuple of
rows), else with ``execute`` (a tuple, or a dict of named parameters)."""

WriteKey = tuple[Any, ...]
"""The key of a remembered write call: the tool's function, its arguments' text (:func:`memo_key`), step, source
(prefixed with the copy's path, :meth:`TrialMemo.key`)."""


_WRITE_HEADS = frozenset(("INSERT", "UPDATE", "DELETE", "REPLAC"))
"""The first six characters of the statements :class:`WriteRecorder` records without looking further (the
statements of :class:`~simulator.world.data.access.TableAccess` and of the event log start so)."""


def _frozen(parameters: Any) -> tuple[Any, int] | None:
    """``parameters`` as an immutable copy (a tuple, or a dict owned by the memo) and its size, or None.

    The size is what :meth:`ReadMemo.put_write` counts: each text value's length, 8 per other value. None: a
    value of a type that cannot be replayed (mutable, or not a value), or parameters neither a sequence nor a dict.
    """
    t = type(parameters)
    if t is tuple or t is list:
        values: Any = parameters
    elif t is dict:
        values = parameters.values()
    else:
        return None
    size = 0
    for v in values:
        tv = type(v)
        if tv is str:
            size += len(v)
        elif tv in _VALUES:
            size += 8
        else:
            return None
    return (tuple(parameters) if t is not dict else dict(parameters)), size


class WriteRecorder:
    """A write tool's connection during its first call on an unchanged copy: runs every statement, records the writes.

    ``execute`` and ``executemany`` go to the connection; every statement that is not a ``SELECT`` is recorded with
    a copy of its parameters (re-running a read on replay would be harmless, missing a write would not: anything not
    recognised as a ``SELECT`` is recorded). Any other use of the connection (an attribute, a cursor, parameters of
    other types) marks the call as not replayable; it runs all the same. :attr:`size` tallies the recorded
    statements as :meth:`ReadMemo.put_write` counts them (8 and the text's length per statement, plus the values').

    Args:
        conn: the trial copy's connection.
    """

    __slots__ = ("conn", "replayable", "size", "statements")

    def __init__(self, conn: sqlite3.Connection):  # noqa: D107 - documented on the class
        self.conn = conn
        self.statements: list[Statement] = []
        self.replayable = True
        self.size = 0

    def _record(self, sql: str, parameters: Any, many: bool) -> None:
        if type(sql) is not str:
            self.replayable = False
            return
        head = sql[:6]
        if head not in _WRITE_HEADS and (head == "SELECT" or sql.lstrip()[:6].upper() == "SELECT"):
            return
        if many:
            size = 0
            rows = []
            for p in parameters:
                got = _frozen(p)
                if got is None:
                    self.replayable = False
                    return
                rows.append(got[0])
                size += got[1]
            frozen: Any = tuple(rows)
        else:
            got = _frozen(parameters)
            if got is None:
                self.replayable = False
                return
            frozen, size = got
        self.statements.append((sql, frozen, many))
        self.size += 8 + len(sql) + size

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        """Run a statement on the connection (a write: recorded)."""
        self._record(sql, parameters, False)
        return self.conn.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        """Run a statement once per parameter row on the connection (a write: recorded)."""
        rows = list(parameters)
        self._record(sql, rows, True)
        return self.conn.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self.replayable = False
        return getattr(self.conn, name)


def replay(conn: sqlite3.Connection, statements: tuple[Statement, ...]) -> None:
    """Run recorded statements on a connection, in order (inside the caller's transaction)."""
    for sql, parameters, many in statements:
        if many:
            conn.executemany(sql, parameters)
        else:
            conn.execute(sql, parameters)


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
        return t is not int or value.bit_length() <= MAX_INT_BITS
    if t is list:
        for v in value:
            if not (type(v) is str or _plain(v)):
                return False
        return True
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
    if type(arguments) is not dict:
        return None
    for k, v in arguments.items():  # _plain(arguments), the common leaves checked inline: it runs for every call
        if type(k) is not str:
            return None
        t = type(v)
        if not (t is str or (t is int and v.bit_length() <= MAX_INT_BITS) or v is None or t is bool or t is float
                or _plain(v)):
            return None  # an int beyond MAX_INT_BITS: repr may refuse to write it (over 4,300 digits)
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
        self._answers: dict[tuple[Any, ...], tuple[str, str]] = {}
        self._writes: dict[WriteKey, tuple[str, str, tuple[Statement, ...]]] = {}
        """Write calls: ``(content, status, statements)`` (see the module docstring)."""
        self._rows: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        """The rows of read statements (:class:`MemoReads`), by statement, parameters and the parameters' types."""
        self._chars = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: tuple[Any, ...]) -> tuple[str, str] | None:
        """Return the remembered ``(content, status)`` of a call, or None."""
        return self._answers.get(key)

    def put(self, key: tuple[Any, ...], content: str, status: str) -> None:
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


    def write(self, key: WriteKey) -> tuple[str, str, tuple[Statement, ...]] | None:
        """Return a remembered write call's ``(content, status, statements)``, or None."""
        return self._writes.get(key)

    def put_write(self, key: WriteKey, content: str, status: str, statements: tuple[Statement, ...],
                  size: int | None = None) -> None:
        """Remember a write call (nothing when the memo is full or the call is already kept).

        Its size counts towards ``limit_chars`` as its content's length and, per statement, 8, the statement's
        length and its values' (a text value's length, 8 per other value).

        Args:
            key: tool function, arguments' text, step and source.
            content: what the agent saw.
            status: ``ok`` or ``tool_error``.
            statements: the recorded writes (:class:`WriteRecorder`); none for a refused call.
            size: the statements' size as :attr:`WriteRecorder.size` tallied it (None: counted here).
        """
        if size is None:
            size = sum(8 + len(sql) + _size(params, many) for sql, params, many in statements)
        size += len(content)
        with self._lock:
            if key in self._writes or self._chars + size > self.limit_chars:
                return
            self._writes[key] = (content, status, statements)
            self._chars += size

    def rows(self, key: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """Return the remembered rows of a read statement (:class:`MemoReads`), or None."""
        return self._rows.get(key)

    def put_rows(self, key: tuple[Any, ...], rows: tuple[Any, ...]) -> None:
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


def _size(parameters: Any, many: bool) -> int:
    rows = parameters if many else (parameters,)
    return sum(len(v) if type(v) is str else 8
               for row in rows for v in (row.values() if type(row) is dict else row))


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
        if conn.total_changes != trial.mark or type(parameters) is not tuple or conn.row_factory is not None:
            return conn.execute(sql, parameters)
        types = tuple(type(p) for p in parameters)
        if not _PARAMETERS.issuperset(types):
            return conn.execute(sql, parameters)
        key: Any = (sql, parameters, types) if not trial.path else (trial.path, sql, parameters, types)
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

    __slots__ = ("baseline", "conn", "mark", "memo", "options", "path", "reads")

    def __init__(self, memo: ReadMemo, conn: sqlite3.Connection, options: Mapping[str, Any]):  # noqa: D107
        self.memo = memo
        self.conn = conn
        self.options = options
        self.baseline = conn.total_changes
        """The connection's change count when the copy was handed out (before any set-up)."""
        self.mark = self.baseline
        """The change count after the last remembered write call (the baseline before any)."""
        self.path: tuple[Any, ...] = ()
        """The keys of the remembered write calls made on the copy, in order (the module docstring)."""
        self.reads = MemoReads(self)
        """The copy's read statements, remembered while it is unchanged."""

    def unchanged(self, options: Mapping[str, Any]) -> bool:
        """True while only remembered write calls (:attr:`path`) wrote on the copy, with the template's ``options``."""
        return self.conn.total_changes == self.mark and options == self.options

    def key(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        """A memo key on this copy: ``key`` itself on an unchanged copy, else prefixed with the :attr:`path`."""
        return key if not self.path else (self.path, *key)

    def advance(self, call: tuple[Any, ...]) -> None:
        """Note a remembered write call just made on the copy (its key without the path): the path grows by it."""
        self.path = (*self.path, call)
        self.mark = self.conn.total_changes
