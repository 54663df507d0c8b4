"""Airline tools in both modes, on a small hand-written world whose every expected value is worked out by hand.

Every call goes through the real dispatch (validation, one transaction per call, rollback on refusal) on a
fresh copy of the world. ``tau-bench`` mode must behave like the peer (seats never change, the cabin is not
updated by a flight change, a cancellation restores no balance); ``tausim`` mode corrects those (see
``domains/airline/tools.py``). Tests that hold in both modes take the ``mode`` fixture.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from domains.airline import AirlineDomain
from simulator.world.database import TemplateDatabase, TrialDatabase, snapshot
from simulator.world.tools import CallOutcome, ToolContext

TAU, TAUSIM = "tau-bench", "tausim"
DAY, NEXT = "2024-05-20", "2024-05-21"


def _day(seats: tuple[int, int, int], prices: tuple[Any, Any, Any]) -> dict[str, Any]:
    cabins = ("basic_economy", "economy", "business")
    return {"status": "available", "available_seats": dict(zip(cabins, seats, strict=True)),
            "prices": dict(zip(cabins, prices, strict=True))}


def _flight(number: str, origin: str, destination: str, dep: str, arr: str, dates: dict[str, Any]) -> dict[str, Any]:
    return {"flight_number": number, "origin": origin, "destination": destination,
            "scheduled_departure_time_est": dep, "scheduled_arrival_time_est": arr, "dates": dates}


def world() -> dict[str, dict[str, Any]]:
    """Two users, four reservations (one cancelled), nine flights around 2024-05-20."""
    flights = [
        _flight("HAT001", "JFK", "ATL", "08:00:00", "10:30:00", {
            "2024-05-14": {"status": "landed", "actual_departure_time_est": "2024-05-14T08:02:00",
                           "actual_arrival_time_est": "2024-05-14T10:41:00"},
            DAY: _day((5, 3, 2), (50, 120, 400)),
            NEXT: _day((9, 9, 9), (60, 130, 420)),
        }),
        _flight("HAT002", "ATL", "SEA", "12:00:00", "15:00:00", {
            DAY: _day((5, 5, 5), (70, 150, 500)),
            NEXT: {"status": "delayed", "estimated_departure_time_est": "2024-05-21T13:00:00",
                   "estimated_arrival_time_est": "2024-05-21T16:00:00"},
        }),
        _flight("HAT003", "ATL", "SEA", "09:00:00", "12:00:00", {DAY: _day((5, 4, 1), (65, 160, 520))}),
        _flight("HAT004", "JFK", "LAX", "22:00:00", "01:30:00+1", {
            DAY: _day((8, 8, 8), (90, 200, 600)), NEXT: _day((8, 8, 8), (95, 210, 610)),
        }),
        _flight("HAT005", "LAX", "SEA", "01:00:00", "03:30:00", {NEXT: _day((6, 6, 6), (40, 80, 300))}),
        _flight("HAT006", "LAX", "SEA", "02:00:00", "04:30:00", {
            DAY: _day((1, 1, 1), (41, 81, 301)), NEXT: _day((7, 6, 5), (45, 85, 305.5)),
        }),
        _flight("HAT007", "JFK", "SEA", "07:00:00", "13:00:00", {
            "2024-05-19": {"status": "cancelled"}, DAY: _day((9, 9, 9), (150, 300, 900)),
        }),
        _flight("HAT008", "ATL", "SEA", "10:30:00", "13:30:00", {DAY: _day((3, 3, 3), (55, 111, 333))}),
        _flight("HAT009", "BNA", "XYZ", "10:00:00", "11:00:00", {DAY: _day((3, 3, 3), (10, 20, 30))}),
    ]
    address = {"address1": "1 Main St", "address2": "Apt 2", "city": "Boston", "country": "USA", "state": "MA",
               "zip": "02101"}
    users = {
        "ann_lee_1": {
            "name": {"first_name": "Ann", "last_name": "Lee"}, "address": address, "email": "ann@example.com",
            "dob": "1980-01-02",
            "payment_methods": {
                "credit_card_1": {"source": "credit_card", "brand": "visa", "last_four": "1234", "id": "credit_card_1"},
                "gift_card_1": {"source": "gift_card", "amount": 300, "id": "gift_card_1"},
                "gift_card_2": {"source": "gift_card", "amount": 40.5, "id": "gift_card_2"},
                "certificate_1": {"source": "certificate", "amount": 250, "id": "certificate_1"},
            },
            "saved_passengers": [{"first_name": "Bob", "last_name": "Lee", "dob": "1979-03-04"}],
            "membership": "gold",
            "reservations": ["RES001", "RES002"],
        },
        "bo_kim_2": {
            "name": {"first_name": "Bo", "last_name": "Kim"}, "address": address, "email": "bo@example.com",
            "dob": "1990-05-06",
            "payment_methods": {
                "credit_card_2": {"source": "credit_card", "brand": "amex", "last_four": "9876", "id": "credit_card_2"},
                "gift_card_3": {"source": "gift_card", "amount": 100, "id": "gift_card_3"},
            },
            "saved_passengers": [],
            "membership": "regular",
            "reservations": ["RES003", "RES004"],
        },
    }

    def seg(number: str, date: str, price: Any) -> dict[str, Any]:
        f = next(f for f in flights if f["flight_number"] == number)
        return {"origin": f["origin"], "destination": f["destination"], "flight_number": number, "date": date,
                "price": price}

    def res(rid: str, user: str, origin: str, dest: str, cabin: str, segs: list[dict[str, Any]],
            pax: list[dict[str, Any]], pay: list[dict[str, Any]], bags: tuple[int, int], insurance: str,
            **extra: Any) -> dict[str, Any]:
        return {"reservation_id": rid, "user_id": user, "origin": origin, "destination": dest,
                "flight_type": "one_way", "cabin": cabin, "flights": segs, "passengers": pax,
                "payment_history": pay, "created_at": "2024-05-10T09:00:00", "total_baggages": bags[0],
                "nonfree_baggages": bags[1], "insurance": insurance, **extra}

    ann, bob = ({"first_name": "Ann", "last_name": "Lee", "dob": "1980-01-02"},
                {"first_name": "Bob", "last_name": "Lee", "dob": "1979-03-04"})
    bo = {"first_name": "Bo", "last_name": "Kim", "dob": "1990-05-06"}
    reservations = {
        # (100 + 140) * 2 passengers = 480
        "RES001": res("RES001", "ann_lee_1", "JFK", "SEA", "economy",
                      [seg("HAT001", DAY, 100), seg("HAT002", DAY, 140)], [ann, bob],
                      [{"payment_id": "gift_card_1", "amount": 480}], (1, 0), "no"),
        # 400 + 30 insurance = 430, paid by a certificate that is spent (gone from the profile) and a card
        "RES002": res("RES002", "ann_lee_1", "JFK", "ATL", "business", [seg("HAT001", NEXT, 400)], [ann],
                      [{"payment_id": "certificate_9", "amount": 250}, {"payment_id": "credit_card_1", "amount": 180}],
                      (0, 0), "yes"),
        "RES003": res("RES003", "bo_kim_2", "JFK", "ATL", "basic_economy", [seg("HAT001", DAY, 45)], [bo],
                      [{"payment_id": "gift_card_3", "amount": 45}], (0, 0), "no"),
        "RES004": res("RES004", "bo_kim_2", "JFK", "SEA", "economy", [seg("HAT007", DAY, 300)], [bo],
                      [{"payment_id": "credit_card_2", "amount": 300}, {"payment_id": "credit_card_2", "amount": -300}],
                      (0, 0), "no", status="cancelled"),
    }
    return {"users": users, "reservations": reservations, "flights": {f["flight_number"]: f for f in flights}}


def write_world(folder: Path, data: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, records in data.items():
        (folder / f"{name}.json").write_text(json.dumps(records, indent=1))
    return folder


class Env:
    """One trial database with helpers to call tools and inspect records."""

    def __init__(self, domain: AirlineDomain, trial: TrialDatabase):
        self.domain = domain
        self.trial = trial
        self.ctx = ToolContext(trial.session, trial.options)

    @property
    def mode(self) -> str:
        return str(self.trial.options["mode"])

    def call(self, name: str, **arguments: Any) -> CallOutcome:
        return self.domain.toolbox().dispatch(self.ctx, name, arguments)

    def ok(self, name: str, **arguments: Any) -> Any:
        out = self.call(name, **arguments)
        assert out.status == "ok", out.content
        return json.loads(out.content) if out.content.startswith(("{", "[")) else out.content

    def refused(self, name: str, status: str = "tool_error", **arguments: Any) -> str:
        """Call expecting a refusal; assert the state is exactly as before (volatile key order included)."""
        before = self.dump()
        snap = snapshot(self.trial.raw, self.domain.state_spec())
        out = self.call(name, **arguments)
        assert out.status == status, out.content
        assert out.content.startswith("Error: ")
        assert snapshot(self.trial.raw, self.domain.state_spec()) == snap
        assert json.dumps(self.dump()) == json.dumps(before)
        return out.content

    def dump(self) -> dict[str, Any]:
        return self.domain.dump(self.trial)

    def user(self, user_id: str) -> dict[str, Any]:
        return self.dump()["users"][user_id]

    def balance(self, user_id: str, method_id: str) -> Any:
        return self.user(user_id)["payment_methods"][method_id]["amount"]

    def seats(self, flight: str, date: str) -> dict[str, int]:
        return self.dump()["flights"][flight]["dates"][date]["available_seats"]

    def reservation(self, rid: str) -> dict[str, Any]:
        return self.dump()["reservations"][rid]


@pytest.fixture(scope="module")
def world_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_world(tmp_path_factory.mktemp("airline_world"), world())


@pytest.fixture(scope="module")
def templates(world_dir: Path) -> tuple[AirlineDomain, dict[str, TemplateDatabase]]:
    domain = AirlineDomain()
    return domain, {m: domain.template(world_dir, {"mode": m}) for m in (TAU, TAUSIM)}


def _env(templates: tuple[AirlineDomain, dict[str, TemplateDatabase]], mode: str) -> Iterator[Env]:
    domain, by_mode = templates
    with by_mode[mode].trial() as trial:
        yield Env(domain, trial)


@pytest.fixture(params=[TAU, TAUSIM])
def env(request: pytest.FixtureRequest, templates: tuple[AirlineDomain, dict[str, TemplateDatabase]]) -> Iterator[Env]:
    """A fresh trial, once per mode."""
    yield from _env(templates, request.param)


@pytest.fixture
def tau(templates: tuple[AirlineDomain, dict[str, TemplateDatabase]]) -> Iterator[Env]:
    yield from _env(templates, TAU)


@pytest.fixture
def tausim(templates: tuple[AirlineDomain, dict[str, TemplateDatabase]]) -> Iterator[Env]:
    yield from _env(templates, TAUSIM)


BOOKING = {
    "user_id": "ann_lee_1", "origin": "JFK", "destination": "SEA", "flight_type": "one_way", "cabin": "economy",
    "flights": [{"flight_number": "HAT001", "date": DAY}, {"flight_number": "HAT002", "date": DAY}],
    "passengers": [{"first_name": "Ann", "last_name": "Lee", "dob": "1980-01-02"},
                   {"first_name": "Cy", "last_name": "Lee", "dob": "2010-07-08"}],
    # (120 + 150) * 2 passengers + 30 * 2 insurance + 50 * 1 bag = 540 + 60 + 50 = 650
    "payment_methods": [{"payment_id": "certificate_1", "amount": 250}, {"payment_id": "gift_card_1", "amount": 300},
                        {"payment_id": "credit_card_1", "amount": 100}],
    "total_baggages": 2, "nonfree_baggages": 1, "insurance": "yes",
}


def _booking(**changes: Any) -> dict[str, Any]:
    return {**json.loads(json.dumps(BOOKING)), **changes}


# ------------------------------------------------------------------------------------------------ catalogue
def test_fourteen_tools_with_documented_schemas() -> None:
    domain = AirlineDomain()
    toolbox = domain.toolbox()
    assert sorted(toolbox.specs) == [
        "book_reservation", "calculate", "cancel_reservation", "get_reservation_details", "get_user_details",
        "list_all_airports", "search_direct_flight", "search_onestop_flight", "send_certificate", "think",
        "transfer_to_human_agents", "update_reservation_baggages", "update_reservation_flights",
        "update_reservation_passengers",
    ]
    writes = {"book_reservation", "cancel_reservation", "send_certificate", "update_reservation_baggages",
              "update_reservation_flights", "update_reservation_passengers"}
    for spec in toolbox.specs.values():
        params = spec.schema["function"]["parameters"]
        assert "ctx" not in params["properties"] and "$defs" not in json.dumps(params), spec.name
        assert set(params["required"]) == set(params["properties"])
        assert all(p.get("description") for p in params["properties"].values()), spec.name
        assert spec.kind == ("write" if spec.name in writes else "read"), spec.name
    assert toolbox.specs["transfer_to_human_agents"].ends_conversation
    book = toolbox.specs["book_reservation"].schema["function"]["parameters"]["properties"]
    assert book["cabin"]["enum"] == ["basic_economy", "economy", "business"]
    assert book["payment_methods"]["items"]["properties"]["amount"]["type"] == "number"
    assert book["flights"]["items"]["required"] == ["flight_number", "date"]
    assert domain.option_values == {"mode": ("tau-bench", "tausim", "tau2")}
    assert domain.default_options(None) == {"mode": "tausim"}
    assert domain.default_options(Path("/any/folder")) == {"mode": "tau-bench"}


# ------------------------------------------------------------------------------------------------ look-ups
def test_lookups_return_the_file_records(env: Env) -> None:
    data = world()
    before = env.dump()
    assert env.call("get_user_details", user_id="ann_lee_1").content == json.dumps(data["users"]["ann_lee_1"])
    assert env.call("get_reservation_details", reservation_id="RES004").content == json.dumps(
        data["reservations"]["RES004"])
    env.refused("get_user_details", user_id="nobody_0")
    env.refused("get_reservation_details", reservation_id="NOPE00")
    # airports served, peer vocabulary order first, then the built-in network's, then unknown codes as-is
    assert list(env.ok("list_all_airports").items()) == [
        ("JFK", "New York"), ("LAX", "Los Angeles"), ("SEA", "Seattle"), ("ATL", "Atlanta"), ("BNA", "Nashville"),
        ("XYZ", "XYZ")]
    assert env.ok("think", thought="hmm") == ""
    assert env.ok("calculate", expression="(120 + 150) * 2 + 30 * 2 + 50") == "650.0"
    out = env.call("transfer_to_human_agents", summary="wants a human")
    assert (out.status, out.content, out.ends_conversation) == ("ok", "Transfer successful", True)
    assert env.dump() == before


def test_search_direct_merges_the_date_and_skips_unavailable_dates(env: Env) -> None:
    assert env.ok("search_direct_flight", origin="JFK", destination="ATL", date=DAY) == [{
        "flight_number": "HAT001", "origin": "JFK", "destination": "ATL", "scheduled_departure_time_est": "08:00:00",
        "scheduled_arrival_time_est": "10:30:00", "status": "available",
        "available_seats": {"basic_economy": 5, "economy": 3, "business": 2},
        "prices": {"basic_economy": 50, "economy": 120, "business": 400},
    }]
    assert [f["flight_number"] for f in env.ok("search_direct_flight", origin="ATL", destination="SEA", date=DAY)] == [
        "HAT002", "HAT003", "HAT008"]  # file order
    assert env.ok("search_direct_flight", origin="ATL", destination="SEA", date=NEXT) == []  # HAT002 delayed
    assert env.ok("search_direct_flight", origin="JFK", destination="ATL", date="2024-05-14") == []  # landed
    assert env.ok("search_direct_flight", origin="JFK", destination="SEA", date="2024-05-19") == []  # cancelled
    assert env.ok("search_direct_flight", origin="JFK", destination="ATL", date="May 20") == []


def test_search_onestop_connects_after_arrival_and_on_the_next_day_after_plus_one(env: Env) -> None:
    pairs = env.ok("search_onestop_flight", origin="JFK", destination="SEA", date=DAY)
    # HAT001 lands at ATL 10:30: HAT002 (12:00) and HAT008 (10:30, not earlier) connect, HAT003 (09:00) does not.
    # HAT004 lands at LAX 01:30 the next day: on 2024-05-21 HAT006 (02:00) connects, HAT005 (01:00) does not;
    # HAT006's own 2024-05-20 entry is not used. HAT007 flies direct to SEA and connects to nothing.
    assert [[(f["flight_number"], f["date"]) for f in pair] for pair in pairs] == [
        [("HAT001", DAY), ("HAT002", DAY)], [("HAT001", DAY), ("HAT008", DAY)], [("HAT004", DAY), ("HAT006", NEXT)]]
    first, second = pairs[2]
    assert list(first)[-1] == "date" and first["scheduled_arrival_time_est"] == "01:30:00+1"
    assert second == {
        "flight_number": "HAT006", "origin": "LAX", "destination": "SEA", "scheduled_departure_time_est": "02:00:00",
        "scheduled_arrival_time_est": "04:30:00", "status": "available",
        "available_seats": {"basic_economy": 7, "economy": 6, "business": 5},
        "prices": {"basic_economy": 45, "economy": 85, "business": 305.5}, "date": NEXT}
    # from 2024-05-21: HAT001 -> HAT002 is delayed that day; HAT004 lands on the 22nd, which has no flights
    assert env.ok("search_onestop_flight", origin="JFK", destination="SEA", date=NEXT) == []
    assert env.ok("search_onestop_flight", origin="JFK", destination="SEA", date="not a date") == []


# ------------------------------------------------------------------------------------------------ booking
def test_booking_total_payments_and_bookkeeping(env: Env) -> None:
    result = env.ok("book_reservation", **BOOKING)
    assert result == env.reservation("HATHAT")
    assert result == {
        "reservation_id": "HATHAT", "user_id": "ann_lee_1", "origin": "JFK", "destination": "SEA",
        "flight_type": "one_way", "cabin": "economy",
        "flights": [{"flight_number": "HAT001", "date": DAY, "price": 120, "origin": "JFK", "destination": "ATL"},
                    {"flight_number": "HAT002", "date": DAY, "price": 150, "origin": "ATL", "destination": "SEA"}],
        "passengers": BOOKING["passengers"], "payment_history": BOOKING["payment_methods"],
        "created_at": "2024-05-15T15:00:00", "total_baggages": 2, "nonfree_baggages": 1, "insurance": "yes",
    }
    assert list(result["flights"][0]) == ["flight_number", "date", "price", "origin", "destination"]
    user = env.user("ann_lee_1")
    assert user["reservations"] == ["RES001", "RES002", "HATHAT"]
    assert "certificate_1" not in user["payment_methods"]  # spent entirely
    assert env.balance("ann_lee_1", "gift_card_1") == 0  # 300 - 300
    assert env.balance("ann_lee_1", "gift_card_2") == 40.5
    if env.mode == TAU:  # the peer never takes seats
        assert env.seats("HAT001", DAY)["economy"] == 3 and env.seats("HAT002", DAY)["economy"] == 5
    else:  # two passengers on each flight
        assert env.seats("HAT001", DAY)["economy"] == 1 and env.seats("HAT002", DAY)["economy"] == 3
    assert env.seats("HAT001", DAY)["business"] == 2  # other cabins untouched


def test_new_ids_follow_hathat(env: Env) -> None:
    cheap = _booking(flights=[{"flight_number": "HAT007", "date": DAY}], cabin="basic_economy", passengers=[
        BOOKING["passengers"][0]], payment_methods=[{"payment_id": "credit_card_1", "amount": 150}],
        total_baggages=0, nonfree_baggages=0, insurance="no")
    ids = [env.ok("book_reservation", **cheap)["reservation_id"] for _ in range(4)]
    assert ids == ["HATHAT", "HATHAU", "HATHAV", "HATHAW"]
    assert env.user("ann_lee_1")["reservations"][2:] == ids


def test_booking_keeps_number_types(env: Env) -> None:
    # HAT006 on 2024-05-21 costs 305.5 in business: 305.5 paid as 300 on a card and 5.5 from a gift card
    result = env.ok("book_reservation", **_booking(
        origin="LAX", cabin="business", flights=[{"flight_number": "HAT006", "date": NEXT}],
        passengers=BOOKING["passengers"][:1], insurance="no", total_baggages=0, nonfree_baggages=0,
        payment_methods=[{"payment_id": "credit_card_1", "amount": 300}, {"payment_id": "gift_card_2", "amount": 5.5}]))
    assert result["flights"][0]["price"] == 305.5
    assert [type(p["amount"]) for p in result["payment_history"]] == [int, float]
    assert env.balance("ann_lee_1", "gift_card_2") == 35.0  # 40.5 - 5.5


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"user_id": "nobody_0"}, "unknown user"),
        ({"flights": [{"flight_number": "HAT999", "date": DAY}]}, "unknown flight"),
        ({"flights": [{"flight_number": "HAT001", "date": "2024-06-01"}]}, "no such date"),
        ({"flights": [{"flight_number": "HAT001", "date": "2024-05-14"}]}, "landed"),
        ({"flights": [{"flight_number": "HAT002", "date": NEXT}]}, "delayed"),
        ({"cabin": "business", "flights": [{"flight_number": "HAT003", "date": DAY}]}, "1 business seat for 2"),
        ({"payment_methods": [{"payment_id": "credit_card_1", "amount": 649}]}, "649 does not add up to 650"),
        ({"payment_methods": [{"payment_id": "credit_card_1", "amount": 651}]}, "651 does not add up to 650"),
        ({"payment_methods": [{"payment_id": "gift_card_2", "amount": 41}, {"payment_id": "credit_card_1",
                                                                          "amount": 609}]}, "gift card 40.5 < 41"),
        ({"payment_methods": [{"payment_id": "certificate_1", "amount": 251}, {"payment_id": "credit_card_1",
                                                                            "amount": 399}]}, "certificate 250 < 251"),
        ({"payment_methods": [{"payment_id": "credit_card_2", "amount": 650}]}, "another user's card"),
        ({"payment_methods": [{"payment_id": "paypal_1", "amount": 650}]}, "no such method"),
    ],
)
def test_booking_refusals_change_nothing(env: Env, changes: dict[str, Any], why: str) -> None:
    env.refused("book_reservation", **_booking(**changes))


@pytest.mark.parametrize(
    "changes",
    [
        {"cabin": "first"},
        {"insurance": "maybe"},
        {"passengers": [{"first_name": "Ann", "last_name": "Lee"}]},  # no dob
        {"payment_methods": [{"payment_id": "credit_card_1", "amount": True}]},
        {"payment_methods": [{"payment_id": "credit_card_1", "amount": "650"}]},
        {"payment_methods": [{"payment_id": "credit_card_1", "amount": float("nan")}]},
    ],
)
def test_invalid_booking_arguments_change_nothing(env: Env, changes: dict[str, Any]) -> None:
    env.refused("book_reservation", status="invalid_arguments", **_booking(**changes))


def test_payment_sum_precision_differs_by_mode(env: Env) -> None:
    payments = [{"payment_id": "credit_card_1", "amount": 649.7}, {"payment_id": "gift_card_2", "amount": 0.1},
                {"payment_id": "gift_card_1", "amount": 0.2}]
    assert sum(p["amount"] for p in payments) != 650  # 650.0000000000001 as floats
    if env.mode == TAU:  # the peer compares floats exactly
        env.refused("book_reservation", **_booking(payment_methods=payments))
    else:  # cent precision
        env.ok("book_reservation", **_booking(payment_methods=payments))
        assert env.balance("ann_lee_1", "gift_card_2") == 40.4  # 40.5 - 0.1, rounded to cents
        assert env.balance("ann_lee_1", "gift_card_1") == 299.8


def test_a_gift_card_listed_twice(env: Env) -> None:
    payments = [{"payment_id": "gift_card_2", "amount": 30}, {"payment_id": "gift_card_2", "amount": 30},
                {"payment_id": "credit_card_1", "amount": 590}]
    if env.mode == TAU:  # the peer checks 30 <= 40.5 twice and lets the card go negative
        env.ok("book_reservation", **_booking(payment_methods=payments))
        assert env.balance("ann_lee_1", "gift_card_2") == -19.5  # 40.5 - 60
    else:  # 60 > 40.5
        env.refused("book_reservation", **_booking(payment_methods=payments))


def test_tausim_booking_integrity_checks(tausim: Env, tau: Env) -> None:
    no_one = _booking(passengers=[], insurance="no", nonfree_baggages=0,
                      payment_methods=[])  # total 0, paid 0: the peer accepts it
    tau.ok("book_reservation", **no_one)
    tausim.refused("book_reservation", **no_one)
    for env in (tau, tausim):
        negative = [{"payment_id": "credit_card_1", "amount": 700}, {"payment_id": "gift_card_1", "amount": -50}]
        bags = _booking(total_baggages=0, nonfree_baggages=1)
        if env is tau:
            env.ok("book_reservation", **_booking(payment_methods=negative))
            assert env.balance("ann_lee_1", "gift_card_1") == 350  # the peer "charges" -50
            env.ok("book_reservation", **bags)
        else:
            env.refused("book_reservation", **_booking(payment_methods=negative))
            env.refused("book_reservation", **bags)


def test_tausim_booking_counts_a_flight_listed_twice(tausim: Env, tau: Env) -> None:
    # HAT001 on 2024-05-20 has 3 economy seats: twice 2 passengers needs 4
    twice = _booking(flights=[{"flight_number": "HAT001", "date": DAY}, {"flight_number": "HAT001", "date": DAY}],
                     payment_methods=[{"payment_id": "credit_card_1", "amount": 650 - 150 * 2 + 120 * 2}])
    tau.ok("book_reservation", **twice)
    tausim.refused("book_reservation", **twice)


# ------------------------------------------------------------------------------------------------ cancel
def test_cancel_appends_negated_payments(env: Env) -> None:
    result = env.ok("cancel_reservation", reservation_id="RES001")
    assert result["status"] == "cancelled" and list(result)[-1] == "status"
    assert result["payment_history"] == [{"payment_id": "gift_card_1", "amount": 480},
                                         {"payment_id": "gift_card_1", "amount": -480}]
    if env.mode == TAU:  # no balance restored, no seat given back
        assert env.balance("ann_lee_1", "gift_card_1") == 300
        assert env.seats("HAT001", DAY)["economy"] == 3 and env.seats("HAT002", DAY)["economy"] == 5
    else:  # 300 + 480; two seats back on each flight
        assert env.balance("ann_lee_1", "gift_card_1") == 780
        assert env.seats("HAT001", DAY)["economy"] == 5 and env.seats("HAT002", DAY)["economy"] == 7


def test_cancelling_twice(env: Env) -> None:
    env.ok("cancel_reservation", reservation_id="RES001")
    if env.mode == TAU:  # the peer cancels again and negates every entry once more
        result = env.ok("cancel_reservation", reservation_id="RES001")
        assert [p["amount"] for p in result["payment_history"]] == [480, -480, -480, 480]
    else:
        env.refused("cancel_reservation", reservation_id="RES001")
        env.refused("cancel_reservation", reservation_id="RES004")  # cancelled in the data file
    env.refused("cancel_reservation", reservation_id="NOPE00")


def test_tausim_cancel_recreates_a_spent_certificate(tausim: Env) -> None:
    tausim.ok("cancel_reservation", reservation_id="RES002")  # certificate_9 250 + credit_card_1 180
    methods = tausim.user("ann_lee_1")["payment_methods"]
    assert list(methods)[-1] == "certificate_9"
    assert methods["certificate_9"] == {"source": "certificate", "amount": 250, "id": "certificate_9"}
    assert tausim.seats("HAT001", NEXT)["business"] == 10  # 9 + 1


def test_tausim_book_then_cancel_restores_everything(tausim: Env) -> None:
    before = tausim.dump()
    tausim.ok("book_reservation", **BOOKING)
    tausim.ok("cancel_reservation", reservation_id="HATHAT")
    after = tausim.dump()
    # the certificate comes back (at the end of the methods), balances and seats are as before
    assert after["users"]["ann_lee_1"]["payment_methods"] == before["users"]["ann_lee_1"]["payment_methods"]
    assert after["flights"] == before["flights"]


# ------------------------------------------------------------------------------------------------ flights
def test_change_one_flight_same_cabin(env: Env) -> None:
    # keep HAT001 (paid 100), swap HAT002 (140) for HAT003 (160 economy): (100 + 160) * 2 - 480 = 40
    result = env.ok("update_reservation_flights", reservation_id="RES001", cabin="economy", flights=[
        {"flight_number": "HAT001", "date": DAY}, {"flight_number": "HAT003", "date": DAY}], payment_id="gift_card_1")
    assert result["flights"] == [
        {"flight_number": "HAT001", "date": DAY, "price": 100, "origin": "JFK", "destination": "ATL"},
        {"flight_number": "HAT003", "date": DAY, "price": 160, "origin": "ATL", "destination": "SEA"}]
    assert result["payment_history"][-1] == {"payment_id": "gift_card_1", "amount": 40}
    assert env.balance("ann_lee_1", "gift_card_1") == 260
    seats = (env.seats("HAT001", DAY)["economy"], env.seats("HAT002", DAY)["economy"],
             env.seats("HAT003", DAY)["economy"])
    assert seats == ((3, 5, 4) if env.mode == TAU else (3, 7, 2))


def test_change_cabin_reprices_and_cabin_field_differs_by_mode(env: Env) -> None:
    # business on the same flights: (400 + 500) * 2 - 480 = 1320
    result = env.ok("update_reservation_flights", reservation_id="RES001", cabin="business", flights=[
        {"flight_number": "HAT001", "date": DAY}, {"flight_number": "HAT002", "date": DAY}], payment_id="credit_card_1")
    assert [f["price"] for f in result["flights"]] == [400, 500]
    assert result["payment_history"][-1] == {"payment_id": "credit_card_1", "amount": 1320}
    if env.mode == TAU:
        assert result["cabin"] == "economy"  # not updated (peer behaviour)
        assert env.seats("HAT001", DAY) == {"basic_economy": 5, "economy": 3, "business": 2}
        # back to "economy": the peer sees the same cabin, keeps the business prices paid, and charges nothing
        back = env.ok("update_reservation_flights", reservation_id="RES001", cabin="economy", flights=[
            {"flight_number": "HAT001", "date": DAY}, {"flight_number": "HAT002", "date": DAY}],
            payment_id="credit_card_1")
        assert [f["price"] for f in back["flights"]] == [400, 500] and len(back["payment_history"]) == 2
    else:
        assert result["cabin"] == "business"
        assert env.seats("HAT001", DAY) == {"basic_economy": 5, "economy": 5, "business": 0}
        assert env.seats("HAT002", DAY) == {"basic_economy": 5, "economy": 7, "business": 3}
        # back to economy: re-priced at 120 + 150, (270 - 900) * 2 = -1260 refunded to the gift card
        back = env.ok("update_reservation_flights", reservation_id="RES001", cabin="economy", flights=[
            {"flight_number": "HAT001", "date": DAY}, {"flight_number": "HAT002", "date": DAY}],
            payment_id="gift_card_1")
        assert back["cabin"] == "economy" and [f["price"] for f in back["flights"]] == [120, 150]
        assert back["payment_history"][-1] == {"payment_id": "gift_card_1", "amount": -1260}
        assert env.balance("ann_lee_1", "gift_card_1") == 1560  # 300 + 1260
        assert env.seats("HAT001", DAY) == {"basic_economy": 5, "economy": 3, "business": 2}


def test_change_to_a_cheaper_direct_flight_refunds_a_gift_card(env: Env) -> None:
    # RES001 -> HAT007 direct in economy at 300: 300 * 2 - 480 = 120; with basic economy at 150: 300 - 480 = -180
    result = env.ok("update_reservation_flights", reservation_id="RES001", cabin="basic_economy",
                    flights=[{"flight_number": "HAT007", "date": DAY}], payment_id="gift_card_2")
    assert result["flights"] == [
        {"flight_number": "HAT007", "date": DAY, "price": 150, "origin": "JFK", "destination": "SEA"}]
    assert result["payment_history"][-1] == {"payment_id": "gift_card_2", "amount": -180}
    assert env.balance("ann_lee_1", "gift_card_2") == 220.5  # 40.5 + 180
    if env.mode == TAUSIM:
        assert env.seats("HAT007", DAY)["basic_economy"] == 7
        assert env.seats("HAT001", DAY)["economy"] == 5 and env.seats("HAT002", DAY)["economy"] == 7


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"reservation_id": "NOPE00"}, "unknown reservation"),
        ({"payment_id": "certificate_1"}, "a certificate cannot pay a change"),
        ({"payment_id": "gift_card_2", "cabin": "business"}, "gift card 40.5 < 1320"),
        ({"payment_id": "credit_card_2"}, "another user's card"),
        ({"flights": [{"flight_number": "HAT002", "date": NEXT}]}, "delayed"),
        ({"flights": [{"flight_number": "HAT999", "date": DAY}]}, "unknown flight"),
        ({"flights": [{"flight_number": "HAT003", "date": DAY}], "cabin": "business"}, "1 business seat for 2"),
    ],
)
def test_flight_change_refusals_change_nothing(env: Env, arguments: dict[str, Any], why: str) -> None:
    base = {"reservation_id": "RES001", "cabin": "economy", "payment_id": "credit_card_1",
            "flights": [{"flight_number": "HAT001", "date": DAY}, {"flight_number": "HAT002", "date": DAY}]}
    env.refused("update_reservation_flights", **{**base, **arguments})


def test_changes_to_a_cancelled_reservation(env: Env) -> None:
    change = {"reservation_id": "RES004", "cabin": "economy", "payment_id": "credit_card_2",
              "flights": [{"flight_number": "HAT001", "date": DAY}]}
    bags = {"reservation_id": "RES004", "total_baggages": 1, "nonfree_baggages": 1, "payment_id": "credit_card_2"}
    people = {"reservation_id": "RES004", "passengers": [{"first_name": "Al", "last_name": "Kim", "dob": "1991-01-01"}]}
    if env.mode == TAU:  # the peer lets them through
        assert env.ok("update_reservation_flights", **change)["payment_history"][-1]["amount"] == -180  # 120 - 300
        env.ok("update_reservation_baggages", **bags)
        env.ok("update_reservation_passengers", **people)
    else:
        env.refused("update_reservation_flights", **change)
        env.refused("update_reservation_baggages", **bags)
        env.refused("update_reservation_passengers", **people)


# ------------------------------------------------------------------------------------------------ bags, passengers
def test_bags_cost_fifty_per_added_nonfree_bag(env: Env) -> None:
    env.refused("update_reservation_baggages", reservation_id="RES001", total_baggages=3, nonfree_baggages=2,
                payment_id="gift_card_2")  # 100 > 40.5
    env.refused("update_reservation_baggages", reservation_id="RES001", total_baggages=3, nonfree_baggages=2,
                payment_id="certificate_1")
    result = env.ok("update_reservation_baggages", reservation_id="RES001", total_baggages=3, nonfree_baggages=2,
                    payment_id="gift_card_1")
    assert (result["total_baggages"], result["nonfree_baggages"]) == (3, 2)
    assert result["payment_history"][-1] == {"payment_id": "gift_card_1", "amount": 100}
    assert env.balance("ann_lee_1", "gift_card_1") == 200
    # fewer non-free bags: nothing refunded, nothing recorded
    result = env.ok("update_reservation_baggages", reservation_id="RES001", total_baggages=2, nonfree_baggages=1,
                    payment_id="credit_card_1")
    assert (result["total_baggages"], result["nonfree_baggages"], len(result["payment_history"])) == (2, 1, 2)
    if env.mode == TAUSIM:
        env.refused("update_reservation_baggages", reservation_id="RES001", total_baggages=1, nonfree_baggages=2,
                    payment_id="credit_card_1")


def test_passengers_are_replaced_but_not_counted_anew(env: Env) -> None:
    new = [{"first_name": "Ann", "last_name": "Lee", "dob": "1980-01-02"},
           {"first_name": "Dee", "last_name": "Lee", "dob": "2001-02-03"}]
    assert env.ok("update_reservation_passengers", reservation_id="RES001", passengers=new)["passengers"] == new
    env.refused("update_reservation_passengers", reservation_id="RES001", passengers=new[:1])
    env.refused("update_reservation_passengers", reservation_id="NOPE00", passengers=new)


# ------------------------------------------------------------------------------------------------ nested extra keys
# tau-bench reads the keys it needs from each nested item and ignores or overwrites the others; mode tau-bench
# accepts such items and acts as if the extra keys were absent; mode tausim refuses them as invalid arguments.
_EXTRA_FLIGHTS = [{"flight_number": "HAT001", "date": DAY, "origin": "JFK", "destination": "ATL", "price": 1},
                  {"flight_number": "HAT003", "date": DAY, "origin": "ATL", "destination": "SEA", "price": 2}]
_EXTRA_CASES = {
    "update_reservation_flights.flights": ("update_reservation_flights", {
        "reservation_id": "RES001", "cabin": "economy", "payment_id": "gift_card_1", "flights": _EXTRA_FLIGHTS}),
    "book_reservation.flights": ("book_reservation", _booking(flights=[
        {"flight_number": "HAT001", "date": DAY, "price": 0, "cabin": "economy"},
        {"flight_number": "HAT002", "date": DAY, "origin": "XXX"}])),
    "book_reservation.passengers": ("book_reservation", _booking(passengers=[
        {"first_name": "Ann", "last_name": "Lee", "dob": "1980-01-02", "gender": "f"},
        {"first_name": "Cy", "last_name": "Lee", "dob": "2010-07-08", "age": 14}])),
    "book_reservation.payment_methods": ("book_reservation", _booking(payment_methods=[
        {"payment_id": "certificate_1", "amount": 250, "source": "certificate"},
        {"payment_id": "gift_card_1", "amount": 300, "balance": 300},
        {"payment_id": "credit_card_1", "amount": 100, "brand": "visa"}])),
    "update_reservation_passengers.passengers": ("update_reservation_passengers", {
        "reservation_id": "RES001", "passengers": [
            {"first_name": "Ann", "last_name": "Lee", "dob": "1980-01-02", "seat": "12A"},
            {"first_name": "Dee", "last_name": "Lee", "dob": "2001-02-03", "relation": "child"}]}),
}


def _without_extras(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The same call with every nested item cut down to the keys its type declares (written out by hand)."""
    keys = {"flights": ("flight_number", "date"), "passengers": ("first_name", "last_name", "dob"),
            "payment_methods": ("payment_id", "amount")}
    return {k: [{f: item[f] for f in keys[k]} for item in v] if k in keys else v for k, v in arguments.items()}


