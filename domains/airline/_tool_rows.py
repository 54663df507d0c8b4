"""What the airline tools share in every mode: constants, one call's row access, and the checks and updates of rows.

Mode differences are not here: they are the variants of :mod:`domains.airline._modes`.
"""

from __future__ import annotations

import functools
import sqlite3
from datetime import date as Date
from datetime import timedelta
from typing import Any

from domains.airline._data import WRITTEN_SEGMENT_KEYS
from domains.airline.models import Base
from simulator.world.kit import Row, TableAccess, ToolContext, ToolError

__all__ = [
    "BAG_FEE", "BOOKING_TIME", "FIRST_CERTIFICATE", "FIRST_RESERVATION_ID", "INSURANCE_FEE", "ID_ALPHABET", "DB",
    "Rows", "add_seats", "add_to_balance", "airport_cities", "append_payment", "available_flights", "bookable",
    "check_bag_counts", "check_change_payment", "check_seats", "get_user", "has_balance", "money",
    "next_day", "next_method_position", "segment_row", "user_method",
]

BOOKING_TIME = "2024-05-15T15:00:00"
"""``created_at`` of every reservation a tool books (the policy's current time)."""
FIRST_RESERVATION_ID = "HATHAT"
"""The first id a booking gives; the next free ones follow (``HATHAU``, ``HATHAV``, ...)."""
FIRST_CERTIFICATE = 3221322
"""Number of the first certificate ``send_certificate`` creates (``certificate_3221322``)."""
BAG_FEE = 50
"""Price of one non-free checked bag, in dollars."""
INSURANCE_FEE = 30
"""Price of travel insurance per passenger, in dollars."""

ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

# Peer data set airports, then the built-in data set's (public facts: IATA code -> city).
_PEER_AIRPORTS = {
    "SFO": "San Francisco", "JFK": "New York", "LAX": "Los Angeles", "ORD": "Chicago", "DFW": "Dallas",
    "DEN": "Denver", "SEA": "Seattle", "ATL": "Atlanta", "MIA": "Miami", "BOS": "Boston", "PHX": "Phoenix",
    "IAH": "Houston", "LAS": "Las Vegas", "MCO": "Orlando", "EWR": "Newark", "CLT": "Charlotte",
    "MSP": "Minneapolis", "DTW": "Detroit", "PHL": "Philadelphia", "LGA": "LaGuardia",
}


def money(x: float) -> float:
    """Round to cents (an int stays an int)."""
    return round(x, 2)


DB = TableAccess(Base.metadata)
"""Every read by key and every write of these tools (through the trial's sqlite3 connection)."""


class Rows:
    """One call's access to the trial database: a row read twice by key is the same dict, so changes add up.

    (A flight date listed twice takes its seats twice; a payment method refunded twice is credited twice.)
    """

    def __init__(self, ctx: ToolContext):
        self.conn: sqlite3.Connection = ctx.conn
        self._seen: dict[tuple[str, tuple[Any, ...]], Row] = {}

    def get(self, table: str, *key: Any) -> Row | None:
        """The row of ``table`` with primary key ``key``, or None."""
        row = self._seen.get((table, key))
        if row is None:
            row = DB.get(self.conn, table, *key)
            if row is not None:
                self._seen[table, key] = row
        return row

    def children(self, table: str, parent: str, key: str) -> list[Row]:
        """The rows of ``table`` whose ``parent`` column is ``key``, in position order."""
        return DB.select(self.conn, table, f"{parent} = ? ORDER BY position", (key,))

    def insert(self, table: str, values: dict[str, Any]) -> None:
        """Insert a row."""
        DB.insert(self.conn, table, values)

    def update(self, table: str, row: Row, **changes: Any) -> None:
        """Set columns of a row (and of ``row``)."""
        DB.update(self.conn, table, row, **changes)

    def delete(self, table: str, row: Row) -> None:
        """Delete a row."""
        DB.delete(self.conn, table, row)
        self._seen = {k: v for k, v in self._seen.items() if v is not row}



def get_user(rows: Rows, user_id: str) -> Row:
    user = rows.get("users", user_id)
    if user is None:
        raise ToolError(f"user {user_id!r} not found")
    return user




def bookable(rows: Rows, flight_number: str, date: str) -> tuple[Row, Row]:
    """Return a flight and its date entry, refusing a flight or date that does not exist or is not available."""
    flight = rows.get("flights", flight_number)
    if flight is None:
        raise ToolError(f"flight {flight_number} not found")
    day = rows.get("flight_dates", flight_number, date)
    if day is None:
        raise ToolError(f"flight {flight_number} not found on date {date}")
    if day["status"] != "available":
        raise ToolError(f"flight {flight_number} is not available on date {date} (status: {day['status']})")
    return flight, day


