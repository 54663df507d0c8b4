"""The trial's event log: every successful write and every named domain event, in the trial database."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from simulator.world.jsontext import sorted_json_text


class EventContext(Protocol):
    """What recording an event needs of a tool context (:class:`simulator.world.tools.ToolContext` has it)."""

    @property
    def conn(self) -> sqlite3.Connection:
        """The trial's sqlite3 connection."""
        ...

    step: int | None
    source: str


EVENTS_TABLE = "_tausim_events"
"""Bookkeeping table of the event log: ``(seq, step, source, kind, name, data)``."""


EVENTS_DDL = (
    f'CREATE TABLE "{EVENTS_TABLE}" (seq INTEGER PRIMARY KEY AUTOINCREMENT, step INTEGER, '
    "source TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, data TEXT NOT NULL)"
)
"""DDL of the event log (run once on every template database)."""


_INSERT_EVENT = f'INSERT INTO "{EVENTS_TABLE}" (step, source, kind, name, data) VALUES (?, ?, ?, ?, ?)'
"""The statement of :func:`emit_event` (one string object: the connection's statement cache finds it by hash)."""

_EVENT_DATA = sorted_json_text
"""The text of an event's data: ``json.dumps(data, sort_keys=True, default=str)``'s, from an encoder built once
(:mod:`simulator.world.jsontext`). Stateless between calls: shared by every thread."""


@dataclass(frozen=True)
class Event:
    """One recorded event.

    Attributes:
        seq: order of the event in the trial (1-based, increasing).
        step: the agent step of the tool call that produced it; None for setup actions.
        source: ``"agent"`` (the conversation) or ``"setup"`` (a task's setup actions).
        kind: ``"tool"`` (a successful write call; ``name`` is the tool) or ``"domain"`` (emitted by a tool).
        name: the event name.
        data: the tool's arguments, or the emitted fields.
    """

    seq: int
    step: int | None
    source: str
    kind: str
    name: str
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """Return ``{"seq", "step", "source", "kind", "name", "data"}``."""
        return {"seq": self.seq, "step": self.step, "source": self.source, "kind": self.kind, "name": self.name,
                "data": self.data}


def _write(ctx: EventContext, sql: str, params: Mapping[str, Any] | tuple[Any, ...]) -> None:
    """Run one sink write on the tool call's connection, inside its transaction (the only write path).

    The trial's sqlite3 connection is the one under the session too, so the write joins the call's transaction
    whether the toolbox runs tools through the ORM session or on the connection (``Toolbox(uses_session=False)``).
    ``params``: named (a mapping, copied) or positional (a tuple).
    """
    ctx.conn.execute(sql, params if type(params) is tuple else dict(params))


def _read(ctx: EventContext, sql: str, params: Mapping[str, Any]) -> list[Any]:
    return list(ctx.conn.execute(sql, dict(params)).fetchall())


def emit_event(ctx: EventContext, name: str, data: Mapping[str, Any], kind: str = "domain") -> None:
    """Record an event in the trial's event log (use ``ctx.emit`` in tools).

    Args:
        ctx: the tool call's context (its ``step`` and ``source`` are recorded).
        name: the event name (non-empty).
        data: JSON-serialisable fields.
        kind: ``"domain"`` (emitted by a tool) or ``"tool"`` (a write call, recorded by dispatch).

    Raises:
        ValueError: an empty name.
    """
    sql, params = event_statement(ctx, name, data, kind)
    _write(ctx, sql, params)


def event_statement(ctx: EventContext, name: str, data: Mapping[str, Any],
                    kind: str = "domain") -> tuple[str, tuple[Any, ...]]:
    """The statement :func:`emit_event` runs for these arguments: ``(sql, parameters)``, the parameters immutable.

    A remembered write call (:mod:`simulator.world.memo`) replays it with the call's other statements: the same
    step, source, kind, name and data text, so the same row (its ``seq`` the next one, as :func:`emit_event` gives).

    Raises:
        ValueError: an empty name.
    """
    if not name:
        raise ValueError("an event needs a name")
    return _INSERT_EVENT, (ctx.step, ctx.source, kind, name, _EVENT_DATA(data if type(data) is dict else dict(data)))


def read_events(raw: sqlite3.Connection) -> list[Event]:
    """Return every event of a trial database, in order.

    Args:
        raw: the trial's sqlite3 connection.

    Returns:
        The :class:`Event` list ordered by ``seq``.
    """
    rows = raw.execute(f'SELECT seq, step, source, kind, name, data FROM "{EVENTS_TABLE}" ORDER BY seq').fetchall()
    return [Event(seq, step, source, kind, name, json.loads(data)) for seq, step, source, kind, name, data in rows]
