"""Per-trial databases, canonical state snapshots and state differences.

Each trial owns a private in-memory SQLite database, a copy of its domain's *template* database. The template
is built once per process per data set and kept as serialized bytes; one SQLAlchemy engine per template has a
``creator`` that deserializes those bytes into a brand-new in-memory connection. A trial's writes are undone
when it ends (from the write log and the first-write images the triggers keep) and the copy, the template again,
serves a later trial from the engine's pool: provisioning costs what the previous trial wrote, not the data
size, and trials never share a connection at the same time.

State comparison works on snapshots: per table, the rows as tuples keyed by primary key, fetched with one
``SELECT`` per table through the raw DB-API connection. Equal tuples are skipped cheaply; only differing rows
are compared field by field, floats at the declared precision (money: cents, so ``25 == 25.0``).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, MetaData, Table, create_engine, event
from sqlalchemy.orm import Session
from sqlalchemy.pool import QueuePool, StaticPool

from simulator.types.state import FieldDifference, RowChange, SetupImage, StateDelta, StateDiff
from simulator.world.events import EVENTS_DDL, EVENTS_TABLE
from simulator.world.memo import MEMO_KEY, ReadMemo, TrialMemo

__all__ = ["Snapshot", "StateSpec", "TemplateDatabase", "TrialDatabase", "capture_delta", "diff_against",
    "diff_snapshots", "json_diff", "snapshot"]


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

    Provisioning follows the rows written, not the size of the data: a trial's copy is made once (deserialized from
    the template's bytes) and, when the trial ends, its writes are undone from the write log and the first-write
    images the triggers keep (``_tausim_writes``, ``_tausim_old_<table>``): each written rowid gets its template
    row back or is deleted, the event log and ``sqlite_sequence`` are reset. The restored copy goes back to a pool
    and serves a later trial (on any thread, one trial at a time); a copy whose undo fails, or that was left with
    an attached database or temporary objects, is closed instead. Copies are never deserialized again.

    Args:
        metadata: the schema.
        populate: called once with a Session on a fresh database to insert the data.
        name: label used in errors and logs (e.g. the data directory).
        options: domain options handed to tools of every trial made from this template.
        pool_size: restored copies kept for later trials (more concurrent trials make more copies, closed when
            they end beyond this number); each copy holds the whole data set in memory.
        data: the template already built (its :attr:`data` of an earlier build with the same schema, populate
            and options, e.g. from :mod:`simulator.world.template_cache`): ``populate`` is then not called.

    The populate callable may raise (bad data file); the error propagates unchanged.
    """

    def __init__(
        self,
        metadata: MetaData,
        populate: Callable[[Session], None],
        name: str = "template",
        options: Mapping[str, Any] | None = None,
        pool_size: int = 4,
        *,
        data: bytes | None = None,
    ):
        self.metadata = metadata
        self.name = name
        self.options: dict[str, Any] = dict(options or {})
        self.data_dir: Path | None = None
        """The data set the template was built from (set by :meth:`simulator.world.domain.Domain.template`)."""
        self.data: bytes = data if data is not None else _build(metadata, populate)
        data = self.data
        raw = _connect_template(data)
        try:
            sequence = raw.execute("SELECT name, seq FROM sqlite_sequence").fetchall()
        finally:
            raw.close()
        self.origin: str = hashlib.blake2b(
            data + json.dumps(self.options, sort_keys=True, default=str).encode(), digest_size=16).hexdigest()
        """The template's identity: a digest of its data and options (a :class:`SetupImage` applies to its copies)."""
        self._undo = _UndoPlan(metadata, sequence)
        self._writes: dict[str, tuple[str, str, str, str]] = {}
        """Per table, the statements :meth:`apply_setup` writes with (delete, insert, a ghost's image, its log)."""
        for table in metadata.sorted_tables:
            cols = ", ".join(f'"{c.name}"' for c in table.columns)
            self._writes[table.name] = (
                f'DELETE FROM "{table.name}"' + _IN_IDS,
                f'INSERT INTO "{table.name}" (rowid, {cols}) VALUES (?{", ?" * len(table.columns)})',
                f'INSERT OR IGNORE INTO "{_old_table(table.name)}" ("_rid", "_absent") VALUES (?, 1)',
                f'INSERT INTO "{WRITE_LOG}" (tbl, rid) SELECT ?, ? WHERE NOT EXISTS '
                f'(SELECT 1 FROM "{WRITE_LOG}" WHERE tbl = ? AND rid = ?)')
        self.memo = ReadMemo()
        """Answers of the read tools declared ``memo=True`` on unchanged copies (see :mod:`simulator.world.memo`)."""
        self.engine: Engine = create_engine(
            "sqlite://", poolclass=QueuePool, pool_size=pool_size, max_overflow=-1,
            creator=lambda: _connect_template(data),
        )

        @event.listens_for(self.engine, "begin")
        def _begin(conn: Any) -> None:  # pysqlite: emit BEGIN ourselves so rollback always works
            conn.exec_driver_sql("BEGIN")

    @contextmanager
    def trial(self, memo: bool = True) -> Iterator[TrialDatabase]:
        """Open a private copy of the template for one trial; restored to the template (or discarded) on exit.

        Args:
            memo: read tools declared ``memo=True`` may answer from the template's memo while the copy is unchanged
                (:mod:`simulator.world.memo`); False runs every call (``tausim domain check`` replays with it off,
                so that a memo tool reading the clock or other state outside the database is still caught).

        Yields:
            A :class:`TrialDatabase`.
        """
        conn = self.engine.connect()
        trial = TrialDatabase(conn, dict(self.options))
        trial.origin = self.origin
        if memo:
            trial.session.info[MEMO_KEY] = TrialMemo(self.memo, trial.raw, self.options)
        try:
            yield trial
        finally:
            restored = False
            try:
                driver = conn.connection.driver_connection
                restored = (trial.reusable and isinstance(driver, sqlite3.Connection)
                            and self._undo.restore(driver))
            finally:
                if not restored:
                    conn.invalidate()  # closed, never reused
                conn.close()

    def capture_setup(self, raw: sqlite3.Connection) -> SetupImage:
        """Capture what was written on a copy of this template since it was provisioned (e.g. a task's set-up).

        Args:
            raw: a fresh copy's connection (:meth:`trial`) after the writes, no transaction open.

        Returns:
            The :class:`SetupImage`: every written row in full (or None when gone), the event log and
            ``sqlite_sequence``; :meth:`apply_setup` writes it on another fresh copy.
        """
        written = _written(raw)
        rows: dict[str, tuple[tuple[int, tuple[Any, ...] | None], ...]] = {}
        existed: dict[str, tuple[int, ...]] = {}
        for table in self.metadata.sorted_tables:
            rids = written.get(table.name)
            if not rids:
                continue
            ids = json.dumps(sorted(rids))
            cols = ", ".join(f'"{c.name}"' for c in table.columns)
            found = {r[0]: tuple(r[1:]) for r in raw.execute(f'SELECT rowid, {cols} FROM "{table.name}"' + _IN_IDS,
                                                             (ids,))}
            rows[table.name] = tuple((rid, found.get(rid)) for rid in sorted(rids))
            existed[table.name] = tuple(r[0] for r in raw.execute(
                f'SELECT "_rid" FROM "{_old_table(table.name)}" WHERE "_absent" = 0 AND "_rid" IN '
                "(SELECT value FROM json_each(?)) ORDER BY 1", (ids,)))
        events = tuple(tuple(r) for r in raw.execute(f'SELECT * FROM "{EVENTS_TABLE}" ORDER BY seq'))
        sequence = tuple((str(n), int(q)) for n, q in raw.execute("SELECT name, seq FROM sqlite_sequence"))
        return SetupImage(self.origin, rows, events, sequence, existed)

    def apply_setup(self, raw: sqlite3.Connection, image: SetupImage) -> None:
        """Write a captured set-up (:meth:`capture_setup`) on a fresh copy of this template, in one transaction.

        Afterwards the copy holds what the set-up left: the same rows at the same rowids, the same event log and
        ``sqlite_sequence``, and the same write log and first-write images (as sets: the undo at the end of the
        trial and the state comparison read them so), whatever the set-up's own order of writes was. Per table
        written: the template rows it touched deleted, the rows it left inserted at their rowids (the copy's
        triggers log both); a row it inserted and removed again gets only its traces.

        Args:
            raw: a fresh copy's connection (:meth:`trial`: nothing written yet), no transaction open.
            image: a set-up captured on a copy of this template.

        Raises:
            ValueError: the image was captured on another template.
        """
        if image.origin != self.origin:
            raise ValueError(f"apply_setup: the set-up was captured on another template ({image.origin}), "
                             f"not {self.name} ({self.origin})")
        raw.execute("BEGIN")
        try:
            for name, rows in image.rows.items():
                delete, insert, ghost_old, ghost_log = self._writes[name]
                existed = image.existed.get(name, ())
                if existed:
                    raw.execute(delete, (json.dumps(existed),))
                present = [(rid, *row) for rid, row in rows if row is not None]
                if present:
                    raw.executemany(insert, present)
                ghosts = [(rid,) for rid, row in rows if row is None and rid not in existed]
                if ghosts:  # inserted and removed again by the set-up: its traces, "no template row" and the log
                    raw.executemany(ghost_old, ghosts)
                    raw.executemany(ghost_log, [(name, rid, name, rid) for (rid,) in ghosts])
            if image.events:
                raw.executemany(f'INSERT INTO "{EVENTS_TABLE}" VALUES (?, ?, ?, ?, ?, ?)', image.events)
            if sorted(image.sequence) != sorted(self._undo.sequence):  # a fresh copy holds the template's
                raw.execute("DELETE FROM sqlite_sequence")
                raw.executemany("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", image.sequence)
        except BaseException:
            raw.execute("ROLLBACK")
            raise
        raw.execute("COMMIT")

    @contextmanager
    def trial_of(self, data: bytes) -> Iterator[TrialDatabase]:
        """Open a private database holding ``data`` (a trial copy serialized, e.g. a hunt snapshot) for one trial.

        The copy is made on a new connection, never one of the pool: a pooled connection's cached statements must
        not meet a database replaced under them (sqlite crashes). Closed on exit, never reused.

        Args:
            data: ``sqlite3.Connection.serialize()`` bytes of a copy of this template.

        Yields:
            A :class:`TrialDatabase` (``reusable`` False).
        """
        engine = create_engine("sqlite://", poolclass=StaticPool, creator=lambda: _connect_template(data))

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:  # as for the pooled copies: BEGIN emitted here so rollback always works
            conn.exec_driver_sql("BEGIN")

        conn = engine.connect()
        trial = TrialDatabase(conn, dict(self.options))
        trial.reusable = False
        try:
            yield trial
        finally:
            conn.close()
            engine.dispose()


