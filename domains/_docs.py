"""Document tables for the tau2-bench worlds (mock, telecom): one JSON document per row, keyed by id.

tau2's databases are nested pydantic models; here each record is kept whole as canonical JSON (sorted keys) in
a two-column table ``(id, doc)``, so a state diff names the record that changed, and tools read and write the
record through the trial's sqlite3 connection (no ORM). A single object (telecom's ``device``) is a table with
one row whose id is ``"1"``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Column, MetaData, String, Table, Text, insert
from sqlalchemy.orm import Session

__all__ = ["SINGLE", "Docs", "doc_table", "dumps", "insert_docs"]

SINGLE = "1"
"""The id of the row of a single-object table."""


def dumps(doc: Any) -> str:
    """Return the canonical JSON of a document (sorted keys, no spaces)."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)


def doc_table(metadata: MetaData, name: str) -> Table:
    """Define a document table ``name(id TEXT PRIMARY KEY, doc TEXT)`` on ``metadata``."""
    return Table(name, metadata, Column("id", String, primary_key=True), Column("doc", Text, nullable=False))


def insert_docs(session: Session, table: Table, docs: Iterable[tuple[str, Any]]) -> None:
    """Insert ``(id, document)`` pairs into a document table."""
    rows = [{"id": key, "doc": dumps(doc)} for key, doc in docs]
    if rows:
        session.execute(insert(table), rows)


class Docs:
    """Reads and writes documents on a trial's sqlite3 connection.

    Args:
        conn: the trial's connection.
    """

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

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
        """Insert or replace the document with id ``key`` (written only when it changed)."""
        text = dumps(doc)
        cur = self.conn.execute(f'UPDATE "{table}" SET doc = ? WHERE id = ? AND doc <> ?', (text, key, text))
        if cur.rowcount == 0 and self.conn.execute(f'SELECT 1 FROM "{table}" WHERE id = ?', (key,)).fetchone() is None:
            self.conn.execute(f'INSERT INTO "{table}" (id, doc) VALUES (?, ?)', (key, text))

    def dump(self, tables: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Return ``{table: {id: document}}`` for the tables."""
        return {t: {r[0]: json.loads(r[1]) for r in self.conn.execute(f'SELECT id, doc FROM "{t}" ORDER BY id')}
                for t in tables}


def deep_merge(base: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``patch`` into ``base`` in place (nested objects merged, everything else replaced) and return it."""
    for k, v in patch.items():
        if isinstance(v, Mapping) and isinstance(base.get(k), dict):
            deep_merge(base[k], v)
        else:
            base[k] = v
    return base
