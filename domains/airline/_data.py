"""Load the airline JSON files into the relational schema, and dump the schema back to that JSON.

The native format is a folder with ``users.json``, ``reservations.json`` and ``flights.json``, each an object
``{key: record}`` (tau-bench layout; see :mod:`domains.airline.models` for what is kept for a lossless round
trip). Loading validates every field and names file, record key and field on malformed input. Dumping
reads the tables through the raw sqlite3 connection (it runs once per replayed task, so it avoids the ORM)
and rebuilds exactly the nested JSON that was loaded, plus whatever the tools changed.

The same record builders serve the full dump and the look-up tools, so a tool's JSON answer is always the
record as it appears in the dump.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from operator import itemgetter
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from domains._common import strip_user_id
from domains.airline.models import (
    CABINS,
    Flight,
    FlightDate,
    PaymentMethod,
    Reservation,
    ReservationFlight,
    ReservationPassenger,
    ReservationPayment,
    SavedPassenger,
    User,
    UserReservation,
)
from simulator.world.kit import (
    RecordChecker,
    dump_tables,
    group_rows,
    insert_rows,
    key_layout,
    read_tables,
    select_rows,
    shape,
)

__all__ = [
    "FILES",
    "FLIGHT_TYPES",
    "INSURANCE",
    "MEMBERSHIPS",
    "PAYMENT_SOURCES",
    "SEGMENT_KEYS",
    "WRITTEN_SEGMENT_KEYS",
    "available_flights_on_date",
    "dump_all",
    "flight_on_date",
    "flight_record",
    "TABLES",
    "load_folder",
    "load_tables",
    "reservation_record",
    "user_record",
]

FILES = ("users.json", "reservations.json", "flights.json")
"""The data files of an airline data set; the dump has one top-level table per file (without ``.json``)."""

FLIGHT_TYPES = ("one_way", "round_trip")
"""Allowed ``flight_type`` values."""
INSURANCE = ("yes", "no")
"""Allowed ``insurance`` values."""
MEMBERSHIPS = ("regular", "silver", "gold")
"""Allowed ``membership`` values."""
PAYMENT_SOURCES = ("credit_card", "gift_card", "certificate")
"""Allowed payment method ``source`` values."""

# Canonical key orders (the order of the peer files; optional keys in the order tools set them).
USER_KEYS = ("name", "address", "email", "dob", "payment_methods", "saved_passengers", "membership", "reservations")
NAME_KEYS = ("first_name", "last_name")
ADDRESS_KEYS = ("address1", "address2", "city", "country", "state", "zip")
METHOD_KEYS = ("source", "brand", "last_four", "amount", "id")
PERSON_KEYS = ("first_name", "last_name", "dob")
RESERVATION_REQUIRED = (
    "reservation_id", "user_id", "origin", "destination", "flight_type", "cabin", "flights", "passengers",
    "payment_history", "created_at", "total_baggages", "nonfree_baggages", "insurance",
)
RESERVATION_KEYS = (*RESERVATION_REQUIRED, "status")
SEGMENT_KEYS = ("origin", "destination", "flight_number", "date", "price")
"""Key order of a reservation's flight segment in the data files."""
WRITTEN_SEGMENT_KEYS = ["flight_number", "date", "price", "origin", "destination"]
"""Key order of a flight segment written by a tool (the peer adds price, origin, destination to the agent's
``{flight_number, date}``)."""
PAYMENT_KEYS = ("payment_id", "amount")
FLIGHT_KEYS = (
    "flight_number", "origin", "destination", "scheduled_departure_time_est", "scheduled_arrival_time_est", "dates",
)
TIME_KEYS = (
    "actual_departure_time_est", "estimated_departure_time_est", "actual_arrival_time_est",
    "estimated_arrival_time_est",
)
DATE_KEYS = ("status", "available_seats", "prices", *TIME_KEYS)


