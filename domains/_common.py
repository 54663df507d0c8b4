"""Pieces shared by the built-in domains (retail, airline): storage, loading checks, dump helpers, common tools.

Both domains keep tau-bench style data sets (``{file: {key: record}}`` JSON files) in a relational schema and
dump it back unchanged, so they share the same means:

- storage: :class:`JsonNumber` columns keep each JSON number's own type (``56`` stays an int, ``100.0`` a
  float); :func:`json_column` stores free-form JSON; a ``layout`` column (:data:`Layout`) records a key order
  that differs from the canonical one;
- loading: :class:`RecordChecker` validates one record and names file, record key and field in every
  :class:`~simulator.world.domain.DomainError`; :func:`read_records` reads one data file;
- dumping: :func:`shape` re-applies a stored key order, :func:`group_rows` groups child rows by parent,
  :func:`select_rows` runs a dump query for all records or one;
- tools: :func:`calculate`, :func:`think` and :func:`transfer_to_human_agents`, which behave the same in every
  domain (tau-bench semantics), plus :class:`TableAccess` (reads by key and every write, through the DB-API connection),
  :func:`raw_connection` and :func:`with_new_keys` for tool modules;
- the domain class itself: :class:`JsonFolderDomain`, a :class:`~simulator.world.domain.Domain` whose native data is
  a folder of such JSON files, with a ``policy.md`` beside it.
"""

from __future__ import annotations

import ast
import gc
import json
import math
import operator
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, NoReturn

from sqlalchemy import JSON, Boolean, MetaData, Table, insert
from sqlalchemy.orm import Session
from sqlalchemy.types import UserDefinedType

from simulator.world.kit import Domain, DomainError, StateSpec, Toolbox, ToolContext, ToolError, TrialDatabase, tool

__all__ = [
    "TAU2_DB_FILE",
    "JsonFolderDomain",
    "JsonNumber",
    "Layout",
    "RecordChecker",
    "Row",
    "Rows",
    "TableAccess",
    "calculate",
    "deep_merge",
    "dump_tables",
    "gc_paused",
    "group_rows",
    "insert_rows",
    "is_tau2_data",
    "json_column",
    "key_layout",
    "kind",
    "raw_connection",
    "read_records",
    "read_tables",
    "strip_user_id",
    "select_rows",
    "shape",
    "think",
    "transfer_to_human_agents",
    "with_new_keys",
]

# ------------------------------------------------------------------------------------------------ storage
Layout = dict[str, list[str]]
"""``{path: [keys in order]}`` for objects whose key order differs from the canonical one (``""`` = the
record itself, any other path = the nested object under that key)."""


class JsonNumber(UserDefinedType[float]):
    """A JSON number stored with its own type (int or float), never converted.

    The column is declared ``BLOB``, which in SQLite means "no type affinity": each value keeps the storage
    class it was written with (INTEGER or REAL). A ``FLOAT`` column would turn ``56`` into ``56.0`` and a
    ``NUMERIC`` one ``100.0`` into ``100``; both would break the round trip of the peer files. SQLite still
    compares INTEGER and REAL values numerically (``56 = 56.0``).
    """

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        """Return the column type used in DDL."""
        return "BLOB"

    @property
    def python_type(self) -> type:
        """Return the Python type of the values (int values are also allowed)."""
        return float


def json_column() -> JSON:
    """A JSON text column where Python None is SQL NULL (not the JSON text ``null``)."""
    return JSON(none_as_null=True)


# ------------------------------------------------------------------------------------------------ loading
def kind(value: Any) -> str:
    """Describe a value for an error message: its type and the start of its JSON text (``null`` for None)."""
    if value is None:
        return "null"
    text = json.dumps(value, default=str)
    return f"{type(value).__name__} {text[:60]}"


def _join(field: str, name: str) -> str:
    return f"{field}.{name}" if field else name


