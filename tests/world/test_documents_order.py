"""Document tables keep a record's field order when a world asks for it (τ³'s banking_knowledge lists records field by
field in the order its data gives them), and sort the fields otherwise."""

import json
import sqlite3

from simulator.world.data.documents import Docs, DocShape, dumps, merge_docs


def _conn() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute('CREATE TABLE "t" (id TEXT PRIMARY KEY, doc TEXT NOT NULL)')
    return conn


def test_dumps_sorts_unless_ordered():
    doc = {"b": 1, "a": {"d": 2, "c": 3}}
    assert dumps(doc) == '{"a":{"c":3,"d":2},"b":1}'
    assert dumps(doc, ordered=True) == '{"b":1,"a":{"d":2,"c":3}}'


def test_ordered_docs_keep_field_order_through_put_and_merge():
    conn = _conn()
    Docs(conn, ordered=True).put("t", "1", {"zeta": 1, "alpha": 2})
    assert list(Docs(conn).get("t", "1") or {}) == ["zeta", "alpha"]
    merge_docs(conn, {"t": DocShape("map")}, {"t": {"1": {"alpha": 3, "mid": 4}}}, "agent_data", ordered=True)
    stored = conn.execute("SELECT doc FROM t").fetchone()[0]
    assert list(json.loads(stored)) == ["zeta", "alpha", "mid"]  # merged fields keep their places, new ones last
    Docs(conn).put("t", "2", {"zeta": 1, "alpha": 2})  # the default: canonical, sorted
    assert list(Docs(conn).get("t", "2") or {}) == ["alpha", "zeta"]
