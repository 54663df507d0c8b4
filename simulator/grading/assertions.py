"""Assertion grading: a task's declarative checks on the final state and the event log (component ``assertions``).

Each assertion (see :mod:`simulator.types.assertions`) evaluates to passed (or skipped) plus a detail: what was
expected, what was found, and the rows or events involved, so a failing check explains itself in reports.
The initial state (template plus the task's fixture) is attached as schema ``initial`` for the checks that
compare with it (``net_change``, ``unchanged_except``, ``sent``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Table

from simulator.errors import ToolError
from simulator.types.assertions import (
    CountAssertion,
    EnvFunctionAssertion,
    EventCountAssertion,
    EventOrderAssertion,
    FieldAssertion,
    NetChangeAssertion,
    RowFilter,
    SentAssertion,
    ToolCalledAssertion,
    ToolNotCalledAssertion,
    UnchangedExceptAssertion,
)
from simulator.types.grade import AssertionResult, AssertionsResult
from simulator.types.protocols import EnvCall
from simulator.types.trajectory import Trajectory
from simulator.world.database import StateSpec, diff_against, values_equal
from simulator.world.events import Event

__all__ = ["check_assertions"]

MAX_INVOLVED = 20
"""Rows or events listed per assertion result (the count is always exact)."""






def _match(data: Mapping[str, Any], where: Mapping[str, Any], decimals: int) -> bool:
    return all(k in data and _eq(data[k], v, decimals) for k, v in where.items())


def _eq(actual: Any, expected: Any, decimals: int) -> bool:
    if isinstance(expected, bool) and actual in (0, 1) and not isinstance(actual, bool):
        actual = bool(actual)
    if isinstance(expected, dict | list) or isinstance(actual, dict | list):
        return bool(actual == expected)
    return values_equal(expected, actual, decimals)


class _State:
    def __init__(self, raw: sqlite3.Connection, spec: StateSpec, initial: bytes | None):
        self.raw = raw
        self.spec = spec
        self.initial = initial
        self.has_initial = initial is not None
        self.tables: dict[str, Table] = {t.name: t for t in spec.metadata.sorted_tables}

    def rows(self, table: str, where: Mapping[str, Any], schema: str = "main") -> list[dict[str, Any]]:
        """Rows of ``schema.table`` matching ``where`` (numbers at the domain precision), as dicts."""
        if schema == "initial" and not self.has_initial:
            schema = "main"
        cur = self.raw.execute(f'SELECT * FROM {schema}."{table}"')
        names = [d[0] for d in cur.description]
        out = []
        for r in cur.fetchall():
            row = dict(zip(names, r, strict=True))
            if _match(row, where, self.spec.float_decimals):
                out.append(row)
        return out


def _rows_json(table: str, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"table": table, "row": r} for r in rows[:MAX_INVOLVED]]


def _events_json(events: Sequence[Event]) -> list[dict[str, Any]]:
    return [e.to_json() for e in events[:MAX_INVOLVED]]


def _where_text(where: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in where.items())




def _check_one(i: int, a: Any, st: _State, events: Sequence[Event], trajectory: Trajectory,
               env: EnvCall | None = None) -> AssertionResult:
    dec = st.spec.float_decimals
    base = {"index": i, "type": a.type, "note": a.note}
    if isinstance(a, CountAssertion):
        rows = st.rows(a.table, a.where)
        return AssertionResult(**base, passed=a.accepts(len(rows)), expected=a.expected_text(), actual=len(rows),
                               summary=f"{a.table} rows where {_where_text(a.where) or 'any'}: {len(rows)} "
                                       f"(expected {a.expected_text()})",
                               involved=_rows_json(a.table, rows))
    if isinstance(a, FieldAssertion):
        rows = st.rows(a.table, a.key)
        actual = rows[0][a.column] if rows else None
        found = bool(rows)
        passed = found and _eq(actual, a.equals, dec)
        shown = actual if found else "(no such row)"
        return AssertionResult(**base, passed=passed, expected=a.equals, actual=shown,
                               summary=f"{a.table}[{_where_text(a.key)}].{a.column} = {shown!r} "
                                       f"(expected {a.equals!r})",
                               involved=_rows_json(a.table, rows))
    if isinstance(a, NetChangeAssertion):
        final = st.rows(a.table, a.where)
        initial = st.rows(a.table, a.where, "initial")
        total = sum(float(r[a.column] or 0) for r in final) - sum(float(r[a.column] or 0) for r in initial)
        total = round(total, dec)
        changed = [r for r in final if r not in initial] + [r for r in initial if r not in final]
        return AssertionResult(**base, passed=values_equal(a.equals, total, dec), expected=a.equals, actual=total,
                               summary=f"net change of {a.table}.{a.column} where {_where_text(a.where) or 'any'}: "
                                       f"{total} (expected {a.equals})",
                               involved=_rows_json(a.table, changed))
    if isinstance(a, UnchangedExceptAssertion):
        return _unchanged_except(base, a, st)
    if isinstance(a, EventCountAssertion):
        hits = [e for e in events if e.name == a.event and (a.include_setup or e.source != "setup")
                and _match(e.data, a.where, dec)]
        return AssertionResult(**base, passed=a.accepts(len(hits)), expected=a.expected_text(), actual=len(hits),
                               summary=f"events {a.event}{' where ' + _where_text(a.where) if a.where else ''}: "
                                       f"{len(hits)} (expected {a.expected_text()})",
                               involved=_events_json(hits))
    if isinstance(a, EventOrderAssertion):
        befores = [e for e in events if e.name == a.before and _match(e.data, a.where, dec)]
        afters = [e for e in events if e.name == a.after and _match(e.data, a.where, dec)]
        if not afters:
            return AssertionResult(**base, passed=True, skipped=True, expected=f"{a.before} before {a.after}",
                                   actual=f"no {a.after} event", summary=f"{a.before} before {a.after}: skipped "
                                                                         f"({a.after} never happened)")
        first_before = min((e.seq for e in befores), default=None)
        early = [e for e in afters if first_before is None or e.seq < first_before]
        actual = "in order" if not early else (
            f"{a.after} at seq {early[0].seq} with no {a.before} before it"
            + (f" (first {a.before} at seq {first_before})" if first_before is not None else f" (no {a.before})"))
        return AssertionResult(**base, passed=not early, expected=f"{a.before} before every {a.after}", actual=actual,
                               summary=f"{a.before} before {a.after}: {actual}",
                               involved=_events_json(sorted([*early, *befores[:1]], key=lambda e: e.seq)))
    if isinstance(a, ToolCalledAssertion | ToolNotCalledAssertion):
        wanted_ok = isinstance(a, ToolCalledAssertion)
        who = a.requestor
        calls = [c for c in trajectory.tool_calls if c.name == a.name and (not wanted_ok or c.status == "ok")
                 and (who == "any" or c.requestor == who) and _match(c.arguments or {}, a.arguments, dec)]
        involved = [{"step": c.step, "name": c.name, "arguments": c.arguments, "status": c.status}
                    for c in calls[:MAX_INVOLVED]]
        what = f"{a.name}({_where_text(a.arguments)})"
        if wanted_ok:
            return AssertionResult(**base, passed=bool(calls), expected=f"{what} called", actual=len(calls),
                                   summary=f"{what} called successfully {len(calls)} time(s) (expected >= 1)",
                                   involved=involved)
        return AssertionResult(**base, passed=not calls, expected=f"{what} never called", actual=len(calls),
                               summary=f"{what} called {len(calls)} time(s) (expected never)", involved=involved)
    if isinstance(a, SentAssertion):
        where = {k: v for k, v in (("recipient", a.recipient), ("template", a.template), ("channel", a.channel))
                 if v is not None}
        before = {r["message_id"] for r in st.rows("outbox", {}, "initial")} if st.has_initial else set()
        msgs = [r for r in st.rows("outbox", where) if r["message_id"] not in before]
        return AssertionResult(**base, passed=a.accepts(len(msgs)), expected=a.expected_text(), actual=len(msgs),
                               summary=f"messages sent where {_where_text(where) or 'any'}: {len(msgs)} "
                                       f"(expected {a.expected_text()})",
                               involved=_rows_json("outbox", msgs))
    if isinstance(a, EnvFunctionAssertion):
        what = f"{a.side}.{a.function}({_where_text(a.arguments)})"
        if env is None:
            raise ValueError(f"assertion {what}: the domain has no assertion functions")
        try:
            value = env(a.side, a.function, a.arguments)
        except (ToolError, ValueError) as e:  # the function refuses the final state (e.g. a record is missing)
            return AssertionResult(**base, passed=False, expected=a.expected, actual=f"error: {e}",
                                   summary=f"{what} raised: {e}")
        if isinstance(a.expected, bool):
            ok = isinstance(value, bool) and value == a.expected
        else:
            ok = _eq(value, a.expected, dec)
        return AssertionResult(**base, passed=ok, expected=a.expected, actual=value,
                               summary=f"{what} returned {value!r} (expected {a.expected!r})")
    raise TypeError(f"unknown assertion type {type(a).__name__}")


def _allowed(filters: Sequence[RowFilter], table: str, row: Mapping[str, Any] | None, decimals: int) -> bool:
    return row is not None and any(f.table == table and _match(row, f.where, decimals) for f in filters)


def _unchanged_except(base: dict[str, Any], a: UnchangedExceptAssertion, st: _State) -> AssertionResult:
    dec = st.spec.float_decimals
    if st.initial is None:
        raise ValueError("unchanged_except needs the initial state")
    diff = diff_against(st.raw, st.initial, st.spec)
    allowed_tables = set(a.tables)
    bad: list[dict[str, Any]] = []
    for d in diff.differences:
        if d.table in allowed_tables:
            continue
        table = st.tables[d.table]
        pk = [c.name for c in table.primary_key.columns]
        key = dict(zip(pk, d.key, strict=True))
        final = st.rows(d.table, key)
        initial = st.rows(d.table, key, "initial")
        if _allowed(a.rows, d.table, final[0] if final else None, dec) or _allowed(
                a.rows, d.table, initial[0] if initial else None, dec):
            continue
        bad.append({"table": d.table, "key": list(d.key), "field": d.field, "initial": d.expected,
                    "final": d.actual})
    for change, rows in (("added", diff.added), ("removed", diff.removed)):
        for r in rows:
            if r.table in allowed_tables or _allowed(a.rows, r.table, r.row, dec):
                continue
            bad.append({"table": r.table, "key": list(r.key), "change": change, "row": r.row})
    allowed = ", ".join([*a.tables, *(f"{f.table}[{_where_text(f.where)}]" for f in a.rows)]) or "nothing"
    return AssertionResult(**base, passed=not bad, expected=f"no change outside {allowed}",
                           actual=f"{len(bad)} change(s) outside" if bad else "no change outside",
                           summary=f"unchanged except {allowed}: "
                                   + (f"{len(bad)} other change(s)" if bad else "nothing else changed"),
                           involved=bad[:MAX_INVOLVED])


def check_assertions(assertions: Sequence[Any], raw: sqlite3.Connection, initial: bytes | None,
                     events: Sequence[Event], trajectory: Trajectory, spec: StateSpec,
                     env: EnvCall | None = None) -> AssertionsResult | None:
    """Evaluate a task's assertions on a trial's final state, event log and trajectory.

    Args:
        assertions: the task's assertions (:data:`simulator.types.assertions.Assertion` objects).
        raw: the trial's sqlite3 connection, holding the final state (no transaction open).
        initial: the task's initial state, serialized (template plus fixture, see
            :func:`simulator.world.replay.initial_database`); None: the trial database's template is taken as it
            (``net_change`` then compares with the final state itself, and ``unchanged_except`` is refused).
        events: the trial's events (:func:`simulator.world.events.read_events`).
        trajectory: the trial's trajectory (its tool calls, for ``tool_called`` / ``tool_not_called``).
        spec: the domain's state spec (tables, float precision).
        env: calls the domain's assertion functions (``env`` assertions; see
            :func:`simulator.world.dual.env_caller`); None when the domain has none.

    Returns:
        The :class:`AssertionsResult`, or None when the task has no assertion.

    Raises:
        ValueError: ``unchanged_except`` without an initial state.
    """
    if not assertions:
        return None
    st = _State(raw, spec, initial)
    if initial is not None:
        raw.execute("ATTACH DATABASE ':memory:' AS initial")
        raw.deserialize(initial, name="initial")
    try:
        results = [_check_one(i, a, st, events, trajectory, env) for i, a in enumerate(assertions)]
    finally:
        if initial is not None:
            raw.execute("DETACH DATABASE initial")
    return AssertionsResult(passed=all(r.passed for r in results), results=results)