# ------------------------------------------------------------------------------------------------ loading
TABLES = ("users", "reservations", "flights")
"""The tables of an airline data set (one file each, or one key each of a tau2 ``db.json``)."""


def load_folder(session: Session, folder: Path) -> None:
    """Insert a data set into an empty database.

    Args:
        session: a Session on a database with the airline schema and no rows.
        folder: the data directory (users.json, reservations.json, flights.json), or a tau2 ``db.json`` (the
            file or its folder), whose users may carry their ``user_id``.

    Raises:
        DomainError: a file is missing, not JSON, or a record is malformed or refers to a user or flight that
            does not exist (the message names file, key and field).
    """
    load_tables(session, read_tables(Path(folder), TABLES, "airline"))


def load_tables(session: Session, tables: Mapping[str, tuple[Path, dict[str, Any]]]) -> None:
    """Insert already read tables (``{table: (source, records)}``, see :func:`read_tables`) into an empty database.

    Raises:
        DomainError: a record is malformed or refers to a user or flight that does not exist.
    """
    users = tables["users"][1]
    reservations = tables["reservations"][1]
    flights = tables["flights"][1]
    rows: dict[type, list[dict[str, Any]]] = {
        m: []
        for m in (
            User, PaymentMethod, SavedPassenger, UserReservation, Flight, FlightDate, Reservation,
            ReservationFlight, ReservationPassenger, ReservationPayment,
        )
    }
    _load_users(tables["users"][0], users, rows)
    _load_flights(tables["flights"][0], flights, rows)
    _load_reservations(tables["reservations"][0], reservations, users, flights, rows)
    insert_rows(session, rows)


def _person(r: RecordChecker, raw: Any, field: str) -> dict[str, Any]:
    p = r.obj(raw, field, PERSON_KEYS)
    return {
        "first_name": r.req_string(p, "first_name", field),
        "last_name": r.req_string(p, "last_name", field),
        "dob": r.req_string(p, "dob", field),
        "layout": key_layout([("", p, PERSON_KEYS)]),
    }


def _load_users(path: Path, users: dict[str, Any], rows: dict[type, list[dict[str, Any]]]) -> None:
    for pos, (uid, raw) in enumerate(users.items()):
        r = RecordChecker(path, uid)
        rec = r.obj(strip_user_id(r, raw), "", USER_KEYS)
        name = r.obj(rec["name"], "name", NAME_KEYS)
        addr = r.obj(rec["address"], "address", ADDRESS_KEYS)
        rows[User].append({
            "id": uid, "position": pos,
            "first_name": r.req_string(name, "first_name", "name"),
            "last_name": r.req_string(name, "last_name", "name"),
            **{k: r.req_string(addr, k, "address") for k in ADDRESS_KEYS},
            "email": r.req_string(rec, "email", ""),
            "dob": r.req_string(rec, "dob", ""),
            "membership": r.choice(rec, "membership", "", MEMBERSHIPS),
            "layout": key_layout([("", rec, USER_KEYS), ("name", name, NAME_KEYS), ("address", addr, ADDRESS_KEYS)]),
        })
        methods = r.mapping(rec["payment_methods"], "payment_methods")
        for mpos, (mid, mraw) in enumerate(methods.items()):
            field = f"payment_methods.{mid}"
            m = r.obj(mraw, field, ("source", "id"), METHOD_KEYS)
            r.same_id(r.req_string(m, "id", field), f"{field}.id", mid)
            source = r.choice(m, "source", field, PAYMENT_SOURCES)
            if source == "credit_card":
                r.obj(m, field, ("source", "brand", "last_four", "id"))
            else:
                r.obj(m, field, ("source", "amount", "id"))
            rows[PaymentMethod].append({
                "user_id": uid, "id": mid, "position": mpos, "source": source,
                "brand": r.string(m, "brand", field, optional=True),
                "last_four": r.string(m, "last_four", field, optional=True),
                "amount": r.number(m, "amount", field, optional=True),
                "layout": key_layout([("", m, METHOD_KEYS)]),
            })
        for ppos, praw in enumerate(r.array(rec["saved_passengers"], "saved_passengers")):
            rows[SavedPassenger].append(
                {"user_id": uid, "position": ppos, **_person(r, praw, f"saved_passengers[{ppos}]")}
            )
        for rpos, rid in enumerate(r.strings(rec, "reservations", "") or []):
            rows[UserReservation].append({"user_id": uid, "position": rpos, "reservation_id": rid})


