"""The returns desk's schema: customers, orders, returns, refund approvals and refunds.

The payment ledger, the email outbox and the clock are the engine's sinks (declared by the domain class).
"""

from __future__ import annotations

from sqlalchemy import Float, ForeignKey, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from simulator.world.kit import one_of

__all__ = ["Approval", "Base", "Customer", "Order", "Refund", "Return"]


class Base(DeclarativeBase):
    """Declarative base of the returns desk's tables."""


class Customer(Base):
    """A store customer (the identity the agent authenticates)."""

    __tablename__ = "customers"
    customer_id: Mapped[str] = mapped_column(String, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    email: Mapped[str] = mapped_column(String)
    zip: Mapped[str] = mapped_column(String)


class Order(Base):
    """An order of one item; ``status``: processing, shipped, delivered, refunded or cancelled."""

    __tablename__ = "orders"
    order_id: Mapped[str] = mapped_column(String, primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.customer_id"))
    item: Mapped[str] = mapped_column(String)
    total: Mapped[float] = mapped_column(Float)
    status: Mapped[str] = mapped_column(String, info=one_of("processing", "shipped", "delivered", "refunded",
                                                            "cancelled"))
    payment_account: Mapped[str] = mapped_column(String)
    """Ledger account of the payment method the order was paid with (e.g. ``card-4242``)."""
    delivered_at: Mapped[str | None] = mapped_column(String, nullable=True)
    """ISO date of delivery (None while not delivered)."""


class Return(Base):
    """A return of an order; ``status``: requested (label sent) or received (by the warehouse)."""

    __tablename__ = "returns"
    return_id: Mapped[str] = mapped_column(String, primary_key=True)
    order_id: Mapped[str] = mapped_column(ForeignKey("orders.order_id"))
    reason: Mapped[str] = mapped_column(String)
    status: Mapped[str] = mapped_column(String, info=one_of("requested", "received"))
    opened_at: Mapped[str] = mapped_column(String)
    received_at: Mapped[str | None] = mapped_column(String, nullable=True)


class Approval(Base):
    """A supervisor's approval of a refund amount for an order."""

    __tablename__ = "approvals"
    approval_id: Mapped[str] = mapped_column(String, primary_key=True)
    order_id: Mapped[str] = mapped_column(ForeignKey("orders.order_id"))
    amount: Mapped[float] = mapped_column(Float)
    created_at: Mapped[str] = mapped_column(String)


class Refund(Base):
    """A committed refund of an order to its payment account."""

    __tablename__ = "refunds"
    refund_id: Mapped[str] = mapped_column(String, primary_key=True)
    order_id: Mapped[str] = mapped_column(ForeignKey("orders.order_id"))
    amount: Mapped[float] = mapped_column(Float)
    approval_id: Mapped[str | None] = mapped_column(String, nullable=True)
    created_at: Mapped[str] = mapped_column(String)
