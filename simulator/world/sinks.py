"""The trial's event log and the sinks a domain may include: an outbox, a ledger and a clock.

Everything lives in the trial database, so state diffs, regrade (which replays the trajectory) and reports see
it:

- the **event log** (bookkeeping table ``_tausim_events``, in every template, never part of the state
  comparison): every successful call of a write tool is recorded as an event named after the tool, with its
  arguments; a tool may emit named domain events with fields through its context
  (``ctx.emit("refund_committed", order_id="4812", amount=120.0)``). Events are numbered in order (``seq``) and
  carry the agent step of the call (None for a task's setup actions) and their source (``agent`` or ``setup``).
  An event is written in the tool call's transaction: a call that fails leaves no event.
- **sinks** a domain declares in :attr:`simulator.world.domain.Domain.sinks` (e.g. ``sinks = (Outbox(), Ledger(),
  Clock("2024-06-01T09:00:00"))``): each adds a table of its own to the domain's schema (compared like any
  other table) and offers functions tools call with their context: :meth:`Outbox.send`, :meth:`Ledger.post`,
  :meth:`Clock.now`. Tools never read wall-clock time; the clock's "now" is the domain's start time or the
  task's ``initial_state.now``.

All writes go through one function, :func:`_write`, on the tool call's own connection and transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import Column, Float, Integer, MetaData, String, Table, Text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from simulator.world.events import EVENTS_TABLE, Event, _read, _write, emit_event, read_events

if TYPE_CHECKING:
    from simulator.world.tools import ToolContext

__all__ = ["EVENTS_TABLE", "Clock", "Event", "Ledger", "Outbox", "Sink", "emit_event", "read_events"]














class Sink:
    """Base of the sinks a domain declares: a table of its own plus functions tools call.

    Subclasses set :attr:`table_name`, :attr:`event_names` and implement :meth:`define`.
    """

    table_name: ClassVar[str] = ""
    """The sink's table."""
    event_names: ClassVar[tuple[str, ...]] = ()
    """Domain events the sink emits."""

    def define(self, metadata: MetaData) -> Table:
        """Add the sink's table to a domain's schema (idempotent) and return it.

        Args:
            metadata: the domain's SQLAlchemy metadata.

        Returns:
            The table.
        """
        raise NotImplementedError

    def initialize(self, session: Session) -> None:
        """Insert the sink's initial rows into a freshly populated template (default: none).

        Args:
            session: the session populating the template.
        """


@dataclass(frozen=True)
class Outbox(Sink):
    """Messages sent to customers (table ``outbox``: ``message_id, channel, recipient, template, body, sent_at``).

    :meth:`send` also emits the event ``message_sent`` (channel, recipient, template, message_id).
    """

    table_name: ClassVar[str] = "outbox"
    event_names: ClassVar[tuple[str, ...]] = ("message_sent",)

    def define(self, metadata: MetaData) -> Table:
        """Add table ``outbox`` to ``metadata`` (idempotent) and return it."""
        if self.table_name in metadata.tables:
            return metadata.tables[self.table_name]
        return Table(self.table_name, metadata,
                     Column("message_id", Integer, primary_key=True, autoincrement=True),
                     Column("channel", String, nullable=False), Column("recipient", String, nullable=False),
                     Column("template", String, nullable=False), Column("body", Text, nullable=False),
                     Column("sent_at", String, nullable=True))

    @staticmethod
    def send(ctx: ToolContext, *, channel: str, recipient: str, template: str, body: str) -> int:
        """Send a message (record it in the outbox) and emit ``message_sent``.

        Args:
            ctx: the tool call's context.
            channel: e.g. ``"email"``.
            recipient: the address.
            template: the message template's name (e.g. ``"refund_confirmation"``).
            body: the text sent.

        Returns:
            The new message id.
        """
        now = Clock.now_text(ctx)
        _write(ctx, "INSERT INTO outbox (channel, recipient, template, body, sent_at) "
                    "VALUES (:channel, :recipient, :template, :body, :sent_at)",
               {"channel": channel, "recipient": recipient, "template": template, "body": body, "sent_at": now})
        (message_id,) = _read(ctx, "SELECT max(message_id) FROM outbox", {})[0]
        ctx.emit("message_sent", channel=channel, recipient=recipient, template=template, message_id=message_id)
        return int(message_id)