def _cabin_numbers(
    r: RecordChecker, d: Mapping[str, Any], name: str, field: str, integers: bool
) -> dict[str, Any] | None:
    """Return ``{cabin: value}`` of a date's ``available_seats`` or ``prices`` object (None when absent)."""
    if name not in d:
        return None
    where = f"{field}.{name}"
    obj = r.obj(d[name], where, CABINS)
    if integers:
        return {c: r.integer(obj, c, where) for c in CABINS}
    return {c: r.number(obj, c, where) for c in CABINS}


def _load_flights(path: Path, flights: dict[str, Any], rows: dict[type, list[dict[str, Any]]]) -> None:
    for pos, (number, raw) in enumerate(flights.items()):
        r = RecordChecker(path, number)
        rec = r.obj(raw, "", FLIGHT_KEYS)
        r.same_id(r.req_string(rec, "flight_number", ""), "flight_number", number)
        rows[Flight].append({
            "id": number, "position": pos,
            "origin": r.req_string(rec, "origin", ""),
            "destination": r.req_string(rec, "destination", ""),
            "scheduled_departure_time_est": r.req_string(rec, "scheduled_departure_time_est", ""),
            "scheduled_arrival_time_est": r.req_string(rec, "scheduled_arrival_time_est", ""),
            "layout": key_layout([("", rec, FLIGHT_KEYS)]),
        })
        for dpos, (day, draw) in enumerate(r.mapping(rec["dates"], "dates").items()):
            field = f"dates.{day}"
            d = r.obj(draw, field, ("status",), DATE_KEYS)
            status = r.req_string(d, "status", field)
            seats = _cabin_numbers(r, d, "available_seats", field, integers=True)
            prices = _cabin_numbers(r, d, "prices", field, integers=False)
            if status == "available" and (seats is None or prices is None):
                missing = "available_seats" if seats is None else "prices"
                r.fail(f"{field}.{missing}", "missing (a date open for booking needs seats and prices)")
            parts: list[tuple[str, Mapping[str, Any], tuple[str, ...]]] = [("", d, DATE_KEYS)]
            if seats is not None:
                parts.append(("available_seats", d["available_seats"], CABINS))
            if prices is not None:
                parts.append(("prices", d["prices"], CABINS))
            rows[FlightDate].append({
                "flight_number": number, "date": day, "position": dpos, "status": status,
                **{f"seats_{c}": (seats or {}).get(c) for c in CABINS},
                **{f"price_{c}": (prices or {}).get(c) for c in CABINS},
                **{k: r.string(d, k, field, optional=True) for k in TIME_KEYS},
                "layout": key_layout(parts),
            })


