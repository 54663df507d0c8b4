"""Per-trial databases, canonical state snapshots and state differences.

Each trial owns a private in-memory SQLite database, a copy of its domain's *template* database. The template
is built once per process per data set and kept as serialized bytes; one SQLAlchemy engine (NullPool) per
template has a ``creator`` that deserializes those bytes into a brand-new in-memory connection, so every
``engine.connect()`` is an independent copy (~1 ms) and trials never share a connection.

State comparison works on snapshots: per table, the rows as tuples keyed by primary key, fetched with one
``SELECT`` per table through the raw DB-API connection. Equal tuples are skipped cheaply; only differing rows
are compared field by field, floats at the declared precision (money: cents, so ``25 == 25.0``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, MetaData, Table, create_engine, event
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool, StaticPool

from simulator.sinks import EVENTS_DDL

__all__ = [
    "FieldDifference",
    "RowChange",
    "Snapshot",
    "StateDiff",
    "StateSpec",
    "TemplateDatabase",
    "TrialDatabase",
    "diff_against",
    "diff_snapshots",
    "json_diff",
    "snapshot",
]


@dataclass(frozen=True)
class StateSpec:
    """What the state comparison looks at.

    Attributes:
        metadata: the domain's SQLAlchemy metadata (tables, primary keys, column types).
        excluded_tables: bookkeeping tables never compared.
        volatile_columns: ``{table: {column, ...}}`` never compared (timestamps, request ids).
        float_decimals: floats compare equal when they differ by less than half a unit in this decimal
            place (2 = cents: ``|a - b| < 0.005``).
    """

    metadata: MetaData
    excluded_tables: frozenset[str] = frozenset()
    volatile_columns: Mapping[str, frozenset[str]] = field(default_factory=dict)
    float_decimals: int = 2

    def tables(self) -> list[Table]:
        """Return the compared tables in dependency order.

        The order is computed once (``MetaData.sorted_tables`` sorts topologically on every access, a
        noticeable share of a trial's grading) and recomputed only when tables are added to the metadata.
        """
        cached = self.__dict__.get("_tables")
        if cached is None or cached[0] != len(self.metadata.tables):
            tables = [t for t in self.metadata.sorted_tables if t.name not in self.excluded_tables]
            cached = (len(self.metadata.tables), tables)
            object.__setattr__(self, "_tables", cached)  # a cache on a frozen dataclass, not part of its value
        return list(cached[1])


Snapshot = dict[str, dict[tuple[Any, ...], tuple[Any, ...]]]
"""``{table: {primary key tuple: row tuple (all columns in table order)}}``."""


def _connect_template(data: bytes) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    conn.deserialize(data)
    return conn


class TemplateDatabase:
    """A domain's initial database, kept as serialized SQLite bytes, from which trial copies are made.

    Args:
        metadata: the schema.
        populate: called once with a Session on a fresh database to insert the data.
        name: label used in errors and logs (e.g. the data directory).
        options: domain options handed to tools of every trial made from this template.

    The populate callable may raise (bad data file); the error propagates unchanged.
    """

    def __init__(
        self,
        metadata: MetaData,
        populate: Callable[[Session], None],
        name: str = "template",
        options: Mapping[str, Any] | None = None,
    ):
        self.metadata = metadata
        self.name = name
        self.options: dict[str, Any] = dict(options or {})
        self.data_dir: Path | None = None
        """The data set the template was built from (set by :meth:`simulator.domain.Domain.template`)."""
        raw = sqlite3.connect(":memory:", check_same_thread=False)
        try:
            build = create_engine("sqlite://", creator=lambda: raw, poolclass=StaticPool)
            metadata.create_all(build)
            with Session(build) as s, s.begin():
                populate(s)
            _install_write_log(raw, metadata)
            raw.execute(EVENTS_DDL)  # the event log (see simulator.sinks), never compared
            raw.commit()
            self.data: bytes = raw.serialize()
            build.dispose()
        finally:
            raw.close()
        data = self.data
        self.engine: Engine = create_engine(
            "sqlite://", poolclass=NullPool, creator=lambda: _connect_template(data)
        )

        @event.listens_for(self.engine, "begin")
        def _begin(conn: Any) -> None:  # pysqlite: emit BEGIN ourselves so rollback always works
            conn.exec_driver_sql("BEGIN")

    @contextmanager
    def trial(self) -> Iterator[TrialDatabase]:
        """Open a private copy of the template for one trial; closed (and discarded) on exit.

        Yields:
            A :class:`TrialDatabase`.
        """
        conn = self.engine.connect()
        try:
            yield TrialDatabase(conn, dict(self.options))
        finally:
            conn.close()


class TrialDatabase:
    """One trial's private database: a connection, a Session for tools, raw access for snapshots.

    Attributes:
        connection: SQLAlchemy connection owned by this trial only.
        session: Session (autobegin off) used by tool dispatch, one transaction per tool call.
        options: domain options for tools.
    """

    def __init__(self, connection: Any, options: dict[str, Any]):
        self.connection = connection
        self.session = Session(bind=connection, autobegin=False, expire_on_commit=True)
        self.options = options

    @property
    def raw(self) -> sqlite3.Connection:
        """The underlying sqlite3 connection (for snapshots and serialization)."""
        driver = self.connection.connection.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        return driver


def _select(table: Table, spec: StateSpec, schema: str) -> tuple[str, list[int]]:
    """Return ``SELECT <compared columns> FROM schema.table`` and the primary-key positions in it."""
    volatile = spec.volatile_columns.get(table.name, frozenset())
    cols = [c.name for c in table.columns if c.name not in volatile]
    pk_idx = [cols.index(c.name) for c in table.primary_key.columns]
    sql = 'SELECT {} FROM {}."{}"'.format(", ".join(f'"{c}"' for c in cols), schema, table.name)
    return sql, pk_idx


def _keyed(rows: list[Any], pk_idx: list[int]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return {tuple(r[i] for i in pk_idx): tuple(r) for r in rows}


def snapshot(raw: sqlite3.Connection, spec: StateSpec) -> Snapshot:
    """Fetch every compared table as ``{pk tuple: row tuple}``, volatile columns left out.

    Args:
        raw: a sqlite3 connection holding the domain schema.
        spec: the domain's state spec.

    Returns:
        The :data:`Snapshot`.
    """
    out: Snapshot = {}
    for table in spec.tables():
        sql, pk_idx = _select(table, spec, "main")
        out[table.name] = _keyed(raw.execute(sql).fetchall(), pk_idx)
    return out


WRITE_LOG = "_tausim_writes"
"""Bookkeeping table: ``(tbl, rid)`` for every row inserted, updated or deleted since the template was built."""


def _install_write_log(raw: sqlite3.Connection, metadata: MetaData) -> None:
    """Create the write log and, on every table, triggers that record the rowid of each written row."""
    raw.execute(f'CREATE TABLE "{WRITE_LOG}" (tbl TEXT NOT NULL, rid INTEGER NOT NULL)')
    for table in metadata.sorted_tables:
        name = table.name
        for event_name, ref in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")):
            raw.execute(
                f'CREATE TRIGGER "_tausim_{name}_{event_name.lower()}" AFTER {event_name} ON "{name}" '
                f"BEGIN INSERT INTO \"{WRITE_LOG}\" VALUES ('{name}', {ref}.rowid); END"
            )
            if event_name == "UPDATE":  # an update that changes the rowid leaves the old one stale too
                raw.execute(
                    f'CREATE TRIGGER "_tausim_{name}_update_old" AFTER UPDATE ON "{name}" '
                    f"WHEN OLD.rowid <> NEW.rowid BEGIN INSERT INTO \"{WRITE_LOG}\" VALUES ('{name}', OLD.rowid); END"
                )
    raw.commit()


def diff_against(raw: sqlite3.Connection, goal: bytes, spec: StateSpec) -> StateDiff:
    """Compare a trial database with its goal database, looking only at rows either side wrote.

    Both databases are copies of the same template, whose triggers log the rowid of every row inserted,
    updated or deleted (table ``_tausim_writes``). A row can differ only if one side wrote it, so the goal is
    attached as schema ``goal`` and just the rows at the union of logged rowids are fetched from both sides
    and compared by primary key, field by field at the declared precision. The cost grows with the number of
    written rows, not with the size of the database.

    Args:
        raw: the trial's sqlite3 connection (no transaction open).
        goal: ``sqlite3.Connection.serialize()`` of the goal database (same template, gold actions replayed).
        spec: the domain's state spec.

    Returns:
        The same :class:`StateDiff` as :func:`diff_snapshots` of full snapshots (expected = goal).
    """
    raw.execute("ATTACH DATABASE ':memory:' AS goal")
    try:
        raw.deserialize(goal, name="goal")
        written: dict[str, set[int]] = {}
        for schema in ("main", "goal"):
            for tbl, rid in raw.execute(f'SELECT tbl, rid FROM {schema}."{WRITE_LOG}"'):
                written.setdefault(tbl, set()).add(rid)
        expected: Snapshot = {}
        actual: Snapshot = {}
        for table in spec.tables():
            rids = written.get(table.name)
            if not rids:
                continue
            ids = json.dumps(sorted(rids))
            where = " WHERE rowid IN (SELECT value FROM json_each(?))"
            main_sql, pk_idx = _select(table, spec, "main")
            goal_sql, _ = _select(table, spec, "goal")
            actual[table.name] = _keyed(raw.execute(main_sql + where, (ids,)).fetchall(), pk_idx)
            expected[table.name] = _keyed(raw.execute(goal_sql + where, (ids,)).fetchall(), pk_idx)
    finally:
        raw.execute("DETACH DATABASE goal")
    return diff_snapshots(expected, actual, spec)


@dataclass(frozen=True)
class FieldDifference:
    """One field that differs between the expected (goal) and actual (trial) state."""

    table: str
    key: tuple[Any, ...]
    field: str
    expected: Any
    actual: Any


@dataclass(frozen=True)
class RowChange:
    """A whole row present on one side only (``added`` = in actual, not expected)."""

    table: str
    key: tuple[Any, ...]
    row: dict[str, Any]


@dataclass
class StateDiff:
    """Differences between the goal state and a trial's final state (empty = states match)."""

    differences: list[FieldDifference] = field(default_factory=list)
    added: list[RowChange] = field(default_factory=list)
    removed: list[RowChange] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        """True when nothing differs."""
        return not (self.differences or self.added or self.removed)

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-serialisable form: ``{"differences": [...], "added": [...], "removed": [...]}``."""
        return {
            "differences": [
                {"table": d.table, "key": list(d.key), "field": d.field, "expected": d.expected,
                 "actual": d.actual}
                for d in self.differences
            ],
            "added": [{"table": r.table, "key": list(r.key), "row": r.row} for r in self.added],
            "removed": [{"table": r.table, "key": list(r.key), "row": r.row} for r in self.removed],
        }


def values_equal(a: Any, b: Any, decimals: int = 2) -> bool:
    """Compare two stored values; numbers compare at ``decimals`` precision (``25 == 25.0``).

    Args:
        a: first value.
        b: second value.
        decimals: decimal places that matter for non-integer numbers (2 = cents: ``|a-b| < 0.005``).

    Returns:
        True when equal at that precision. Booleans and strings compare exactly.
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if a == b:
        return True
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) and not isinstance(b, bool):
        return abs(float(a) - float(b)) < 0.5 * 10 ** (-decimals)
    return False