class RecordChecker:
    """Validation helpers bound to one record, so that errors name file, record key and field.

    Args:
        file: the data file the record comes from.
        key: the record's key in that file.

    Every check raises :class:`~simulator.world.domain.DomainError` with the message
    ``"<file>: record '<key>': field <field>: <problem>"``.
    """

    def __init__(self, file: Path, key: str):
        self.file = file
        self.key = key

    def fail(self, field: str, problem: str) -> NoReturn:
        """Raise the DomainError for ``field`` (a dotted path inside the record; ``""`` = the record)."""
        raise DomainError(f"{self.file}: record {self.key!r}: field {field or '(record)'}: {problem}")

    def obj(self, value: Any, field: str, required: Iterable[str], optional: Iterable[str] = ()) -> dict:
        """Check an object's type and keys (all of ``required``, nothing beyond ``optional``)."""
        if not isinstance(value, dict):
            self.fail(field or "(record)", f"expected an object, got {kind(value)}")
        allowed = set(required) | set(optional)
        for k in required:
            if k not in value:
                self.fail(_join(field, k), "missing")
        for k in value:
            if k not in allowed:
                self.fail(_join(field, k), f"unexpected field (allowed: {', '.join(sorted(allowed))})")
        return value

    def mapping(self, value: Any, field: str) -> dict:
        """Check that a value is an object keyed by id (its entries are checked by the caller)."""
        if not isinstance(value, dict):
            self.fail(field, f"expected an object keyed by id, got {kind(value)}")
        return value

    def array(self, value: Any, field: str) -> list:
        """Check that a value is a list (its elements are checked by the caller)."""
        if not isinstance(value, list):
            self.fail(field, f"expected a list, got {kind(value)}")
        return value

    def free_object(self, obj: Mapping[str, Any], name: str, field: str) -> dict[str, Any]:
        """Return ``obj[name]``, which must be an object (any keys, e.g. a product's ``options``)."""
        value = obj.get(name)
        if not isinstance(value, dict):
            self.fail(_join(field, name), f"expected an object, got {kind(value)}")
        return value

    def string(self, obj: Mapping[str, Any], name: str, field: str, optional: bool = False) -> str | None:
        """Return ``obj[name]``, a string (or None when optional and absent or null)."""
        value = obj.get(name)
        if value is None and optional:
            return None
        if not isinstance(value, str):
            self.fail(_join(field, name), f"expected a string, got {kind(value)}")
        return value

    def req_string(self, obj: Mapping[str, Any], name: str, field: str) -> str:
        """Return ``obj[name]``, which must be a string."""
        value = obj.get(name)
        if not isinstance(value, str):
            self.fail(_join(field, name), f"expected a string, got {kind(value)}")
        return value

    def choice(self, obj: Mapping[str, Any], name: str, field: str, allowed: Iterable[str]) -> str:
        """Return ``obj[name]``, which must be one of ``allowed``."""
        value = self.req_string(obj, name, field)
        options = tuple(allowed)
        if value not in options:
            self.fail(_join(field, name), f"{value!r} is not one of {', '.join(options)}")
        return value

    def number(self, obj: Mapping[str, Any], name: str, field: str, optional: bool = False) -> float | None:
        """Return ``obj[name]``, an int or float kept as it is (not a boolean)."""
        value = obj.get(name)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(_join(field, name), f"expected a number, got {kind(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(_join(field, name), f"expected a finite number, got {value!r}")
        return value

    def integer(self, obj: Mapping[str, Any], name: str, field: str) -> int:
        """Return ``obj[name]``, which must be a JSON integer (``2``, not ``2.0`` or ``true``)."""
        value = obj.get(name)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(_join(field, name), f"expected an integer, got {kind(value)}")
        return value

    def strings(self, obj: Mapping[str, Any], name: str, field: str, optional: bool = False) -> list[str] | None:
        """Return ``obj[name]``, a list of strings (or None when optional and absent or null)."""
        value = obj.get(name)
        if value is None and optional:
            return None
        where = _join(field, name)
        if not isinstance(value, list):
            self.fail(where, f"expected a list of strings, got {kind(value)}")
        for i, v in enumerate(value):
            if not isinstance(v, str):
                self.fail(f"{where}[{i}]", f"expected a string, got {kind(v)}")
        return value

    def same_id(self, value: str, field: str, key: str) -> None:
        """Check that an id stored inside a record equals the key the record is stored under."""
        if value != key:
            self.fail(field, f"{value!r} differs from the key {key!r} it is stored under")


def _layout_of(obj: Mapping[str, Any], canonical: tuple[str, ...]) -> list[str] | None:
    """Return the object's key order when it is not the canonical order of its non-null keys."""
    keys = list(obj)
    if keys == [k for k in canonical if obj.get(k) is not None]:
        return None
    return keys


def key_layout(parts: Iterable[tuple[str, Mapping[str, Any], tuple[str, ...]]]) -> Layout | None:
    """Return the :data:`Layout` of a record: the key order of each part that is not canonical.

    Args:
        parts: ``(path, object, canonical key order)`` for the record (path ``""``) and its nested objects.

    Returns:
        ``{path: keys}`` for the parts whose keys are not the canonical order of their non-null keys, or None
        when every part is canonical (the usual case).
    """
    out = {}
    for path, obj, canonical in parts:
        keys = _layout_of(obj, canonical)
        if keys is not None:
            out[path] = keys
    return out or None


def read_records(folder: Path, name: str, domain: str) -> dict[str, Any]:
    """Read one data file: a JSON object of records keyed by id.

    Args:
        folder: the data directory.
        name: the file name (``users.json``).
        domain: the domain's name, for the error message.

    Raises:
        DomainError: the file cannot be read, is not JSON, or is not an object (names the file, and the
            line and column of a JSON syntax error).
    """
    path = folder / name
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DomainError(f"{path}: cannot read {domain} data file: {e.strerror or e}") from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise DomainError(f"{path}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    if not isinstance(data, dict):
        raise DomainError(f"{path}: expected an object of records keyed by id, got {type(data).__name__}")
    return data


TAU2_DB_FILE = "db.json"
"""The single data file of a tau2-bench data set: ``{table: {key: record}}``."""


def is_tau2_data(data: Path | None) -> bool:
    """Return whether ``data`` is a tau2-bench data set: a ``db.json`` file, or a folder holding one.

    Args:
        data: the ``--data`` path, or None (the built-in data set, never tau2).
    """
    if data is None:
        return False
    p = Path(data)
    return (p.is_file() and p.suffix == ".json") or (p.is_dir() and (p / TAU2_DB_FILE).is_file())


def _layouts(names: tuple[str, ...]) -> str:
    """What a data folder of tables ``names`` holds (both layouts), for error messages."""
    files = ", ".join(f"{n}.json" for n in names)
    return (f"either a tau2-bench {TAU2_DB_FILE} (an object with the tables {', '.join(names)}) or one JSON file per "
            f"table ({files}: tausim's built-in layout, as tau-bench's)")


def _not_a_data_folder(data: Path, names: tuple[str, ...], domain: str) -> str:
    """The message for a ``--data`` folder that holds neither layout of ``domain``'s data (names what it needs)."""
    files = sorted(p.name for p in data.iterdir() if p.is_file())
    shown = ", ".join(files[:8]) + (f" and {len(files) - 8} more" if len(files) > 8 else "") if files else "no file"
    return (f"--data {data}: not a data folder of domain {domain!r}, which holds {_layouts(names)}; this one holds "
            f"{shown}")


def read_tables(data: Path, names: tuple[str, ...], domain: str) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Read a data set's tables: a folder of ``<table>.json`` files (tau-bench) or one tau2 ``db.json``.

    Args:
        data: a folder holding ``users.json``... (tau-bench layout) or ``db.json`` (tau2), or the ``db.json``
            file itself.
        names: the table names (``("users", "orders", "products")``).
        domain: the domain's name, for error messages.

    Returns:
        ``{table: (source, records)}`` in the order of ``names``; ``source`` names the file (and, for a
        ``db.json``, the table as ``db.json#users``) in error messages.

    Raises:
        DomainError: a file is missing (for a folder holding neither layout, the message says what a data folder
            of the domain holds), not JSON, not an object, or a ``db.json`` lacks a table or has an unknown one
            (the message names the file and the key).
    """
    data = Path(data)
    if not is_tau2_data(data):
        absent = [f"{n}.json" for n in names if not (data / f"{n}.json").is_file()]
        if data.is_dir() and len(absent) == len(names):  # neither layout: say what the folder should hold
            raise DomainError(_not_a_data_folder(data, names, domain))
        out = {}
        for n in names:
            try:
                out[n] = (data / f"{n}.json", read_records(data, f"{n}.json", domain))
            except DomainError as e:
                if f"{n}.json" not in absent:
                    raise
                raise DomainError(f"{e} (a data folder of domain {domain!r} holds {_layouts(names)})") from e
        return out
    path = data if data.is_file() else data / TAU2_DB_FILE
    doc = read_records(path.parent, path.name, domain)
    missing = [n for n in names if n not in doc]
    if missing:
        raise DomainError(f"{path}: field {missing[0]}: missing ({domain} data needs {', '.join(names)})")
    unknown = [k for k in doc if k not in names]
    if unknown:
        raise DomainError(f"{path}: field {unknown[0]}: unexpected table (allowed: {', '.join(names)})")
    out = {}
    for n in names:
        if not isinstance(doc[n], dict):
            raise DomainError(f"{path}: field {n}: expected an object of records keyed by id, got {kind(doc[n])}")
        out[n] = (Path(f"{path}#{n}"), doc[n])
    return out


def strip_user_id(r: RecordChecker, raw: Any) -> Any:
    """Return a user record without tau2's ``user_id`` key, checking that it equals the record's key.

    tau2-bench adds ``user_id`` to every user of a ``db.json``; the tables store the id once (the key), and
    the tau2 tool mode renders it back. A record that is not an object is returned as it is (the caller's
    check names the problem).
    """
    if not isinstance(raw, dict) or "user_id" not in raw:
        return raw
    value = raw["user_id"]
    if not isinstance(value, str):
        r.fail("user_id", f"expected a string, got {kind(value)}")
    r.same_id(value, "user_id", r.key)
    return {k: v for k, v in raw.items() if k != "user_id"}


def insert_rows(session: Session, rows: Mapping[type, list[dict[str, Any]]]) -> None:
    """Insert the rows collected by a loader: one Core executemany per table, in the mapping's order.

    Args:
        session: the Session on the database being populated.
        rows: ``{model: [column values]}``; the order of the models respects foreign keys.
    """
    for model, batch in rows.items():
        if batch:
            session.connection().execute(insert(model), batch)


# ------------------------------------------------------------------------------------------------ dumping
Rows = list[tuple[Any, ...]]
"""Rows fetched through a raw sqlite3 connection."""


def shape(rec: dict[str, Any], layout: str | None) -> dict[str, Any]:
    """Apply a stored key order (the JSON text of a :data:`Layout`) to a record built in canonical order.

    Args:
        rec: the record, its keys (and those of its nested objects) in canonical order.
        layout: the record's ``layout`` column, or None (then ``rec`` is returned as it is).

    Returns:
        The record with the stored key orders (a new dict where an order changed).
    """
    if layout is None:
        return rec
    for path, keys in json.loads(layout).items():
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
    """Group ``(parent, value)`` rows, sorted by parent, into ``{parent: [values]}``."""
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


# ------------------------------------------------------------------------------------------------ tool helpers
Row = dict[str, Any]
"""One table row as ``{column: value}`` (JSON columns decoded, booleans as bool), as :class:`TableAccess` reads it."""


def raw_connection(ctx: ToolContext) -> sqlite3.Connection:
    """Return the trial's sqlite3 connection, after flushing pending ORM changes if a session transaction is open."""
    if ctx.session.in_transaction():
        ctx.session.flush()
    return ctx.conn


class _TableSQL:
    """The cached SQL of one table and the conversions of its JSON and boolean columns."""

    def __init__(self, table: Table):
        self.name = table.name
        self.columns = tuple(c.name for c in table.columns)
        self.key = tuple(c.name for c in table.primary_key.columns)
        self.json = frozenset(c.name for c in table.columns if isinstance(c.type, JSON))
        self.bool = frozenset(c.name for c in table.columns if isinstance(c.type, Boolean))
        cols = ", ".join(f'"{c}"' for c in self.columns)
        self.where_key = " AND ".join(f'"{c}" = ?' for c in self.key)
        self.select = f'SELECT {cols} FROM "{self.name}"'
        self.select_key = f"{self.select} WHERE {self.where_key}"
        self.delete = f'DELETE FROM "{self.name}" WHERE {self.where_key}'
        self.insert = 'INSERT INTO "{}" ({}) VALUES ({})'.format(self.name, cols, ", ".join("?" * len(self.columns)))

    def row(self, values: Sequence[Any]) -> Row:
        out = dict(zip(self.columns, values, strict=True))
        for c in self.json:
            if out[c] is not None:
                out[c] = json.loads(out[c])
        for c in self.bool:
            if out[c] is not None:
                out[c] = bool(out[c])
        return out

    def bind(self, column: str, value: Any) -> Any:
        if value is None:
            return None
        if column in self.json:
            return json.dumps(value)
        if column in self.bool:
            return int(value)
        return value


class TableAccess:
    """Reads by primary key and every write of a schema's tools, through the trial's sqlite3 connection.

    The SQL of each table is built once from the metadata; values are converted as the ORM would (JSON
    columns as ``json.dumps`` text, SQL NULL for None; booleans as 0/1), so rows written here read back the
    same through the ORM and the dump. All writes of the built-in domains' tools go through
    :meth:`insert`, :meth:`update` and :meth:`delete`: the one place to observe what a tool writes.

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

    def get(self, conn: sqlite3.Connection, table: str, *key: Any) -> Row | None:
        """Return the row with primary key ``key`` (its columns in primary-key order), or None.

        Raises:
            ValueError: an unknown table.
        """
        t = self._sql(table)
        found = conn.execute(t.select_key, key).fetchone()
        return None if found is None else t.row(found)

    def select(self, conn: sqlite3.Connection, table: str, where: str, params: Sequence[Any] = ()) -> list[Row]:
        """Return the rows matching a SQL condition, e.g. ``where="order_id = ? ORDER BY position"``.

        Raises:
            ValueError: an unknown table.
        """
        t = self._sql(table)
        return [t.row(r) for r in conn.execute(f"{t.select} WHERE {where}", params).fetchall()]

    def insert(self, conn: sqlite3.Connection, table: str, values: Mapping[str, Any]) -> None:
        """Insert a row; columns not in ``values`` are NULL.

        Raises:
            ValueError: an unknown table or column.
        """
        t = self._sql(table)
        unknown = set(values) - set(t.columns)
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
        sets = ", ".join(f'"{c}" = ?' for c in changed)
        params = [t.bind(c, v) for c, v in changed.items()] + [row[c] for c in t.key]
        conn.execute(f'UPDATE "{table}" SET {sets} WHERE {t.where_key}', params)
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


# ------------------------------------------------------------------------------------------------ shared tools
_MAX_EXPRESSION = 2000
_EXPRESSION_CHARS = frozenset("0123456789+-*/(). ")
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def _arithmetic(root: ast.AST) -> int | float:
    """Evaluate a parsed expression made only of numbers, + - * /, unary signs and parentheses.

    Iterative (an explicit stack), so a long flat sum cannot exhaust Python's recursion limit.
    """
    values: list[Any] = []
    stack: list[tuple[ast.AST, bool]] = [(root, False)]
    while stack:
        node, operands_done = stack.pop()
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
            values.append(node.value)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            if operands_done:
                right = values.pop()
                values.append(_BINARY[type(node.op)](values.pop(), right))
            else:
                stack += [(node, True), (node.right, False), (node.left, False)]
        elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            if operands_done:
                values.append(_UNARY[type(node.op)](values.pop()))
            else:
                stack += [(node, True), (node.operand, False)]
        else:
            raise ToolError("only numbers, + - * /, parentheses and spaces are allowed")
    (value,) = values
    return value  # type: ignore[no-any-return]


@tool("read")
def calculate(ctx: ToolContext, expression: str) -> str:
    """Calculate the result of an arithmetic expression, rounded to 2 decimals.

    Args:
        ctx: the trial's tool context.
        expression: The expression, such as '2 * (3 + 4) / 3'. Only numbers, the operators + - * /,
            parentheses and spaces are allowed.
    """
    if not set(expression) <= _EXPRESSION_CHARS:
        bad = sorted(set(expression) - _EXPRESSION_CHARS)
        raise ToolError(f"invalid characters in expression: {''.join(bad)!r}")
    if len(expression) > _MAX_EXPRESSION:
        raise ToolError(f"expression longer than {_MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
        value = float(_arithmetic(tree.body))
    except ToolError:
        raise
    except ZeroDivisionError as e:
        raise ToolError("division by zero") from e
    except (SyntaxError, ValueError) as e:
        raise ToolError(f"not a valid arithmetic expression: {expression!r}") from e
    except (OverflowError, RecursionError, MemoryError) as e:
        raise ToolError("expression too large to evaluate") from e
    if not math.isfinite(value):
        raise ToolError("expression too large to evaluate")
    return str(round(value, 2))


@tool("read")
def think(ctx: ToolContext, thought: str) -> str:
    """Think about something: changes nothing and returns nothing; use it for complex reasoning.

    Args:
        ctx: the trial's tool context.
        thought: A thought to think about.
    """
    return ""


@tool("read", ends_conversation=True)
def transfer_to_human_agents(ctx: ToolContext, summary: str) -> str:
    """Transfer the user to a human agent, with a summary of the issue; this ends the conversation.

    Only when the user explicitly asks for a human agent, or when the request cannot be handled with the
    available tools within the policy.

    Args:
        ctx: the trial's tool context.
        summary: A summary of the user's issue.
    """
    return "Transfer successful"


# ------------------------------------------------------------------------------------------------ domain class
class JsonFolderDomain(Domain):
    """A domain whose native data is a folder of ``{key: record}`` JSON files, with a ``policy.md``.

    Subclasses set :attr:`name`, :attr:`option_values`, :attr:`metadata` (the schema), :attr:`policy_placeholder`
    and the loader/dumper/toolbox functions; the state compares money at cent precision and ignores the
    ``layout`` columns, which only record key order (JSON equality, and the peer's grader, ignore it: an agent
    that rewrites an address with its current value must not fail the state check).
    """

    metadata: ClassVar[MetaData]
    """The domain's schema."""
    policy_placeholder: ClassVar[str] = ""
    """The policy returned while ``policy.md`` is absent."""

    @staticmethod
    def load_folder(session: Session, folder: Path) -> None:
        """Insert the data folder's records into an empty database (raises DomainError on malformed input)."""
        raise NotImplementedError

    tables: ClassVar[tuple[str, ...]] = ()
    """The data set's tables, in file order (``users``, ``orders``, ``products``)."""

    @staticmethod
    def load_tables(session: Session, tables: Mapping[str, tuple[Path, dict[str, Any]]]) -> None:
        """Insert already read tables (``{table: (source, records)}``) into an empty database."""
        raise NotImplementedError

    @staticmethod
    def dump_all(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
        """Return the database as the nested JSON of the data files."""
        raise NotImplementedError

    @staticmethod
    def make_toolbox(mode: str) -> Toolbox:
        """Build the domain's toolbox for a tool mode."""
        raise NotImplementedError

    tau2_options: ClassVar[dict[str, Any] | None] = {"mode": "tau2"}  # type: ignore[misc]
    """tau2-bench tasks run in tool mode ``tau2``."""

    def __init__(self) -> None:
        super().__init__()
        self._toolboxes: dict[str, Toolbox] = {}
        md = self.metadata
        self._spec = StateSpec(
            md,
            volatile_columns={t.name: frozenset({"layout"}) for t in md.sorted_tables if "layout" in t.c},
            float_decimals=2,
        )
        self._toolbox = self.make_toolbox(self.default_options(None).get("mode", ""))

    def state_spec(self) -> StateSpec:
        """Return the schema and comparison rules (money at cent precision, key order ignored)."""
        return self._spec

    def toolbox(self) -> Toolbox:
        """Return the domain's tools (those of the built-in data set's mode)."""
        return self._toolbox

    def toolbox_for(self, options: Mapping[str, Any]) -> Toolbox:
        """Return the tools of the options' tool mode (mode ``tau2`` has tau2-bench's tool set)."""
        mode = str(options.get("mode", ""))
        if mode != "tau2":
            return self._toolbox
        if mode not in self._toolboxes:
            self._toolboxes[mode] = self.make_toolbox(mode)
        return self._toolboxes[mode]

    def default_options(self, data_dir: Path | None) -> dict[str, Any]:
        """Return the tool options for a data set.

        ``{"mode": "tau2", "communicate": "tausim"}`` for tau2-bench data (a ``db.json``), else
        :meth:`legacy_options`.
        """
        if is_tau2_data(data_dir):
            return {"mode": "tau2", "communicate": "tausim"}
        return self.legacy_options(data_dir)

    def legacy_options(self, data_dir: Path | None) -> dict[str, Any]:
        """Return the options for the built-in data set (None) or a tau-bench data folder."""
        return {}

    def policy_for(self, data_dir: Path | None, options: Mapping[str, Any]) -> str:
        """Return the policy of the suite the data belongs to, else :meth:`policy`.

        tau2-bench data: the ``policy.md`` next to ``db.json``. Other data given with ``--data`` (tau-bench's
        ``retail/data`` folder): the suite's ``wiki.md`` or ``policy.md`` in that folder or its parent, where
        tau-bench keeps it; none there (or the built-in data set): :meth:`policy`.

        Raises:
            DomainError: tau2 data without a ``policy.md`` beside it.
        """
        if not is_tau2_data(data_dir):
            if data_dir is not None and Path(data_dir).resolve() != self.default_data_dir().resolve():
                folder = Path(data_dir)
                for candidate in (folder / "wiki.md", folder / "policy.md", folder.parent / "wiki.md",
                                  folder.parent / "policy.md"):
                    if candidate.is_file():
                        return candidate.read_text(encoding="utf-8")
            return self.policy()
        assert data_dir is not None
        folder = Path(data_dir) if Path(data_dir).is_dir() else Path(data_dir).parent
        path = folder / "policy.md"
        try:
            return path.read_text(encoding="utf-8")
        except OSError as e:
            raise DomainError(f"{path}: cannot read the suite's policy: {e.strerror or e}") from e

    def policy(self) -> str:
        """Return the policy (the package's policy.md), or :attr:`policy_placeholder` while it is absent."""
        path = self.package_dir() / "policy.md"
        if path.is_file():
            return path.read_text(encoding="utf-8")
        return self.policy_placeholder

    def populate(self, session: Session, data_dir: Path, options: Mapping[str, Any]) -> None:
        """Load the data files from ``data_dir``.

        Args:
            session: a Session on an empty database with the domain's schema.
            data_dir: the data folder.
            options: tool options (unused: loading is the same in every mode).

        Raises:
            DomainError: a file is missing or malformed (the message names file, record and field).
        """
        self.load_folder(session, Path(data_dir))

    def dump(self, trial: TrialDatabase) -> dict[str, dict[str, Any]]:
        """Return ``{file name without .json: {key: record}}`` as in the data files."""
        return self.dump_all(trial.raw)

    def merge_data(self, trial: TrialDatabase, data: Mapping[str, Any]) -> None:
        """Deep-merge native data into a trial database (tau2 ``initialization_data.agent_data``).

        Dump, merge (objects key by key, other values replaced), reload the domain's tables.

        Raises:
            DomainError: an unknown table, or a merged record that is malformed (names the record and field).
        """
        unknown = [k for k in data if k not in self.tables]
        if unknown:
            raise DomainError(f"initialization_data.agent_data: field {unknown[0]}: unknown table "
                              f"(tables: {', '.join(self.tables)})")
        merged = deep_merge(self.dump(trial), data)
        session = trial.session
        with session.begin():
            conn = session.connection()
            for table in reversed(self.metadata.sorted_tables):
                conn.execute(table.delete())
            self.load_tables(session, {n: (Path(f"initialization_data.agent_data#{n}"), merged[n])
                                       for n in self.tables})


def deep_merge(base: Any, patch: Any) -> Any:
    """Return ``base`` with ``patch`` merged in: objects key by key (recursively), any other value replaced.

    Args:
        base: the current value (not changed).
        patch: the values to merge.

    Returns:
        A new value.
    """
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = deep_merge(base[k], v) if k in base else v
        return out
    return patch