def _build(metadata: MetaData, populate: Callable[[Session], None]) -> bytes:
    """Build a template: the schema, ``populate``'s rows, the write log's triggers and the event log; serialized."""
    raw = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        build = create_engine("sqlite://", creator=lambda: raw, poolclass=StaticPool)
        metadata.create_all(build)
        with Session(build) as s, s.begin():
            populate(s)
        _install_write_log(raw, metadata)
        raw.execute(EVENTS_DDL)  # the event log (see simulator.world.sinks), never compared
        raw.commit()
        data = raw.serialize()
        build.dispose()
    finally:
        raw.close()
    return data


class _UndoPlan:
    """How a trial's copy is put back to the template: the SQL that undoes the writes of each table."""

    def __init__(self, metadata: MetaData, sequence: list[tuple[str, int]]):
        self.sequence = sequence
        self.per_table: dict[str, tuple[str, ...]] = {}
        for table in metadata.sorted_tables:
            old = _old_table(table.name)
            cols = ", ".join(f'"{c.name}"' for c in table.columns)
            self.per_table[table.name] = (
                f'DELETE FROM "{table.name}" WHERE rowid IN (SELECT "_rid" FROM "{old}")',
                f'INSERT INTO "{table.name}" (rowid, {cols}) SELECT "_rid", {cols} FROM "{old}" WHERE "_absent" = 0',
                f'DELETE FROM "{old}"',
            )

    def restore(self, raw: sqlite3.Connection) -> bool:
        """Undo every write since the template on ``raw``; return False when the copy must not be reused.

        Args:
            raw: a trial's copy (any transaction left open is rolled back first).

        Returns:
            True when the copy holds the template again; False when it has an attached database or temporary
            objects, or the undo failed (then the caller closes it).
        """
        try:
            if raw.in_transaction:
                raw.rollback()
            attached = [r[1] for r in raw.execute("PRAGMA database_list") if r[1] not in ("main", "temp")]
            if attached or raw.execute("SELECT count(*) FROM temp.sqlite_master").fetchone()[0]:
                return False
            raw.execute("BEGIN")
            for (tbl,) in raw.execute(f'SELECT DISTINCT tbl FROM "{WRITE_LOG}"').fetchall():
                for sql in self.per_table[tbl]:
                    raw.execute(sql)
            raw.execute(f'DELETE FROM "{WRITE_LOG}"')
            raw.execute(f'DELETE FROM "{EVENTS_TABLE}"')
            raw.execute("DELETE FROM sqlite_sequence")
            raw.executemany("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", self.sequence)
            raw.execute("COMMIT")
        except (sqlite3.Error, KeyError):  # the copy is closed instead of reused: nothing is lost
            return False
        return True


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
        self.origin: str | None = None
        """The :attr:`TemplateDatabase.origin` of the template this is a fresh copy of (None: loaded data)."""
        self.reusable = True
        """Whether the copy may be restored to the template and reused after the trial (see
        :meth:`TemplateDatabase.trial`); False once :meth:`load` replaced its content."""

    def load(self, data: bytes) -> None:
        """Replace the whole database with ``data`` (``sqlite3.Connection.serialize()`` bytes, e.g. a snapshot).

        The copy is then closed at the end of the trial instead of being reused: sqlite's cached statements of a
        connection whose database was replaced must never run again (they may point at a freed schema). Use this,
        never ``raw.deserialize``, on a trial database.

        Args:
            data: the serialized database.
        """
        self.reusable = False
        self.origin = None
        self.session.info.pop(MEMO_KEY, None)  # another content: the template's answers no longer apply
        self.raw.deserialize(data)

    @property
    def raw(self) -> sqlite3.Connection:
        """The underlying sqlite3 connection (for snapshots and serialization)."""
        driver = self.connection.connection.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        return driver


