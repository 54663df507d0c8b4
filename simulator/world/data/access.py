"""Tool-side table access through the DB-API connection: reads by key and every write, with key-order upkeep."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import JSON, Boolean, MetaData, Table

from simulator.world.data.storage import Layout
from simulator.world.jsontext import json_text
from simulator.world.memo import Reads
from simulator.world.tools import ToolContext

__all__ = ["Row", "TableAccess", "raw_connection", "with_new_keys"]


Row = dict[str, Any]
"""One table row as ``{column: value}`` (JSON columns decoded, booleans as bool), as :class:`TableAccess` reads it."""


def raw_connection(ctx: ToolContext) -> sqlite3.Connection:
    """Return the trial's sqlite3 connection, after flushing pending ORM changes if a session transaction is open.

    Args:
        ctx: the tool's context.

    Returns:
        ``ctx.conn``, on which reads see every change the tool made through ``ctx.session``.
    """
    if ctx.session.in_transaction():
        ctx.session.flush()
    return ctx.conn


_FLAT_ITEMS = (str, int, float, bool, type(None))
"""The types of a flat JSON value's members: a decoded dict or list of these is kept and handed out as a copy."""

_DECODED_LIMIT = 4096
"""The most JSON texts a table keeps decoded (:meth:`_TableSQL.decode`); beyond it texts are decoded every time."""


def _flat(value: Any) -> bool:
    """True for a dict or list whose members are all scalars (a shallow copy of it shares nothing mutable)."""
    t = type(value)
    if t is dict:
        return all(type(v) in _FLAT_ITEMS for v in value.values())
    if t is list:
        return all(type(v) in _FLAT_ITEMS for v in value)
    return False


class _TableSQL:
    """The cached SQL of one table and the conversions of its JSON and boolean columns."""

    def __init__(self, table: Table):
        self.name = table.name
        self.columns = tuple(c.name for c in table.columns)
        self.column_set = frozenset(self.columns)
        self.key = tuple(c.name for c in table.primary_key.columns)
        self.json = frozenset(c.name for c in table.columns if isinstance(c.type, JSON))
        self.bool = frozenset(c.name for c in table.columns if isinstance(c.type, Boolean))
        self._convert = tuple((i, c, self.decode if c in self.json else bool) for i, c in enumerate(self.columns)
                              if c in self.json or c in self.bool)
        """The columns read back converted, in table order, with their position and conversion."""
        self._decoded: dict[str, Any] = {}
        """JSON texts of this table's columns decoded before, to flat dicts and lists (:meth:`decode`); shared by the
        threads running trials (a look-up or an insertion is one dict operation, the values are never changed)."""
        cols = ", ".join(f'"{c}"' for c in self.columns)
        self.where_key = " AND ".join(f'"{c}" = ?' for c in self.key)
        self.select = f'SELECT {cols} FROM "{self.name}"'
        self.select_key = f"{self.select} WHERE {self.where_key}"
        self.delete = f'DELETE FROM "{self.name}" WHERE {self.where_key}'
        self.insert = 'INSERT INTO "{}" ({}) VALUES ({})'.format(self.name, cols, ", ".join("?" * len(self.columns)))
        self._updates: dict[tuple[str, ...], str] = {}
        """The ``UPDATE`` statements built so far, by the tuple of columns they set (a schema's few combinations)."""
        self._selects: dict[str, str] = {}
        """The ``SELECT ... WHERE`` statements built so far, by their condition."""

    def update_sql(self, columns: tuple[str, ...]) -> str:
        """The ``UPDATE`` of ``columns`` (then the key's values) by primary key, built once per column tuple."""
        sql = self._updates.get(columns)
        if sql is None:
            sets = ", ".join(f'"{c}" = ?' for c in columns)
            sql = self._updates[columns] = f'UPDATE "{self.name}" SET {sets} WHERE {self.where_key}'
        return sql

    def select_where(self, where: str) -> str:
        """The ``SELECT`` of every column under the condition ``where``, built once per condition."""
        sql = self._selects.get(where)
        if sql is None:
            sql = f"{self.select} WHERE {where}"
            if len(self._selects) < 256:  # a schema's tools use a few conditions; others are built every time
                self._selects[where] = sql
        return sql

    def decode(self, text: Any) -> Any:
        """Decode a JSON column's stored text into a new value (never one another row or call holds).

        The same texts recur (a product's options in every order holding it): a text decoded before to a flat
        dict or list is copied from the table's cache, ten times cheaper than decoding it; other values are
        decoded every time. Equal to ``json.loads(text)`` for every text.
        """
        if type(text) is str:
            known = self._decoded.get(text)
            if known is not None:
                return known.copy()
            value = json.loads(text)
            if len(self._decoded) < _DECODED_LIMIT and _flat(value):
                self._decoded[text] = value.copy()  # the cache's own copy: the caller may change its value
            return value
        return json.loads(text)

    def row(self, values: Sequence[Any]) -> Row:
        if len(values) != len(self.columns):
            raise ValueError(f"table {self.name}: a row of {len(values)} values, not {len(self.columns)}")
        out = dict(zip(self.columns, values, strict=False))  # lengths checked above
        for i, c, convert in self._convert:
            value = values[i]
            if value is not None:
                out[c] = convert(value)
        return out

    def bind(self, column: str, value: Any) -> Any:
        if value is None:
            return None
        if column in self.json:
            return json_text(value)  # json.dumps(value)'s text
        if column in self.bool:
            return int(value)
        return value


