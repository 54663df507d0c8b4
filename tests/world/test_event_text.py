"""The stored text of an event: its fields as JSON with sorted keys, values JSON cannot hold written as text."""

from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import dataclass

from simulator.world.events import EVENTS_DDL, EVENTS_TABLE, emit_event, read_events


@dataclass
class _Ctx:
    conn: sqlite3.Connection
    step: int | None = 3
    source: str = "agent"


def test_event_data_is_sorted_json_with_other_values_as_text() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(EVENTS_DDL)
    ctx = _Ctx(conn)
    emit_event(ctx, "refund", {"b": [2, 1.5], "a": dt.date(2026, 1, 2), "c": {"z": None, "y": "é"}}, kind="tool")
    emit_event(ctx, "note", {})
    rows = conn.execute(f'SELECT seq, step, source, kind, name, data FROM "{EVENTS_TABLE}" ORDER BY seq').fetchall()
    assert rows == [  # written out by hand: keys sorted at every level, the date as its str(), non-ASCII escaped
        (1, 3, "agent", "tool", "refund", '{"a": "2026-01-02", "b": [2, 1.5], "c": {"y": "\\u00e9", "z": null}}'),
        (2, 3, "agent", "domain", "note", "{}"),
    ]
    assert [e.data for e in read_events(conn)] == [{"a": "2026-01-02", "b": [2, 1.5], "c": {"y": "é", "z": None}}, {}]
