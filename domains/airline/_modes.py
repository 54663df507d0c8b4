"""The airline tools' modes as variants: :class:`ToolMode` (the peer's semantics) and its subclasses.

Each tool reads its trial's mode once (:func:`tool_mode`) and leaves every difference between the modes to the
variant: how records are rendered, which checks refuse a call, and the bookkeeping after a write.

- :class:`ToolMode` (``tau-bench``): tau-bench's semantics, including its questionable bookkeeping (seats never
  change, a flight change keeps the old cabin, a cancellation restores no balance);
- :class:`TausimMode` (``tausim``): the same interface, checks and prices with corrected bookkeeping and
  stricter checks (see :mod:`domains.airline.tools`);
- :class:`Tau2Mode` (``tau2``): tau2-bench's airline tools (its renderings, limits and one-stop search).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from domains.airline._data import flight_on_date, reservation_record
from domains.airline._tool_rows import (
    FIRST_CERTIFICATE,
    FIRST_RESERVATION_ID,
    ID_ALPHABET,
    Rows,
    add_seats,
    add_to_balance,
    available_flights,
    check_bag_counts,
    get_user,
    has_balance,
    money,
    next_day,
    next_method_position,
)
from simulator.world.kit import Row, ToolError, json_text

__all__ = ["DEFAULT_MODE", "MODES", "Tau2Mode", "TausimMode", "ToolMode", "lenient_items", "tau2_reservation",
           "tau2_second_date", "tau2_user", "tool_mode"]

MODES = ("tau-bench", "tausim", "tau2")
"""Tool modes: the peer's semantics, or the corrected bookkeeping (see the module docstring)."""
DEFAULT_MODE = "tausim"
"""Mode used when the options name none."""

Segment = tuple[Row, Row, float]
"""A booked flight: its ``flights`` row, its ``flight_dates`` row and the price per passenger."""


