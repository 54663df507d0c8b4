"""Seeded generator of the built-in airline data set (tau-bench file format, our own vocabulary).

The output folder holds ``users.json``, ``reservations.json`` and ``flights.json`` with the same field names,
nesting and id formats as tau-bench v1's airline data, so the airline loader reads both. The network, names,
streets and prices are our own. A ``README.md`` beside them records the seed and sizes; the loader reads only
the three JSON files.

Every random choice comes from one ``numpy.random.Generator(PCG64(seed))`` and every collection is iterated
in a fixed order, so the same seed always gives byte-identical files::

    python -m domains.airline.generate --seed 2024 --out domains/airline/data

The world is frozen at :data:`NOW` (2024-05-15 15:00 EST). Consistency rules of the generated data:

- network: :data:`AIRPORTS` (20 airports, three of them hubs); every spoke has a flight to and from its hub,
  the hubs are linked to each other, and a few busy routes have a second daily flight (:data:`ROUTES`).
  Flight numbers ``HAT001``... are assigned in a random order; times are whole hours EST, an arrival after
  midnight ends in ``+1``.
- every flight has a record for each of the 30 dates from :data:`FIRST_DATE`: before today ``landed``
  (actual times) or ``cancelled``; today ``landed``, ``flying``, ``on time`` or ``delayed`` according to its
  times relative to 15:00; after today ``available`` with seats and prices per cabin (integers).
- a reservation's flights exist and connect: each segment is a flight from its origin to its destination on
  its date, a connection departs after the previous leg arrives (the next day after a ``+1`` arrival), and a
  round trip comes back to where it started. The stored price per segment is the price paid at booking.
- a reservation was created before its first departure and before :data:`NOW`; some were made in the last
  24 hours. It holds one payment of ``sum(prices) * passengers + 30 * passengers (insured) + 50 * non-free
  bags`` on a credit card or gift card of its user; ``nonfree_baggages`` is what exceeds the free allowance
  (:data:`FREE_BAGS`, by the user's membership and the cabin). A cancelled reservation (``status``) also holds
  the refund as a negative amount on the same method.
- ids: user ``first_last_NNNN``; reservation 6 upper-case letters/digits (never ``HATHAT``/``HATHAU``/
  ``HATHAV``, the ids a booking creates); payment methods ``credit_card_NNNNNNN`` / ``gift_card_NNNNNNN`` /
  ``certificate_NNNNNNN`` (never ``certificate_3221322``-``324``, the ids ``send_certificate`` creates).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from simulator.world.kit import IdPool, cli_parser, new_rng, pick, write_data_set

__all__ = [
    "AIRPORTS",
    "CABINS",
    "DATA_FILES",
    "DEFAULT_RESERVATIONS",
    "DEFAULT_SEED",
    "DEFAULT_USERS",
    "FIRST_DATE",
    "FREE_BAGS",
    "N_DATES",
    "NOW",
    "ROUTES",
    "AirlineData",
    "Airport",
    "generate",
    "main",
    "write_data",
]

DEFAULT_SEED = 2024
"""Seed of the shipped data set in ``domains/airline/data``."""
DEFAULT_USERS = 50
"""Number of users in the shipped data set."""
DEFAULT_RESERVATIONS = 120
"""Number of reservations in the shipped data set."""
DATA_FILES = ("users.json", "reservations.json", "flights.json")
"""The files the airline loader reads."""

NOW = datetime(2024, 5, 15, 15, 0, 0)
"""The frozen present of the airline world (EST): flights before it have flown."""
FIRST_DATE = date(2024, 5, 1)
"""First date with flight data."""
N_DATES = 30
"""Number of consecutive dates with flight data (2024-05-01 to 2024-05-30)."""
CABINS = ("basic_economy", "economy", "business")
"""Cabin classes, cheapest first."""
FREE_BAGS: dict[str, dict[str, int]] = {
    "regular": {"basic_economy": 0, "economy": 1, "business": 2},
    "silver": {"basic_economy": 1, "economy": 2, "business": 3},
    "gold": {"basic_economy": 2, "economy": 3, "business": 3},
}
"""Free checked bags per passenger, by the booking user's membership and the cabin."""
BAG_FEE = 50
"""Price of one non-free checked bag."""
INSURANCE_FEE = 30
"""Price of travel insurance per passenger."""