@pytest.mark.parametrize("case", sorted(_EXTRA_CASES))
def test_nested_extra_keys_are_ignored_in_tau_bench_mode(tau: Env, templates: Any, case: str) -> None:
    name, arguments = _EXTRA_CASES[case]
    result = tau.ok(name, **json.loads(json.dumps(arguments)))
    # the same call without the extra keys, on a fresh tau-bench trial, gives the same reservation and state
    domain, by_mode = templates
    with by_mode[TAU].trial() as trial:
        clean = Env(domain, trial)
        assert clean.ok(name, **_without_extras(name, arguments)) == result
        assert json.dumps(clean.dump()) == json.dumps(tau.dump())
    if name == "update_reservation_flights":  # the extra origin/destination/price were overwritten, not stored
        assert [f["price"] for f in result["flights"]] == [100, 160]
        assert result["payment_history"][-1] == {"payment_id": "gift_card_1", "amount": 40}


@pytest.mark.parametrize("case", sorted(_EXTRA_CASES))
def test_nested_extra_keys_are_refused_in_tausim_mode(tausim: Env, case: str) -> None:
    name, arguments = _EXTRA_CASES[case]
    content = tausim.refused(name, status="invalid_arguments", **json.loads(json.dumps(arguments)))
    assert "Extra inputs are not permitted" in content
    tausim.ok(name, **_without_extras(name, arguments))  # the same call without them is accepted


