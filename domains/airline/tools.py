"""The airline tools, in three modes: ``tau-bench`` (the peer's semantics), ``tausim`` (corrected) and ``tau2``.

Every tool takes the trial's :class:`~simulator.world.tools.ToolContext` first and reads the mode from
``ctx.options["mode"]`` once: each mode is a variant (:mod:`domains.airline._modes`) that holds all its
differences. Look-ups return the record as JSON, exactly as it appears in the data dump. Write
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

import json
from collections import Counter
from typing import Literal

from domains.airline._data import WRITTEN_SEGMENT_KEYS, available_flights_on_date, user_record
from domains.airline._modes import DEFAULT_MODE, MODES, FlightChange, Segment, ToolMode, tool_mode
from domains.airline._tool_args import Cabin, FlightRef, FlightRefs, Money, Passenger, Passengers, Payment, Payments
from domains.airline._tool_rows import (
    BAG_FEE,
    BOOKING_TIME,
    DB,
    INSURANCE_FEE,
    Rows,
    add_to_balance,
    airport_cities,
    append_payment,
    bookable,
    check_change_payment,
    check_seats,
    get_user,
    has_balance,
    money,
    next_method_position,
    segment_row,
    user_method,
)
from simulator.world.kit import (
    Row,
    Toolbox,
    ToolContext,
    ToolError,
    calculate,
    think,
    tool,
    transfer_to_human_agents,
    with_new_keys,
)

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



def _reservation_to_change(mode: ToolMode, rows: Rows, reservation_id: str) -> Row:
    """Return a reservation a write tool changes (the mode may refuse a cancelled one)."""
    reservation = rows.get("reservations", reservation_id)
    if reservation is None:
        raise ToolError(f"reservation {reservation_id!r} not found")
    mode.check_changeable(reservation)
    return reservation


# ------------------------------------------------------------------------------------------------ look-ups
@tool("read", memo=True)
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
    return json.dumps(tool_mode(ctx.options).user(user_id, record))


@tool("read", memo=True)
def get_reservation_details(ctx: ToolContext, reservation_id: str) -> str:
    """Get a reservation's details: trip, cabin, flights, passengers, payments, bags, insurance and status.

    Each flight shows the price paid per passenger; 'status' appears only once the reservation is cancelled.

    Args:
        ctx: the trial's tool context.
        reservation_id: The reservation id, such as '8JX2WO'.
    """
    return tool_mode(ctx.options).reservation_json(Rows(ctx), reservation_id)


@tool("read", memo=True)
def list_all_airports(ctx: ToolContext) -> str:
    """List every airport served: a JSON object mapping the three-letter airport code to its city.

    Args:
        ctx: the trial's tool context.
    """
    codes = {r[0] for r in ctx.conn.execute("SELECT origin FROM flights UNION SELECT destination FROM flights")}
    cities = airport_cities()
    known = {code: city for code, city in cities.items() if code in codes}
    return json.dumps({**known, **{code: code for code in sorted(codes - set(known))}})


@tool("read", memo=True)
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
    return json.dumps(tool_mode(ctx.options).direct_flights(legs))


@tool("read", memo=True)
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
    return json.dumps(tool_mode(ctx.options).onestop(ctx.conn, origin, destination, date))


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
    mode = tool_mode(ctx.options)
    rows = Rows(ctx)
    get_user(rows, user_id)
    n = len(passengers)
    mode.check_booking(n, total_baggages, nonfree_baggages)
    segments, total = _price_flights(mode, rows, flights, cabin, n)
    if insurance == "yes":
        total += INSURANCE_FEE * n
    total += BAG_FEE * nonfree_baggages
    methods, charged = _check_payments(mode, rows, user_id, payment_methods, total)

    reservation_id = mode.new_reservation_id(rows)
    conn = rows.conn
    position = conn.execute("SELECT coalesce(max(position), -1) + 1 FROM reservations").fetchone()[0]
    rows.insert("reservations", {
        "id": reservation_id, "position": position, "user_id": user_id, "origin": origin,
        "destination": destination, "flight_type": flight_type, "cabin": cabin, "created_at": BOOKING_TIME,
        "total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages, "insurance": insurance,
    })
    for i, (f, d, price) in enumerate(segments):
        rows.insert("reservation_flights", segment_row(reservation_id, i, f, d, price))
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
            add_to_balance(rows, method, -spent)
        elif method["source"] == "certificate":
            rows.delete("payment_methods", method)
    mode.after_booking(rows, segments, cabin, n)
    return mode.reservation_json(rows, reservation_id)


def _price_flights(mode: ToolMode, rows: Rows, flights: FlightRefs, cabin: str, n: int) -> tuple[list[Segment], float]:
    """Check that every flight can take ``n`` passengers in the cabin; return the segments and their price."""
    segments: list[Segment] = []
    demand: Counter[tuple[str, str]] = Counter()
    total: float = 0
    for ref in flights:
        flight, day = bookable(rows, ref["flight_number"], ref["date"])
        demand[flight["id"], day["date"]] += n
        price = check_seats(day, cabin, mode.seats_needed(demand[flight["id"], day["date"]], n))
        segments.append((flight, day, price))
        total += price * n
    return segments, total


def _check_payments(mode: ToolMode, rows: Rows, user_id: str, payments: Payments,
                    total: float) -> tuple[dict[str, Row], dict[str, float]]:
    """Check a booking's payments against the methods' balances and the total.

    Returns:
        The payment methods used (by id) and what each is charged.
    """
    methods: dict[str, Row] = {}
    charged: dict[str, float] = {}
    for payment in payments:
        payment_id, amount = payment["payment_id"], payment["amount"]
        method = methods.get(payment_id) or user_method(rows, user_id, payment_id)
        methods[payment_id] = method
        mode.check_payment_amount(payment_id, amount)
        charged[payment_id] = charged.get(payment_id, 0) + amount
        needed = mode.balance_needed(charged[payment_id], amount)
        if has_balance(method) and (method["amount"] or 0) < needed:
            raise ToolError(f"not enough balance in payment method {payment_id}: {method['amount']} available, "
                            f"{needed} to pay")
    paid = sum(p["amount"] for p in payments)
    if not mode.payments_add_up(paid, total):
        raise ToolError(f"payment amounts do not add up: the total price is {money(total)}, the payments "
                        f"add up to {money(paid)}")
    return methods, charged


@tool("write")
def cancel_reservation(ctx: ToolContext, reservation_id: str) -> str:
    """Cancel a whole reservation: every payment is refunded to its method.

    The agent must check the policy's cancellation rules, list the details and get the user's explicit
    confirmation (yes) first.

    Args:
        ctx: the trial's tool context.
        reservation_id: The reservation id, such as 'ZFA04Y'.
    """
    mode = tool_mode(ctx.options)
    rows = Rows(ctx)
    reservation = _reservation_to_change(mode, rows, reservation_id)
    payments = rows.children("reservation_payments", "reservation_id", reservation_id)
    history = [(p["payment_id"], p["amount"]) for p in payments]
    for payment_id, amount in history:
        append_payment(rows, reservation_id, payments, payment_id, -amount)
    rows.update("reservations", reservation, status="cancelled", layout=with_new_keys(reservation["layout"], "status"))
    mode.after_cancel(rows, reservation, history)
    return mode.reservation_json(rows, reservation_id)


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
    mode = tool_mode(ctx.options)
    rows = Rows(ctx)
    reservation = _reservation_to_change(mode, rows, reservation_id)
    mode.check_bags(total_baggages, nonfree_baggages)
    cost = BAG_FEE * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    method = user_method(rows, reservation["user_id"], payment_id)
    check_change_payment(method, cost)
    rows.update("reservations", reservation, total_baggages=total_baggages, nonfree_baggages=nonfree_baggages)
    if method["source"] == "gift_card":
        add_to_balance(rows, method, -cost)
    if cost != 0:
        payments = rows.children("reservation_payments", "reservation_id", reservation_id)
        append_payment(rows, reservation_id, payments, payment_id, cost)
    return mode.reservation_json(rows, reservation_id)


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
    mode = tool_mode(ctx.options)
    rows = Rows(ctx)
    reservation = _reservation_to_change(mode, rows, reservation_id)
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
        flight, day = bookable(rows, ref["flight_number"], ref["date"])
        demand[flight["id"], day["date"]] += n
        price = check_seats(day, cabin, mode.seats_needed(demand[flight["id"], day["date"]], n))
        taken.append(day)
        new.append((flight["id"], day["date"], price, flight["origin"], flight["destination"]))
        total += price * n
    difference = money(total - sum(s["price"] for s in old) * n)
    method = user_method(rows, reservation["user_id"], payment_id)
    check_change_payment(method, difference)

    mode.after_flight_change(rows, reservation, FlightChange(old, kept, taken, cabin, n))
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
        add_to_balance(rows, method, -difference)
    if difference != 0:
        payments = rows.children("reservation_payments", "reservation_id", reservation_id)
        append_payment(rows, reservation_id, payments, payment_id, difference)
    return mode.reservation_json(rows, reservation_id)


@tool("write")
def update_reservation_passengers(ctx: ToolContext, reservation_id: str, passengers: Passengers) -> str:
    """Replace the passengers of a reservation; the number of passengers cannot change.

    The agent must list the new passengers and get the user's explicit confirmation (yes) first.

    Args:
        ctx: the trial's tool context.
        reservation_id: The reservation id, such as 'ZFA04Y'.
        passengers: Every passenger, in order, each {'first_name', 'last_name', 'dob'}.
    """
    mode = tool_mode(ctx.options)
    rows = Rows(ctx)
    _reservation_to_change(mode, rows, reservation_id)
    current = rows.children("reservation_passengers", "reservation_id", reservation_id)
    if len(passengers) != len(current):
        raise ToolError(f"the number of passengers cannot change: reservation {reservation_id} has "
                        f"{len(current)}, {len(passengers)} given")
    for row, person in zip(current, passengers, strict=True):
        rows.update("reservation_passengers", row, first_name=person["first_name"], last_name=person["last_name"],
                    dob=person["dob"], layout=None)
    return mode.reservation_json(rows, reservation_id)


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
    mode = tool_mode(ctx.options)
    rows = Rows(ctx)
    get_user(rows, user_id)
    mode.check_certificate(amount)
    existing = {r[0] for r in rows.conn.execute("SELECT id FROM payment_methods WHERE user_id = ?", (user_id,))}
    certificate_id = next((cid for cid in (f"certificate_{k}" for k in mode.certificate_numbers())
                           if cid not in existing), None)
    if certificate_id is None:
        raise ToolError("Too many certificates")
    rows.insert("payment_methods", {
        "user_id": user_id, "id": certificate_id, "position": next_method_position(rows, user_id),
        "source": "certificate", "amount": amount,
    })
    return f"Certificate {certificate_id} added to user {user_id} with amount {amount}."


@tool("read", memo=True)
def get_flight_status(ctx: ToolContext, flight_number: str, date: str) -> str:
    """Get the status of a flight on a date (mode tau2 only).

    Args:
        ctx: the trial's tool context.
        flight_number: The flight number, such as 'HAT001'.
        date: The date of the flight, 'YYYY-MM-DD'.
    """
    if DB.get(ctx.conn, "flights", flight_number) is None:
        raise ToolError(f"Flight {flight_number} not found")
    day = DB.get(ctx.conn, "flight_dates", flight_number, date)
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
