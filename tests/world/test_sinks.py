"""The event log and the sinks (outbox, ledger, clock) of the public kit."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from simulator import Toolbox, ToolContext, ToolError, tool
from simulator.world.events import read_events
from simulator.world.sinks import Clock, Ledger, Outbox
from tests._support.toy import Account, BankDomain, get_balance, write_data


@tool("write")
def pay(ctx: ToolContext, account_id: str, amount: float, email: str) -> str:
    """Pay out money from an account, book it and tell the owner.

    Args:
        account_id: the account.
        amount: amount in USD.
        email: where the receipt goes.
    """
    acct = ctx.session.get(Account, account_id)
    if acct is None:
        raise ToolError("unknown account")
    acct.balance = round(acct.balance - amount, 2)
    Ledger.post(ctx, account_id, -amount, "payout")
    ctx.emit("payout_committed", account_id=account_id, amount=amount)
    Outbox.send(ctx, channel="email", recipient=email, template="receipt", body=f"paid {amount}")
    if amount > 50:
        raise ToolError("over the limit")  # after every sink write: all of it must roll back
    return f"paid at {Clock.now(ctx).isoformat()}"


class SinkBank(BankDomain):
    name = "sinkbank"
    sinks = (Outbox(), Ledger(), Clock("2024-06-01T09:30:00"))
    events = ("payout_committed",)

    def toolbox(self) -> Toolbox:
        return Toolbox([get_balance, pay])


def _template(tmp_path):
    dom = SinkBank()
    return dom, dom.template(write_data(tmp_path / "data"))


def test_sinks_record_in_the_trial_database_and_roll_back_with_the_call(tmp_path):
    dom, tpl = _template(tmp_path)
    tb = dom.toolbox()
    with tpl.trial() as db:
        ctx = ToolContext(db.session, db.options, step=3)
        out = tb.dispatch(ctx, "pay", {"account_id": "A1", "amount": 20.0, "email": "ann@x"})
        assert out.status == "ok" and out.content == "paid at 2024-06-01T09:30:00"
        bad = tb.dispatch(ctx, "pay", {"account_id": "A1", "amount": 60.0, "email": "ann@x"})
        assert bad.status == "tool_error"
        tb.dispatch(ctx, "get_balance", {"account_id": "A1"})  # a read: no event
        raw = db.raw
        assert raw.execute("SELECT account, amount, reason, posted_at FROM ledger").fetchall() == [
            ("A1", -20.0, "payout", "2024-06-01T09:30:00")]
        assert raw.execute("SELECT channel, recipient, template FROM outbox").fetchall() == [
            ("email", "ann@x", "receipt")]
        events = read_events(raw)
    assert [(e.seq, e.name, e.kind, e.step, e.source) for e in events] == [
        (1, "money_moved", "domain", 3, "agent"), (2, "payout_committed", "domain", 3, "agent"),
        (3, "message_sent", "domain", 3, "agent"), (4, "pay", "tool", 3, "agent")]
    assert events[1].data == {"account_id": "A1", "amount": 20.0}
    assert events[3].data == {"account_id": "A1", "amount": 20.0, "email": "ann@x"}


def test_sink_tables_are_part_of_the_compared_state_and_declared_events_known(tmp_path):
    dom, _ = _template(tmp_path)
    names = {t.name for t in dom.state_spec().tables()}
    assert {"outbox", "ledger", "clock", "accounts"} <= names
    assert "_tausim_events" not in names
    assert dom.event_names() == {"payout_committed", "message_sent", "money_moved", "pay"}
    assert dom.has_clock() and not BankDomain().has_clock()


def test_clock_is_the_only_now_and_can_be_set(tmp_path):
    dom, tpl = _template(tmp_path)
    with tpl.trial() as db:
        with db.session.begin():
            Clock.set(db.session.connection(), "2030-01-02T03:04:05")
        with db.session.begin():
            assert Clock.now(ToolContext(db.session)) == datetime(2030, 1, 2, 3, 4, 5)
    with tpl.trial() as db:  # every trial starts from the domain's start time
        with db.session.begin():
            assert Clock.now(ToolContext(db.session)) == datetime(2024, 6, 1, 9, 30)
            assert db.session.scalars(select(Account.id)).all() == ["A1", "B2"]


def test_domains_without_sinks_still_log_write_events(tmp_path):
    dom = BankDomain()
    tpl = dom.template(write_data(tmp_path / "d"))
    with tpl.trial() as db:
        ctx = ToolContext(db.session, db.options)
        dom.toolbox().dispatch(ctx, "transfer", {"src": "A1", "dst": "B2", "amount": 5.0})
        dom.toolbox().dispatch(ctx, "transfer", {"src": "A1", "dst": "B2", "amount": 500.0})  # refused
        events = read_events(db.raw)
    assert [(e.name, e.kind, e.data) for e in events] == [
        ("transfer", "tool", {"src": "A1", "dst": "B2", "amount": 5.0})]


def test_write_events_are_logged_for_tools_running_on_the_connection(tmp_path):
    """Retail's tools run on the trial's sqlite3 connection (no ORM session): their writes are events too,
    and a refused write leaves none."""
    from simulator import get_domain

    dom = get_domain("retail")
    tpl = dom.template(None, dom.default_options(None))
    tb = dom.toolbox()
    assert tb.uses_session is False
    task = next(t for t in dom.load_tasks(None) if any(tb.specs[a.name].kind == "write" for a in t.gold_actions))
    with tpl.trial() as db:
        ctx = ToolContext(db.session, db.options)
        for i, action in enumerate(task.gold_actions):
            ctx.step = i
            assert tb.dispatch(ctx, action.name, action.arguments).status == "ok"
        refused = tb.dispatch(ctx, "cancel_pending_order", {"order_id": "#NOPE", "reason": "no longer needed"})
        assert refused.status == "tool_error"
        logged = [(e.step, e.name, e.data) for e in read_events(db.raw) if e.kind == "tool"]
    expected = [(i, a.name, a.arguments) for i, a in enumerate(task.gold_actions) if tb.specs[a.name].kind == "write"]
    assert logged == expected and expected