def diff_snapshots(expected: Snapshot, actual: Snapshot, spec: StateSpec) -> StateDiff:
    """Row-level differences between two snapshots of the same schema.

    Args:
        expected: the goal state.
        actual: the trial's final state.
        spec: the state spec both were taken with.

    Returns:
        A :class:`StateDiff` listing changed fields ``(table, key, field, expected, actual)`` and rows
        present only in actual (``added``) or only in expected (``removed``).
    """
    result = StateDiff()
    for table in spec.tables():
        volatile = spec.volatile_columns.get(table.name, frozenset())
        cols = [c.name for c in table.columns if c.name not in volatile]
        exp = expected.get(table.name, {})
        act = actual.get(table.name, {})
        if exp == act:
            continue
        for key, erow in exp.items():
            arow = act.get(key)
            if arow is None:
                result.removed.append(RowChange(table.name, key, dict(zip(cols, erow, strict=True))))
            elif arow != erow:
                for name, ev, av in zip(cols, erow, arow, strict=True):
                    if not values_equal(ev, av, spec.float_decimals):
                        result.differences.append(FieldDifference(table.name, key, name, ev, av))
        for key, arow in act.items():
            if key not in exp:
                result.added.append(RowChange(table.name, key, dict(zip(cols, arow, strict=True))))
    return result


