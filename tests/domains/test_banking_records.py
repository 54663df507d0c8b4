"""banking_knowledge's record lookup (``records.find``): SQLite picks the rows by their text, Python decides.

Checked against a plain scan of every record (the lookup's meaning, computed a second way) on values that could
trip a text prefilter: quotes, backslashes, non-ASCII, a lone surrogate, numbers and booleans, nested values.
"""

from __future__ import annotations

import json
import sqlite3
from types import SimpleNamespace
from typing import Any

import pytest

from domains.banking_knowledge.records import find, put
from simulator.world.kit import dumps

RECORDS = {
    "r1": {"user_id": "u1", "name": 'Ann "A" O\\Neil', "status": "ACTIVE", "limit": 5, "flag": True},
    "r2": {"user_id": "u2", "name": "Zoë Ünal", "status": "ACTIVE", "limit": 5.0, "flag": 1},
    "r3": {"user_id": "u1", "name": "lone \ud800 here", "status": "CLOSED", "limit": "5", "note": {"user_id": "u2"}},
    "r4": {"user_id": "u11", "name": "u1", "status": "ACTIVE", "tags": ["u1"], "flag": False},
}


@pytest.fixture
def ctx() -> Any:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE recs (id TEXT PRIMARY KEY, doc TEXT NOT NULL)")
    for key, rec in RECORDS.items():
        conn.execute("INSERT INTO recs VALUES (?, ?)", (key, dumps(rec, ordered=True)))
    return SimpleNamespace(conn=conn)


def scan(**match: Any) -> list[str]:
    return [k for k, rec in RECORDS.items() if all(rec.get(f) == v for f, v in match.items())]


@pytest.mark.parametrize("match", [
    {"user_id": "u1"}, {"user_id": "u2"}, {"user_id": "u11"}, {"name": 'Ann "A" O\\Neil'}, {"name": "Zoë Ünal"},
    {"name": "lone \ud800 here"}, {"name": "u1"}, {"user_id": "u1", "status": "ACTIVE"}, {"limit": 5},
    {"limit": "5"}, {"flag": True}, {"flag": 1}, {"user_id": "nobody"}, {"status": "ACTIVE", "flag": False}, {},
])
def test_find_gives_what_a_scan_of_every_record_gives(ctx, match):
    found = find(ctx, "recs", **match)
    assert [k for k, _ in found] == scan(**match)
    assert [rec for _, rec in found] == [json.loads(json.dumps(RECORDS[k])) for k in scan(**match)]


def test_a_record_written_by_the_tools_is_found_by_its_values(ctx):
    put(ctx, "recs", "r5", {"user_id": "ü\\\"x", "status": "NEW"})
    assert [k for k, _ in find(ctx, "recs", user_id="ü\\\"x")] == ["r5"]
    assert [k for k, _ in find(ctx, "recs", status="NEW")] == ["r5"]
