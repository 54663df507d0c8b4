"""Remembered read statements (``ctx.reads``, :class:`simulator.world.memo.MemoReads`) and replayed write calls.

Second method throughout: the same statement or call on a copy without the memo (``ctx.reads`` is then the
connection itself, and every write call runs the tool), and the copy's whole content read back, bookkeeping tables
(write log, first-write images, event log, ``sqlite_sequence``) included, rowids included.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from typing import Any

import pytest

from domains.retail.models import Base
from simulator.errors import ToolError
from simulator.types.faults import FaultRates
from simulator.world import events
from simulator.world.database import StateSpec, snapshot
from simulator.world.domain import get_domain
from simulator.world.events import read_events
from simulator.world.faults import FaultyToolbox
from simulator.world.memo import MEMO_KEY, MemoReads, ReadMemo, WriteRecorder
from simulator.world.tools import Toolbox, ToolContext, tool

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
    """Every table's rows with their rowids, in rowid order (the write log in the order it was written)."""
    tables = [n for (n,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    rows = {n: raw.execute(f'SELECT {"rowid, " if n != "sqlite_sequence" else ""}* FROM "{n}" ORDER BY 1').fetchall()
            for n in tables}
    return snapshot(raw, StateSpec(Base.metadata)), [e.to_json() for e in read_events(raw)], rows


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


def test_replayed_write_calls_answer_and_write_as_the_tools_do():
    domain, template, tasks = _retail()
    box = domain.toolbox()
    assert all(box.specs[n].memo for n in WRITES)
    calls = _first_writes(tasks)
    assert {n for n, _ in calls} >= set(WRITES) - {"modify_pending_order_payment"}
    outcomes = {"ok": 0, "tool_error": 0}
    for name, args in calls:
        results = []
        for memo in (False, True, True):  # the first copy with the memo records (or replays), the second replays
            with template.trial(memo=memo) as db:
                ctx = ToolContext(db.session, db.options, step=3)
                out, statements = _traced(db.raw, lambda ctx=ctx, name=name, args=args: box.dispatch(ctx, name, args))
                assert ctx.conn is db.raw  # the recorder stood in for the connection only during the call
                results.append((out.content, out.status, _state(db.raw)))
        assert results[1] == results[0] and results[2] == results[0], (name, args)
        assert not [s for s in statements if s.startswith("SELECT")], f"{name}: replayed calls read nothing"
        outcomes[results[0][1]] += 1
    assert outcomes["ok"] >= 15 and outcomes["tool_error"] >= 5, outcomes


def test_a_replayed_write_call_records_its_own_event_and_sets_the_copys_path():
    domain, template, tasks = _retail()
    box = domain.toolbox()
    name, args = next(c for c in _first_writes(tasks) if c[0] == "modify_user_address")
    events, after = [], []
    for _ in range(2):
        with template.trial() as db:
            ctx = ToolContext(db.session, db.options, step=5, source="agent")
            assert box.dispatch(ctx, name, args).status == "ok"
            trial = db.session.info[MEMO_KEY]
            assert trial.unchanged(db.options) and [k[1:] for k in trial.path] == [(repr(args), 5, "agent")]
            after.append(box.dispatch(ctx, "get_user_details", {"user_id": args["user_id"]}).content)
            events.append([e.to_json() for e in read_events(db.raw)])
    assert events[0] == events[1] == [{"seq": 1, "step": 5, "source": "agent", "kind": "tool", "name": name,
                                       "data": args}]
    assert after[0] == after[1] and args["address1"] in after[0]


def _counting(box: Toolbox, name: str) -> tuple[Toolbox, list[int]]:
    """``box`` with tool ``name`` counting the runs of its body (a new function: remembered apart from the tool's)."""
    runs = [0]
    spec = box.specs[name]

    def counted(ctx: ToolContext, **kwargs: Any) -> Any:
        runs[0] += 1
        return spec.fn(ctx, **kwargs)

    specs = [replace(s, fn=counted) if s.name == name else s for s in box.specs.values()]
    return Toolbox(specs, uses_session=box.uses_session), runs


def test_the_same_write_at_another_step_or_source_is_run_again():
    domain, template, tasks = _retail()
    box, runs = _counting(domain.toolbox(), "return_delivered_order_items")
    name, args = next(c for c in _first_writes(tasks) if c[0] == "return_delivered_order_items")
    with template.trial() as db:
        box.dispatch(ToolContext(db.session, db.options, step=1), name, args)  # recorded
    with template.trial() as db:
        assert box.dispatch(ToolContext(db.session, db.options, step=1), name, args).status == "ok"  # replayed
    assert runs == [1]
    for ctx_args in ({"step": 2}, {"step": 1, "source": "setup"}):
        with template.trial() as db:
            ctx = ToolContext(db.session, db.options, **ctx_args)
            before = runs[0]
            assert box.dispatch(ctx, name, args).status == "ok" and runs[0] == before + 1, ctx_args
            assert read_events(db.raw)[0].step == ctx_args["step"]


def _odd_tools(counter: list[int]) -> Toolbox:
    @tool("write", memo=True)
    def peeks(ctx: ToolContext, user_id: str) -> str:
        """Writes, and uses the connection beyond execute (not replayable).

        Args:
            ctx: the context.
            user_id: a user.
        """
        counter.append(1)
        ctx.conn.execute("UPDATE users SET city = city || '!' WHERE id = ?", (user_id,))
        return str(ctx.conn.total_changes > 0)

    @tool("write", memo=True)
    def writes_then_refuses(ctx: ToolContext, user_id: str) -> str:
        """Writes, then refuses (rolled back).

        Args:
            ctx: the context.
            user_id: a user.
        """
        counter.append(1)
        ctx.conn.execute("UPDATE users SET city = city || '!' WHERE id = ?", (user_id,))
        raise ToolError("refused")

    @tool("write", memo=True)
    def crashes(ctx: ToolContext, user_id: str) -> str:
        """Writes, then crashes.

        Args:
            ctx: the context.
            user_id: a user.
        """
        counter.append(1)
        ctx.conn.execute("UPDATE users SET city = city || '!' WHERE id = ?", (user_id,))
        raise RuntimeError("bug")

    return Toolbox([peeks, writes_then_refuses, crashes], uses_session=False)


@pytest.mark.parametrize(("name", "status"), [("peeks", "ok"), ("writes_then_refuses", "tool_error"),
                                              ("crashes", "tool_bug")])
def test_write_calls_that_cannot_be_replayed_run_every_time_and_failures_leave_no_trace(name, status):
    _, template, _ = _retail()
    counter: list[int] = []
    box = _odd_tools(counter)
    with template.trial(memo=False) as db:
        user_id = db.raw.execute("SELECT id FROM users ORDER BY position LIMIT 1").fetchone()[0]
        before = _state(db.raw)
    for i in range(2):
        with template.trial() as db:
            out = box.dispatch(ToolContext(db.session, db.options, step=0), name, {"user_id": user_id})
            assert out.status == status and len(counter) == i + 1
            if status != "ok":
                assert _state(db.raw) == before
    assert not template.memo._writes.get((box.specs[name].fn, repr({"user_id": user_id}), 0, "agent"))


def test_faults_still_apply_to_replayed_write_calls():
    domain, template, tasks = _retail()
    box = domain.toolbox()
    name, args = next(c for c in _first_writes(tasks) if c[0] == "modify_user_address")
    with template.trial() as db:
        box.dispatch(ToolContext(db.session, db.options, step=0), name, args)  # recorded (or replayed)
    with template.trial(memo=False) as db:
        before = _state(db.raw)
    with template.trial() as db:
        faulty = FaultyToolbox(box, FaultRates(partial_write=1.0), trial_seed=7)
        out = faulty.dispatch(ToolContext(db.session, db.options, step=0), name, args)
        assert out.status == "tool_error" and _state(db.raw) == before


def test_the_recorder_records_writes_with_frozen_parameters_and_flags_other_uses():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE t (a, b)")
    rec = WriteRecorder(conn)
    params = [1, "x"]
    rec.execute("INSERT INTO t VALUES (?, ?)", params)
    params[0] = 99  # the recorded copy is the memo's own
    rec.executemany("INSERT INTO t VALUES (?, ?)", iter([(2, 2.5), (3, None)]))
    assert rec.execute("  select count(*) FROM t").fetchone() == (3,)
    assert rec.statements == [("INSERT INTO t VALUES (?, ?)", (1, "x"), False),
                              ("INSERT INTO t VALUES (?, ?)", ((2, 2.5), (3, None)), True)]
    assert rec.replayable
    rec.execute("UPDATE t SET a = ?", (bytearray(b"x"),))  # mutable: not kept
    assert not rec.replayable
    other = WriteRecorder(conn)
    assert other.in_transaction is False and not other.replayable


def test_whole_gold_sequences_on_remembered_paths_answer_and_write_as_the_tools_do():
    domain, template, tasks = _retail()
    box = domain.toolbox()
    several = [t for t in tasks if sum(a.name in WRITES for a in t.gold_actions) >= 2]
    assert len(several) >= 3
    served = 0
    for task in several:
        results = []
        for memo in (False, True, True):  # the second copy with the memo follows the path the first one laid
            with template.trial(memo=memo) as db:
                answers = []
                for step, action in enumerate(task.gold_actions):
                    ctx = ToolContext(db.session, db.options, step=step)
                    out, statements = _traced(db.raw, lambda c=ctx, a=action: box.dispatch(c, a.name, a.arguments))
                    answers.append((out.content, out.status))
                    served += memo and not [s for s in statements if s.startswith("SELECT")]
                results.append((answers, _state(db.raw)))
        assert results[1] == results[0] and results[2] == results[0], task.id
    assert served >= 2 * len(several), "calls after a remembered write were not served from the path"


def test_the_recorder_tallies_the_size_put_write_counts_and_tells_writes_from_reads_by_their_text():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE t (a, b)")
    rec = WriteRecorder(conn)
    rec.execute("INSERT INTO t VALUES (?, ?)", ["abc", 2.5])
    rec.execute("  insert into t values (:a, :b)", {"a": None, "b": b"xy"})  # not upper case, named parameters
    rec.executemany("UPDATE t SET a = ? WHERE b = ?", [("x", 1), ["yz", 2]])
    rec.execute(" select count(*) FROM t")
    rec.execute("SELECT a FROM t WHERE a = ?", ("abc",))
    assert [s[0] for s in rec.statements] == ["INSERT INTO t VALUES (?, ?)", "  insert into t values (:a, :b)",
                                              "UPDATE t SET a = ? WHERE b = ?"]
    # by hand: per statement 8 + its text's length; a text value its length, any other value 8
    assert rec.size == (8 + 27 + 3 + 8) + (8 + 31 + 8 + 8) + (8 + 30 + 1 + 8 + 2 + 8)
    memo, counted = ReadMemo(), ReadMemo()
    memo.put_write(("k",), "answer", "ok", tuple(rec.statements), rec.size)
    counted.put_write(("k",), "answer", "ok", tuple(rec.statements))  # counted by put_write itself
    assert memo._chars == counted._chars == rec.size + len("answer")
    rec.executemany("INSERT INTO t VALUES (?, ?)", [(1, 2), (1, bytearray(b"x"))])  # mutable: not replayable
    assert not rec.replayable and len(rec.statements) == 3


def test_a_recorded_write_call_ends_with_its_event_encoded_once_as_the_event_log_holds_it(monkeypatch):
    domain, template, tasks = _retail()
    box, runs = _counting(domain.toolbox(), "cancel_pending_order")
    name, args = next(c for c in _first_writes(tasks) if c[0] == "cancel_pending_order")
    encoded: list[str] = []

    class Counting:  # the event's text, counted (called, or through an encoder's ``encode``)
        def __call__(self, data: Any) -> str:
            encoded.append(json.dumps(data, sort_keys=True, default=str))
            return encoded[-1]

        encode = __call__

    monkeypatch.setattr(events, "_EVENT_DATA", Counting())
    template.memo = ReadMemo()  # this call's first run is recorded here
    try:
        with template.trial() as db:
            ctx = ToolContext(db.session, db.options, step=4)
            out, statements = _traced(db.raw, lambda: box.dispatch(ctx, name, args))
            first = _state(db.raw)
        assert out.status == "ok" and runs == [1] and len(encoded) == 1, encoded
        (content, status, recorded), = template.memo._writes.values()
        sql, params, many = recorded[-1]
        assert sql.startswith('INSERT INTO "_tausim_events"') and not many
        assert params == (4, "agent", "tool", name, json.dumps(args, sort_keys=True))  # second method: json.dumps
        assert sum(s.startswith('INSERT INTO "_tausim_events"') for s in statements) == 1
        with template.trial() as db:  # replayed: the same copy, the event row included
            again = box.dispatch(ToolContext(db.session, db.options, step=4), name, args)
            assert (again.content, again.status) == (content, status) == (out.content, "ok") and runs == [1]
            assert _state(db.raw) == first
    finally:
        template.memo = ReadMemo()