AirlineData = dict[str, dict[str, dict[str, Any]]]
"""``{"users": {...}, "reservations": {...}, "flights": {...}}``, each keyed by id as in the JSON files."""


# --------------------------------------------------------------------------------------------------------
# Vocabulary (ours)
# --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Airport:
    """An airport of the network (code, city and rough coordinates are public facts)."""

    code: str
    city: str
    state: str
    zip_prefix: str
    lat: float
    lon: float
    hub: str | None
    """The hub a spoke is linked to; None for a hub."""


AIRPORTS: tuple[Airport, ...] = (
    Airport("MSP", "Minneapolis", "MN", "554", 44.88, -93.22, None),
    Airport("ATL", "Atlanta", "GA", "303", 33.64, -84.43, None),
    Airport("SLC", "Salt Lake City", "UT", "841", 40.79, -111.98, None),
    Airport("BOS", "Boston", "MA", "021", 42.37, -71.01, "MSP"),
    Airport("CLE", "Cleveland", "OH", "441", 41.41, -81.85, "MSP"),
    Airport("MKE", "Milwaukee", "WI", "532", 42.95, -87.90, "MSP"),
    Airport("OMA", "Omaha", "NE", "681", 41.30, -95.89, "MSP"),
    Airport("MCI", "Kansas City", "MO", "641", 39.30, -94.71, "MSP"),
    Airport("STL", "St. Louis", "MO", "631", 38.75, -90.37, "MSP"),
    Airport("BWI", "Baltimore", "MD", "212", 39.18, -76.67, "ATL"),
    Airport("PIT", "Pittsburgh", "PA", "152", 40.49, -80.23, "ATL"),
    Airport("RDU", "Raleigh", "NC", "276", 35.88, -78.79, "ATL"),
    Airport("BNA", "Nashville", "TN", "372", 36.12, -86.68, "ATL"),
    Airport("TPA", "Tampa", "FL", "336", 27.98, -82.53, "ATL"),
    Airport("MSY", "New Orleans", "LA", "701", 29.99, -90.26, "ATL"),
    Airport("PDX", "Portland", "OR", "972", 45.59, -122.60, "SLC"),
    Airport("SMF", "Sacramento", "CA", "958", 38.70, -121.59, "SLC"),
    Airport("BOI", "Boise", "ID", "837", 43.56, -116.22, "SLC"),
    Airport("ABQ", "Albuquerque", "NM", "871", 35.04, -106.61, "SLC"),
    Airport("TUS", "Tucson", "AZ", "857", 32.12, -110.94, "SLC"),
)
"""The 20 airports: three hubs (MSP, ATL, SLC) and the spokes attached to each."""

_SECOND_DAILY = frozenset({("MSP", "ATL"), ("ATL", "MSP"), ("SLC", "PDX"), ("PDX", "SLC")})


def _routes() -> tuple[tuple[str, str], ...]:
    hubs = [a.code for a in AIRPORTS if a.hub is None]
    pairs: list[tuple[str, str]] = []
    for i, h1 in enumerate(hubs):
        for h2 in hubs[i + 1:]:
            pairs += [(h1, h2), (h2, h1)]
    for a in AIRPORTS:
        if a.hub is not None:
            pairs += [(a.code, a.hub), (a.hub, a.code)]
    return tuple(p for pair in pairs for p in ([pair, pair] if pair in _SECOND_DAILY else [pair]))


ROUTES: tuple[tuple[str, str], ...] = _routes()
"""One entry per daily flight (origin, destination): 44 flights."""