def _load_reservations(
    path: Path,
    reservations: dict[str, Any],
    users: Mapping[str, Any],
    flights: Mapping[str, Any],
    rows: dict[type, list[dict[str, Any]]],
) -> None:
    for pos, (rid, raw) in enumerate(reservations.items()):
        r = RecordChecker(path, rid)
        rec = r.obj(raw, "", RESERVATION_REQUIRED, RESERVATION_KEYS)
        r.same_id(r.req_string(rec, "reservation_id", ""), "reservation_id", rid)
        user_id = r.req_string(rec, "user_id", "")
        if user_id not in users:
            r.fail("user_id", f"no user {user_id!r} in users.json")
        rows[Reservation].append({
            "id": rid, "position": pos, "user_id": user_id,
            "origin": r.req_string(rec, "origin", ""),
            "destination": r.req_string(rec, "destination", ""),
            "flight_type": r.choice(rec, "flight_type", "", FLIGHT_TYPES),
            "cabin": r.choice(rec, "cabin", "", CABINS),
            "created_at": r.req_string(rec, "created_at", ""),
            "total_baggages": r.integer(rec, "total_baggages", ""),
            "nonfree_baggages": r.integer(rec, "nonfree_baggages", ""),
            "insurance": r.choice(rec, "insurance", "", INSURANCE),
            "status": r.string(rec, "status", "", optional=True),
            "layout": key_layout([("", rec, RESERVATION_KEYS)]),
        })
        for fpos, fraw in enumerate(r.array(rec["flights"], "flights")):
            field = f"flights[{fpos}]"
            f = r.obj(fraw, field, SEGMENT_KEYS)
            number = r.req_string(f, "flight_number", field)
            if number not in flights:
                r.fail(f"{field}.flight_number", f"no flight {number!r} in flights.json")
            rows[ReservationFlight].append({
                "reservation_id": rid, "position": fpos, "flight_number": number,
                "origin": r.req_string(f, "origin", field),
                "destination": r.req_string(f, "destination", field),
                "date": r.req_string(f, "date", field),
                "price": r.number(f, "price", field),
                "layout": key_layout([("", f, SEGMENT_KEYS)]),
            })
        for ppos, praw in enumerate(r.array(rec["passengers"], "passengers")):
            rows[ReservationPassenger].append(
                {"reservation_id": rid, "position": ppos, **_person(r, praw, f"passengers[{ppos}]")}
            )
        for ppos, praw in enumerate(r.array(rec["payment_history"], "payment_history")):
            field = f"payment_history[{ppos}]"
            p = r.obj(praw, field, PAYMENT_KEYS)
            rows[ReservationPayment].append({
                "reservation_id": rid, "position": ppos,
                "payment_id": r.req_string(p, "payment_id", field),
                "amount": r.number(p, "amount", field),
                "layout": key_layout([("", p, PAYMENT_KEYS)]),
            })


# ------------------------------------------------------------------------------------------------ dumping
def _people(conn: sqlite3.Connection, table: str, parent: str, key: str | None) -> dict[str, list[dict[str, Any]]]:
    """``{parent id: [person]}`` from ``saved_passengers`` or ``reservation_passengers``."""
    out: dict[str, list[dict[str, Any]]] = {}
    current: Any = None
    bucket: list[dict[str, Any]] = []
    for pid, first, last, dob, layout in select_rows(
        conn, f"SELECT {parent}, first_name, last_name, dob, layout FROM {table}", parent, key,
        f"{parent}, position",
    ):
        if pid != current:
            current = pid
            bucket = out[pid] = []
        person = {"first_name": first, "last_name": last, "dob": dob}
        bucket.append(person if layout is None else shape(person, layout))
    return out


def _users(conn: sqlite3.Connection, user_id: str | None) -> dict[str, dict[str, Any]]:
    methods: dict[str, dict[str, Any]] = {}
    current: Any = None
    bucket: dict[str, Any] = {}
    for uid, mid, source, brand, last_four, amount, layout in select_rows(
        conn, "SELECT user_id, id, source, brand, last_four, amount, layout FROM payment_methods", "user_id",
        user_id, "user_id, position",
    ):
        if uid != current:
            current = uid
            bucket = methods[uid] = {}
        m: dict[str, Any] = {"source": source}
        if brand is not None:
            m["brand"] = brand
        if last_four is not None:
            m["last_four"] = last_four
        if amount is not None:
            m["amount"] = amount
        m["id"] = mid
        bucket[mid] = m if layout is None else shape(m, layout)
    saved = _people(conn, "saved_passengers", "user_id", user_id)
    links = group_rows(select_rows(
        conn, "SELECT user_id, reservation_id FROM user_reservations", "user_id", user_id, "user_id, position"
    ))
    out: dict[str, dict[str, Any]] = {}
    for uid, first, last, a1, a2, city, country, state, zip_, email, dob, membership, layout in select_rows(
        conn, "SELECT id, first_name, last_name, address1, address2, city, country, state, zip, email, dob, "
        "membership, layout FROM users", "id", user_id, "position",
    ):
        rec = {
            "name": {"first_name": first, "last_name": last},
            "address": {"address1": a1, "address2": a2, "city": city, "country": country, "state": state,
                        "zip": zip_},
            "email": email,
            "dob": dob,
            "payment_methods": methods.get(uid, {}),
            "saved_passengers": saved.get(uid, []),
            "membership": membership,
            "reservations": links.get(uid, []),
        }
        out[uid] = rec if layout is None else shape(rec, layout)
    return out