def _select(table: Table, spec: StateSpec, schema: str, *, with_rowid: bool = False,
            table_ref: bool = False) -> tuple[str, list[int]]:
    """Return ``SELECT <compared columns> FROM schema.table`` and the primary-key positions in it.

    ``with_rowid`` puts the rowid first (the positions then still count from the first compared column);
    ``table_ref`` takes ``schema`` as the whole table reference (another table with the same columns). Made once
    per spec, table and form (a cache on the spec, like :meth:`StateSpec.tables`).
    """
    cache: dict[tuple[str, str, bool, bool], tuple[str, list[int]]] = spec.__dict__.setdefault("_selects", {})
    key = (table.name, schema, with_rowid, table_ref)
    made = cache.get(key)
    if made is None:
        made = cache[key] = _make_select(table, spec, schema, with_rowid, table_ref)
    return made[0], list(made[1])


def _make_select(table: Table, spec: StateSpec, schema: str, with_rowid: bool, table_ref: bool
                 ) -> tuple[str, list[int]]:
    volatile = spec.volatile_columns.get(table.name, frozenset())
    cols = [c.name for c in table.columns if c.name not in volatile]
    pk_idx = [cols.index(c.name) for c in table.primary_key.columns]
    source = schema if table_ref else f'{schema}."{table.name}"'
    names = ", ".join(f'"{c}"' for c in cols)
    return f"SELECT {'rowid, ' if with_rowid else ''}{names} FROM {source}", pk_idx


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