@dataclass(frozen=True)
class Ledger(Sink):
    """Money movements per account with a reason (table ``ledger``).

    Columns ``entry_id, account, amount, reason, posted_at``; amounts in the domain's currency, positive = money
    into the account.

    :meth:`post` also emits the event ``money_moved`` (account, amount, reason).
    """

    table_name: ClassVar[str] = "ledger"
    event_names: ClassVar[tuple[str, ...]] = ("money_moved",)

    def define(self, metadata: MetaData) -> Table:
        """Add table ``ledger`` to ``metadata`` (idempotent) and return it."""
        if self.table_name in metadata.tables:
            return metadata.tables[self.table_name]
        return Table(self.table_name, metadata,
                     Column("entry_id", Integer, primary_key=True, autoincrement=True),
                     Column("account", String, nullable=False), Column("amount", Float, nullable=False),
                     Column("reason", String, nullable=False), Column("posted_at", String, nullable=True))

    @staticmethod
    def post(ctx: ToolContext, account: str, amount: float, reason: str) -> None:
        """Record one money movement and emit ``money_moved``.

        Args:
            ctx: the tool call's context.
            account: the account (e.g. ``"store"``, ``"card-4242"``).
            amount: the amount, positive into the account, negative out of it.
            reason: why (e.g. ``"refund 4812"``).
        """
        _write(ctx, "INSERT INTO ledger (account, amount, reason, posted_at) "
                    "VALUES (:account, :amount, :reason, :posted_at)",
               {"account": account, "amount": float(amount), "reason": reason, "posted_at": Clock.now_text(ctx)})
        ctx.emit("money_moved", account=account, amount=float(amount), reason=reason)

    @staticmethod
    def net(ctx: ToolContext, account: str) -> float:
        """Return the sum of every movement of an account (its net change since the ledger began).

        Args:
            ctx: the tool call's context.
            account: the account.
        """
        (total,) = _read(ctx, "SELECT coalesce(sum(amount), 0) FROM ledger WHERE account = :a", {"a": account})[0]
        return float(total)


@dataclass(frozen=True)
class Clock(Sink):
    """The only "now" tools may read (table ``clock``: one row ``id=1, now`` in ISO 8601).

    Args:
        start: the domain's default "now" (ISO 8601, e.g. ``"2024-06-01T09:00:00"``); a task's
            ``initial_state.now`` replaces it for that task.
    """

    start: str = "2024-01-01T00:00:00"
    table_name: ClassVar[str] = "clock"

    def __post_init__(self) -> None:
        datetime.fromisoformat(self.start)  # a bad start time fails when the domain is declared

    def define(self, metadata: MetaData) -> Table:
        """Add table ``clock`` to ``metadata`` (idempotent) and return it."""
        if self.table_name in metadata.tables:
            return metadata.tables[self.table_name]
        return Table(self.table_name, metadata, Column("id", Integer, primary_key=True),
                     Column("now", String, nullable=False))

    def initialize(self, session: Session) -> None:
        """Insert the clock's row with :attr:`start`."""
        session.connection().exec_driver_sql("INSERT INTO clock (id, now) VALUES (1, ?)", (self.start,))

    @staticmethod
    def set(conn: Any, now: str) -> None:
        """Set "now" on a database (a task's fixture); ``conn`` is a SQLAlchemy connection.

        Raises:
            ValueError: ``now`` is not ISO 8601.
        """
        datetime.fromisoformat(now)
        conn.exec_driver_sql("UPDATE clock SET now = ? WHERE id = 1", (now,))

    @staticmethod
    def now_text(ctx: ToolContext) -> str | None:
        """Return "now" as stored (ISO 8601), or None when the domain has no clock."""
        try:
            rows = _read(ctx, "SELECT now FROM clock WHERE id = 1", {})
        except OperationalError as e:  # the domain declares no clock: no time stamp
            if "no such table" in str(e):
                return None
            raise
        return str(rows[0][0]) if rows else None

    @staticmethod
    def now(ctx: ToolContext) -> datetime:
        """Return the trial's "now".

        Raises:
            RuntimeError: the domain declares no :class:`Clock`.
        """
        text = Clock.now_text(ctx)
        if text is None:
            raise RuntimeError("the domain declares no Clock sink; tools have no 'now'")
        return datetime.fromisoformat(text)
