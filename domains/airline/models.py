"""Relational schema of the airline domain (SQLAlchemy 2, declarative).

The native format of the data is three nested JSON files (``users.json``, ``reservations.json``,
``flights.json``, tau-bench layout). The schema normalises them into one table per kind of object:

- ``users`` with ``payment_methods``, ``saved_passengers`` and ``user_reservations`` (the ``reservations``
  id list of a user, kept as listed);
- ``reservations`` with ``reservation_flights``, ``reservation_passengers`` and ``reservation_payments``
  (``payment_history``);
- ``flights`` (the schedule: route and scheduled times) with ``flight_dates``, one row per flight and date:
  the date's status, and for dates open for booking the available seats and the price of each cabin
  (``seats_*`` / ``price_*`` columns, NULL when the date has no such object), otherwise the actual or
  estimated times.

What a lossless round trip needs is kept:

- record order: every top-level record, every list element and every entry of an object keyed by id has a
  ``position`` column;
- JSON numbers: money columns use :class:`~simulator.world.kit.JsonNumber`, which keeps each value's own type
  (a price of ``83`` stays an int, an amount of ``120.5`` a float); counts (seats, bags) are integers;
- key order: objects are dumped in a canonical key order (the order of the peer files, optional fields in the
  order the tools set them). An object whose keys came in another order, or that a tool wrote in another
  order (the peer writes a reservation's flights as ``flight_number, date, price, origin, destination``),
  keeps that order in its ``layout`` column (NULL in the usual case);
- optional fields (a reservation's ``status``, which appears only once it is cancelled; a flight date's
  seats, prices and times; a payment method's card or balance fields) are NULL while absent and left out of
  the dump.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from simulator.world.kit import JsonNumber, Layout, one_of
from simulator.world.kit import json_column as _json

__all__ = [
    "CABINS",
    "Base",
    "Flight",
    "FlightDate",
    "PaymentMethod",
    "Reservation",
    "ReservationFlight",
    "ReservationPassenger",
    "ReservationPayment",
    "SavedPassenger",
    "User",
    "UserReservation",
]

CABINS = ("basic_economy", "economy", "business")
"""The cabin classes, in the order of the ``available_seats`` and ``prices`` objects of the data files."""


class Base(DeclarativeBase):
    """Declarative base of the airline schema."""


class User(Base):
    """A customer (one record of users.json; its key is the user id)."""

    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String, primary_key=True)
    """User id (the record's key in users.json, e.g. ``mia_li_3668``)."""
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
    """E-mail address."""
    dob: Mapped[str] = mapped_column(String)
    """Date of birth, ``YYYY-MM-DD``."""
    membership: Mapped[str] = mapped_column(String, info=one_of("regular", "silver", "gold"))
    """``regular``, ``silver`` or ``gold`` (sets the free bag allowance)."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""

    payment_methods: Mapped[list[PaymentMethod]] = relationship(
        back_populates="user", order_by="PaymentMethod.position", cascade="all, delete-orphan"
    )
    """The user's payment methods, in file order (a used travel certificate is deleted)."""
    saved_passengers: Mapped[list[SavedPassenger]] = relationship(order_by="SavedPassenger.position")
    """The user's saved passengers, in file order."""
    reservation_links: Mapped[list[UserReservation]] = relationship(order_by="UserReservation.position")
    """The user's ``reservations`` list, in file order."""


class PaymentMethod(Base):
    """One entry of a user's ``payment_methods`` (credit card, gift card or travel certificate)."""

    __tablename__ = "payment_methods"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    """Owner."""
    id: Mapped[str] = mapped_column(String, primary_key=True)
    """Payment method id (its key in ``payment_methods``, e.g. ``certificate_7504069``)."""
    position: Mapped[int] = mapped_column(Integer)
    """Index within the user's ``payment_methods`` object (gaps where a certificate was used up)."""
    source: Mapped[str] = mapped_column(String, info=one_of("credit_card", "gift_card", "certificate"))
    """``credit_card``, ``gift_card`` or ``certificate``."""
    brand: Mapped[str | None] = mapped_column(String)
    """Card brand (credit cards only)."""
    last_four: Mapped[str | None] = mapped_column(String)
    """Last four digits (credit cards only)."""
    amount: Mapped[float | None] = mapped_column(JsonNumber)
    """Remaining balance (gift cards and certificates only), in dollars."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""

    user: Mapped[User] = relationship(back_populates="payment_methods")
    """Owner."""


class SavedPassenger(Base):
    """One element of a user's ``saved_passengers``."""

    __tablename__ = "saved_passengers"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    """Owner."""
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    """Index in the list."""
    first_name: Mapped[str] = mapped_column(String)
    """First name."""
    last_name: Mapped[str] = mapped_column(String)
    """Last name."""
    dob: Mapped[str] = mapped_column(String)
    """Date of birth, ``YYYY-MM-DD``."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""


class UserReservation(Base):
    """One element of a user's ``reservations`` list (reservation ids, kept as listed)."""

    __tablename__ = "user_reservations"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    """Owner."""
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    """Index in the list."""
    reservation_id: Mapped[str] = mapped_column(String)
    """The listed reservation id."""


class Flight(Base):
    """A scheduled flight (one record of flights.json; its key is the flight number)."""

    __tablename__ = "flights"
    __table_args__ = (Index("ix_flights_route", "origin", "destination"),)

    id: Mapped[str] = mapped_column(String, primary_key=True)
    """Flight number (``flight_number`` and the record's key, e.g. ``HAT001``)."""
    position: Mapped[int] = mapped_column(Integer, unique=True)
    """Index of the record in flights.json."""
    origin: Mapped[str] = mapped_column(String)
    """Origin airport code (``JFK``)."""
    destination: Mapped[str] = mapped_column(String)
    """Destination airport code."""
    scheduled_departure_time_est: Mapped[str] = mapped_column(String)
    """Departure time of day, ``HH:MM:SS`` (US Eastern)."""
    scheduled_arrival_time_est: Mapped[str] = mapped_column(String)
    """Arrival time of day, ``HH:MM:SS``, with a ``+1`` suffix when it lands the next day."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""


class FlightDate(Base):
    """A flight on one date (an entry of a flight's ``dates`` object; its key is the date)."""

    __tablename__ = "flight_dates"

    flight_number: Mapped[str] = mapped_column(ForeignKey("flights.id"), primary_key=True)
    """Flight."""
    date: Mapped[str] = mapped_column(String, primary_key=True)
    """Date, ``YYYY-MM-DD``."""
    position: Mapped[int] = mapped_column(Integer)
    """Index within the flight's ``dates`` object."""
    status: Mapped[str] = mapped_column(
        String, info=one_of("available", "on time", "delayed", "flying", "landed", "cancelled"))
    """``available`` (open for booking), ``on time``, ``delayed``, ``flying``, ``landed`` or ``cancelled``."""
    seats_basic_economy: Mapped[int | None] = mapped_column(Integer)
    """``available_seats.basic_economy`` (NULL when the date has no ``available_seats``)."""
    seats_economy: Mapped[int | None] = mapped_column(Integer)
    """``available_seats.economy``."""
    seats_business: Mapped[int | None] = mapped_column(Integer)
    """``available_seats.business``."""
    price_basic_economy: Mapped[float | None] = mapped_column(JsonNumber)
    """``prices.basic_economy`` per passenger, in dollars (NULL when the date has no ``prices``)."""
    price_economy: Mapped[float | None] = mapped_column(JsonNumber)
    """``prices.economy``."""
    price_business: Mapped[float | None] = mapped_column(JsonNumber)
    """``prices.business``."""
    actual_departure_time_est: Mapped[str | None] = mapped_column(String)
    """Actual departure, ``YYYY-MM-DDTHH:MM:SS`` (flown or flying)."""
    estimated_departure_time_est: Mapped[str | None] = mapped_column(String)
    """Estimated departure (on time or delayed)."""
    actual_arrival_time_est: Mapped[str | None] = mapped_column(String)
    """Actual arrival (landed)."""
    estimated_arrival_time_est: Mapped[str | None] = mapped_column(String)
    """Estimated arrival (flying, on time or delayed)."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one (also of ``available_seats`` and ``prices``)."""

    def seats(self, cabin: str) -> int | None:
        """Return the available seats of a cabin (None when the date has no seat counts)."""
        value: int | None = getattr(self, f"seats_{cabin}")
        return value

    def add_seats(self, cabin: str, count: int) -> None:
        """Change a cabin's available seats by ``count`` (negative to take seats); no-op without seat counts."""
        current = self.seats(cabin)
        if current is not None:
            setattr(self, f"seats_{cabin}", current + count)

    def price(self, cabin: str) -> float | None:
        """Return a cabin's price per passenger (None when the date has no prices)."""
        value: float | None = getattr(self, f"price_{cabin}")
        return value


class Reservation(Base):
    """A reservation (one record of reservations.json)."""

    __tablename__ = "reservations"

    id: Mapped[str] = mapped_column(String, primary_key=True)
    """Reservation id (``reservation_id`` and the record's key, 6 characters, e.g. ``4WQ150``)."""
    position: Mapped[int] = mapped_column(Integer, unique=True)
    """Index of the record in reservations.json."""
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    """Customer who booked it."""
    origin: Mapped[str] = mapped_column(String)
    """Trip origin airport code."""
    destination: Mapped[str] = mapped_column(String)
    """Trip destination airport code (for a round trip, the far end)."""
    flight_type: Mapped[str] = mapped_column(String, info=one_of("one_way", "round_trip"))
    """``one_way`` or ``round_trip``."""
    cabin: Mapped[str] = mapped_column(String, info=one_of("basic_economy", "economy", "business"))
    """``basic_economy``, ``economy`` or ``business``."""
    created_at: Mapped[str] = mapped_column(String)
    """Booking time, ``YYYY-MM-DDTHH:MM:SS``."""
    total_baggages: Mapped[int] = mapped_column(Integer)
    """Checked bags in total."""
    nonfree_baggages: Mapped[int] = mapped_column(Integer)
    """Checked bags paid for (50 dollars each)."""
    insurance: Mapped[str] = mapped_column(String, info=one_of("yes", "no"))
    """Travel insurance bought: ``yes`` or ``no``."""
    status: Mapped[str | None] = mapped_column(String, info=one_of("cancelled"))
    """``cancelled`` once cancelled; NULL (absent from the record) before."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""

    flights: Mapped[list[ReservationFlight]] = relationship(
        order_by="ReservationFlight.position", cascade="all, delete-orphan"
    )
    """Flight segments, in list order."""
    passengers: Mapped[list[ReservationPassenger]] = relationship(
        order_by="ReservationPassenger.position", cascade="all, delete-orphan"
    )
    """Passengers, in list order."""
    payments: Mapped[list[ReservationPayment]] = relationship(
        order_by="ReservationPayment.position", cascade="all, delete-orphan"
    )
    """``payment_history``, in list order."""


class ReservationFlight(Base):
    """One element of a reservation's ``flights`` (a segment, with the price paid per passenger)."""

    __tablename__ = "reservation_flights"
    __table_args__ = (Index("ix_reservation_flights_flight", "flight_number", "date"),)

    reservation_id: Mapped[str] = mapped_column(ForeignKey("reservations.id"), primary_key=True)
    """Reservation."""
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    """Index in ``flights``."""
    origin: Mapped[str] = mapped_column(String)
    """Segment origin airport code."""
    destination: Mapped[str] = mapped_column(String)
    """Segment destination airport code."""
    flight_number: Mapped[str] = mapped_column(ForeignKey("flights.id"))
    """Flight number."""
    date: Mapped[str] = mapped_column(String)
    """Date, ``YYYY-MM-DD``."""
    price: Mapped[float] = mapped_column(JsonNumber)
    """Price per passenger paid for this segment, in dollars."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one (segments written by a tool have one)."""


class ReservationPassenger(Base):
    """One element of a reservation's ``passengers``."""

    __tablename__ = "reservation_passengers"

    reservation_id: Mapped[str] = mapped_column(ForeignKey("reservations.id"), primary_key=True)
    """Reservation."""
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    """Index in ``passengers``."""
    first_name: Mapped[str] = mapped_column(String)
    """First name."""
    last_name: Mapped[str] = mapped_column(String)
    """Last name."""
    dob: Mapped[str] = mapped_column(String)
    """Date of birth, ``YYYY-MM-DD``."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""


class ReservationPayment(Base):
    """One element of a reservation's ``payment_history`` (a payment, or a refund with a negative amount)."""

    __tablename__ = "reservation_payments"

    reservation_id: Mapped[str] = mapped_column(ForeignKey("reservations.id"), primary_key=True)
    """Reservation."""
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    """Index in ``payment_history``."""
    payment_id: Mapped[str] = mapped_column(String)
    """Payment method id of the reservation's user (a used certificate no longer exists)."""
    amount: Mapped[float] = mapped_column(JsonNumber)
    """Amount in dollars: positive for a payment, negative for a refund."""
    layout: Mapped[Layout | None] = mapped_column(_json())
    """Key order where it differs from the canonical one; NULL normally."""