FIRST_NAMES = (
    "Adaeze", "Alejandro", "Anneliese", "Bashir", "Bronwyn", "Cosmin", "Dagny", "Desmond", "Eero", "Esperanza",
    "Fionn", "Gulnara", "Hamid", "Ilse", "Joaquin", "Kalani", "Katarina", "Leilani", "Lorcan", "Malak",
    "Marisol", "Niamh", "Obinna", "Odile", "Paavo", "Renata", "Rustam", "Saoirse", "Siddharth", "Solveig",
    "Tadeo", "Thandiwe", "Ulrich", "Vesna", "Wendell", "Xiadani", "Yannick", "Zainab", "Zoltan", "Beatrix",
)
LAST_NAMES = (
    "Achterberg", "Baptiste", "Bergstrom", "Calloway", "Cardenas", "Demir", "Ekwueme", "Falk", "Galloway",
    "Hakimi", "Halvorsen", "Ibarra", "Jovanovic", "Kaur", "Kinsella", "Lachance", "Magnusson", "Marchetti",
    "Nakashima", "Navarro", "Oyelaran", "Pellegrini", "Quintero", "Rasmussen", "Sandoval", "Szabo",
    "Takahashi", "Ueda", "Valdivia", "Whitfield", "Xiong", "Yilmaz", "Zapata", "Ferreira", "Lindgren",
    "Mwangi", "Okonkwo", "Petrovic", "Sorensen", "Vasquez",
)
STREETS = (
    "Aspen Grove Road", "Beacon Hill Drive", "Cedar Bluff Lane", "Driftwood Avenue", "Elm Hollow Court",
    "Fairwind Street", "Glenwood Parkway", "Heron Point Road", "Ivy Gate Lane", "Jasper Street",
    "Kestrel Avenue", "Lakeshore Drive", "Meadowlark Way", "Nightingale Court", "Oak Terrace",
    "Pinecrest Road", "Quail Run", "Riverbend Avenue", "Stonebridge Lane", "Thistle Way",
)
UNIT_KINDS = ("Apt", "Suite", "Unit")
CARD_BRANDS = ("visa", "mastercard", "amex", "discover")
CERTIFICATE_AMOUNTS = (100, 150, 200, 250, 500)
MEMBERSHIPS = ("regular", "silver", "gold")

# ids tools create later: generated data never uses them
_BOOKING_IDS = ("HATHAT", "HATHAU", "HATHAV")
_CERTIFICATE_DIGITS = ("3221322", "3221323", "3221324")

_TIME = "%Y-%m-%dT%H:%M:%S"


# --------------------------------------------------------------------------------------------------------
# Flights
# --------------------------------------------------------------------------------------------------------
def _miles(a: Airport, b: Airport) -> float:
    lat1, lon1, lat2, lon2 = map(math.radians, (a.lat, a.lon, b.lat, b.lon))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 3958.8 * 2 * math.asin(math.sqrt(h))


def _clock(minutes: int) -> str:
    """Minutes after midnight of the departure day -> ``HH:MM:SS`` (``+1`` on the next day)."""
    day, rest = divmod(minutes, 24 * 60)
    text = f"{rest // 60:02d}:{rest % 60:02d}:00"
    return text + ("+1" if day else "")


def _minutes(clock: str) -> int:
    """Inverse of :func:`_clock`."""
    hh, mm, _ = clock.removesuffix("+1").split(":")
    return int(hh) * 60 + int(mm) + (24 * 60 if clock.endswith("+1") else 0)


def _dates() -> list[date]:
    return [FIRST_DATE + timedelta(days=i) for i in range(N_DATES)]


def _base_prices(miles: float) -> dict[str, int]:
    basic = 40 + 0.09 * miles
    return {"basic_economy": round(basic), "economy": round(basic * 1.8), "business": round(basic * 4.2)}


def _date_record(rng: np.random.Generator, day: date, dep: int, arr: int, base: dict[str, int]) -> dict[str, Any]:
    """One date of one flight, consistent with :data:`NOW` (``dep``/``arr``: scheduled minutes after midnight)."""
    today = NOW.date()
    midnight = datetime(day.year, day.month, day.day)
    if day > today:
        seats = {c: int(rng.integers(0, 21)) if rng.random() < 0.93 else 0 for c in CABINS}
        prices = {c: round(base[c] * float(rng.uniform(0.8, 1.25))) for c in CABINS}
        return {"status": "available", "available_seats": seats, "prices": prices}
    if day < today and rng.random() < 0.07:
        return {"status": "cancelled"}
    delayed = day == today and rng.random() < 0.3
    dep_delay = int(rng.integers(30, 241)) if delayed else int(rng.integers(-20, 31))
    arr_delay = dep_delay + int(rng.integers(-15, 16))
    actual_dep = midnight + timedelta(minutes=dep + dep_delay)
    actual_arr = midnight + timedelta(minutes=arr + arr_delay)
    if actual_arr <= NOW:
        return {"status": "landed", "actual_departure_time_est": actual_dep.strftime(_TIME),
                "actual_arrival_time_est": actual_arr.strftime(_TIME)}
    if actual_dep <= NOW:
        return {"status": "flying", "actual_departure_time_est": actual_dep.strftime(_TIME),
                "estimated_arrival_time_est": actual_arr.strftime(_TIME)}
    return {"status": "delayed" if dep_delay >= 30 else "on time",
            "estimated_departure_time_est": actual_dep.strftime(_TIME),
            "estimated_arrival_time_est": actual_arr.strftime(_TIME)}