def _reservations(conn: sqlite3.Connection, reservation_id: str | None) -> dict[str, dict[str, Any]]:
    segments: dict[str, list[dict[str, Any]]] = {}
    current: Any = None
    bucket: list[dict[str, Any]] = []
    for rid, origin, destination, number, day, price, layout in select_rows(
        conn, "SELECT reservation_id, origin, destination, flight_number, date, price, layout "
        "FROM reservation_flights", "reservation_id", reservation_id, "reservation_id, position",
    ):
        if rid != current:
            current = rid
            bucket = segments[rid] = []
        seg = {"origin": origin, "destination": destination, "flight_number": number, "date": day, "price": price}
        bucket.append(seg if layout is None else shape(seg, layout))
    passengers = _people(conn, "reservation_passengers", "reservation_id", reservation_id)
    payments: dict[str, list[dict[str, Any]]] = {}
    current = None
    for rid, payment_id, amount, layout in select_rows(
        conn, "SELECT reservation_id, payment_id, amount, layout FROM reservation_payments", "reservation_id",
        reservation_id, "reservation_id, position",
    ):
        if rid != current:
            current = rid
            bucket = payments[rid] = []
        entry = {"payment_id": payment_id, "amount": amount}
        bucket.append(entry if layout is None else shape(entry, layout))
    return {row[0]: _reservation(row, segments.get(row[0], []), passengers.get(row[0], []), payments.get(row[0], []))
            for row in select_rows(conn, _RESERVATION_SQL, "id", reservation_id, "position")}


_RESERVATION_SQL = ("SELECT id, user_id, origin, destination, flight_type, cabin, created_at, total_baggages, "
                    "nonfree_baggages, insurance, status, layout FROM reservations")
"""The ``reservations`` columns a record is built from (:func:`_reservation`), without WHERE or ORDER BY."""


def _reservation(row: tuple[Any, ...], flights: list[dict[str, Any]], passengers: list[dict[str, Any]],
                 payments: list[dict[str, Any]]) -> dict[str, Any]:
    """One reservation's record from its row (the columns of :data:`_RESERVATION_SQL`) and its built children."""
    (rid, uid, origin, destination, flight_type, cabin, created_at, total_bags, nonfree_bags, insurance, status,
     layout) = row
    rec: dict[str, Any] = {
        "reservation_id": rid,
        "user_id": uid,
        "origin": origin,
        "destination": destination,
        "flight_type": flight_type,
        "cabin": cabin,
        "flights": flights,
        "passengers": passengers,
        "payment_history": payments,
        "created_at": created_at,
        "total_baggages": total_bags,
        "nonfree_baggages": nonfree_bags,
        "insurance": insurance,
    }
    if status is not None:
        rec["status"] = status
    return rec if layout is None else shape(rec, layout)


