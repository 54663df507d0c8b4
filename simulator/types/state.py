"""State comparison records: the goal state as a delta of written rows, and the differences of a trial from it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class StateDelta:
    """A goal state as the rows a replay wrote: what grading needs of it, in memory that follows the changed rows.

    Made by :func:`capture_delta` from the database the gold actions were replayed on (a copy of the template
    with write-log triggers); compared with a trial database by :func:`diff_against`. Rows the replay did not
    write are the template's, which the trial database holds (or kept as its rows' first-write values).

    Attributes:
        rows: ``{table: {rowid: row tuple of the compared columns (table order, volatile columns left out), or
            None when no row is left at that rowid}}`` for every row written.
        volatile: the volatile columns left out, ``{table: (column, ...)}`` (a delta is compared with the spec it
            was captured with).
    """

    rows: Mapping[str, Mapping[int, tuple[Any, ...] | None]]
    volatile: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def row_count(self) -> int:
        """Return the number of rows written (present or removed)."""
        return sum(len(r) for r in self.rows.values())


@dataclass(frozen=True)
class SetupImage:
    """What a task's set-up (its ``initial_state`` applied to a fresh copy of the template) wrote, to write again.

    Made once per task by :meth:`simulator.world.database.TemplateDatabase.capture_setup` after the set-up ran on
    a copy of the template; a trial's fresh copy of the same template then gets the task's initial state from
    :meth:`~simulator.world.database.TemplateDatabase.apply_setup`, a few statements, instead of running the
    set-up again (merging data, setup actions, their syncs).

    Attributes:
        origin: the :attr:`~simulator.world.database.TemplateDatabase.origin` of the template it was made on (an
            image applies only to copies of that template).
        rows: ``{table: ((rowid, every column's value in table order, or None when no row is left), ...)}`` for
            every row the set-up wrote, tables in dependency order.
        events: the event log's rows after the set-up (``seq, step, source, kind, name, data``).
        sequence: ``sqlite_sequence`` after the set-up, ``((name, seq), ...)``.
        existed: ``{table: (rowid, ...)}``: the written rows that were in the template (their template row is
            deleted before the set-up's rows are inserted; the others were new).
    """

    origin: str
    rows: Mapping[str, tuple[tuple[int, tuple[Any, ...] | None], ...]]
    events: tuple[tuple[Any, ...], ...] = ()
    sequence: tuple[tuple[str, int], ...] = ()
    existed: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


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
