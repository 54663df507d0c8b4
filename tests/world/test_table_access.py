"""TableAccess: the built-in domains' reads by key and writes through the DB-API connection."""

import json
import sqlite3

import pytest
from sqlalchemy import Boolean, Column, Integer, MetaData, String, Table

from simulator.world.kit import JsonNumber, TableAccess, json_column, with_new_keys


@pytest.fixture()
def db():
    md = MetaData()
    Table("things", md, Column("a", String, primary_key=True), Column("b", Integer, primary_key=True),
          Column("price", JsonNumber), Column("ok", Boolean), Column("doc", json_column()))
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute('CREATE TABLE things (a TEXT, b INTEGER, price BLOB, ok INTEGER, doc TEXT, PRIMARY KEY (a, b))')
    return TableAccess(md), conn


def test_insert_and_get_convert_json_and_booleans(db):
    access, conn = db
    access.insert(conn, "things", {"a": "x", "b": 1, "price": 56, "ok": True, "doc": {"k": [1, "two"]}})
    access.insert(conn, "things", {"a": "x", "b": 2})
    assert conn.execute("SELECT price, typeof(price), ok, doc FROM things WHERE b = 1").fetchone() == (
        56, "integer", 1, json.dumps({"k": [1, "two"]}))
    assert conn.execute("SELECT doc IS NULL, ok IS NULL FROM things WHERE b = 2").fetchone() == (1, 1)
    assert access.get(conn, "things", "x", 1) == {"a": "x", "b": 1, "price": 56, "ok": True, "doc": {"k": [1, "two"]}}
    assert access.get(conn, "things", "x", 3) is None
    assert [r["b"] for r in access.select(conn, "things", "a = ? ORDER BY b DESC", ("x",))] == [2, 1]


def test_update_writes_only_changed_columns_and_a_changed_type_is_a_change(db):
    access, conn = db
    access.insert(conn, "things", {"a": "x", "b": 1, "price": 56, "ok": False, "doc": None})
    row = access.get(conn, "things", "x", 1)
    assert row is not None
    statements = []
    conn.set_trace_callback(statements.append)
    access.update(conn, "things", row, price=56, ok=False)  # nothing changes: no statement
    assert statements == []
    access.update(conn, "things", row, price=56.0, doc=["d"])  # 56 -> 56.0 is a change (the dump shows it)
    assert len(statements) == 1 and '"ok"' not in statements[0]
    assert row["price"] == 56.0 and row["doc"] == ["d"]
    assert conn.execute("SELECT price, typeof(price), doc FROM things").fetchone() == (56.0, "real", '["d"]')
    access.delete(conn, "things", row)
    assert access.get(conn, "things", "x", 1) is None


def test_unknown_tables_and_columns_are_named(db):
    access, conn = db
    with pytest.raises(ValueError, match="unknown table 'nope'"):
        access.get(conn, "nope", 1)
    with pytest.raises(ValueError, match="unknown column"):
        access.insert(conn, "things", {"a": "x", "b": 1, "colour": "red"})
    access.insert(conn, "things", {"a": "x", "b": 1})
    row = access.get(conn, "things", "x", 1)
    with pytest.raises(ValueError, match="unknown column 'colour'"):
        access.update(conn, "things", row, colour="red")


def test_with_new_keys_appends_to_a_stored_order_only():
    assert with_new_keys(None, "status") is None
    assert with_new_keys({"address": ["zip"]}, "status") == {"address": ["zip"]}
    assert with_new_keys({"": ["b", "a"]}, "status", "a") == {"": ["b", "a", "status"]}


def test_updates_of_other_column_sets_each_get_their_statement(db):
    access, conn = db
    access.insert(conn, "things", {"a": "x", "b": 1, "price": 1, "ok": False})
    access.insert(conn, "things", {"a": "x", "b": 2, "price": 1, "ok": False})
    one, two = access.get(conn, "things", "x", 1), access.get(conn, "things", "x", 2)
    statements = []
    conn.set_trace_callback(statements.append)
    access.update(conn, "things", one, price=2)
    access.update(conn, "things", two, ok=True)  # another column set: its own statement, not the cached one
    access.update(conn, "things", two, price=3, ok=False)
    access.update(conn, "things", one, price=4)  # the first column set again
    assert statements == [
        "UPDATE \"things\" SET \"price\" = 2 WHERE \"a\" = 'x' AND \"b\" = 1",
        "UPDATE \"things\" SET \"ok\" = 1 WHERE \"a\" = 'x' AND \"b\" = 2",
        "UPDATE \"things\" SET \"price\" = 3, \"ok\" = 0 WHERE \"a\" = 'x' AND \"b\" = 2",
        "UPDATE \"things\" SET \"price\" = 4 WHERE \"a\" = 'x' AND \"b\" = 1",
    ]
    assert conn.execute("SELECT b, price, ok FROM things ORDER BY b").fetchall() == [(1, 4, 0), (2, 3, 0)]


def test_json_values_read_are_never_shared(db):
    """The same JSON text is decoded once and copied after: a value one read hands out is its caller's alone."""
    access, conn = db
    for b, doc in ((1, {"k": 1, "s": "x"}), (2, {"k": 1, "s": "x"}), (3, ["a", 1]), (4, {"deep": {"k": 1}})):
        access.insert(conn, "things", {"a": "x", "b": b, "doc": doc})
    for b in (1, 3, 4):
        first = access.get(conn, "things", "x", b)["doc"]
        again = access.get(conn, "things", "x", b)["doc"]  # from the cache when flat
        assert first == again and first is not again
        for value in (first, again):
            if isinstance(value, dict):
                value["k"] = 2
                value.get("deep", {})["k"] = 3
            else:
                value.append("b")
    assert [r["doc"] for r in access.select(conn, "things", "a = ? ORDER BY b", ("x",))] == [
        {"k": 1, "s": "x"}, {"k": 1, "s": "x"}, ["a", 1], {"deep": {"k": 1}}]


def test_rows_read_elsewhere_convert_as_get_does(db):
    access, conn = db
    access.insert(conn, "things", {"a": "x", "b": 1, "price": 56, "ok": True, "doc": {"k": [1]}})
    stored = conn.execute("SELECT a, b, price, ok, doc FROM things").fetchall()
    assert access.rows("things", stored) == [access.get(conn, "things", "x", 1)]
    assert access.rows("things", stored)[0]["ok"] is True
    with pytest.raises(ValueError):
        access.rows("things", [("x", 1)])