_RESERVATION_PARTS_SQL = (
    "SELECT 0, position, origin, destination, flight_number, date, price, layout FROM reservation_flights "
    "WHERE reservation_id = ?1 "
    "UNION ALL SELECT 1, position, first_name, last_name, dob, NULL, NULL, layout FROM reservation_passengers "
    "WHERE reservation_id = ?1 "
    "UNION ALL SELECT 2, position, payment_id, amount, NULL, NULL, NULL, layout FROM reservation_payments "
    "WHERE reservation_id = ?1"
)
"""Every child row of one reservation in one statement: ``(part, position, fields..., layout)``.

Parts: 0 flights, 1 passengers, 2 payments; ``UNION ALL`` returns the stored values unconverted, as the per-table
queries of :func:`_reservations` do. Sorted in Python by the first two columns (unique: each part's primary key),
the order of those queries."""


def _one_reservation(conn: sqlite3.Connection, reservation_id: str) -> dict[str, Any] | None:
    """One reservation's record in two statements; the same record as ``_reservations(conn, id)[id]``."""
    row = conn.execute(_RESERVATION_SQL + " WHERE id = ?", (reservation_id,)).fetchone()
    if row is None:
        return None
    parts: tuple[list[dict[str, Any]], ...] = ([], [], [])
    for part, _, a, b, c, d, e, layout in sorted(conn.execute(_RESERVATION_PARTS_SQL, (reservation_id,)),
                                                 key=_PART_KEY):
        if part == 0:
            entry = {"origin": a, "destination": b, "flight_number": c, "date": d, "price": e}
        elif part == 1:
            entry = {"first_name": a, "last_name": b, "dob": c}
        else:
            entry = {"payment_id": a, "amount": b}
        parts[part].append(entry if layout is None else shape(entry, layout))
    return _reservation(row, *parts)


_PART_KEY = itemgetter(0, 1)
"""The sort key of :data:`_RESERVATION_PARTS_SQL`'s rows: part, position."""


_DATE_COLUMNS = (
    "flight_number, date, status, seats_basic_economy, seats_economy, seats_business, price_basic_economy, "
    "price_economy, price_business, actual_departure_time_est, estimated_departure_time_est, "
    "actual_arrival_time_est, estimated_arrival_time_est, layout"
)


def _date_record(row: tuple[Any, ...]) -> dict[str, Any]:
    """Build a ``dates`` entry from a row of :data:`_DATE_COLUMNS` (without the first two columns' keys)."""
    (_, _, status, s_basic, s_economy, s_business, p_basic, p_economy, p_business, actual_dep, estimated_dep,
     actual_arr, estimated_arr, layout) = row
    rec: dict[str, Any] = {"status": status}
    if s_basic is not None:
        rec["available_seats"] = {"basic_economy": s_basic, "economy": s_economy, "business": s_business}
    if p_basic is not None:
        rec["prices"] = {"basic_economy": p_basic, "economy": p_economy, "business": p_business}
    if actual_dep is not None:
        rec["actual_departure_time_est"] = actual_dep
    if estimated_dep is not None:
        rec["estimated_departure_time_est"] = estimated_dep
    if actual_arr is not None:
        rec["actual_arrival_time_est"] = actual_arr
    if estimated_arr is not None:
        rec["estimated_arrival_time_est"] = estimated_arr
    return rec if layout is None else shape(rec, layout)


def _flights(conn: sqlite3.Connection, flight_number: str | None) -> dict[str, dict[str, Any]]:
    dates: dict[str, dict[str, Any]] = {}
    current: Any = None
    bucket: dict[str, Any] = {}
    for row in select_rows(
        conn, f"SELECT {_DATE_COLUMNS} FROM flight_dates", "flight_number", flight_number,
        "flight_number, position",
    ):
        if row[0] != current:
            current = row[0]
            bucket = dates[current] = {}
        bucket[row[1]] = _date_record(row)
    out: dict[str, dict[str, Any]] = {}
    for number, origin, destination, departure, arrival, layout in select_rows(
        conn, "SELECT id, origin, destination, scheduled_departure_time_est, scheduled_arrival_time_est, layout "
        "FROM flights", "id", flight_number, "position",
    ):
        rec = {
            "flight_number": number,
            "origin": origin,
            "destination": destination,
            "scheduled_departure_time_est": departure,
            "scheduled_arrival_time_est": arrival,
            "dates": dates.get(number, {}),
        }
        out[number] = rec if layout is None else shape(rec, layout)
    return out