OLD_PREFIX = "_tausim_old_"
"""Bookkeeping tables ``_tausim_old_<table>``: each written row's values before its first write since the template
was built (its template row), keyed by rowid ``_rid``; ``_absent`` = 1 when there was no row at that rowid."""


def _old_table(name: str) -> str:
    return f"{OLD_PREFIX}{name}"


def _install_write_log(raw: sqlite3.Connection, metadata: MetaData) -> None:
    """Create the write log and, on every table, triggers that record the rowid of each written row.

    The triggers also keep each written row's template values (its values before its first write) in the table's
    ``_tausim_old_<table>`` (columns untyped, so values are stored exactly as they were), so that a comparison
    with a goal delta needs neither the template nor the goal database.
    """
    raw.execute(f'CREATE TABLE "{WRITE_LOG}" (tbl TEXT NOT NULL, rid INTEGER NOT NULL)')
    for table in metadata.sorted_tables:
        name = table.name
        old = _old_table(name)
        cols = [c.name for c in table.columns]
        raw.execute(f'CREATE TABLE "{old}" ("_rid" INTEGER PRIMARY KEY, "_absent" INTEGER NOT NULL, '
                    + ", ".join(f'"{c}"' for c in cols) + ")")
        keep_old = (f'INSERT OR IGNORE INTO "{old}" VALUES (OLD.rowid, 0, '
                    + ", ".join(f'OLD."{c}"' for c in cols) + ");")
        for event_name, ref, first in (
            ("INSERT", "NEW", f'INSERT OR IGNORE INTO "{old}" ("_rid", "_absent") VALUES (NEW.rowid, 1);'),
            ("UPDATE", "NEW", keep_old),
            ("DELETE", "OLD", keep_old),
        ):
            raw.execute(
                f'CREATE TRIGGER "_tausim_{name}_{event_name.lower()}" AFTER {event_name} ON "{name}" '
                f"BEGIN {first} INSERT INTO \"{WRITE_LOG}\" VALUES ('{name}', {ref}.rowid); END"
            )
            if event_name == "UPDATE":  # an update that changes the rowid leaves the old one stale too
                raw.execute(
                    f'CREATE TRIGGER "_tausim_{name}_update_old" AFTER UPDATE ON "{name}" '
                    f"WHEN OLD.rowid <> NEW.rowid BEGIN "
                    f'INSERT OR IGNORE INTO "{old}" ("_rid", "_absent") VALUES (NEW.rowid, 1); '
                    f"INSERT INTO \"{WRITE_LOG}\" VALUES ('{name}', OLD.rowid); END"
                )
    raw.commit()