def _flights(rng: np.random.Generator) -> dict[str, dict[str, Any]]:
    by_code = {a.code: a for a in AIRPORTS}
    order = rng.permutation(len(ROUTES))
    flights: dict[str, dict[str, Any]] = {}
    used_hours: dict[tuple[str, str], list[int]] = {}
    for number, route_index in enumerate(order, start=1):
        origin, destination = ROUTES[int(route_index)]
        miles = _miles(by_code[origin], by_code[destination])
        duration = max(60, int(round((40 + miles / 7.5) / 30.0)) * 30)  # half hours, at least one hour
        taken = used_hours.setdefault((origin, destination), [])
        while True:  # a second daily flight leaves at least four hours apart from the first
            hour = int(rng.integers(5, 23))
            if all(abs(hour - h) >= 4 for h in taken):
                break
        taken.append(hour)
        dep, arr = hour * 60, hour * 60 + duration
        base = _base_prices(miles)
        flight_number = f"HAT{number:03d}"
        flights[flight_number] = {
            "flight_number": flight_number,
            "origin": origin,
            "destination": destination,
            "scheduled_departure_time_est": _clock(dep),
            "scheduled_arrival_time_est": _clock(arr),
            "dates": {d.isoformat(): _date_record(rng, d, dep, arr, base) for d in _dates()},
            "_base": base,  # removed before returning; used to price past bookings
        }
    return flights


# --------------------------------------------------------------------------------------------------------
# Users
# --------------------------------------------------------------------------------------------------------
def _dob(rng: np.random.Generator, first_year: int = 1950, last_year: int = 2004) -> str:
    start = date(first_year, 1, 1)
    span = (date(last_year, 12, 31) - start).days
    return (start + timedelta(days=int(rng.integers(0, span + 1)))).isoformat()


def _person(rng: np.random.Generator) -> dict[str, str]:
    return {"first_name": pick(rng, FIRST_NAMES), "last_name": pick(rng, LAST_NAMES), "dob": _dob(rng)}


def _payment_methods(rng: np.random.Generator, ids: IdPool) -> dict[str, dict[str, Any]]:
    sources = ["credit_card"] * int(rng.choice([0, 1, 2], p=[0.15, 0.6, 0.25]))
    sources += ["gift_card"] * int(rng.choice([0, 1, 2], p=[0.45, 0.4, 0.15]))
    sources += ["certificate"] * int(rng.choice([0, 1, 2], p=[0.5, 0.35, 0.15]))
    if "credit_card" not in sources and "gift_card" not in sources:
        sources.append("credit_card")
    methods: dict[str, dict[str, Any]] = {}
    for index in rng.permutation(len(sources)):
        source = sources[int(index)]
        method_id = f"{source}_{ids.digits(7)}"
        if source == "credit_card":
            methods[method_id] = {"source": source, "brand": pick(rng, CARD_BRANDS),
                                  "last_four": f"{int(rng.integers(0, 10000)):04d}", "id": method_id}
        elif source == "gift_card":
            methods[method_id] = {"source": source, "amount": int(rng.integers(10, 401)), "id": method_id}
        else:
            methods[method_id] = {"source": source, "amount": int(pick(rng, CERTIFICATE_AMOUNTS)), "id": method_id}
    return methods


