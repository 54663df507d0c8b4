"""Document tables for tau2-bench style worlds (e.g. mock, telecom): one JSON document per row, keyed by id.

tau2's databases are nested pydantic models; here each record is kept whole as canonical JSON (sorted keys) in
a two-column table ``(id, doc)``, so a state diff names the record that changed, and tools read and write the
record through the trial's sqlite3 connection (no ORM). A single object (telecom's ``device``) is a table with
one row whose id is :data:`SINGLE` (``"1"``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Column, MetaData, String, Table, Text, insert
from sqlalchemy.orm import Session

from simulator.world.data.merge import deep_merge

__all__ = ["SINGLE", "DocShape", "Docs", "doc_table", "dumps", "insert_docs", "merge_docs"]

SINGLE = "1"
"""The id of the row of a single-object table."""


def dumps(doc: Any, *, ordered: bool = False) -> str:
    """Return the canonical JSON of a document (sorted keys, no spaces; other objects as their ``str``).

    Args:
        doc: a JSON-like value, e.g. ``{"b": 1, "a": [2]}``.
        ordered: keep the document's own field order instead of sorting (a world whose tools list records field
            by field in the order the data gives them, as τ³'s banking_knowledge does).

    Returns:
        Its JSON text, e.g. ``{"a":[2],"b":1}`` (``{"b":1,"a":[2]}`` when ``ordered``).
    """
    return json.dumps(doc, sort_keys=not ordered, separators=(",", ":"), default=str)


def doc_table(metadata: MetaData, name: str) -> Table:
    """Define a document table ``name(id TEXT PRIMARY KEY, doc TEXT)`` on ``metadata``.

    Args:
        metadata: the domain's schema.
        name: the table name, e.g. ``customers``.

    Returns:
        The table (one row per document).
    """
    return Table(name, metadata, Column("id", String, primary_key=True), Column("doc", Text, nullable=False))


def insert_docs(session: Session, table: Table, docs: Iterable[tuple[str, Any]], *, ordered: bool = False) -> None:
    """Insert ``(id, document)`` pairs into a document table (its canonical JSON, see :func:`dumps`).

    Args:
        session: a Session on the database being populated.
        table: a table made by :func:`doc_table`.
        docs: ``[(id, document), ...]``, e.g. ``[("C1001", {"customer_id": "C1001", ...})]``.
        ordered: keep each document's field order (see :func:`dumps`).
    """
    rows = [{"id": key, "doc": dumps(doc, ordered=ordered)} for key, doc in docs]
    if rows:
        session.execute(insert(table), rows)


class Docs:
    """Reads and writes documents on a trial's sqlite3 connection.

    Args:
        conn: the trial's connection.
        ordered: write documents with their own field order (see :func:`dumps`); a world uses one setting
            throughout, so that the same writes give the same stored text.
    """

    def __init__(self, conn: sqlite3.Connection, *, ordered: bool = False):
        self.conn = conn
        self.ordered = ordered

    def get(self, table: str, key: str) -> dict[str, Any] | None:
        """Return the document with id ``key``, or None."""
        row = self.conn.execute(f'SELECT doc FROM "{table}" WHERE id = ?', (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def get_text(self, table: str, key: str) -> str | None:
        """Return the stored JSON text of the document with id ``key``, or None."""
        row = self.conn.execute(f'SELECT doc FROM "{table}" WHERE id = ?', (key,)).fetchone()
        return None if row is None else str(row[0])

    def all(self, table: str) -> list[dict[str, Any]]:
        """Return every document of a table, in id order."""
        return [json.loads(r[0]) for r in self.conn.execute(f'SELECT doc FROM "{table}" ORDER BY id')]

    def put(self, table: str, key: str, doc: Mapping[str, Any]) -> None:
        """Insert or replace the document with id ``key`` (written only when it changed).

        A new id costs one statement (an insert that does nothing when the id exists), an existing one a second
        (an update only when its text differs, so an unchanged document fires no trigger and enters no write
        log). Not SQLite's upsert: its conflict handling would override the ``OR IGNORE`` of a template copy's
        triggers.
        """
        text = dumps(doc, ordered=self.ordered)
        if self.conn.execute(f'INSERT OR IGNORE INTO "{table}" (id, doc) VALUES (?, ?)', (key, text)).rowcount == 0:
            self.conn.execute(f'UPDATE "{table}" SET doc = ? WHERE id = ? AND doc <> ?', (text, key, text))

    def dump(self, tables: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Return ``{table: {id: document}}`` for the tables."""
        return {t: {r[0]: json.loads(r[1]) for r in self.conn.execute(f'SELECT id, doc FROM "{t}" ORDER BY id')}
                for t in tables}