def _written(raw: sqlite3.Connection, schema: str = "main") -> dict[str, set[int]]:
    """Return ``{table: {rowid, ...}}`` of the rows written in ``schema`` since the template was built."""
    written: dict[str, set[int]] = {}
    for tbl, rid in raw.execute(f'SELECT tbl, rid FROM {schema}."{WRITE_LOG}"'):
        written.setdefault(tbl, set()).add(rid)
    return written


_IN_IDS = " WHERE rowid IN (SELECT value FROM json_each(?))"




def capture_delta(raw: sqlite3.Connection, spec: StateSpec) -> StateDelta:
    """Capture the rows written in a database since its template was built, as a :class:`StateDelta`.

    Args:
        raw: a sqlite3 connection of a template copy (no transaction open), e.g. after the gold actions.
        spec: the domain's state spec (the compared tables and columns).

    Returns:
        The delta: for each compared table, each written rowid's current compared columns, or None.
    """
    written = _written(raw)
    rows: dict[str, dict[int, tuple[Any, ...] | None]] = {}
    for table in spec.tables():
        rids = written.get(table.name)
        if not rids:
            continue
        sql, _ = _select(table, spec, "main", with_rowid=True)
        found = {r[0]: tuple(r[1:]) for r in raw.execute(sql + _IN_IDS, (json.dumps(sorted(rids)),))}
        rows[table.name] = {rid: found.get(rid) for rid in sorted(rids)}
    volatile = {t: tuple(sorted(c)) for t, c in spec.volatile_columns.items() if c}
    return StateDelta(rows, volatile)