def _users(rng: np.random.Generator, n_users: int) -> dict[str, dict[str, Any]]:
    pairs = [(f, last) for f in FIRST_NAMES for last in LAST_NAMES]
    if n_users > len(pairs):
        raise ValueError(f"n_users={n_users}: at most {len(pairs)} distinct names are available")
    chosen = rng.choice(len(pairs), size=n_users, replace=False)
    suffixes, method_ids = IdPool(rng), IdPool(rng, _CERTIFICATE_DIGITS)
    users: dict[str, dict[str, Any]] = {}
    for index in chosen:
        first, last = pairs[int(index)]
        home = pick(rng, AIRPORTS)
        address2 = "" if rng.random() < 0.3 else f"{pick(rng, UNIT_KINDS)} {int(rng.integers(1, 400))}"
        users[f"{first.lower()}_{last.lower()}_{suffixes.digits(4)}"] = {
            "name": {"first_name": first, "last_name": last},
            "address": {
                "address1": f"{int(rng.integers(10, 9900))} {pick(rng, STREETS)}",
                "address2": address2,
                "city": home.city,
                "country": "USA",
                "state": home.state,
                "zip": f"{home.zip_prefix}{int(rng.integers(0, 100)):02d}",
            },
            "email": f"{first.lower()}.{last.lower()}{int(rng.integers(10, 1000))}@example.com",
            "dob": _dob(rng, 1950, 2002),
            "payment_methods": _payment_methods(rng, method_ids),
            "saved_passengers": [_person(rng) for _ in range(int(rng.choice([0, 1, 2], p=[0.25, 0.5, 0.25])))],
            "membership": str(rng.choice(MEMBERSHIPS, p=[0.4, 0.33, 0.27])),
            "reservations": [],
        }
    return users


# --------------------------------------------------------------------------------------------------------
# Reservations
# --------------------------------------------------------------------------------------------------------
Leg = tuple[str, date]
"""A flight number and the date it flies."""


class _Network:
    """Itineraries over the generated flights (direct, or one stop as a one-stop search finds them)."""

    def __init__(self, flights: dict[str, dict[str, Any]]):
        self.flights = flights
        self.from_origin: dict[str, list[str]] = {}
        for number, f in flights.items():
            self.from_origin.setdefault(f["origin"], []).append(number)

    def itineraries(self, origin: str, destination: str, day: date) -> list[list[Leg]]:
        """Direct flights and one-stop connections from ``origin`` to ``destination`` leaving on ``day``."""
        found: list[list[Leg]] = []
        for n1 in self.from_origin.get(origin, []):
            f1 = self.flights[n1]
            if f1["destination"] == destination:
                found.append([(n1, day)])
                continue
            arrival = f1["scheduled_arrival_time_est"]
            day2 = day + timedelta(days=1) if arrival.endswith("+1") else day
            for n2 in self.from_origin.get(f1["destination"], []):
                f2 = self.flights[n2]
                if f2["destination"] == destination and f2["scheduled_departure_time_est"] > arrival:
                    found.append([(n1, day), (n2, day2)])
        return [legs for legs in found if legs[-1][1] < FIRST_DATE + timedelta(days=N_DATES)]

    def departure(self, leg: Leg) -> datetime:
        number, day = leg
        return datetime(day.year, day.month, day.day) + timedelta(
            minutes=_minutes(self.flights[number]["scheduled_departure_time_est"]))

    def arrival(self, leg: Leg) -> datetime:
        number, day = leg
        return datetime(day.year, day.month, day.day) + timedelta(
            minutes=_minutes(self.flights[number]["scheduled_arrival_time_est"]))


def _trip(rng: np.random.Generator, net: _Network, home: str) -> tuple[str, str, str, list[Leg]]:
    """Draw (origin, destination, flight type, legs) for one reservation."""
    codes = [a.code for a in AIRPORTS]
    dates = _dates()
    while True:
        origin = home if rng.random() < 0.6 else pick(rng, codes)
        destination = pick(rng, codes)
        if destination == origin:
            continue
        when = rng.random()
        if when < 0.3:  # outbound already flown
            day = dates[int(rng.integers(0, 13))]
        elif when < 0.38:  # outbound today
            day = NOW.date()
        else:
            day = dates[int(rng.integers(15, N_DATES - 1))]
        options = net.itineraries(origin, destination, day)
        if not options:
            continue
        outbound = pick(rng, options)
        if rng.random() < 0.55:
            return origin, destination, "one_way", outbound
        back_day = net.arrival(outbound[-1]).date() + timedelta(days=int(rng.integers(1, 8)))
        returns = [r for r in net.itineraries(destination, origin, back_day)
                   if net.departure(r[0]) > net.arrival(outbound[-1])]
        if returns:
            return origin, destination, "round_trip", outbound + pick(rng, returns)


