"""Storage types for JSON data sets kept in relational tables: exact JSON numbers, free-form JSON, key order.

And the values a column is declared to hold (:func:`one_of`), which ``tausim domain check`` checks the data against.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import JSON, Column
from sqlalchemy.types import UserDefinedType

__all__ = ["ALLOWED_VALUES", "JsonNumber", "Layout", "allowed_values", "json_column", "one_of"]


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


ALLOWED_VALUES = "tausim.allowed_values"
"""The key of a column's ``info`` under which :func:`one_of` keeps the values the column is declared to hold."""


def one_of(*values: str | int) -> dict[str, Any]:
    """Declare the values a column may hold (an enumeration), as the column's ``info``.

    ``tausim domain check`` (:func:`simulator.authoring.check_domain`) reports every row of the domain's data whose
    value is none of them, naming the table, the row's key, the field and the value (rule ``unknown-value``). NULL is
    left to the column's nullability. The values are compared exactly (``"Pending"`` is not ``"pending"``).

    Example::

        status: Mapped[str] = mapped_column(String, info=one_of("pending", "delivered", "cancelled"))

    Args:
        *values: the allowed values, in the order error messages list them.

    Returns:
        ``{ALLOWED_VALUES: values}``, for ``mapped_column(..., info=...)`` (merge it with any other ``info``).

    Raises:
        ValueError: no value, or a value given twice.
    """
    if not values:
        raise ValueError("one_of: give at least one value")
    seen: set[str | int] = set()
    for v in values:
        if v in seen:
            raise ValueError(f"one_of: {v!r} is given twice")
        seen.add(v)
    return {ALLOWED_VALUES: tuple(values)}


def allowed_values(column: Column[Any]) -> tuple[str | int, ...] | None:
    """Return the values a column is declared to hold (:func:`one_of`), or None when it declares none.

    Args:
        column: a table's column (``table.columns``).

    Returns:
        The values, in declaration order.
    """
    info: Mapping[str, Any] = column.info
    values = info.get(ALLOWED_VALUES)
    return tuple(values) if values is not None else None
