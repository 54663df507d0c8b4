"""The airline tools, in two modes: ``tau-bench`` (the peer's semantics) and ``tausim`` (corrected).

Every tool takes the trial's :class:`~simulator.world.tools.ToolContext` first and reads the mode from
``ctx.options["mode"]``. Look-ups return the record as JSON, exactly as it appears in the data dump. Write
tools check everything before they change anything and raise :class:`~simulator.world.tools.ToolError` (shown to
the agent as ``Error: ...``) when they refuse; the dispatcher also rolls the call's transaction back, so a
refused call never changes the state. Successful writes return the changed reservation as JSON. Nothing reads
a clock or a random source: a booking's ``created_at`` is always ``2024-05-15T15:00:00`` (the policy's "now"),
new reservation ids are the first free of ``HATHAT``, ``HATHAU``, ``HATHAV`` (then ``HATHAW``...), new
certificates the first free of ``certificate_3221322``, ``...323``, ``...324`` (then ``...325``...).

Mode ``tau-bench`` reproduces the peer suite (``../shared/spec/tau-bench-semantics.md``), so its tasks grade
the same, including three places where the peer looks wrong:

- booking, changing flights and cancelling never change a flight's available seats;
- changing flights never updates the reservation's ``cabin`` (so a later change compares against the old one);
- cancelling appends the negated payments to the history but restores no gift-card or certificate balance;

and, as the peer also does, a cancelled reservation can still be changed or cancelled again, payment amounts
are checked one by one against a gift card's or certificate's balance, and the payments must equal the total
exactly (as floats).

Mode ``tausim`` (the default for the built-in data set) keeps every tool's interface, checks and prices, and
corrects the bookkeeping:

- seats: booking takes ``len(passengers)`` seats of the cabin on every flight (the check counts a flight listed
  twice twice); cancelling gives them back; changing flights gives back the seats of every dropped segment
  (in the old cabin) and takes seats for every new or re-priced segment (in the new cabin). Seats are given
  back only on dates that still have seat counts (a date that has flown keeps its record as it is);
- cabin: changing flights sets the reservation's ``cabin`` to the requested one;
- refunds: cancelling refunds each payment method the net amount it paid for the reservation (the sum of its
  history entries, which the negated entries balance): a gift card's balance grows by it; a certificate, which
  a booking deletes, comes back with that amount (an id starting with ``certificate_`` that no longer exists
  is re-created as a certificate at the end of the user's methods; an existing one grows). Credit cards have no
  balance to restore. A negative net (a gift card credited by a cheaper flight change) is taken back;
- integrity: a cancelled reservation can be neither changed nor cancelled again; a booking needs at least one
  passenger; payment amounts and certificate amounts must be positive; a method listed twice in one booking is
  checked against its balance with the sum of its amounts; the payments must add up to the total at cent
  precision (``|paid - total| < 0.005``) rather than as exact floats; bag counts must satisfy
  ``0 <= nonfree_baggages <= total_baggages``.

Mode ``tau2`` (the default for a tau2-bench ``db.json``) reproduces tau2-bench's airline tools
(``../shared/spec/tau2-semantics.md``): the tau-bench semantics, plus ``get_flight_status`` and without
``think``; a booking takes ``len(passengers)`` seats of the cabin on every booked flight (cancelling gives
none back); a flight change sets the reservation's ``cabin`` (seats unchanged); ``send_certificate`` refuses
a fourth certificate ("Too many certificates") and a booking a fourth new reservation id ("Too many
reservations"); ``search_onestop_flight`` looks the connection up on tau2's second-leg date
(``2024-05-<day + 1>`` after a ``+1`` arrival, not zero-padded) and keeps a connection leaving at or after the
first flight's arrival time as text; responses are rendered as tau2's models dump them (users carry
``user_id``, a reservation's ``status`` and a direct flight's ``date`` are present as null).

In modes ``tau-bench`` and ``tausim`` ``search_onestop_flight`` pairs a first flight available on the date
with a connecting flight (from its destination to the requested one) available on the same date, or on the next
calendar date when the first flight's arrival time ends in ``+1``; the connection must not leave before the first
flight arrives (time of day, ``+1`` removed; leaving at the arrival time is allowed), and shows the seats and
prices of its own date. An unparsable date finds nothing, as in ``search_direct_flight``. ``list_all_airports``
lists the codes that appear in the flight schedule, named from the peer's and the built-in network's airport
lists (an unknown code is named by itself).

Policy rules (basic economy flights cannot change, at most one certificate, bags can only be added, ...) are
the agent's to apply and are not enforced by the tools in either mode, as in the peer. Money: gift-card and
certificate balances and the amounts the tools compute are rounded to cents (``round(x, 2)``, which keeps an
int an int: the peer's integer prices give integer amounts).
"""

from __future__ import annotations

import functools
import itertools
import json
import sqlite3
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from datetime import date as Date
from datetime import timedelta
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AllowInfNan,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    StrictFloat,
    StrictInt,
    TypeAdapter,
)
from pydantic_core import CoreSchema, core_schema
from typing_extensions import TypedDict

