"""Dumping tables back to nested JSON records: stored key order, child rows grouped by parent, dump queries."""

from __future__ import annotations

import gc
import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["Rows", "dump_tables", "gc_paused", "group_rows", "select_rows", "shape"]


Rows = list[tuple[Any, ...]]
"""Rows fetched through a raw sqlite3 connection."""


def shape(rec: dict[str, Any], layout: str | Mapping[str, list[str]] | None) -> dict[str, Any]:
    """Apply a stored key order (a :data:`Layout`: JSON text, or decoded) to a record built in canonical order.

    Args:
        rec: the record, its keys (and those of its nested objects) in canonical order.
        layout: the record's ``layout`` column (as stored, or decoded as a tool's row holds it), or None (then
            ``rec`` is returned as it is).

    Returns:
        The record with the stored key orders (a new dict where an order changed).
    """
    if layout is None:
        return rec
    for path, keys in (json.loads(layout) if isinstance(layout, str) else layout).items():
        if path:
            sub = rec[path]
            rec[path] = {k: sub.get(k) for k in keys}
        else:
            rec = {k: rec.get(k) for k in keys}
    return rec


def select_rows(
    conn: sqlite3.Connection, sql: str, column: str, key: str | None, order: str
) -> Rows:
    """Run a dump query for every record (``key`` None) or for the rows whose ``column`` equals ``key``.

    Args:
        conn: the sqlite3 connection.
        sql: ``SELECT ... FROM table`` without WHERE or ORDER BY.
        column: the column compared with ``key``.
        key: a record key, or None for all rows.
        order: the ORDER BY expression (parent key first, then position).

    Returns:
        The fetched rows.
    """
    if key is None:
        return conn.execute(f"{sql} ORDER BY {order}").fetchall()
    return conn.execute(f"{sql} WHERE {column} = ? ORDER BY {order}", (key,)).fetchall()


def group_rows(rows: Rows) -> dict[Any, list[Any]]:
    """Group ``(parent, value)`` rows, sorted by parent, into ``{parent: [values]}``.

    Args:
        rows: ``[(parent key, value), ...]`` sorted by parent key (e.g. a query ``ORDER BY parent, position``).

    Returns:
        ``{parent key: [values in row order]}``; parents without rows are absent.
    """
    out: dict[Any, list[Any]] = {}
    key: Any = object()
    bucket: list[Any] = []
    for parent, value in rows:
        if parent != key:
            key = parent
            bucket = out[key] = []
        bucket.append(value)
    return out


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's garbage collector for a block (and restore it only if it was enabled).

    A full dump allocates ~100k containers and no garbage; the collector's passes would only rescan them (and
    the other live dumps), tripling the tail latency.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def dump_tables(
    conn: sqlite3.Connection, builders: Mapping[str, Callable[[sqlite3.Connection, None], dict[str, Any]]]
) -> dict[str, dict[str, Any]]:
    """Build every table of a full dump, with the garbage collector paused (see :func:`gc_paused`).

    Args:
        conn: the sqlite3 connection.
        builders: ``{table: builder}`` in file order; each builder is called with ``(conn, None)`` (all records).

    Returns:
        ``{table: {key: record}}``.
    """
    with gc_paused():
        return {name: build(conn, None) for name, build in builders.items()}