@pytest.mark.parametrize("mode", [TAU, TAUSIM])
def test_missing_nested_keys_are_refused_in_both_modes(templates: Any, mode: str) -> None:
    domain, by_mode = templates
    with by_mode[mode].trial() as trial:
        Env(domain, trial).refused("update_reservation_flights", status="invalid_arguments", reservation_id="RES001",
                                   cabin="economy", payment_id="gift_card_1",
                                   flights=[{"flight_number": "HAT001", "origin": "JFK"}])


# ------------------------------------------------------------------------------------------------ certificates
def test_send_certificate(env: Env) -> None:
    assert env.ok("send_certificate", user_id="ann_lee_1", amount=150) == (
        "Certificate certificate_3221322 added to user ann_lee_1 with amount 150.")
    assert env.ok("send_certificate", user_id="ann_lee_1", amount=12.5) == (
        "Certificate certificate_3221323 added to user ann_lee_1 with amount 12.5.")
    methods = env.user("ann_lee_1")["payment_methods"]
    assert list(methods)[-2:] == ["certificate_3221322", "certificate_3221323"]
    assert methods["certificate_3221322"] == {"source": "certificate", "amount": 150, "id": "certificate_3221322"}
    assert type(methods["certificate_3221323"]["amount"]) is float
    env.refused("send_certificate", user_id="nobody_0", amount=10)
    env.refused("send_certificate", status="invalid_arguments", user_id="ann_lee_1", amount="10")
    if env.mode == TAU:
        env.ok("send_certificate", user_id="ann_lee_1", amount=0)
    else:
        env.refused("send_certificate", user_id="ann_lee_1", amount=0)
        env.refused("send_certificate", user_id="ann_lee_1", amount=-5)


def test_a_sent_certificate_pays_a_booking_and_is_spent(env: Env) -> None:
    env.ok("send_certificate", user_id="bo_kim_2", amount=100)
    result = env.ok("book_reservation", **_booking(
        user_id="bo_kim_2", cabin="basic_economy", flights=[{"flight_number": "HAT001", "date": NEXT}],
        passengers=[{"first_name": "Bo", "last_name": "Kim", "dob": "1990-05-06"}], insurance="no",
        total_baggages=0, nonfree_baggages=0, payment_methods=[{"payment_id": "certificate_3221322", "amount": 60}]))
    assert result["payment_history"] == [{"payment_id": "certificate_3221322", "amount": 60}]
    assert "certificate_3221322" not in env.user("bo_kim_2")["payment_methods"]  # the remaining 40 is lost
