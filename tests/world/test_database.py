import threading

from simulator.world.database import StateSpec, diff_snapshots, json_diff, snapshot, values_equal
from simulator.world.tools import ToolContext
from tests._support.toy import BankDomain, Base, write_data


def test_values_equal_at_cents():
    assert values_equal(25, 25.0)
    assert values_equal(0.04999999999999716, 0.05)
    assert not values_equal(0.05, 0.06)
    assert not values_equal(10.004, 10.01)
    assert not values_equal("25", 25)
    assert not values_equal(True, 1.0)


def test_trials_are_isolated_even_concurrently(tmp_path):
    dom = BankDomain()
    tpl = dom.template(write_data(tmp_path / "d"))
    tb = dom.toolbox()
    barrier = threading.Barrier(2)
    seen = {}

    def trial(name, amount):
        with tpl.trial() as t:
            barrier.wait()
            out = tb.dispatch(ToolContext(t.session), "transfer", {"src": "A1", "dst": "B2", "amount": amount})
            assert out.status == "ok"
            barrier.wait()  # both have written before either reads
            seen[name] = dict(t.raw.execute("SELECT id, balance FROM accounts").fetchall())

    threads = [threading.Thread(target=trial, args=("x", 10)), threading.Thread(target=trial, args=("y", 30))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert seen == {"x": {"A1": 90.0, "B2": 35.0}, "y": {"A1": 70.0, "B2": 55.0}}
    with tpl.trial() as t:  # the template itself is untouched
        assert dict(t.raw.execute("SELECT id, balance FROM accounts").fetchall()) == {"A1": 100.0, "B2": 25.0}


def test_snapshot_diff_reports_fields_and_rows(tmp_path):
    dom = BankDomain()
    tpl = dom.template(write_data(tmp_path / "d"))
    spec = StateSpec(Base.metadata)
    with tpl.trial() as goal_db, tpl.trial() as act_db:
        tb = dom.toolbox()
        tb.dispatch(ToolContext(goal_db.session), "transfer", {"src": "A1", "dst": "B2", "amount": 10})
        tb.dispatch(ToolContext(act_db.session), "transfer", {"src": "A1", "dst": "B2", "amount": 10.001})
        d = diff_snapshots(snapshot(goal_db.raw, spec), snapshot(act_db.raw, spec), spec)
        assert d.equal  # 10 vs 10.001: equal at cents
        tb.dispatch(ToolContext(act_db.session), "transfer", {"src": "B2", "dst": "A1", "amount": 5})
        d = diff_snapshots(snapshot(goal_db.raw, spec), snapshot(act_db.raw, spec), spec)
        fields = {(x.table, x.key, x.field): (x.expected, x.actual) for x in d.differences}
        assert fields == {("accounts", ("A1",), "balance"): (90.0, 95.0),
                          ("accounts", ("B2",), "balance"): (35.0, 30.0)}
        assert [(r.table, r.key, r.row["amount"]) for r in d.added] == [("transfers", (2,), 5.0)]
        assert d.removed == []


def test_json_diff_shape():
    before = {"orders": {"#1": {"status": "pending", "items": [{"id": "a", "price": 1}], "pay": [1]},
                         "#2": {"status": "x"}},
              "users": {"u": {"pm": {"g": {"balance": 5}}}}}
    after = {"orders": {"#1": {"status": "cancelled", "items": [{"id": "b", "price": 1}], "pay": [1, -1],
                               "reason": "r"},
                        "#3": {"status": "new"}},
             "users": {"u": {"pm": {"g": {"balance": 5}}}}}
    assert json_diff(before, after) == {
        "orders": {
            "added": {"#3": {"status": "new"}},
            "removed": ["#2"],
            "changed": {"#1": {"status": {"old": "pending", "new": "cancelled"},
                               "items[0].id": {"old": "a", "new": "b"},
                               "pay[1]": {"new": -1},
                               "reason": {"new": "r"}}},
        }
    }
    assert json_diff(after, after) == {}
    assert json_diff({"t": {"k": {"l": [1, 2, 3]}}}, {"t": {"k": {"l": [1]}}}) == {
        "t": {"added": {}, "removed": [], "changed": {"k": {"l[1]": {"old": 2}, "l[2]": {"old": 3}}}}}


def test_diff_against_goal_equals_full_snapshot_diff(tmp_path):
    """The write-log comparison (only rows either side wrote) agrees with a full-table comparison."""
    from simulator.world.database import diff_against

    dom = BankDomain()
    tpl = dom.template(write_data(tmp_path / "d"))
    spec = StateSpec(Base.metadata)
    tb = dom.toolbox()
    with tpl.trial() as goal_db:
        tb.dispatch(ToolContext(goal_db.session), "transfer", {"src": "A1", "dst": "B2", "amount": 10})
        goal_db.raw.execute("INSERT INTO accounts VALUES ('C3', 'cy', 1.0)")
        goal_db.raw.commit()
        goal_bytes = goal_db.raw.serialize()
        goal_snap = snapshot(goal_db.raw, spec)
    scenarios = [
        [],  # did nothing
        [("transfer", {"src": "A1", "dst": "B2", "amount": 10}), "INSERT INTO accounts VALUES ('C3', 'cy', 1.0)"],
        [("transfer", {"src": "A1", "dst": "B2", "amount": 10.001}), "INSERT INTO accounts VALUES ('C3', 'cy', 1.0)"],
        [("transfer", {"src": "B2", "dst": "A1", "amount": 5}), "DELETE FROM accounts WHERE id = 'B2'",
         "INSERT INTO accounts VALUES ('D4', 'di', 3.0)"],
        ["UPDATE accounts SET owner = 'ANN' WHERE id = 'A1'", "INSERT INTO accounts VALUES ('C3', 'cy', 2.0)"],
    ]
    for ops in scenarios:
        with tpl.trial() as t:
            for op in ops:
                if isinstance(op, str):
                    t.raw.execute(op)
                    t.raw.commit()
                else:
                    assert tb.dispatch(ToolContext(t.session), op[0], op[1]).status == "ok"
            fast = diff_against(t.raw, goal_bytes, spec)
            full = diff_snapshots(goal_snap, snapshot(t.raw, spec), spec)

            def norm(d):
                return (sorted(map(repr, d.differences)), sorted(map(repr, d.added)), sorted(map(repr, d.removed)))

            assert norm(fast) == norm(full), ops
    # the by-hand expectations of two scenarios
    with tpl.trial() as t:
        assert diff_against(t.raw, goal_bytes, spec).equal is False
        tb.dispatch(ToolContext(t.session), "transfer", {"src": "A1", "dst": "B2", "amount": 10})
        t.raw.execute("INSERT INTO accounts VALUES ('C3', 'cy', 1.0)")
        t.raw.commit()
        assert diff_against(t.raw, goal_bytes, spec).equal is True


def test_goal_delta_grades_as_the_full_goal_database(tmp_path):
    """A goal kept as the rows its replay wrote gives the same differences as the whole goal database."""
    from simulator.types.state import StateDelta
    from simulator.world.database import capture_delta, diff_against

    dom = BankDomain()
    tpl = dom.template(write_data(tmp_path / "d"))
    spec = StateSpec(Base.metadata)
    tb = dom.toolbox()

    def apply(t, ops):
        for op in ops:
            if isinstance(op, str):
                t.raw.execute(op)
                t.raw.commit()
            else:
                assert tb.dispatch(ToolContext(t.session), op[0], op[1]).status == "ok"

    transfer = ("transfer", {"src": "A1", "dst": "B2", "amount": 10})
    goals = {
        "transfer+insert": [transfer, "INSERT INTO accounts VALUES ('C3', 'cy', 1.0)"],
        "insert only": ["INSERT INTO accounts VALUES ('C3', 'cy', 1.0)"],
        "delete": ["DELETE FROM accounts WHERE id = 'B2'"],
        "nothing": [],
    }
    scenarios = [
        [],
        [transfer, "INSERT INTO accounts VALUES ('C3', 'cy', 1.0)"],
        ["INSERT INTO accounts VALUES ('C3', 'cy', 1.001)"],
        ["UPDATE accounts SET owner = 'ANN' WHERE id = 'A1'"],
        ["UPDATE accounts SET owner = 'ANN' WHERE id = 'A1'", "UPDATE accounts SET owner = 'ann' WHERE id = 'A1'"],
        ["DELETE FROM accounts WHERE id = 'B2'", "INSERT INTO accounts VALUES ('B2', 'bob', 25.0)"],
        ["UPDATE accounts SET id = 'Z9' WHERE id = 'B2'"],
        ["DELETE FROM accounts WHERE id = 'B2'"],
        [("transfer", {"src": "B2", "dst": "A1", "amount": 5}), "INSERT INTO accounts VALUES ('D4', 'di', 3.0)"],
    ]

    def norm(d):
        return (sorted(map(repr, d.differences)), sorted(map(repr, d.added)), sorted(map(repr, d.removed)))

    deltas = {}
    for name, ops in goals.items():
        with tpl.trial() as g:
            apply(g, ops)
            delta = capture_delta(g.raw, spec)
            goal_bytes = g.raw.serialize()
            goal_snap = snapshot(g.raw, spec)
        assert isinstance(delta, StateDelta)
        deltas[name] = delta
        for ops_t in scenarios:
            with tpl.trial() as t:
                apply(t, ops_t)
                by_delta = diff_against(t.raw, delta, spec)
                assert norm(by_delta) == norm(diff_against(t.raw, goal_bytes, spec)), (name, ops_t)
                assert norm(by_delta) == norm(diff_snapshots(goal_snap, snapshot(t.raw, spec), spec)), (name, ops_t)
    # the delta holds only the rows written: A1, B2 and the transfer record (the transfer), C3; deleted B2: None
    assert deltas["transfer+insert"].row_count() == 4
    assert sorted(deltas["transfer+insert"].rows["accounts"].values()) == [
        ("A1", "ann", 90.0), ("B2", "bob", 35.0), ("C3", "cy", 1.0)]
    assert list(deltas["transfer+insert"].rows["transfers"].values()) == [(1, "A1", "B2", 10.0)]
    assert list(deltas["delete"].rows["accounts"].values()) == [None]
    assert deltas["nothing"].rows == {}
    # a row the trial changed and the goal did not: expected is the template's value
    with tpl.trial() as t:
        apply(t, ["UPDATE accounts SET owner = 'ANN' WHERE id = 'A1'", "INSERT INTO accounts VALUES ('C3', 'cy', 1.0)"])
        d = diff_against(t.raw, deltas["insert only"], spec)
    assert [(x.table, x.key, x.field, x.expected, x.actual) for x in d.differences] == [
        ("accounts", ("A1",), "owner", "ann", "ANN")]
    assert d.added == [] and d.removed == []
    # a deleted row the goal kept is named as removed, with its template values
    with tpl.trial() as t:
        apply(t, ["DELETE FROM accounts WHERE id = 'A1'"])
        d = diff_against(t.raw, deltas["nothing"], spec)
    assert [(r.table, r.key, r.row) for r in d.removed] == [("accounts", ("A1",), {"id": "A1", "owner": "ann",
                                                                                    "balance": 100.0})]
    # a delta captured with other volatile columns is refused
    other = StateSpec(Base.metadata, volatile_columns={"accounts": frozenset({"owner"})})
    with tpl.trial() as t:
        try:
            diff_against(t.raw, deltas["nothing"], other)
        except ValueError as e:
            assert "volatile" in str(e)
        else:
            raise AssertionError("a delta of another spec was compared")


def _full_state(raw):
    """Every table of the copy (bookkeeping ones too) with rowids, and sqlite_sequence."""
    names = [n for (n,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return {n: sorted(raw.execute(f'SELECT rowid, * FROM "{n}"').fetchall(), key=repr) if n != "sqlite_sequence"
            else sorted(raw.execute("SELECT * FROM sqlite_sequence").fetchall()) for n in names}


def test_a_copy_is_restored_to_the_template_and_reused(tmp_path):
    """A trial's writes are undone when it ends; the next trial gets the same copy, equal to a fresh one."""
    from simulator.world.database import TemplateDatabase
    from tests._support.toy import BankDomain as Dom

    dom = Dom()
    data = write_data(tmp_path / "d")
    tpl = TemplateDatabase(dom.install_sinks().metadata, lambda s: dom.populate(s, data, {}), pool_size=1)
    tb = dom.toolbox()
    with tpl.trial() as t:
        first = t.raw
        fresh = _full_state(t.raw)
        assert fresh["accounts"] == [(1, "A1", "ann", 100.0), (2, "B2", "bob", 25.0)]
        assert tb.dispatch(ToolContext(t.session), "transfer", {"src": "A1", "dst": "B2", "amount": 10}).status == "ok"
        for sql in ("INSERT INTO accounts VALUES ('C3', 'cy', 1.0)", "UPDATE accounts SET id = 'Z9' WHERE id = 'B2'",
                    "DELETE FROM accounts WHERE id = 'A1'", "INSERT INTO accounts VALUES ('A1', 'new', 5.0)",
                    "INSERT INTO _tausim_events (step, source, kind, name, data) VALUES (1, 'agent', 'e', 'x', '{}')"):
            t.raw.execute(sql)
        t.raw.commit()
        t.raw.execute("BEGIN")
        t.raw.execute("DELETE FROM accounts")  # left in an open transaction: rolled back
    with tpl.trial() as t:
        assert t.raw is first  # the same copy, not deserialized again
        assert _full_state(t.raw) == fresh
        t.raw.execute("INSERT INTO accounts VALUES ('C3', 'cy', 1.0)")
        t.raw.execute("INSERT INTO _tausim_events (step, source, kind, name, data) VALUES (1, 'agent', 'e', 'x', '{}')")
        assert t.raw.execute("SELECT rowid FROM accounts WHERE id = 'C3'").fetchone() == (3,)
        assert t.raw.execute("SELECT seq FROM _tausim_events").fetchall() == [(1,)]
    with tpl.trial() as t:
        assert t.raw is first
        assert _full_state(t.raw) == fresh
        t.raw.execute("ATTACH DATABASE ':memory:' AS other")  # left attached: the copy is not reused
    with tpl.trial() as t:
        assert t.raw is not first
        assert _full_state(t.raw) == fresh


def test_a_copy_whose_content_was_replaced_is_closed_not_reused(tmp_path):
    """TrialDatabase.load (a hunt snapshot restored) replaces the database: that copy is never handed out again
    (sqlite's cached statements of a replaced database must not run again)."""
    from simulator.world.database import TemplateDatabase
    from tests._support.toy import BankDomain as Dom

    dom = Dom()
    data = write_data(tmp_path / "d")
    tpl = TemplateDatabase(dom.install_sinks().metadata, lambda s: dom.populate(s, data, {}), pool_size=1)
    with tpl.trial() as t:
        fresh = _full_state(t.raw)
        t.raw.execute("UPDATE accounts SET balance = 1.0 WHERE id = 'A1'")
        t.raw.commit()
        changed = t.raw.serialize()
    with tpl.trial() as t:
        loaded = t.raw
        assert t.reusable
        t.load(changed)
        assert not t.reusable
        assert t.raw.execute("SELECT balance FROM accounts WHERE id = 'A1'").fetchone() == (1.0,)
    with tpl.trial() as t:
        assert t.raw is not loaded
        assert _full_state(t.raw) == fresh
