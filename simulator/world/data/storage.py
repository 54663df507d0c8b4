"""Storage types for JSON data sets kept in relational tables: exact JSON numbers, free-form JSON, key order."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON
from sqlalchemy.types import UserDefinedType

__all__ = ["JsonNumber", "Layout", "json_column"]


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
    """A JSON text column where Python None is SQL NULL (not the JSON text ``null``).

    Returns:
        The column type, e.g. ``options: Mapped[dict] = mapped_column(json_column())``.
    """
    return JSON(none_as_null=True)