def json_diff(before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Diff two nested-JSON dumps of a domain, per top-level table, in the tau-bench-diff shape.

    Args:
        before: ``{table: {record key: record}}`` initial dump.
        after: the same after the changes.

    Returns:
        ``{table: {"added": {key: record}, "removed": [key], "changed": {key: {path: {"old", "new"}}}}}``
        with a table present only when something changed. Paths use ``.field`` and ``[index]``; a path
        with only ``new`` was absent before, only ``old`` was deleted; lists are compared positionally
        (common prefix element by element, then the appended or removed tail).
    """
    out: dict[str, Any] = {}
    for table in list(before) + [t for t in after if t not in before]:
        b = before.get(table, {})
        a = after.get(table, {})
        added = {k: v for k, v in a.items() if k not in b}
        removed = [k for k in b if k not in a]
        changed: dict[str, Any] = {}
        for k, old in b.items():
            if k in a and a[k] != old:
                paths: dict[str, Any] = {}
                _diff_value(old, a[k], "", paths)
                if paths:
                    changed[k] = paths
        if added or removed or changed:
            out[table] = {"added": added, "removed": removed, "changed": changed}
    return out


def _diff_value(old: Any, new: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for k, v in old.items():
            sub = f"{path}.{k}" if path else str(k)
            if k in new:
                _diff_value(v, new[k], sub, out)
            else:
                out[sub] = {"old": v}
        for k, v in new.items():
            if k not in old:
                out[f"{path}.{k}" if path else str(k)] = {"new": v}
    elif isinstance(old, list) and isinstance(new, list):
        common = min(len(old), len(new))
        for i in range(common):
            _diff_value(old[i], new[i], f"{path}[{i}]", out)
        for i in range(common, len(new)):
            out[f"{path}[{i}]"] = {"new": new[i]}
        for i in range(common, len(old)):
            out[f"{path}[{i}]"] = {"old": old[i]}
    elif old != new:
        out[path] = {"old": old, "new": new}