class TableAccess:
    """Reads by primary key and every write of a schema's tools, through the trial's sqlite3 connection.

    The SQL of each table is built once from the metadata; values are converted as the ORM would (JSON
    columns as ``json.dumps`` text, written by :func:`~simulator.world.jsontext.json_text`; SQL NULL for None;
    booleans as 0/1), so rows written here read back the same through the ORM and the dump. Writing every change
    of a domain's tools through :meth:`insert`, :meth:`update` and :meth:`delete` makes them the one place to
    observe what a tool writes.

    Args:
        metadata: the schema.
    """

    def __init__(self, metadata: MetaData):
        self._tables = {t.name: _TableSQL(t) for t in metadata.sorted_tables}

    def _sql(self, table: str) -> _TableSQL:
        try:
            return self._tables[table]
        except KeyError:
            raise ValueError(f"unknown table {table!r} (tables: {', '.join(self._tables)})") from None

    def get(self, conn: Reads, table: str, *key: Any) -> Row | None:
        """Return the row with primary key ``key`` (its columns in primary-key order), or None.

        ``conn``: the trial's connection, or ``ctx.reads`` (the read remembered while the copy is unchanged).

        Raises:
            ValueError: an unknown table.
        """
        t = self._sql(table)
        found = conn.execute(t.select_key, key).fetchone()
        return None if found is None else t.row(found)

    def rows(self, table: str, values: Iterable[Sequence[Any]]) -> list[Row]:
        """Return rows read elsewhere (e.g. in a ``UNION`` with other tables), converted as :meth:`get` converts.

        Args:
            table: the rows' table.
            values: per row, every column's stored value, in the table's column order.

        Raises:
            ValueError: an unknown table, or a row with another number of values than the table has columns.
        """
        t = self._sql(table)
        return [t.row(r) for r in values]

    def select(self, conn: Reads, table: str, where: str, params: Sequence[Any] = ()) -> list[Row]:
        """Return the rows matching a SQL condition, e.g. ``where="order_id = ? ORDER BY position"``.

        ``conn``: the trial's connection, or ``ctx.reads`` (the read remembered while the copy is unchanged).

        Raises:
            ValueError: an unknown table.
        """
        t = self._sql(table)
        return [t.row(r) for r in conn.execute(t.select_where(where), params).fetchall()]

    def insert(self, conn: sqlite3.Connection, table: str, values: Mapping[str, Any]) -> None:
        """Insert a row; columns not in ``values`` are NULL.

        Raises:
            ValueError: an unknown table or column.
        """
        t = self._sql(table)
        unknown = values.keys() - t.column_set
        if unknown:
            raise ValueError(f"table {table}: unknown column(s) {', '.join(sorted(unknown))}")
        conn.execute(t.insert, [t.bind(c, values.get(c)) for c in t.columns])

    def update(self, conn: sqlite3.Connection, table: str, row: Row, **changes: Any) -> None:
        """Set columns of a row read with :meth:`get` or :meth:`select`, and ``row`` with them.

        Only the columns whose value changes are written (a value of another type, ``56.0`` for ``56``, is a
        change: the dump shows it); nothing is written when none does.

        Args:
            conn: the trial's connection.
            table: the row's table.
            row: the current row (with its primary key); updated in place.
            changes: ``column=new value``.

        Raises:
            ValueError: an unknown table or column.
        """
        t = self._sql(table)
        changed = {}
        for c, v in changes.items():
            if c not in row:
                raise ValueError(f"table {table}: unknown column {c!r}")
            old = row[c]
            if type(old) is not type(v) or old != v:
                changed[c] = v
        if not changed:
            return
        params = [t.bind(c, v) for c, v in changed.items()] + [row[c] for c in t.key]
        conn.execute(t.update_sql(tuple(changed)), params)
        row.update(changed)

    def delete(self, conn: sqlite3.Connection, table: str, row: Row) -> None:
        """Delete a row read with :meth:`get` or :meth:`select`.

        Raises:
            ValueError: an unknown table.
        """
        t = self._sql(table)
        conn.execute(t.delete, [row[c] for c in t.key])


def with_new_keys(layout: Layout | None, *keys: str) -> Layout | None:
    """Keep a stored (non-canonical) record key order in step with optional fields a tool just set.

    A record dumped in canonical order gets the new keys in canonical place anyway; one with a stored order
    gets them appended, as the peer's dict would.

    Args:
        layout: the record's ``layout`` column.
        keys: the optional fields just set, in the order they were set.

    Returns:
        The layout to store: ``layout`` itself unless it has a stored top-level order lacking some key.
    """
    if layout and "" in layout:
        top = list(layout[""])
        top += [k for k in keys if k not in top]
        return {**layout, "": top}
    return layout