from domains._common import Row, TableAccess, calculate, think, transfer_to_human_agents, with_new_keys
from domains.airline._data import (
    WRITTEN_SEGMENT_KEYS,
    available_flights_on_date,
    flight_on_date,
    reservation_record,
    user_record,
)
from domains.airline.models import Base
from simulator.world.kit import Toolbox, ToolContext, ToolError, tool

__all__ = [
    "BOOKING_TIME",
    "DEFAULT_MODE",
    "MODES",
    "TAU2_TOOLS",
    "TOOLS",
    "FlightRef",
    "Passenger",
    "Payment",
    "airline_toolbox",
    "book_reservation",
    "calculate",
    "cancel_reservation",
    "get_flight_status",
    "get_reservation_details",
    "get_user_details",
    "list_all_airports",
    "search_direct_flight",
    "search_onestop_flight",
    "send_certificate",
    "think",
    "transfer_to_human_agents",
    "update_reservation_baggages",
    "update_reservation_flights",
    "update_reservation_passengers",
]

MODES = ("tau-bench", "tausim", "tau2")
"""Tool modes: the peer's semantics, or the corrected bookkeeping (see the module docstring)."""
DEFAULT_MODE = "tausim"
"""Mode used when the options name none."""
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

_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

# Peer data set airports, then the built-in data set's (public facts: IATA code -> city).
_PEER_AIRPORTS = {
    "SFO": "San Francisco", "JFK": "New York", "LAX": "Los Angeles", "ORD": "Chicago", "DFW": "Dallas",
    "DEN": "Denver", "SEA": "Seattle", "ATL": "Atlanta", "MIA": "Miami", "BOS": "Boston", "PHX": "Phoenix",
    "IAH": "Houston", "LAS": "Las Vegas", "MCO": "Orlando", "EWR": "Newark", "CLT": "Charlotte",
    "MSP": "Minneapolis", "DTW": "Detroit", "PHL": "Philadelphia", "LGA": "LaGuardia",
}


