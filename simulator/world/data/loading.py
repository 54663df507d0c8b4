"""Loading a folder of ``{key: record}`` JSON files: record checks naming file, key and field; table reads; inserts."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from sqlalchemy import insert
from sqlalchemy.orm import Session

from simulator.errors import DomainError
from simulator.types.jsonfile import decode_file_text, not_utf8
from simulator.types.sanitize import clipped, excerpt
from simulator.world.data.storage import Layout

__all__ = ["SQLITE_INTEGERS", "TAU2_DB_FILE", "RecordChecker", "decode_data_file", "insert_rows", "is_tau2_data",
           "key_layout", "kind", "read_records", "read_tables"]

SQLITE_INTEGERS = range(-(2**63), 2**63)
"""The integers an SQLite INTEGER column holds (signed 64-bit; https://www.sqlite.org/datatype3.html): Python's
driver raises ``OverflowError`` for any other."""


def kind(value: Any) -> str:
    """Describe a value for an error message: its type and the start of its JSON text (``null`` for None).

    Args:
        value: any value read from a data file.

    Returns:
        E.g. ``int 56``, ``str "abc"``, ``list [1, 2]`` (at most 60 characters of JSON, then ``...`` and the JSON
        text's length: :func:`~simulator.types.sanitize.excerpt`), or ``null``.
    """
    if value is None:
        return "null"
    return f"{type(value).__name__} {excerpt(value, 60, as_json=True)}"


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
        raise DomainError(f"{self.file}: record {excerpt(self.key)}: field {clipped(field or '(record)')}: {problem}")

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
            self.fail(_join(field, name), f"{excerpt(value)} is not one of {', '.join(options)}")
        return value

    def number(self, obj: Mapping[str, Any], name: str, field: str, optional: bool = False) -> float | None:
        """Return ``obj[name]``, an int (in :data:`SQLITE_INTEGERS`) or a finite float kept as it is (not a boolean)."""
        value = obj.get(name)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(_join(field, name), f"expected a number, got {kind(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(_join(field, name), f"expected a finite number, got {value!r}")
        if isinstance(value, int) and value not in SQLITE_INTEGERS:
            self.fail(_join(field, name), "expected a number SQLite can store (an integer from -2**63 to 2**63-1, "
                                          f"or a decimal), got {kind(value)}")
        return value

    def integer(self, obj: Mapping[str, Any], name: str, field: str) -> int:
        """Return ``obj[name]``, which must be a JSON integer (``2``, not ``2.0`` or ``true``) SQLite can store."""
        value = obj.get(name)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(_join(field, name), f"expected an integer, got {kind(value)}")
        if value not in SQLITE_INTEGERS:
            self.fail(_join(field, name), "expected an integer SQLite can store (-2**63 to 2**63-1), got "
                                          f"{kind(value)}")
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
            self.fail(field, f"{excerpt(value)} differs from the key {excerpt(key)} it is stored under")


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
        DomainError: the file cannot be read, is not JSON, is not an object, or holds a lone surrogate (half of
            a UTF-16 pair, which no database or terminal takes). The message names the file, and the line and
            column of a JSON syntax error, or the path and (an excerpt of) the string holding the lone surrogate.
    """
    path = folder / name
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DomainError(f"{path}: cannot read {domain} data file: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise DomainError(f"{path}: {not_utf8(path.read_bytes(), e)}") from None
    data = decode_data_file(path, text)
    if not isinstance(data, dict):
        raise DomainError(f"{path}: expected an object of records keyed by id, got {type(data).__name__}")
    return data


def decode_data_file(path: Path | str, text: str) -> Any:
    """Decode the text of a JSON data file, refusing what no database or terminal takes.

    Args:
        path: the file, named in error messages.
        text: its text.

    Returns:
        The decoded JSON.

    Raises:
        DomainError: the text is not JSON Python can decode (a syntax error, an integer of more than 4,300
            digits, nesting too deep: the message names the line and column), or holds a lone surrogate (half of a
            UTF-16 pair; the message names the path and an excerpt of the string), as a task file's
            (:func:`simulator.types.tasks.load_tasks`).
    """
    return decode_file_text(text, path, DomainError)


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
        raise DomainError(f"{path}: field {excerpt(unknown[0])}: unexpected table (allowed: {', '.join(names)})")
    out = {}
    for n in names:
        if not isinstance(doc[n], dict):
            raise DomainError(f"{path}: field {n}: expected an object of records keyed by id, got {kind(doc[n])}")
        out[n] = (Path(f"{path}#{n}"), doc[n])
    return out


def insert_rows(session: Session, rows: Mapping[type, list[dict[str, Any]]]) -> None:
    """Insert the rows collected by a loader: one Core executemany per table, in the mapping's order.

    Args:
        session: the Session on the database being populated.
        rows: ``{model: [column values]}``; the order of the models respects foreign keys.
    """
    for model, batch in rows.items():
        if batch:
            session.connection().execute(insert(model), batch)