class ToolMode:
    """Mode ``tau-bench``: the peer's semantics; the base of the other modes, which override what differs."""

    name: ClassVar[str] = "tau-bench"
    drops_undeclared_keys: ClassVar[bool] = True
    """Whether undeclared keys of argument list items are dropped (else refused)."""
    new_ids: ClassVar[int | None] = None
    """How many new reservation ids and certificates a trial may create (None: no limit)."""
    no_free_id: ClassVar[str] = "no free reservation id left"
    """The refusal when no new reservation id is left."""

    # ---------------------------------------------------------------------------------------- rendering
    def user(self, user_id: str, record: dict[str, Any]) -> dict[str, Any]:
        """Render a user record as the mode's look-up returns it."""
        return record

    def reservation(self, record: dict[str, Any]) -> dict[str, Any]:
        """Render a reservation record as the mode's tools return it."""
        return record

    def reservation_json(self, rows: Rows, reservation_id: str) -> str:
        """The JSON of a reservation as the tools return it."""
        record = reservation_record(rows.conn, reservation_id)
        if record is None:
            raise ToolError(f"reservation {reservation_id!r} not found")
        return json_text(self.reservation(record))  # json.dumps' text

    def direct_flights(self, legs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Render the results of a direct flight search."""
        return legs

    def onestop_leg(self, leg: dict[str, Any], date: str) -> dict[str, Any]:
        """Render one flight of a one-stop itinerary (with its date)."""
        return {**leg, "date": date}

    # ---------------------------------------------------------------------------------------- one-stop search
    def second_date(self, date: str, arrival: str) -> str | None:
        """The date a connection leaves after a first flight arriving at ``arrival`` (None: no such date)."""
        return next_day(date) if arrival.endswith("+1") else date

    def arrives_at(self, arrival: str) -> str:
        """The first flight's arrival as compared with a connection's departure time."""
        return arrival.removesuffix("+1")

    def onestop(self, conn: sqlite3.Connection, origin: str, destination: str, date: str) -> list[Any]:
        """The one-stop itineraries from ``origin`` to ``destination``, the first flight leaving on ``date``."""
        results: list[Any] = []
        for first, stop, _, arrival in available_flights(conn, origin, None, date):
            date2 = self.second_date(date, arrival)
            if date2 is None:
                continue
            arrives_at = self.arrives_at(arrival)
            for second, _, departure, _ in available_flights(conn, stop, destination, date2):
                if departure < arrives_at:
                    continue
                leg1 = flight_on_date(conn, first, date)
                leg2 = flight_on_date(conn, second, date2)
                assert leg1 is not None and leg2 is not None
                results.append([self.onestop_leg(leg1, date), self.onestop_leg(leg2, date2)])
        return results

    # ---------------------------------------------------------------------------------------- checks
    def check_changeable(self, reservation: Row) -> None:
        """Refuse to change a reservation the mode protects (none here: a cancelled one may change again)."""

    def check_booking(self, passengers: int, total_baggages: int, nonfree_baggages: int) -> None:
        """Refuse a booking's passenger and bag counts (none here)."""

    def check_bags(self, total_baggages: int, nonfree_baggages: int) -> None:
        """Refuse a bag update's counts (none here)."""

    def seats_needed(self, demand: int, passengers: int) -> int:
        """The seats a flight date must have left: the passengers (a flight listed twice counts once here)."""
        return passengers

    def check_payment_amount(self, payment_id: str, amount: float) -> None:
        """Refuse a payment amount (none here)."""

    def balance_needed(self, charged: float, amount: float) -> float:
        """What a gift card or certificate must hold: this payment's ``amount`` (each checked on its own)."""
        return amount

    def payments_add_up(self, paid: float, total: float) -> bool:
        """Whether the payments match the total: exactly, as floats."""
        return paid == total

    def check_certificate(self, amount: float) -> None:
        """Refuse a certificate amount (none here)."""

    def certificate_numbers(self) -> Iterable[int]:
        """The numbers a new certificate may take, in order."""
        return itertools.count(FIRST_CERTIFICATE) if self.new_ids is None else range(
            FIRST_CERTIFICATE, FIRST_CERTIFICATE + self.new_ids)

    def new_reservation_id(self, rows: Rows) -> str:
        """Return the first id of HATHAT, HATHAU, HATHAV, HATHAW, ... that no reservation has (within the limit)."""
        # the ids starting with HATH (case-sensitively, as the candidates compare), found by the key's index
        taken = {r[0] for r in rows.conn.execute("SELECT id FROM reservations WHERE id >= 'HATH' AND id < 'HATI'")}
        candidates = (f"HATH{a}{b}" for a, b in itertools.product(ID_ALPHABET, repeat=2))
        ids: Iterator[str] = itertools.dropwhile(lambda c: c != FIRST_RESERVATION_ID, candidates)
        if self.new_ids is not None:
            ids = itertools.islice(ids, self.new_ids)
        for candidate in ids:
            if candidate not in taken:
                return candidate
        raise ToolError(self.no_free_id)

    # ---------------------------------------------------------------------------------------- bookkeeping
    def after_booking(self, rows: Rows, segments: Sequence[Segment], cabin: str, passengers: int) -> None:
        """Bookkeeping after a booking (none here: seats never change)."""

    def after_cancel(self, rows: Rows, reservation: Row, history: Sequence[tuple[str, float]]) -> None:
        """Bookkeeping after a cancellation (none here: no seats or balances come back)."""

    def after_flight_change(self, rows: Rows, reservation: Row, change: FlightChange) -> None:
        """Bookkeeping after a flight change (none here: seats and the cabin stay)."""


class FlightChange:
    """What a flight change did: the old segments, the positions kept, the dates newly taken, cabin and party.

    Args:
        old: the reservation's segments before the change.
        kept: positions of the old segments kept as they were.
        taken: the ``flight_dates`` rows of the new or re-priced segments.
        cabin: the requested cabin.
        passengers: the number of passengers.
    """

    def __init__(self, old: list[Row], kept: set[int], taken: list[Row], cabin: str, passengers: int):
        self.old, self.kept, self.taken, self.cabin, self.passengers = old, kept, taken, cabin, passengers


class TausimMode(ToolMode):
    """Mode ``tausim``: the peer's interface and prices, corrected bookkeeping and stricter checks."""

    name = "tausim"
    drops_undeclared_keys = False

    def check_changeable(self, reservation: Row) -> None:
        """Refuse to change a cancelled reservation."""
        if reservation["status"] == "cancelled":
            raise ToolError(f"reservation {reservation['id']} is cancelled and can no longer be changed")

    def check_booking(self, passengers: int, total_baggages: int, nonfree_baggages: int) -> None:
        """Refuse a booking without passengers or with inconsistent bag counts."""
        if passengers == 0:
            raise ToolError("a reservation needs at least one passenger")
        check_bag_counts(total_baggages, nonfree_baggages)

    def check_bags(self, total_baggages: int, nonfree_baggages: int) -> None:
        """Refuse inconsistent bag counts."""
        check_bag_counts(total_baggages, nonfree_baggages)

    def seats_needed(self, demand: int, passengers: int) -> int:
        """The seats a flight date must have left: all this call takes of it (a flight listed twice counts twice)."""
        return demand

    def check_payment_amount(self, payment_id: str, amount: float) -> None:
        """Refuse a payment amount that is not positive."""
        if amount <= 0:
            raise ToolError(f"payment amounts must be positive ({payment_id}: {amount})")

    def balance_needed(self, charged: float, amount: float) -> float:
        """What a gift card or certificate must hold: everything this booking charges to it."""
        return charged

    def payments_add_up(self, paid: float, total: float) -> bool:
        """Whether the payments match the total at cent precision."""
        return abs(paid - total) < 0.005

    def check_certificate(self, amount: float) -> None:
        """Refuse a certificate amount that is not positive."""
        if amount <= 0:
            raise ToolError(f"a certificate's amount must be positive, not {amount}")

    def after_booking(self, rows: Rows, segments: Sequence[Segment], cabin: str, passengers: int) -> None:
        """Take the passengers' seats of the cabin on every booked flight."""
        _take_seats(rows, segments, cabin, passengers)

    def after_cancel(self, rows: Rows, reservation: Row, history: Sequence[tuple[str, float]]) -> None:
        """Give the seats back (on dates that still count seats) and refund gift cards and certificates."""
        reservation_id = reservation["id"]
        seats = len(rows.children("reservation_passengers", "reservation_id", reservation_id))
        for segment in rows.children("reservation_flights", "reservation_id", reservation_id):
            day = rows.get("flight_dates", segment["flight_number"], segment["date"])
            if day is not None:
                add_seats(rows, day, reservation["cabin"], seats)
        _refund_balances(rows, reservation["user_id"], history)

    def after_flight_change(self, rows: Rows, reservation: Row, change: FlightChange) -> None:
        """Give back the seats of dropped segments, take those of new ones, and set the cabin."""
        for segment in change.old:
            if segment["position"] not in change.kept:
                day_back = rows.get("flight_dates", segment["flight_number"], segment["date"])
                if day_back is not None:
                    add_seats(rows, day_back, reservation["cabin"], change.passengers)
        for day in change.taken:
            add_seats(rows, day, change.cabin, -change.passengers)
        rows.update("reservations", reservation, cabin=change.cabin)


class Tau2Mode(ToolMode):
    """Mode ``tau2``: tau2-bench's airline tools (renderings, at most three new ids, seats taken by bookings)."""

    name = "tau2"
    drops_undeclared_keys = False
    new_ids = 3
    no_free_id = "Too many reservations"

    def user(self, user_id: str, record: dict[str, Any]) -> dict[str, Any]:
        """Render a user as tau2's ``User`` model dumps it."""
        return tau2_user(user_id, record)

    def reservation(self, record: dict[str, Any]) -> dict[str, Any]:
        """Render a reservation as tau2's ``Reservation`` model dumps it."""
        return tau2_reservation(record)

    def direct_flights(self, legs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Render direct search results as tau2's ``DirectFlight`` (``date`` null)."""
        return [_direct(leg, None) for leg in legs]

    def onestop_leg(self, leg: dict[str, Any], date: str) -> dict[str, Any]:
        """Render one flight of a one-stop itinerary as tau2's ``DirectFlight``."""
        return _direct(leg, date)

    def second_date(self, date: str, arrival: str) -> str | None:
        """tau2's connection date: :func:`tau2_second_date` after an arrival with ``+1``."""
        return tau2_second_date(date) if "+1" in arrival else date

    def arrives_at(self, arrival: str) -> str:
        """The arrival text itself (tau2 compares the texts, ``+1`` included)."""
        return arrival

    def after_booking(self, rows: Rows, segments: Sequence[Segment], cabin: str, passengers: int) -> None:
        """Take the passengers' seats of the cabin on every booked flight."""
        _take_seats(rows, segments, cabin, passengers)

    def after_flight_change(self, rows: Rows, reservation: Row, change: FlightChange) -> None:
        """Set the reservation's cabin (seats unchanged)."""
        rows.update("reservations", reservation, cabin=change.cabin)


_VARIANTS: dict[str, ToolMode] = {m.name: m for m in (ToolMode(), TausimMode(), Tau2Mode())}


def tool_mode(options: Mapping[str, Any]) -> ToolMode:
    """Return the variant of the options' ``mode`` (default :data:`DEFAULT_MODE`).

    Raises:
        ValueError: an unknown mode.
    """
    mode = options.get("mode", DEFAULT_MODE)
    variant = _VARIANTS.get(mode)
    if variant is None:
        raise ValueError(f"unknown airline tool mode {mode!r} (modes: {', '.join(MODES)})")
    return variant


def lenient_items(options: Mapping[str, Any]) -> bool:
    """Whether the options' mode drops undeclared keys of argument list items (mode ``tau-bench``)."""
    variant = _VARIANTS.get(options.get("mode", DEFAULT_MODE))
    return variant is not None and variant.drops_undeclared_keys


def _take_seats(rows: Rows, segments: Sequence[Segment], cabin: str, passengers: int) -> None:
    for _, day, _ in segments:
        add_seats(rows, day, cabin, -passengers)


def _refund_balances(rows: Rows, user_id: str, history: Sequence[tuple[str, float]]) -> None:
    """Give gift cards and certificates back the net amount each paid (mode ``tausim``)."""
    net: dict[str, float] = {}
    for payment_id, amount in history:
        net[payment_id] = net.get(payment_id, 0) + amount
    get_user(rows, user_id)
    for payment_id, amount in net.items():
        amount = money(amount)
        if amount == 0:
            continue
        method = rows.get("payment_methods", user_id, payment_id)
        if method is not None:
            if has_balance(method):
                add_to_balance(rows, method, amount)
        elif payment_id.startswith("certificate_") and amount > 0:
            rows.insert("payment_methods", {
                "user_id": user_id, "id": payment_id, "position": next_method_position(rows, user_id),
                "source": "certificate", "amount": amount,
            })


# ------------------------------------------------------------------------------------------------ tau2 renderings
_T2_USER = ("user_id", "name", "address", "email", "dob", "payment_methods", "saved_passengers", "membership",
            "reservations")
_T2_METHOD = {"credit_card": ("source", "id", "brand", "last_four"), "gift_card": ("source", "id", "amount"),
              "certificate": ("source", "id", "amount")}
_T2_RESERVATION = ("reservation_id", "user_id", "origin", "destination", "flight_type", "cabin", "flights",
                   "passengers", "payment_history", "created_at", "total_baggages", "nonfree_baggages", "insurance",
                   "status")
_T2_SEGMENT = ("flight_number", "origin", "destination", "date", "price")
_T2_DIRECT = ("flight_number", "origin", "destination", "status", "scheduled_departure_time_est",
              "scheduled_arrival_time_est", "date", "available_seats", "prices")
_T2_CERTIFICATES = 3
"""tau2 gives at most three new certificates (and three new reservation ids) per trial."""


def _keys(obj: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    return {k: obj.get(k) for k in keys}


def tau2_user(user_id: str, rec: dict[str, Any]) -> dict[str, Any]:
    """Render a user record as tau2's ``User`` model dumps it (``user_id`` first, methods in model order)."""
    out = _keys({**rec, "user_id": user_id}, _T2_USER)
    out["payment_methods"] = {k: _keys(m, _T2_METHOD.get(m.get("source", ""), tuple(m)))
                              for k, m in rec["payment_methods"].items()}
    return out


def tau2_reservation(rec: dict[str, Any]) -> dict[str, Any]:
    """Render a reservation as tau2's ``Reservation`` model dumps it (``status`` present, null unless cancelled)."""
    out = _keys(rec, _T2_RESERVATION)
    out["flights"] = [_keys(f, _T2_SEGMENT) for f in rec["flights"]]
    return out


def _direct(leg: dict[str, Any], date: str | None) -> dict[str, Any]:
    """Render a search result as tau2's ``DirectFlight`` (``date`` null for a direct search)."""
    return _keys({**leg, "date": date}, _T2_DIRECT)



def tau2_second_date(date: str) -> str:
    """tau2's date of a connection after a ``+1`` arrival: ``2024-05-<day + 1>`` (no zero padding)."""
    try:
        return f"2024-05-{int(date[-2:]) + 1}"
    except ValueError as e:
        raise ToolError(f"invalid literal for int() with base 10: {date[-2:]!r}") from e