def _created_at(rng: np.random.Generator, first_departure: datetime) -> str:
    """Draw a booking time.

    Either within the last 24 hours (only for trips leaving more than a day after :data:`NOW`), or at least
    25 hours ago and at least two hours before the first departure, so the 24-hour rule never hangs on minutes.
    """
    if first_departure > NOW + timedelta(days=1) and rng.random() < 0.14:
        earliest, latest = NOW - timedelta(hours=23), NOW - timedelta(hours=1)
    else:
        latest = min(first_departure - timedelta(hours=2), NOW - timedelta(hours=25))
        earliest = latest - timedelta(days=30)
    seconds = int(rng.integers(0, int((latest - earliest).total_seconds()) + 1))
    return (earliest + timedelta(seconds=seconds)).strftime(_TIME)


def _reservation(
    rng: np.random.Generator, reservation_id: str, user_id: str, user: dict[str, Any], net: _Network,
) -> dict[str, Any]:
    home = next(a.code for a in AIRPORTS if a.city == user["address"]["city"])
    origin, destination, flight_type, legs = _trip(rng, net, home)
    cabin = str(rng.choice(CABINS, p=[0.3, 0.4, 0.3]))
    n_passengers = int(rng.choice([1, 2, 3, 4], p=[0.5, 0.3, 0.15, 0.05]))
    passengers: list[dict[str, str]] = []
    if rng.random() < 0.8:
        passengers.append({**user["name"], "dob": user["dob"]})
    for saved in user["saved_passengers"]:
        if len(passengers) < n_passengers and rng.random() < 0.7:
            passengers.append(dict(saved))
    while len(passengers) < n_passengers:
        person = _person(rng)
        if all((p["first_name"], p["last_name"]) != (person["first_name"], person["last_name"]) for p in passengers):
            passengers.append(person)
    segments = []
    for number, day in legs:
        f = net.flights[number]
        segments.append({
            "origin": f["origin"],
            "destination": f["destination"],
            "flight_number": number,
            "date": day.isoformat(),
            "price": round(f["_base"][cabin] * float(rng.uniform(0.8, 1.25))),
        })
    insurance = "yes" if rng.random() < 0.4 else "no"
    free = FREE_BAGS[user["membership"]][cabin] * n_passengers
    total_bags = int(rng.integers(0, free + 1)) if free else 0
    nonfree = 0
    if rng.random() < 0.15:
        nonfree = int(rng.integers(1, 3))
        total_bags = free + nonfree
    total = sum(s["price"] for s in segments) * n_passengers + BAG_FEE * nonfree
    total += INSURANCE_FEE * n_passengers if insurance == "yes" else 0
    methods = [m for m, v in user["payment_methods"].items() if v["source"] in ("credit_card", "gift_card")]
    method = pick(rng, methods)
    created_at = _created_at(rng, net.departure(legs[0]))
    reservation: dict[str, Any] = {
        "reservation_id": reservation_id,
        "user_id": user_id,
        "origin": origin,
        "destination": destination,
        "flight_type": flight_type,
        "cabin": cabin,
        "flights": segments,
        "passengers": passengers,
        "payment_history": [{"payment_id": method, "amount": total}],
        "created_at": created_at,
        "total_baggages": total_bags,
        "nonfree_baggages": nonfree,
        "insurance": insurance,
    }
    if net.departure(legs[0]) > NOW + timedelta(days=1) and rng.random() < 0.08:
        reservation["payment_history"].append({"payment_id": method, "amount": -total})
        reservation["status"] = "cancelled"
    return reservation