def check_seats(day: Row, cabin: str, needed: int) -> float:
    """Refuse when fewer than ``needed`` seats are left in the cabin; return the cabin's price."""
    seats, price = day[f"seats_{cabin}"], day[f"price_{cabin}"]
    if seats is None or price is None:
        raise ToolError(f"flight {day['flight_number']} on {day['date']} has no {cabin} cabin for sale")
    if seats < needed:
        raise ToolError(f"not enough seats on flight {day['flight_number']} on {day['date']}: {seats} {cabin} "
                        f"seat(s) left, {needed} needed")
    return price  # type: ignore[no-any-return]


def add_seats(rows: Rows, day: Row, cabin: str, count: int) -> None:
    """Change a cabin's available seats by ``count`` (negative to take seats); no-op without seat counts."""
    current = day[f"seats_{cabin}"]
    if current is not None:
        rows.update("flight_dates", day, **{f"seats_{cabin}": current + count})


def user_method(rows: Rows, user_id: str, payment_id: str) -> Row:
    method = rows.get("payment_methods", user_id, payment_id)
    if method is None:
        raise ToolError(f"payment method {payment_id!r} not found in the profile of user {user_id}")
    return method


def has_balance(method: Row) -> bool:
    return method["source"] in ("gift_card", "certificate")


def check_change_payment(method: Row, cost: float) -> None:
    """Refuse a certificate, and a gift card whose balance is below ``cost``, as payment of a change."""
    if method["source"] == "certificate":
        raise ToolError(f"a certificate ({method['id']}) cannot pay for a change to a reservation")
    if method["source"] == "gift_card" and (method["amount"] or 0) < cost:
        raise ToolError(
            f"gift card {method['id']} has a balance of {method['amount']}, less than the {cost} to pay"
        )


def add_to_balance(rows: Rows, method: Row, amount: float) -> None:
    """Change a gift card's or certificate's balance by ``amount`` (rounded to cents)."""
    rows.update("payment_methods", method, amount=money((method["amount"] or 0) + amount))


def append_payment(rows: Rows, reservation_id: str, history: list[Row], payment_id: str, amount: float) -> None:
    """Append an entry to a reservation's payment history (``history``, its current rows, grows by it)."""
    row: Row = {"reservation_id": reservation_id, "position": len(history), "payment_id": payment_id,
                "amount": amount, "layout": None}
    rows.insert("reservation_payments", row)
    history.append(row)


def next_method_position(rows: Rows, user_id: str) -> int:
    found = rows.conn.execute(
        "SELECT coalesce(max(position), -1) + 1 FROM payment_methods WHERE user_id = ?", (user_id,)
    ).fetchone()
    return int(found[0])




def segment_row(reservation_id: str, position: int, flight: Row, day: Row, price: float) -> Row:
    return {
        "reservation_id": reservation_id, "position": position, "origin": flight["origin"],
        "destination": flight["destination"], "flight_number": flight["id"], "date": day["date"], "price": price,
        "layout": {"": list(WRITTEN_SEGMENT_KEYS)},
    }


@functools.cache
def airport_cities() -> dict[str, str]:
    """IATA code -> city of every airport either data set knows (the peer's, then the built-in one's)."""
    from domains.airline.generate import AIRPORTS  # the built-in network; imported only when listed

    return {**_PEER_AIRPORTS, **{a.code: a.city for a in AIRPORTS if a.code not in _PEER_AIRPORTS}}


def next_day(date: str) -> str | None:
    try:
        return (Date.fromisoformat(date) + timedelta(days=1)).isoformat()
    except ValueError:
        return None



_AVAILABLE = (
    "SELECT f.id, f.destination, f.scheduled_departure_time_est, f.scheduled_arrival_time_est "
    "FROM flights AS f JOIN flight_dates AS d ON d.flight_number = f.id "
    "WHERE f.origin = ? AND d.date = ? AND d.status = 'available'"
)


def available_flights(
    conn: sqlite3.Connection, origin: str, destination: str | None, date: str
) -> list[tuple[str, str, str, str]]:
    """Flights from ``origin`` (to ``destination`` if given) open for booking on ``date``, in file order.

    Returns:
        ``(flight number, destination, scheduled departure time, scheduled arrival time)`` per flight.
    """
    if destination is None:
        return conn.execute(f"{_AVAILABLE} ORDER BY f.position", (origin, date)).fetchall()
    return conn.execute(
        f"{_AVAILABLE} AND f.destination = ? ORDER BY f.position", (origin, date, destination)
    ).fetchall()



def check_bag_counts(total_baggages: int, nonfree_baggages: int) -> None:
    if not 0 <= nonfree_baggages <= total_baggages:
        raise ToolError(f"bag counts must satisfy 0 <= nonfree_baggages <= total_baggages "
                        f"(got {nonfree_baggages} and {total_baggages})")