# ------------------------------------------------------------------------------------------------ argument types
def _inline_schema(tp: Any) -> dict[str, Any]:
    """Return ``tp``'s JSON schema with ``$ref``s resolved and titles dropped (one self-contained schema)."""
    schema = TypeAdapter(tp).json_schema()
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return resolve(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: resolve(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


class _Declared:
    """Base of argument types that validate as ``__validate_as__`` and show its self-contained JSON schema.

    The tool decorator reads parameter types with ``typing.get_type_hints``, which drops ``Annotated``
    metadata, so these classes carry the pydantic behaviour themselves (validated values are plain lists and
    numbers). The schema is ``__json_schema__`` when set, else that of ``__validate_as__`` with its
    ``$ref``s inlined (some model APIs accept no ``$defs`` in tool parameters).
    """

    __validate_as__: ClassVar[Any]
    __json_schema__: ClassVar[dict[str, Any] | None] = None

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """Validate as ``__validate_as__``."""
        return handler.generate_schema(cls.__validate_as__)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        """Show ``__json_schema__``, or the inlined schema of ``__validate_as__``."""
        return dict(cls.__json_schema__ or _inline_schema(cls.__validate_as__))


class Money(float, _Declared):
    """A JSON number of dollars, kept as given (``250`` stays an int).

    Booleans, strings, NaN and infinities are refused.
    """

    __validate_as__ = StrictInt | Annotated[StrictFloat, AllowInfNan(False)]
    __json_schema__ = {"type": "number"}  # noqa: RUF012 - read-only declaration


_FORBID_EXTRA = ConfigDict(extra="forbid")


class FlightRef(TypedDict):
    """One flight of an itinerary."""

    __pydantic_config__ = _FORBID_EXTRA  # type: ignore[misc]

    flight_number: Annotated[str, Field(description="Flight number, such as 'HAT001'.")]
    date: Annotated[str, Field(description="Date of the flight, 'YYYY-MM-DD', such as '2024-05-01'.")]


class Passenger(TypedDict):
    """A traveller."""

    __pydantic_config__ = _FORBID_EXTRA  # type: ignore[misc]

    first_name: Annotated[str, Field(description="First name, such as 'Noah'.")]
    last_name: Annotated[str, Field(description="Last name, such as 'Brown'.")]
    dob: Annotated[str, Field(description="Date of birth, 'YYYY-MM-DD', such as '1990-01-01'.")]


class Payment(TypedDict):
    """One payment of a booking."""

    __pydantic_config__ = _FORBID_EXTRA  # type: ignore[misc]

    payment_id: Annotated[str, Field(description="Payment method id from the user's profile, such as "
                                                 "'credit_card_7815826' or 'gift_card_7815826'.")]
    amount: Annotated[Money, Field(description="Amount paid with this method, in dollars.")]


class _Items(_Declared):
    """Base of the argument lists whose items are objects (:class:`FlightRef`, :class:`Passenger`, ...).

    In mode ``tausim`` an item with a key its type does not declare is refused. In mode ``tau-bench`` such keys
    are dropped before validation, as the peer does: it reads the keys it needs from each item and ignores or
    overwrites the others (an agent that copies a flight's ``origin``, ``destination`` and ``price`` into
    ``update_reservation_flights`` gets its change). The mode is read from the validation context, which
    :meth:`simulator.world.tools.Toolbox.dispatch` sets to the trial's domain options (no context: mode ``tausim``).
    Missing or mistyped declared keys are refused in both modes.
    """

    __item__: ClassVar[Any]

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """Validate as ``__validate_as__``, after dropping undeclared item keys in mode ``tau-bench``."""
        declared = frozenset(cls.__item__.__required_keys__ | cls.__item__.__optional_keys__)

        def lenient(value: Any, info: core_schema.ValidationInfo) -> Any:
            options = info.context if isinstance(info.context, Mapping) else {}
            if options.get("mode", DEFAULT_MODE) != "tau-bench" or not isinstance(value, list):
                return value
            return [{k: v for k, v in item.items() if k in declared} if isinstance(item, dict) else item
                    for item in value]

        return core_schema.with_info_before_validator_function(lenient, handler.generate_schema(cls.__validate_as__))


class FlightRefs(list[FlightRef], _Items):
    """A list of :class:`FlightRef`."""

    __validate_as__ = list[FlightRef]
    __item__ = FlightRef


class Passengers(list[Passenger], _Items):
    """A list of :class:`Passenger`."""

    __validate_as__ = list[Passenger]
    __item__ = Passenger


class Payments(list[Payment], _Items):
    """A list of :class:`Payment`."""

    __validate_as__ = list[Payment]
    __item__ = Payment


Cabin = Literal["basic_economy", "economy", "business"]
"""A cabin class."""


# ------------------------------------------------------------------------------------------------ helpers
def _corrected(ctx: ToolContext) -> bool:
    """True in mode ``tausim``, False in mode ``tau-bench``."""
    mode = ctx.options.get("mode", DEFAULT_MODE)
    if mode not in MODES:
        raise ValueError(f"unknown airline tool mode {mode!r} (modes: {', '.join(MODES)})")
    return bool(mode == "tausim")


def _tau2(ctx: ToolContext) -> bool:
    """True in mode ``tau2``."""
    return bool(ctx.options.get("mode") == "tau2")


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


def _money(x: float) -> float:
    """Round to cents (an int stays an int)."""
    return round(x, 2)


_DB = TableAccess(Base.metadata)
"""Every read by key and every write of these tools (through the trial's sqlite3 connection)."""


class _Rows:
    """One call's access to the trial database: a row read twice by key is the same dict, so changes add up.

    (A flight date listed twice takes its seats twice; a payment method refunded twice is credited twice.)
    """

    def __init__(self, ctx: ToolContext):
        self.conn: sqlite3.Connection = ctx.conn
        self.tau2 = _tau2(ctx)
        self._seen: dict[tuple[str, tuple[Any, ...]], Row] = {}

    def get(self, table: str, *key: Any) -> Row | None:
        """The row of ``table`` with primary key ``key``, or None."""
        row = self._seen.get((table, key))
        if row is None:
            row = _DB.get(self.conn, table, *key)
            if row is not None:
                self._seen[table, key] = row
        return row

    def children(self, table: str, parent: str, key: str) -> list[Row]:
        """The rows of ``table`` whose ``parent`` column is ``key``, in position order."""
        return _DB.select(self.conn, table, f"{parent} = ? ORDER BY position", (key,))

    def insert(self, table: str, values: dict[str, Any]) -> None:
        """Insert a row."""
        _DB.insert(self.conn, table, values)

    def update(self, table: str, row: Row, **changes: Any) -> None:
        """Set columns of a row (and of ``row``)."""
        _DB.update(self.conn, table, row, **changes)

    def delete(self, table: str, row: Row) -> None:
        """Delete a row."""
        _DB.delete(self.conn, table, row)
        self._seen = {k: v for k, v in self._seen.items() if v is not row}


def _get_user(rows: _Rows, user_id: str) -> Row:
    user = rows.get("users", user_id)
    if user is None:
        raise ToolError(f"user {user_id!r} not found")
    return user


def _reservation_to_change(ctx: ToolContext, rows: _Rows, reservation_id: str) -> Row:
    """Return a reservation a write tool changes; in mode ``tausim`` refuse a cancelled one."""
    reservation = rows.get("reservations", reservation_id)
    if reservation is None:
        raise ToolError(f"reservation {reservation_id!r} not found")
    if reservation["status"] == "cancelled" and _corrected(ctx):
        raise ToolError(f"reservation {reservation_id} is cancelled and can no longer be changed")
    return reservation


def _reservation_json(rows: _Rows, reservation_id: str) -> str:
    record = reservation_record(rows.conn, reservation_id)
    if record is None:
        raise ToolError(f"reservation {reservation_id!r} not found")
    return json.dumps(tau2_reservation(record) if rows.tau2 else record)


def _bookable(rows: _Rows, flight_number: str, date: str) -> tuple[Row, Row]:
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


def _check_seats(day: Row, cabin: str, needed: int) -> float:
    """Refuse when fewer than ``needed`` seats are left in the cabin; return the cabin's price."""
    seats, price = day[f"seats_{cabin}"], day[f"price_{cabin}"]
    if seats is None or price is None:
        raise ToolError(f"flight {day['flight_number']} on {day['date']} has no {cabin} cabin for sale")
    if seats < needed:
        raise ToolError(f"not enough seats on flight {day['flight_number']} on {day['date']}: {seats} {cabin} "
                        f"seat(s) left, {needed} needed")
    return price  # type: ignore[no-any-return]


def _add_seats(rows: _Rows, day: Row, cabin: str, count: int) -> None:
    """Change a cabin's available seats by ``count`` (negative to take seats); no-op without seat counts."""
    current = day[f"seats_{cabin}"]
    if current is not None:
        rows.update("flight_dates", day, **{f"seats_{cabin}": current + count})


def _user_method(rows: _Rows, user_id: str, payment_id: str) -> Row:
    method = rows.get("payment_methods", user_id, payment_id)
    if method is None:
        raise ToolError(f"payment method {payment_id!r} not found in the profile of user {user_id}")
    return method


def _has_balance(method: Row) -> bool:
    return method["source"] in ("gift_card", "certificate")


def _check_change_payment(method: Row, cost: float) -> None:
    """Refuse a certificate, and a gift card whose balance is below ``cost``, as payment of a change."""
    if method["source"] == "certificate":
        raise ToolError(f"a certificate ({method['id']}) cannot pay for a change to a reservation")
    if method["source"] == "gift_card" and (method["amount"] or 0) < cost:
        raise ToolError(
            f"gift card {method['id']} has a balance of {method['amount']}, less than the {cost} to pay"
        )


def _add_to_balance(rows: _Rows, method: Row, amount: float) -> None:
    """Change a gift card's or certificate's balance by ``amount`` (rounded to cents)."""
    rows.update("payment_methods", method, amount=_money((method["amount"] or 0) + amount))


def _append_payment(rows: _Rows, reservation_id: str, history: list[Row], payment_id: str, amount: float) -> None:
    """Append an entry to a reservation's payment history (``history``, its current rows, grows by it)."""
    row: Row = {"reservation_id": reservation_id, "position": len(history), "payment_id": payment_id,
                "amount": amount, "layout": None}
    rows.insert("reservation_payments", row)
    history.append(row)


def _next_method_position(rows: _Rows, user_id: str) -> int:
    found = rows.conn.execute(
        "SELECT coalesce(max(position), -1) + 1 FROM payment_methods WHERE user_id = ?", (user_id,)
    ).fetchone()
    return int(found[0])


def _new_reservation_id(rows: _Rows) -> str:
    """Return the first id of HATHAT, HATHAU, HATHAV, HATHAW, ... that no reservation has (tau2: the first three)."""
    # the ids starting with HATH (case-sensitively, as the candidates compare), found by the key's index
    taken = {r[0] for r in rows.conn.execute("SELECT id FROM reservations WHERE id >= 'HATH' AND id < 'HATI'")}
    candidates = (f"HATH{a}{b}" for a, b in itertools.product(_ID_ALPHABET, repeat=2))
    ids: Iterator[str] = itertools.dropwhile(lambda c: c != FIRST_RESERVATION_ID, candidates)
    if rows.tau2:
        ids = itertools.islice(ids, _T2_CERTIFICATES)
    for candidate in ids:
        if candidate not in taken:
            return candidate
    raise ToolError("Too many reservations" if rows.tau2 else "no free reservation id left")


def _segment(reservation_id: str, position: int, flight: Row, day: Row, price: float) -> Row:
    return {
        "reservation_id": reservation_id, "position": position, "origin": flight["origin"],
        "destination": flight["destination"], "flight_number": flight["id"], "date": day["date"], "price": price,
        "layout": {"": list(WRITTEN_SEGMENT_KEYS)},
    }


@functools.cache
def _airport_cities() -> dict[str, str]:
    """IATA code -> city of every airport either data set knows (the peer's, then the built-in one's)."""
    from domains.airline.generate import AIRPORTS  # the built-in network; imported only when listed

    return {**_PEER_AIRPORTS, **{a.code: a.city for a in AIRPORTS if a.code not in _PEER_AIRPORTS}}


def _next_day(date: str) -> str | None:
    try:
        return (Date.fromisoformat(date) + timedelta(days=1)).isoformat()
    except ValueError:
        return None


# ------------------------------------------------------------------------------------------------ look-ups
@tool("read")
def get_user_details(ctx: ToolContext, user_id: str) -> str:
    """Get a user's profile, payment methods (with balances), saved passengers, membership and reservations.

    The profile holds the name, address, email and date of birth; gift cards and certificates show their
    balance ('amount'); 'reservations' lists the user's reservation ids.

    Args:
        ctx: the trial's tool context.
        user_id: The user id, such as 'sara_doe_496'.
    """
    record = user_record(ctx.conn, user_id)
    if record is None:
        raise ToolError(f"user {user_id!r} not found")
    return json.dumps(tau2_user(user_id, record) if _tau2(ctx) else record)


@tool("read")
def get_reservation_details(ctx: ToolContext, reservation_id: str) -> str:
    """Get a reservation's details: trip, cabin, flights, passengers, payments, bags, insurance and status.

    Each flight shows the price paid per passenger; 'status' appears only once the reservation is cancelled.

    Args:
        ctx: the trial's tool context.
        reservation_id: The reservation id, such as '8JX2WO'.
    """
    return _reservation_json(_Rows(ctx), reservation_id)


@tool("read")
def list_all_airports(ctx: ToolContext) -> str:
    """List every airport served: a JSON object mapping the three-letter airport code to its city.

    Args:
        ctx: the trial's tool context.
    """
    codes = {r[0] for r in ctx.conn.execute("SELECT origin FROM flights UNION SELECT destination FROM flights")}
    cities = _airport_cities()
    known = {code: city for code, city in cities.items() if code in codes}
    return json.dumps({**known, **{code: code for code in sorted(codes - set(known))}})


_AVAILABLE = (
    "SELECT f.id, f.destination, f.scheduled_departure_time_est, f.scheduled_arrival_time_est "
    "FROM flights AS f JOIN flight_dates AS d ON d.flight_number = f.id "
    "WHERE f.origin = ? AND d.date = ? AND d.status = 'available'"
)


def _available_flights(
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


@tool("read")
def search_direct_flight(ctx: ToolContext, origin: str, destination: str, date: str) -> str:
    """Search direct flights between two airports on a date.

    Returns a JSON list of the flights open for booking that day, each with its schedule, status, available
    seats and price per passenger of each cabin.

    Args:
        ctx: the trial's tool context.
        origin: The origin airport, three letters, such as 'JFK'.
        destination: The destination airport, three letters, such as 'LAX'.
        date: The date of the flight, 'YYYY-MM-DD', such as '2024-01-01'.
    """
    legs = available_flights_on_date(ctx.conn, origin, destination, date)
    if _tau2(ctx):
        return json.dumps([_direct(leg, None) for leg in legs])
    return json.dumps(legs)


def _tau2_second_date(date: str) -> str:
    """tau2's date of a connection after a ``+1`` arrival: ``2024-05-<day + 1>`` (no zero padding)."""
    try:
        return f"2024-05-{int(date[-2:]) + 1}"
    except ValueError as e:
        raise ToolError(f"invalid literal for int() with base 10: {date[-2:]!r}") from e


@tool("read")
def search_onestop_flight(ctx: ToolContext, origin: str, destination: str, date: str) -> str:
    """Search one-stop itineraries between two airports, the first flight leaving on the given date.

    Returns a JSON list of pairs [first flight, connecting flight], each flight as in search_direct_flight plus
    its 'date'. The connection leaves no earlier than the first flight arrives: on the same date, or on the
    next date when the first flight's arrival time ends in '+1'.

    Args:
        ctx: the trial's tool context.
        origin: The origin airport, three letters, such as 'JFK'.
        destination: The destination airport, three letters, such as 'LAX'.
        date: The date of the first flight, 'YYYY-MM-DD', such as '2024-05-01'.
    """
    conn = ctx.conn
    results: list[Any] = []
    if _tau2(ctx):
        for first, stop, _, arrival in _available_flights(conn, origin, None, date):
            day2 = _tau2_second_date(date) if "+1" in arrival else date
            for second, _, departure, _ in _available_flights(conn, stop, destination, day2):
                if departure < arrival:  # tau2 compares the texts, "+1" included
                    continue
                leg1 = flight_on_date(conn, first, date)
                leg2 = flight_on_date(conn, second, day2)
                assert leg1 is not None and leg2 is not None
                results.append([_direct(leg1, date), _direct(leg2, day2)])
        return json.dumps(results)
    for first, stop, _, arrival in _available_flights(conn, origin, None, date):
        next_day = arrival.endswith("+1")
        date2 = _next_day(date) if next_day else date
        if date2 is None:
            continue
        arrives_at = arrival.removesuffix("+1")
        for second, _, departure, _ in _available_flights(conn, stop, destination, date2):
            if departure < arrives_at:
                continue
            leg1 = flight_on_date(conn, first, date)
            leg2 = flight_on_date(conn, second, date2)
            assert leg1 is not None and leg2 is not None
            results.append([{**leg1, "date": date}, {**leg2, "date": date2}])
    return json.dumps(results)


# ------------------------------------------------------------------------------------------------ writes
@tool("write")
def book_reservation(
    ctx: ToolContext,
    user_id: str,
    origin: str,
    destination: str,
    flight_type: Literal["one_way", "round_trip"],
    cabin: Cabin,
    flights: FlightRefs,
    passengers: Passengers,
    payment_methods: Payments,
    total_baggages: int,
    nonfree_baggages: int,
    insurance: Literal["yes", "no"],
) -> str:
    """Book a reservation.

    The total is the sum of the flights' current prices in the cabin times the number of passengers, plus 30
    dollars per passenger with travel insurance, plus 50 dollars per non-free bag; the payments must add up
    to it exactly. A gift card or certificate must hold at least what it pays; a used certificate is spent
    entirely. The agent must list the booking details and get the user's explicit confirmation (yes) first.

    Args:
        ctx: the trial's tool context.
        user_id: The id of the user who books, such as 'sara_doe_496'.
        origin: The trip's origin airport, such as 'SFO'.
        destination: The trip's destination airport, such as 'JFK'.
        flight_type: 'one_way' or 'round_trip'.
        cabin: 'basic_economy', 'economy' or 'business' (the same for every flight and passenger).
        flights: Every flight of the trip, outbound and return, in order, each {'flight_number', 'date'}.
        passengers: Every passenger, each {'first_name', 'last_name', 'dob'}.
        payment_methods: The payments, each {'payment_id', 'amount'}, adding up to the total price.
        total_baggages: The total number of checked bags.
        nonfree_baggages: The number of checked bags beyond the free allowance (50 dollars each).
        insurance: Whether travel insurance is bought: 'yes' or 'no' (30 dollars per passenger).
    """
    corrected = _corrected(ctx)
    rows = _Rows(ctx)
    _get_user(rows, user_id)
    n = len(passengers)
    if corrected:
        if n == 0:
            raise ToolError("a reservation needs at least one passenger")
        _check_bag_counts(total_baggages, nonfree_baggages)
    segments: list[tuple[Row, Row, float]] = []
    demand: Counter[tuple[str, str]] = Counter()
    total: float = 0
    for ref in flights:
        flight, day = _bookable(rows, ref["flight_number"], ref["date"])
        demand[flight["id"], day["date"]] += n
        price = _check_seats(day, cabin, demand[flight["id"], day["date"]] if corrected else n)
        segments.append((flight, day, price))
        total += price * n
    if insurance == "yes":
        total += INSURANCE_FEE * n
    total += BAG_FEE * nonfree_baggages
    methods: dict[str, Row] = {}
    charged: dict[str, float] = {}
    for payment in payment_methods:
        payment_id, amount = payment["payment_id"], payment["amount"]
        method = methods.get(payment_id) or _user_method(rows, user_id, payment_id)
        methods[payment_id] = method
        if corrected and amount <= 0:
            raise ToolError(f"payment amounts must be positive ({payment_id}: {amount})")
        charged[payment_id] = charged.get(payment_id, 0) + amount
        needed = charged[payment_id] if corrected else amount
        if _has_balance(method) and (method["amount"] or 0) < needed:
            raise ToolError(f"not enough balance in payment method {payment_id}: {method['amount']} available, "
                            f"{needed} to pay")
    paid = sum(p["amount"] for p in payment_methods)
    mismatch = abs(paid - total) >= 0.005 if corrected else paid != total
    if mismatch:
        raise ToolError(f"payment amounts do not add up: the total price is {_money(total)}, the payments "
                        f"add up to {_money(paid)}")

    reservation_id = _new_reservation_id(rows)
    conn = rows.conn
    position = conn.execute("SELECT coalesce(max(position), -1) + 1 FROM reservations").fetchone()[0]
    rows.insert("reservations", {
        "id": reservation_id, "position": position, "user_id": user_id, "origin": origin,
        "destination": destination, "flight_type": flight_type, "cabin": cabin, "created_at": BOOKING_TIME,
        "total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages, "insurance": insurance,
    })
    for i, (f, d, price) in enumerate(segments):
        rows.insert("reservation_flights", _segment(reservation_id, i, f, d, price))
    for i, person in enumerate(passengers):
        rows.insert("reservation_passengers", {"reservation_id": reservation_id, "position": i, **person})
    for i, payment in enumerate(payment_methods):
        rows.insert("reservation_payments", {"reservation_id": reservation_id, "position": i,
                                             "payment_id": payment["payment_id"], "amount": payment["amount"]})
    links = conn.execute("SELECT count(*) FROM user_reservations WHERE user_id = ?", (user_id,)).fetchone()[0]
    rows.insert("user_reservations", {"user_id": user_id, "position": links, "reservation_id": reservation_id})
    for payment_id, spent in charged.items():
        method = methods[payment_id]
        if method["source"] == "gift_card":
            _add_to_balance(rows, method, -spent)
        elif method["source"] == "certificate":
            rows.delete("payment_methods", method)
    if corrected or _tau2(ctx):
        for _, day, _ in segments:
            _add_seats(rows, day, cabin, -n)
    return _reservation_json(rows, reservation_id)


def _check_bag_counts(total_baggages: int, nonfree_baggages: int) -> None:
    if not 0 <= nonfree_baggages <= total_baggages:
        raise ToolError(f"bag counts must satisfy 0 <= nonfree_baggages <= total_baggages "
                        f"(got {nonfree_baggages} and {total_baggages})")


@tool("write")
def cancel_reservation(ctx: ToolContext, reservation_id: str) -> str:
    """Cancel a whole reservation: every payment is refunded to its method.

    The agent must check the policy's cancellation rules, list the details and get the user's explicit
    confirmation (yes) first.

    Args:
        ctx: the trial's tool context.
        reservation_id: The reservation id, such as 'ZFA04Y'.
    """
    corrected = _corrected(ctx)
    rows = _Rows(ctx)
    reservation = _reservation_to_change(ctx, rows, reservation_id)
    payments = rows.children("reservation_payments", "reservation_id", reservation_id)
    history = [(p["payment_id"], p["amount"]) for p in payments]
    for payment_id, amount in history:
        _append_payment(rows, reservation_id, payments, payment_id, -amount)
    rows.update("reservations", reservation, status="cancelled", layout=with_new_keys(reservation["layout"], "status"))
    if corrected:
        seats = len(rows.children("reservation_passengers", "reservation_id", reservation_id))
        for segment in rows.children("reservation_flights", "reservation_id", reservation_id):
            day = rows.get("flight_dates", segment["flight_number"], segment["date"])
            if day is not None:
                _add_seats(rows, day, reservation["cabin"], seats)
        _refund_balances(rows, reservation["user_id"], history)
    return _reservation_json(rows, reservation_id)


def _refund_balances(rows: _Rows, user_id: str, history: Sequence[tuple[str, float]]) -> None:
    """Give gift cards and certificates back the net amount each paid (mode ``tausim``)."""
    net: dict[str, float] = {}
    for payment_id, amount in history:
        net[payment_id] = net.get(payment_id, 0) + amount
    _get_user(rows, user_id)
    for payment_id, amount in net.items():
        amount = _money(amount)
        if amount == 0:
            continue
        method = rows.get("payment_methods", user_id, payment_id)
        if method is not None:
            if _has_balance(method):
                _add_to_balance(rows, method, amount)
        elif payment_id.startswith("certificate_") and amount > 0:
            rows.insert("payment_methods", {
                "user_id": user_id, "id": payment_id, "position": _next_method_position(rows, user_id),
                "source": "certificate", "amount": amount,
            })


@tool("write")
def update_reservation_baggages(
    ctx: ToolContext, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
) -> str:
    """Set the number of checked bags of a reservation; each added non-free bag costs 50 dollars.

    The agent must list the change and its cost and get the user's explicit confirmation (yes) first.

    Args:
        ctx: the trial's tool context.
        reservation_id: The reservation id, such as 'ZFA04Y'.
        total_baggages: The new total number of checked bags.
        nonfree_baggages: The new number of non-free checked bags.
        payment_id: The payment method that pays for added bags, from the user's profile, such as
            'credit_card_7815826' or 'gift_card_7815826' (not a certificate).
    """
    corrected = _corrected(ctx)
    rows = _Rows(ctx)
    reservation = _reservation_to_change(ctx, rows, reservation_id)
    if corrected:
        _check_bag_counts(total_baggages, nonfree_baggages)
    cost = BAG_FEE * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    method = _user_method(rows, reservation["user_id"], payment_id)
    _check_change_payment(method, cost)
    rows.update("reservations", reservation, total_baggages=total_baggages, nonfree_baggages=nonfree_baggages)
    if method["source"] == "gift_card":
        _add_to_balance(rows, method, -cost)
    if cost != 0:
        payments = rows.children("reservation_payments", "reservation_id", reservation_id)
        _append_payment(rows, reservation_id, payments, payment_id, cost)
    return _reservation_json(rows, reservation_id)


@tool("write")
def update_reservation_flights(
    ctx: ToolContext, reservation_id: str, cabin: Cabin, flights: FlightRefs, payment_id: str
) -> str:
    """Change the flights and/or the cabin of a reservation.

    A flight kept from the reservation (same number and date) keeps the price paid when the cabin is
    unchanged; every other flight is priced at its current price in the cabin. The difference between the
    new and the old total (times the number of passengers) is charged to, or refunded to, the payment method.
    The API does not check the policy's rules on changes: the agent must, list the change and its cost, and
    get the user's explicit confirmation (yes) first.

    Args:
        ctx: the trial's tool context.
        reservation_id: The reservation id, such as 'ZFA04Y'.
        cabin: The cabin for every flight: 'basic_economy', 'economy' or 'business'.
        flights: Every flight of the new itinerary, including the ones kept, each {'flight_number', 'date'}.
        payment_id: The payment method that pays or receives the difference, from the user's profile, such as
            'credit_card_7815826' or 'gift_card_7815826' (not a certificate).
    """
    corrected = _corrected(ctx)
    rows = _Rows(ctx)
    reservation = _reservation_to_change(ctx, rows, reservation_id)
    n = len(rows.children("reservation_passengers", "reservation_id", reservation_id))
    old = rows.children("reservation_flights", "reservation_id", reservation_id)
    new: list[tuple[str, str, float, str, str]] = []  # flight number, date, price, origin, destination
    kept: set[int] = set()
    taken: list[Row] = []
    demand: Counter[tuple[str, str]] = Counter()
    total: float = 0
    for ref in flights:
        same = None
        if cabin == reservation["cabin"]:
            same = next(
                (s for s in old if s["flight_number"] == ref["flight_number"] and s["date"] == ref["date"]), None
            )
        if same is not None:
            kept.add(same["position"])
            new.append((same["flight_number"], same["date"], same["price"], same["origin"], same["destination"]))
            total += same["price"] * n
            continue
        flight, day = _bookable(rows, ref["flight_number"], ref["date"])
        demand[flight["id"], day["date"]] += n
        price = _check_seats(day, cabin, demand[flight["id"], day["date"]] if corrected else n)
        taken.append(day)
        new.append((flight["id"], day["date"], price, flight["origin"], flight["destination"]))
        total += price * n
    difference = _money(total - sum(s["price"] for s in old) * n)
    method = _user_method(rows, reservation["user_id"], payment_id)
    _check_change_payment(method, difference)

    if corrected:
        for segment in old:
            if segment["position"] not in kept:
                day_back = rows.get("flight_dates", segment["flight_number"], segment["date"])
                if day_back is not None:
                    _add_seats(rows, day_back, reservation["cabin"], n)
        for day in taken:
            _add_seats(rows, day, cabin, -n)
        rows.update("reservations", reservation, cabin=cabin)
    elif _tau2(ctx):
        rows.update("reservations", reservation, cabin=cabin)  # tau2 sets the cabin (seats unchanged)
    written = {"": list(WRITTEN_SEGMENT_KEYS)}
    for i, (number, day_text, price, origin, destination) in enumerate(new):
        if i < len(old):
            rows.update("reservation_flights", old[i], flight_number=number, date=day_text, price=price,
                        origin=origin, destination=destination, layout=written)
        else:
            rows.insert("reservation_flights", {
                "reservation_id": reservation_id, "position": i, "flight_number": number, "date": day_text,
                "price": price, "origin": origin, "destination": destination, "layout": written,
            })
    for segment in old[len(new):]:
        rows.delete("reservation_flights", segment)
    if method["source"] == "gift_card":
        _add_to_balance(rows, method, -difference)
    if difference != 0:
        payments = rows.children("reservation_payments", "reservation_id", reservation_id)
        _append_payment(rows, reservation_id, payments, payment_id, difference)
    return _reservation_json(rows, reservation_id)


@tool("write")
def update_reservation_passengers(ctx: ToolContext, reservation_id: str, passengers: Passengers) -> str:
    """Replace the passengers of a reservation; the number of passengers cannot change.

    The agent must list the new passengers and get the user's explicit confirmation (yes) first.

    Args:
        ctx: the trial's tool context.
        reservation_id: The reservation id, such as 'ZFA04Y'.
        passengers: Every passenger, in order, each {'first_name', 'last_name', 'dob'}.
    """
    rows = _Rows(ctx)
    _reservation_to_change(ctx, rows, reservation_id)
    current = rows.children("reservation_passengers", "reservation_id", reservation_id)
    if len(passengers) != len(current):
        raise ToolError(f"the number of passengers cannot change: reservation {reservation_id} has "
                        f"{len(current)}, {len(passengers)} given")
    for row, person in zip(current, passengers, strict=True):
        rows.update("reservation_passengers", row, first_name=person["first_name"], last_name=person["last_name"],
                    dob=person["dob"], layout=None)
    return _reservation_json(rows, reservation_id)


@tool("write")
def send_certificate(ctx: ToolContext, user_id: str, amount: Money) -> str:
    """Send a travel certificate of the given amount to a user as compensation.

    The certificate is added to the user's payment methods. Use it only when the policy allows compensation,
    after the user's explicit confirmation (yes).

    Args:
        ctx: the trial's tool context.
        user_id: The user id, such as 'sara_doe_496'.
        amount: The certificate's amount, in dollars.
    """
    rows = _Rows(ctx)
    _get_user(rows, user_id)
    if _corrected(ctx) and amount <= 0:
        raise ToolError(f"a certificate's amount must be positive, not {amount}")
    existing = {r[0] for r in rows.conn.execute("SELECT id FROM payment_methods WHERE user_id = ?", (user_id,))}
    numbers: Any = itertools.count(FIRST_CERTIFICATE)
    if _tau2(ctx):
        numbers = range(FIRST_CERTIFICATE, FIRST_CERTIFICATE + _T2_CERTIFICATES)
    certificate_id = next((cid for cid in (f"certificate_{k}" for k in numbers) if cid not in existing), None)
    if certificate_id is None:
        raise ToolError("Too many certificates")
    rows.insert("payment_methods", {
        "user_id": user_id, "id": certificate_id, "position": _next_method_position(rows, user_id),
        "source": "certificate", "amount": amount,
    })
    return f"Certificate {certificate_id} added to user {user_id} with amount {amount}."


@tool("read")
def get_flight_status(ctx: ToolContext, flight_number: str, date: str) -> str:
    """Get the status of a flight on a date (mode tau2 only).

    Args:
        ctx: the trial's tool context.
        flight_number: The flight number, such as 'HAT001'.
        date: The date of the flight, 'YYYY-MM-DD'.
    """
    if _DB.get(ctx.conn, "flights", flight_number) is None:
        raise ToolError(f"Flight {flight_number} not found")
    day = _DB.get(ctx.conn, "flight_dates", flight_number, date)
    if day is None:
        raise ToolError(f"Flight {flight_number} not found on date {date}")
    return str(day["status"])


TOOLS = (
    book_reservation,
    calculate,
    cancel_reservation,
    get_reservation_details,
    get_user_details,
    list_all_airports,
    search_direct_flight,
    search_onestop_flight,
    send_certificate,
    think,
    transfer_to_human_agents,
    update_reservation_baggages,
    update_reservation_flights,
    update_reservation_passengers,
)
"""The 14 airline tools, in the order their schemas are offered to the agent."""


TAU2_TOOLS = tuple(sorted((*(t for t in TOOLS if t is not think), get_flight_status), key=lambda t: t.__name__))
"""The 14 tools of mode ``tau2``: tau2-bench's set (``get_flight_status`` added, no ``think``)."""


def airline_toolbox(mode: str = DEFAULT_MODE) -> Toolbox:
    """Return a ``Toolbox`` of the airline tools of a mode (``tau2``: :data:`TAU2_TOOLS`)."""
    return Toolbox(TAU2_TOOLS if mode == "tau2" else TOOLS, uses_session=False)