# --------------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------------
def generate(
    seed: int = DEFAULT_SEED, *, n_users: int = DEFAULT_USERS, n_reservations: int = DEFAULT_RESERVATIONS,
) -> AirlineData:
    """Generate an airline data set.

    Args:
        seed: seed of the ``numpy.random.Generator(PCG64(seed))`` that makes every random choice.
        n_users: number of users (at most 1,600: one per distinct first/last name pair).
        n_reservations: number of reservations; the first ``n_users`` go one to each user, the rest to users
            drawn at random.

    Returns:
        ``{"users": ..., "reservations": ..., "flights": ...}``, each a dict keyed by id and sorted by id,
        with records shaped as in tau-bench's airline JSON files.

    Raises:
        ValueError: ``n_users`` or ``n_reservations`` is out of range.
    """
    if n_users < 1:
        raise ValueError(f"n_users={n_users}: need at least one user")
    if n_reservations < 0:
        raise ValueError(f"n_reservations={n_reservations}: must not be negative")
    rng = new_rng(seed)
    flights = _flights(rng)
    users = _users(rng, n_users)
    user_ids = list(users)
    net = _Network(flights)
    reservation_ids = IdPool(rng, _BOOKING_IDS)
    reservations: dict[str, dict[str, Any]] = {}
    owners = [user_ids[int(i)] for i in rng.permutation(len(user_ids))][:n_reservations]
    owners += [pick(rng, user_ids) for _ in range(n_reservations - len(owners))]
    for user_id in owners:
        reservation_id = reservation_ids.chars(6)
        reservations[reservation_id] = _reservation(rng, reservation_id, user_id, users[user_id], net)
    for user_id, user in users.items():  # each user lists their reservations in booking order
        mine = [r for r in reservations.values() if r["user_id"] == user_id]
        user["reservations"] = [r["reservation_id"] for r in sorted(mine, key=lambda r: r["created_at"])]
    for f in flights.values():
        del f["_base"]
    return {
        "users": dict(sorted(users.items())),
        "reservations": dict(sorted(reservations.items())),
        "flights": dict(sorted(flights.items())),
    }


def _readme(seed: int, n_users: int, n_reservations: int, data: AirlineData) -> str:
    reservations = data["reservations"].values()
    cancelled = sum(r.get("status") == "cancelled" for r in reservations)
    return (
        "# Built-in airline data set\n\n"
        "Generated; do not edit by hand. Regenerate with:\n\n"
        f"    python -m domains.airline.generate --seed {seed} --users {n_users} --reservations {n_reservations} "
        "--out domains/airline/data\n\n"
        "(or `scripts/generate-data airline`). The loader reads only users.json, reservations.json and "
        "flights.json.\n\n"
        f"The world is frozen at {NOW.isoformat(sep=' ')} EST: flights before it have flown; flights of later "
        "dates are `available`.\n\n"
        f"- seed: {seed}\n"
        f"- users: {len(data['users'])}\n"
        f"- reservations: {len(data['reservations'])} ({cancelled} cancelled)\n"
        f"- flights: {len(data['flights'])} over {N_DATES} dates ({FIRST_DATE.isoformat()} to "
        f"{(FIRST_DATE + timedelta(days=N_DATES - 1)).isoformat()}), {len(AIRPORTS)} airports\n"
    )


def write_data(
    data: AirlineData, out_dir: str | Path, *, seed: int | None = None, n_users: int | None = None,
    n_reservations: int | None = None,
) -> list[Path]:
    """Write a data set as ``users.json``, ``reservations.json`` and ``flights.json`` (indent 2).

    Args:
        data: the output of :func:`generate`.
        out_dir: the folder to write; created if missing.
        seed: when given, also write a ``README.md`` recording how to regenerate the data.
        n_users: number of users passed to :func:`generate` (for the README).
        n_reservations: number of reservations passed to :func:`generate` (for the README).

    Returns:
        The paths written.
    """
    readme = None if seed is None else _readme(
        seed, n_users if n_users is not None else len(data["users"]),
        n_reservations if n_reservations is not None else len(data["reservations"]), data,
    )
    return write_data_set(out_dir, data, DATA_FILES, readme)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: generate the airline data set and write it to a folder.

    Args:
        argv: arguments (default: ``sys.argv[1:]``): ``--seed``, ``--users``, ``--reservations``, ``--out``.

    Returns:
        The exit status (0).
    """
    parser = cli_parser("generate-data airline", "Generate the airline data set (tau-bench file format).",
                        DEFAULT_SEED, Path(__file__).parent / "data")
    parser.add_argument("--users", type=int, default=DEFAULT_USERS, help="number of users")
    parser.add_argument("--reservations", type=int, default=DEFAULT_RESERVATIONS, help="number of reservations")
    args = parser.parse_args(argv)
    try:
        data = generate(args.seed, n_users=args.users, n_reservations=args.reservations)
    except ValueError as e:
        parser.error(str(e))
    paths = write_data(data, args.out, seed=args.seed, n_users=args.users, n_reservations=args.reservations)
    print(f"wrote {', '.join(str(p) for p in paths)}: {len(data['users'])} users, "
          f"{len(data['reservations'])} reservations, {len(data['flights'])} flights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