@dataclass(frozen=True)
class DocShape:
    """How a tau2 database field is kept in a document table, for merging ``initialization_data`` into it.

    Attributes:
        kind: ``map`` (tau2 ``{id: record}``, e.g. mock's ``tasks``), ``list`` (tau2 ``[record, ...]``, e.g.
            telecom's ``lines``, each row keyed by the record's ``key`` field) or ``single`` (one object, e.g.
            telecom's ``device``, kept under id :data:`SINGLE`).
        key: the id field of a ``list`` table's records.
    """

    kind: Literal["map", "list", "single"]
    key: str | None = None


def merge_docs(conn: sqlite3.Connection, shapes: Mapping[str, DocShape], data: Mapping[str, Any],
               field: str, *, ordered: bool = False) -> None:
    """Merge tau2 ``initialization_data`` (``agent_data`` or ``user_data``) into document tables, in one transaction.

    tau2 merges the data into its database's JSON: objects key by key, recursively; any other value (a list
    included) replaced. So a ``map`` table's records are merged one by one (an unknown id adds the record), a
    ``list`` table is replaced whole by the given records, and a ``single`` object is merged.

    Args:
        conn: the trial's sqlite3 connection (autocommit: no transaction open).
        shapes: table name -> its :class:`DocShape` (the side's tables only).
        data: ``{table: value}`` as in the task file.
        field: the task field, for messages (``initial_state.initialization_data.agent_data``).
        ordered: keep the documents' field order (see :func:`dumps`; a merged record keeps its fields' places and
            takes new fields at its end).

    Raises:
        ValueError: an unknown table, or a value of the wrong kind for its table (the message names the field and
            the table).
    """
    _check_merge(shapes, data, field)
    docs = Docs(conn, ordered=ordered)
    conn.execute("BEGIN")
    try:
        for table, value in data.items():
            shape = shapes[table]
            if shape.kind == "list":
                conn.execute(f'DELETE FROM "{table}"')
                for rec in value:
                    docs.put(table, rec[shape.key], rec)
            elif shape.kind == "map":
                for key, rec in value.items():
                    docs.put(table, str(key), deep_merge(docs.get(table, str(key)) or {}, rec))
            else:
                docs.put(table, SINGLE, deep_merge(docs.get(table, SINGLE) or {}, value))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _check_merge(shapes: Mapping[str, DocShape], data: Mapping[str, Any], field: str) -> None:
    """Refuse an unknown table or a value of the wrong kind for its table (see :func:`merge_docs`)."""
    for table, value in data.items():
        shape = shapes.get(table)
        where = f"{field}.{table}"
        if shape is None:
            raise ValueError(f"{where}: unknown table (tables: {', '.join(shapes)})")
        if shape.kind == "list":
            if not isinstance(value, list):
                raise ValueError(f"{where}: expected a list of records, got {type(value).__name__}")
            for i, rec in enumerate(value):
                if not isinstance(rec, Mapping) or not isinstance(rec.get(shape.key or ""), str):
                    raise ValueError(f"{where}[{i}]: expected a record with a string {shape.key!r}")
            continue
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: expected an object, got {type(value).__name__}")
        if shape.kind == "map":
            for key, rec in value.items():
                if not isinstance(rec, Mapping):
                    raise ValueError(f"{where}.{key}: expected an object, got {type(rec).__name__}")