def _diff_delta(raw: sqlite3.Connection, goal: StateDelta, spec: StateSpec) -> StateDiff:
    volatile = {t: tuple(sorted(c)) for t, c in spec.volatile_columns.items() if c}
    if dict(goal.volatile) != volatile:
        raise ValueError(f"diff_against: the goal delta was captured with volatile columns {dict(goal.volatile)}, "
                         f"the state spec has {volatile}")
    written = _written(raw)
    expected: Snapshot = {}
    actual: Snapshot = {}
    for table in spec.tables():
        goal_rows = goal.rows.get(table.name, {})
        mine = written.get(table.name, set())
        if not goal_rows and not mine:
            continue
        sql, pk_idx = _select(table, spec, "main")
        ids = json.dumps(sorted(mine.union(goal_rows)))
        actual[table.name] = _keyed(raw.execute(sql + _IN_IDS, (ids,)).fetchall(), pk_idx)
        exp = [r for r in goal_rows.values() if r is not None]
        template_side = sorted(mine.difference(goal_rows))  # rows the goal left as in the template
        if template_side:
            old_sql, _ = _select(table, spec, f'main."{_old_table(table.name)}"', table_ref=True)
            exp.extend(raw.execute(old_sql + ' WHERE "_absent" = 0 AND "_rid" IN (SELECT value FROM json_each(?))',
                                   (json.dumps(template_side),)).fetchall())
        expected[table.name] = _keyed(exp, pk_idx)
    return diff_snapshots(expected, actual, spec)


def diff_against(raw: sqlite3.Connection, goal: bytes | StateDelta, spec: StateSpec) -> StateDiff:
    """Compare a trial database with its goal state, looking only at rows either side wrote.

    The trial database and the goal are both copies of the same template, whose triggers log the rowid of every
    row inserted, updated or deleted (table ``_tausim_writes``). A row can differ only if one side wrote it, so
    just the rows at the union of written rowids are compared by primary key, field by field at the declared
    precision. The cost grows with the number of written rows, not with the size of the database.

    With a :class:`StateDelta` (see :func:`capture_delta`) nothing is attached: the goal's rows are the delta's,
    and a row the trial wrote but the goal did not is expected as in the template, read from the trial's own
    record of its values before its first write.

    Args:
        raw: the trial's sqlite3 connection (no transaction open).
        goal: the goal state: a :class:`StateDelta`, or ``sqlite3.Connection.serialize()`` of the goal database
            (same template, gold actions replayed), then attached as schema ``goal`` for the comparison.
        spec: the domain's state spec.

    Returns:
        The same :class:`StateDiff` as :func:`diff_snapshots` of full snapshots (expected = goal).

    Raises:
        ValueError: a delta captured with other volatile columns than ``spec``'s.
    """
    if isinstance(goal, StateDelta):
        return _diff_delta(raw, goal, spec)
    raw.execute("ATTACH DATABASE ':memory:' AS goal")
    try:
        raw.deserialize(goal, name="goal")
        written = _written(raw)
        for tbl, goal_rids in _written(raw, "goal").items():
            written.setdefault(tbl, set()).update(goal_rids)
        expected: Snapshot = {}
        actual: Snapshot = {}
        for table in spec.tables():
            rids = written.get(table.name)
            if not rids:
                continue
            ids = json.dumps(sorted(rids))
            where = _IN_IDS
            main_sql, pk_idx = _select(table, spec, "main")
            goal_sql, _ = _select(table, spec, "goal")
            actual[table.name] = _keyed(raw.execute(main_sql + where, (ids,)).fetchall(), pk_idx)
            expected[table.name] = _keyed(raw.execute(goal_sql + where, (ids,)).fetchall(), pk_idx)
    finally:
        raw.execute("DETACH DATABASE goal")
    return diff_snapshots(expected, actual, spec)








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
        exp = expected.get(table.name, {})
        act = actual.get(table.name, {})
        if exp == act:
            continue
        volatile = spec.volatile_columns.get(table.name, frozenset())
        cols = [c.name for c in table.columns if c.name not in volatile]
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
