"""Remembered read statements (``ctx.reads``, :class:`simulator.world.memo.MemoReads`).

Second method throughout: the same statement or call on a copy without the memo (``ctx.reads`` is then the
connection itself), and the copy's state read back with a snapshot and its event log.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from domains.retail.models import Base
from simulator.world.database import StateSpec, snapshot
from simulator.world.domain import get_domain
from simulator.world.events import read_events
from simulator.world.memo import MEMO_KEY, MemoReads, ReadMemo
from simulator.world.tools import ToolContext

ORDER = 'SELECT id, status FROM orders WHERE id = ?'
WRITES = ("cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
          "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
          "return_delivered_order_items")


def _retail() -> tuple[Any, Any, list[Any]]:
    domain = get_domain("retail")
    return domain, domain.template(), domain.load_tasks()


def _traced(raw: sqlite3.Connection, fn: Any) -> tuple[Any, list[str]]:
    statements: list[str] = []
    raw.set_trace_callback(statements.append)
    try:
        return fn(), statements
    finally:
        raw.set_trace_callback(None)


def test_reads_are_remembered_while_the_copy_is_unchanged_and_run_once_it_is_not():
    _, template, _ = _retail()
    with template.trial() as db:
        order_id = db.raw.execute("SELECT id FROM orders ORDER BY position LIMIT 1").fetchone()[0]
        expected = db.raw.execute(ORDER, (order_id,)).fetchall()
    with template.trial() as db:
        reads = ToolContext(db.session, db.options).reads
        assert isinstance(reads, MemoReads)
        assert reads.execute(ORDER, (order_id,)).fetchall() == expected  # run (or served, if an earlier test ran it)
        again, statements = _traced(db.raw, lambda: reads.execute(ORDER, (order_id,)).fetchall())
        assert again == expected and statements == [], "an unchanged copy ran the remembered statement again"
        assert reads.execute(ORDER, (order_id,)).fetchone() == expected[0]
        assert list(reads.execute(ORDER, (order_id,))) == expected
        db.raw.execute("UPDATE orders SET status = 'changed' WHERE id = ?", (order_id,))
        after, statements = _traced(db.raw, lambda: reads.execute(ORDER, (order_id,)).fetchall())
    assert after == [(order_id, "changed")] and statements, "a changed copy was answered from the memo"


def test_a_copy_without_the_memo_reads_from_its_connection():
    _, template, _ = _retail()
    with template.trial(memo=False) as db:
        ctx = ToolContext(db.session, db.options)
        assert ctx.reads is ctx.conn
    with template.trial() as db:
        db.load(db.raw.serialize())  # another content: its template's memo no longer applies
        assert MEMO_KEY not in db.session.info and ToolContext(db.session, db.options).reads is db.raw


@pytest.mark.parametrize("parameters", [(1.5,), (True,), ["x"], {"id": "x"}])
def test_statements_with_other_parameters_are_run_every_time(parameters):
    memo = ReadMemo()
    _, template, _ = _retail()
    with template.trial() as db:
        trial = db.session.info[MEMO_KEY]
        reads = MemoReads(type(trial)(memo, db.raw, db.options))
        sql = "SELECT ? IS NOT NULL" if not isinstance(parameters, dict) else "SELECT :id IS NOT NULL"
        (got, statements) = _traced(db.raw, lambda: reads.execute(sql, parameters).fetchall())
    assert got == [(1,)] and statements and len(memo) == 0 and not memo._rows


def test_remembered_rows_are_bounded():
    memo = ReadMemo(limit_chars=10)
    memo.put_rows(("a", ("x",), (str,)), (("12345",),))
    memo.put_rows(("b", ("x",), (str,)), (("123456",),))  # would pass the bound: not kept
    assert memo.rows(("a", ("x",), (str,))) == (("12345",),) and memo.rows(("b", ("x",), (str,))) is None


def _state(raw: sqlite3.Connection) -> tuple[Any, ...]:
    spec = StateSpec(Base.metadata)
    writes = sorted(raw.execute("SELECT tbl, rid FROM _tausim_writes").fetchall())
    return snapshot(raw, spec), [e.to_json() for e in read_events(raw)], writes


def _first_writes(tasks: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """Each task's first write action, and refused variants (an unknown order, a wrong payment method)."""
    calls = []
    for task in tasks:
        write = next((a for a in task.gold_actions if a.name in WRITES), None)
        if write is not None:
            calls.append((write.name, dict(write.arguments)))
    for name, args in list(calls)[:12]:
        if "order_id" in args:
            calls.append((name, {**args, "order_id": "#W0000000"}))
        if "payment_method_id" in args:
            calls.append((name, {**args, "payment_method_id": "gift_card_0000000"}))
    return calls


def test_write_calls_on_remembered_reads_answer_and_write_as_without_them():
    domain, template, tasks = _retail()
    box = domain.toolbox()
    calls = _first_writes(tasks)
    assert {n for n, _ in calls} >= set(WRITES) - {"modify_pending_order_payment"}
    outcomes = {"ok": 0, "tool_error": 0}
    for name, args in calls:
        results = []
        for memo in (False, True, True):  # the second copy with the memo is served the reads the first one ran
            with template.trial(memo=memo) as db:
                out = box.dispatch(ToolContext(db.session, db.options, step=3), name, args)
                results.append((out.content, out.status, _state(db.raw)))
        assert results[1] == results[0] and results[2] == results[0], (name, args)
        outcomes[results[0][1]] += 1
    assert outcomes["ok"] >= 15 and outcomes["tool_error"] >= 5, outcomes
