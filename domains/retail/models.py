"""Relational schema of the retail domain (SQLAlchemy 2, declarative).

The native format of the data is three nested JSON files (``users.json``, ``orders.json``,
``products.json``, tau-bench layout). The schema normalises them into one table per kind of object and keeps
what a lossless round trip needs:

- record order: every top-level record and every list element has a ``position`` column;
- JSON numbers: money columns use :class:`JsonNumber`, which keeps each value's own type, so a gift-card
  balance of ``56`` dumps as ``56`` and a price of ``100.0`` as ``100.0``; unrounded amounts such as
  ``18.77000000000001`` survive as written;
- key order: objects are dumped in a canonical key order (the order of the peer files, optional fields
  appended in the order the tools set them). A record whose keys came in another order, or whose nested
  ``name``/``address`` object did, keeps that order in its ``layout`` column (NULL in the usual case);
- optional order fields (``cancel_reason``, ``return_*``, ``exchange_*``) are NULL until a tool sets them, and
  absent from the dump while NULL;
- free-form ``options`` objects are JSON columns (their key order is kept by the JSON text).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Boolean, ForeignKey, ForeignKeyConstraint, Index, Integer, String, func, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from simulator.world.kit import JsonNumber, Layout, one_of
from simulator.world.kit import json_column as _json

__all__ = [
    "Base",
    "Fulfillment",
    "FulfillmentItem",
    "FulfillmentTracking",
    "JsonNumber",
    "NON_ASCII_EMAIL",
    "ORDER_STATUSES",
    "Order",
    "OrderItem",
    "Payment",
    "PaymentMethod",
    "Product",
    "User",
    "UserOrder",
    "Variant",
]


NON_ASCII_EMAIL = "length(email) <> length(CAST(email AS BLOB))"
"""The SQL condition of a user whose email has a character beyond ASCII (more bytes than characters)."""

ORDER_STATUSES = ("pending", "processed", "delivered", "cancelled", "pending (item modified)", "return requested",
                  "exchange requested")
"""The statuses an order may have (declared on :attr:`Order.status`; ``tausim domain check`` reports any other)."""


class Base(DeclarativeBase):
    """Declarative base of the retail schema."""


class User(Base):
    """A customer (one record of users.json; its key is the user id)."""

    __tablename__ = "users"
    __table_args__ = (
        Index("ix_users_lower_email", func.lower(text("email"))),
        Index("ix_users_other_email", "position", "id", "email", sqlite_where=text(NON_ASCII_EMAIL)),
        Index("ix_users_zip", "zip", "position"),
    )
    """The look-up by email (``find_user_id_by_email``) reads two indexes, no table: the ASCII emails equal to a
    lower-cased one (sqlite's ``lower`` folds ASCII letters only), and the few emails with another character. The
    look-up by name and zip reads a zip's users in file order from the third."""

    id: Mapped[str] = mapped_column(String, primary_key=True)
    """User id (the record's key in users.json, e.g. ``noah_brown_6181``)."""
    position: Mapped[int] = mapped_column(Integer, unique=True)
    """Index of the record in users.json."""
    first_name: Mapped[str] = mapped_column(String)
    """``name.first_name``."""
    last_name: Mapped[str] = mapped_column(String)
    """``name.last_name``."""
    address1: Mapped[str] = mapped_column(String)
    """``address.address1``."""
    address2: Mapped[str] = mapped_column(String)
    """``address.address2``."""
    city: Mapped[str] = mapped_column(String)
    """``address.city``."""
    country: Mapped[str] = mapped_column(String)
    """``address.country``."""
    state: Mapped[str] = mapped_column(String)
    """``address.state``."""
    zip: Mapped[str] = mapped_column(String)
    """``address.zip`` (a string: leading zeros matter)."""
    email: Mapped[str] = mapped_column(String)
    """E-mail address (look-ups compare it case-insensitively)."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""

    payment_methods: Mapped[list[PaymentMethod]] = relationship(
        back_populates="user", order_by="PaymentMethod.position"
    )
    """The user's payment methods, in file order."""
    order_links: Mapped[list[UserOrder]] = relationship(order_by="UserOrder.position")
    """The user's ``orders`` list, in file order."""


class PaymentMethod(Base):
    """One entry of a user's ``payment_methods`` (credit card, PayPal or gift card)."""

    __tablename__ = "payment_methods"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    """Owner."""
    id: Mapped[str] = mapped_column(String, primary_key=True)
    """Payment method id (its key in ``payment_methods``, e.g. ``gift_card_1725971``)."""
    position: Mapped[int] = mapped_column(Integer)
    """Index within the user's ``payment_methods`` object."""
    source: Mapped[str] = mapped_column(String, info=one_of("credit_card", "paypal", "gift_card"))
    """``credit_card``, ``paypal`` or ``gift_card``."""
    brand: Mapped[str | None] = mapped_column(String)
    """Card brand (credit cards only)."""
    last_four: Mapped[str | None] = mapped_column(String)
    """Last four digits (credit cards only)."""
    balance: Mapped[float | None] = mapped_column(JsonNumber)
    """Balance (gift cards only), rounded to cents after every change."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""

    user: Mapped[User] = relationship(back_populates="payment_methods")
    """Owner."""


class UserOrder(Base):
    """One element of a user's ``orders`` list (order ids, kept as listed)."""

    __tablename__ = "user_orders"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    """Owner."""
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    """Index in the list."""
    order_id: Mapped[str] = mapped_column(String)
    """The listed order id."""


class Order(Base):
    """An order (one record of orders.json)."""

    __tablename__ = "orders"

    id: Mapped[str] = mapped_column(String, primary_key=True)
    """Order id (``order_id`` and the record's key, e.g. ``#W2611340``)."""
    position: Mapped[int] = mapped_column(Integer, unique=True)
    """Index of the record in orders.json."""
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    """Customer."""
    address1: Mapped[str] = mapped_column(String)
    """``address.address1`` (shipping address)."""
    address2: Mapped[str] = mapped_column(String)
    """``address.address2``."""
    city: Mapped[str] = mapped_column(String)
    """``address.city``."""
    country: Mapped[str] = mapped_column(String)
    """``address.country``."""
    state: Mapped[str] = mapped_column(String)
    """``address.state``."""
    zip: Mapped[str] = mapped_column(String)
    """``address.zip``."""
    status: Mapped[str] = mapped_column(String, info=one_of(*ORDER_STATUSES))
    """One of :data:`ORDER_STATUSES`: ``pending``, ``processed``, ``delivered``, ``cancelled``, ``pending (item
    modified)``, ``return requested`` or ``exchange requested``."""
    cancel_reason: Mapped[str | None] = mapped_column(String)
    """Set by a cancellation."""
    return_items: Mapped[list[str] | None] = mapped_column(_json())
    """Item ids to return (sorted), set by a return request."""
    return_payment_method_id: Mapped[str | None] = mapped_column(String)
    """Where the return's refund goes."""
    exchange_items: Mapped[list[str] | None] = mapped_column(_json())
    """Item ids to exchange (sorted), set by an exchange request."""
    exchange_new_items: Mapped[list[str] | None] = mapped_column(_json())
    """Replacement item ids (sorted)."""
    exchange_payment_method_id: Mapped[str | None] = mapped_column(String)
    """Method paying or receiving the exchange's price difference."""
    exchange_price_difference: Mapped[float | None] = mapped_column(JsonNumber)
    """New minus old price, rounded to cents."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""

    user: Mapped[User] = relationship()
    """Customer."""
    items: Mapped[list[OrderItem]] = relationship(order_by="OrderItem.position")
    """Ordered items, in list order."""
    payments: Mapped[list[Payment]] = relationship(order_by="Payment.position")
    """``payment_history``, in list order."""


class OrderItem(Base):
    """One element of an order's ``items`` (a copy of the variant at the time of purchase)."""

    __tablename__ = "order_items"

    order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"), primary_key=True)
    """Order."""
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    """Index in ``items``."""
    name: Mapped[str] = mapped_column(String)
    """Product name."""
    product_id: Mapped[str] = mapped_column(String)
    """Product id."""
    item_id: Mapped[str] = mapped_column(String)
    """Variant id."""
    price: Mapped[float] = mapped_column(JsonNumber)
    """Price paid."""
    options: Mapped[dict[str, Any]] = mapped_column(_json())
    """Variant options (e.g. ``{"color": "blue", "size": "M"}``), key order kept."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""


class Payment(Base):
    """One element of an order's ``payment_history`` (a payment or a refund)."""

    __tablename__ = "payments"

    order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"), primary_key=True)
    """Order."""
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    """Index in ``payment_history``."""
    transaction_type: Mapped[str] = mapped_column(String, info=one_of("payment", "refund"))
    """``payment`` or ``refund``."""
    amount: Mapped[float] = mapped_column(JsonNumber)
    """Amount, unrounded where the peer leaves it unrounded (e.g. ``6.259999999999998``)."""
    payment_method_id: Mapped[str] = mapped_column(String)
    """Payment method (of the order's user)."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""


class Fulfillment(Base):
    """One element of an order's ``fulfillments`` (a shipment)."""

    __tablename__ = "fulfillments"

    order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"), primary_key=True)
    """Order."""
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    """Index in ``fulfillments``."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""


class FulfillmentTracking(Base):
    """One element of a fulfillment's ``tracking_id`` list."""

    __tablename__ = "fulfillment_tracking_ids"
    __table_args__ = (
        ForeignKeyConstraint(
            ["order_id", "fulfillment_position"], ["fulfillments.order_id", "fulfillments.position"]
        ),
    )

    order_id: Mapped[str] = mapped_column(String, primary_key=True)
    """Order."""
    fulfillment_position: Mapped[int] = mapped_column(Integer, primary_key=True)
    """Index of the fulfillment in the order."""
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    """Index in ``tracking_id``."""
    tracking_id: Mapped[str] = mapped_column(String)
    """Carrier tracking number."""


class FulfillmentItem(Base):
    """One element of a fulfillment's ``item_ids`` list."""

    __tablename__ = "fulfillment_item_ids"
    __table_args__ = (
        ForeignKeyConstraint(
            ["order_id", "fulfillment_position"], ["fulfillments.order_id", "fulfillments.position"]
        ),
    )

    order_id: Mapped[str] = mapped_column(String, primary_key=True)
    """Order."""
    fulfillment_position: Mapped[int] = mapped_column(Integer, primary_key=True)
    """Index of the fulfillment in the order."""
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    """Index in ``item_ids``."""
    item_id: Mapped[str] = mapped_column(String)
    """Shipped variant id."""


class Product(Base):
    """A product type (one record of products.json)."""

    __tablename__ = "products"

    id: Mapped[str] = mapped_column(String, primary_key=True)
    """Product id (``product_id`` and the record's key)."""
    position: Mapped[int] = mapped_column(Integer, unique=True)
    """Index of the record in products.json."""
    name: Mapped[str] = mapped_column(String)
    """Product name (e.g. ``T-Shirt``)."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""

    variants: Mapped[list[Variant]] = relationship(order_by="Variant.position")
    """Variants, in file order."""


class Variant(Base):
    """One variant of a product (an entry of ``variants``; its key is the item id)."""

    __tablename__ = "variants"
    __table_args__ = (Index("ix_variants_item_id", "item_id"),)

    product_id: Mapped[str] = mapped_column(ForeignKey("products.id"), primary_key=True)
    """Product."""
    item_id: Mapped[str] = mapped_column(String, primary_key=True)
    """Variant id."""
    position: Mapped[int] = mapped_column(Integer)
    """Index within the product's ``variants`` object."""
    options: Mapped[dict[str, Any]] = mapped_column(_json())
    """Options, key order kept."""
    available: Mapped[bool] = mapped_column(Boolean)
    """Whether it can be ordered."""
    price: Mapped[float] = mapped_column(JsonNumber)
    """Current price."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""