def dump_all(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """Return the whole database as ``{"users": {...}, "reservations": {...}, "flights": {...}}``.

    Args:
        conn: a sqlite3 connection holding the airline schema.

    Returns:
        The nested JSON of the three data files, records in file order.
    """
    return dump_tables(conn, {"users": _users, "reservations": _reservations, "flights": _flights})


def user_record(conn: sqlite3.Connection, user_id: str) -> dict[str, Any] | None:
    """Return one user's record as in users.json, or None when there is no such user."""
    return _users(conn, user_id).get(user_id)


def reservation_record(conn: sqlite3.Connection, reservation_id: str) -> dict[str, Any] | None:
    """Return one reservation's record as in reservations.json, or None when there is no such reservation.

    Two statements (the reservation's row, then all its child rows in one), where the dump's builder takes four.
    """
    return _one_reservation(conn, reservation_id)


def flight_record(conn: sqlite3.Connection, flight_number: str) -> dict[str, Any] | None:
    """Return one flight's record as in flights.json (with all its dates), or None when there is no such flight."""
    return _flights(conn, flight_number).get(flight_number)


_ON_DATE = (
    "SELECT f.id, f.origin, f.destination, f.scheduled_departure_time_est, f.scheduled_arrival_time_est, f.layout, "
    + ", ".join(f"d.{c.strip()}" for c in _DATE_COLUMNS.split(","))
    + " FROM flights AS f JOIN flight_dates AS d ON d.flight_number = f.id"
)
"""A flight joined with its entries of the dates: the flight's columns, then :data:`_DATE_COLUMNS`."""


def _on_date_record(row: tuple[Any, ...]) -> dict[str, Any]:
    """Build a flight's record on a date from a row of :data:`_ON_DATE` (see :func:`flight_on_date`)."""
    number, origin, destination, departure, arrival, layout = row[:6]
    rec = {"flight_number": number, "origin": origin, "destination": destination,
           "scheduled_departure_time_est": departure, "scheduled_arrival_time_est": arrival, "dates": None}
    merged = {k: v for k, v in (rec if layout is None else shape(rec, layout)).items() if k != "dates"}
    merged.update(_date_record(row[6:]))
    return merged


def flight_on_date(conn: sqlite3.Connection, flight_number: str, date: str) -> dict[str, Any] | None:
    """Return a flight's record without ``dates``, merged with its entry for ``date`` (as the searches show it).

    Args:
        conn: the sqlite3 connection.
        flight_number: the flight.
        date: the date, ``YYYY-MM-DD``.

    Returns:
        ``{flight_number, origin, destination, scheduled_departure_time_est, scheduled_arrival_time_est,
        status, ...the date's other fields}``, or None when the flight has no entry for that date.
    """
    row = conn.execute(f"{_ON_DATE} WHERE f.id = ? AND d.date = ?", (flight_number, date)).fetchone()
    return None if row is None else _on_date_record(row)


def available_flights_on_date(
    conn: sqlite3.Connection, origin: str, destination: str, date: str
) -> list[dict[str, Any]]:
    """Return the flights from ``origin`` to ``destination`` open for booking on ``date``, in file order.

    One query for all of them; each record is the one :func:`flight_on_date` gives.

    Args:
        conn: the sqlite3 connection.
        origin: the origin airport code.
        destination: the destination airport code.
        date: the date, ``YYYY-MM-DD``.

    Returns:
        The records of the flights whose entry for ``date`` has status ``available``.
    """
    rows = conn.execute(
        f"{_ON_DATE} WHERE f.origin = ? AND d.date = ? AND d.status = 'available' AND f.destination = ? "
        "ORDER BY f.position", (origin, date, destination),
    ).fetchall()
    return [_on_date_record(row) for row in rows]

