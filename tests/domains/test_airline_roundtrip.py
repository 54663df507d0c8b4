"""Airline data: lossless load/dump round trip, and clear errors on malformed data files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from domains.airline import AirlineDomain
from simulator.world.domain import get_domain
from simulator.world.tools import ToolContext
from tests._support.json_folder import (
    assert_bad_file_refused,
    assert_load_fails,
    assert_same_shape,
    read_files,
    write_files,
)

FILES = ("users", "reservations", "flights")


@pytest.fixture(scope="module")
def peer_data(airline_peer_dir: Path) -> Path:
    return airline_peer_dir / "data"


def _files(folder: Path) -> dict[str, Any]:
    return read_files(folder, FILES)


def _dump_folder(folder: Path, mode: str = "tau-bench") -> dict[str, Any]:
    domain = AirlineDomain()
    with domain.template(folder, {"mode": mode}).trial() as trial:
        return domain.dump(trial)


def _write(folder: Path, data: dict[str, Any]) -> Path:
    return write_files(folder, data, FILES)


def test_registered_under_entry_point() -> None:
    domain = get_domain("airline")
    assert isinstance(domain, AirlineDomain)
    assert domain.default_data_dir() == Path(__file__).resolve().parents[2] / "domains" / "airline" / "data"
    assert isinstance(domain.policy(), str) and domain.policy().strip()


def test_peer_numbers_keep_their_json_type(peer_data: Path) -> None:
    files = _files(peer_data)
    dump = _dump_folder(peer_data)
    prices = [(n, d, c, p) for n, f in files["flights"].items() for d, day in f["dates"].items()
              for c, p in day.get("prices", {}).items()]
    assert prices and all(type(p) is int for *_, p in prices)  # the peer file has integer prices (e.g. 83)
    for n, d, c, p in prices[:500]:
        got = dump["flights"][n]["dates"][d]["prices"][c]
        assert got == p and type(got) is int
    amounts = [(r, i, p["amount"]) for r, res in files["reservations"].items()
               for i, p in enumerate(res["payment_history"])]
    for r, i, amount in amounts:
        assert type(dump["reservations"][r]["payment_history"][i]["amount"]) is type(amount)


def _tiny() -> dict[str, Any]:
    return {
        "users": {
            "ann_lee_1": {
                "name": {"first_name": "Ann", "last_name": "Lee"},
                "address": {"address1": "1 A St", "address2": "", "city": "X", "country": "USA", "state": "CA",
                            "zip": "01234"},
                "email": "ann@example.com",
                "dob": "1980-01-02",
                "payment_methods": {
                    "credit_card_1": {"source": "credit_card", "brand": "visa", "last_four": "0001",
                                      "id": "credit_card_1"},
                    "gift_card_1": {"source": "gift_card", "amount": 120.5, "id": "gift_card_1"},
                    "certificate_1": {"source": "certificate", "amount": 100, "id": "certificate_1"},
                },
                "saved_passengers": [{"first_name": "Bob", "last_name": "Lee", "dob": "1979-03-04"}],
                "membership": "silver",
                "reservations": ["ABC123"],
            }
        },
        "reservations": {
            "ABC123": {
                "reservation_id": "ABC123", "user_id": "ann_lee_1", "origin": "JFK", "destination": "LAX",
                "flight_type": "one_way", "cabin": "economy",
                "flights": [{"origin": "JFK", "destination": "LAX", "flight_number": "HAT001", "date": "2024-05-20",
                             "price": 99.5}],
                "passengers": [{"first_name": "Ann", "last_name": "Lee", "dob": "1980-01-02"}],
                "payment_history": [{"payment_id": "gift_card_1", "amount": 99.5}],
                "created_at": "2024-05-01T10:00:00", "total_baggages": 1, "nonfree_baggages": 0, "insurance": "no",
            }
        },
        "flights": {
            "HAT001": {
                "flight_number": "HAT001", "origin": "JFK", "destination": "LAX",
                "scheduled_departure_time_est": "22:00:00", "scheduled_arrival_time_est": "01:00:00+1",
                "dates": {
                    "2024-05-14": {"status": "landed", "actual_departure_time_est": "2024-05-14T22:05:00",
                                   "actual_arrival_time_est": "2024-05-15T01:10:00"},
                    "2024-05-15": {"status": "flying", "actual_departure_time_est": "2024-05-15T22:00:00",
                                   "estimated_arrival_time_est": "2024-05-16T01:00:00"},
                    "2024-05-16": {"status": "cancelled"},
                    "2024-05-20": {"status": "available",
                                   "available_seats": {"basic_economy": 1, "economy": 2, "business": 3},
                                   "prices": {"basic_economy": 50, "economy": 99.5, "business": 300}},
                },
            }
        },
    }


def test_unusual_key_orders_nulls_and_optional_fields_round_trip(tmp_path: Path) -> None:
    data = _tiny()
    user = data["users"]["ann_lee_1"]
    data["users"]["ann_lee_1"] = {k: user[k] for k in reversed(list(user))}  # reversed record keys
    user["name"] = {"last_name": "Lee", "first_name": "Ann"}
    user["payment_methods"]["credit_card_1"] = {"id": "credit_card_1", "source": "credit_card", "brand": None,
                                                "last_four": "0001"}
    user["saved_passengers"][0] = {"dob": "1979-03-04", "first_name": "Bob", "last_name": "Lee"}
    res = data["reservations"]["ABC123"]
    res["status"] = "cancelled"
    res["flights"][0] = {"flight_number": "HAT001", "date": "2024-05-20", "price": 99.5, "origin": "JFK",
                         "destination": "LAX"}  # the order a tool writes
    res["payment_history"].append({"amount": -99.5, "payment_id": "gift_card_1"})
    days = data["flights"]["HAT001"]["dates"]
    days["2024-05-20"] = {"prices": {"business": 300, "economy": 99.5, "basic_economy": 50.0}, "status": "available",
                          "available_seats": {"basic_economy": 1, "economy": 2, "business": 3}}
    days["2024-05-21"] = {"status": "on time", "estimated_departure_time_est": "2024-05-21T22:00:00",
                          "estimated_arrival_time_est": "2024-05-22T01:00:00"}
    dumped = _dump_folder(_write(tmp_path / "tiny", data))
    assert_same_shape(dumped, data)
    assert json.dumps(dumped) == json.dumps(data)


@pytest.mark.parametrize("mode", ["tau-bench", "tausim"])
def test_changed_state_round_trips(tmp_path: Path, mode: str) -> None:
    """What the tools write (segment key order, status, new and spent methods, seats) survives dump and reload."""
    domain = AirlineDomain()
    folder = _write(tmp_path / "tiny", _tiny())
    with domain.template(folder, {"mode": mode}).trial() as trial:
        ctx = ToolContext(trial.session, trial.options)
        calls = [
            ("send_certificate", {"user_id": "ann_lee_1", "amount": 25}),
            ("book_reservation", {
                "user_id": "ann_lee_1", "origin": "JFK", "destination": "LAX", "flight_type": "one_way",
                "cabin": "business", "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}],
                "passengers": [{"first_name": "Ann", "last_name": "Lee", "dob": "1980-01-02"}],
                "payment_methods": [{"payment_id": "certificate_1", "amount": 100},
                                    {"payment_id": "credit_card_1", "amount": 230}],
                "total_baggages": 0, "nonfree_baggages": 0, "insurance": "yes"}),  # 300 + 30
            ("update_reservation_baggages", {"reservation_id": "ABC123", "total_baggages": 2, "nonfree_baggages": 1,
                                             "payment_id": "gift_card_1"}),
            ("cancel_reservation", {"reservation_id": "HATHAT"}),
        ]
        for name, args in calls:
            out = domain.toolbox().dispatch(ctx, name, args)
            assert out.status == "ok", (name, out.content)
        changed = domain.dump(trial)
    booked = changed["reservations"]["HATHAT"]
    assert list(booked)[-1] == "status"
    assert list(booked["flights"][0]) == ["flight_number", "date", "price", "origin", "destination"]
    methods = changed["users"]["ann_lee_1"]["payment_methods"]
    assert methods["gift_card_1"]["amount"] == 70.5  # 120.5 - 50
    if mode == "tausim":  # the spent certificate comes back, at the end
        assert list(methods) == ["credit_card_1", "gift_card_1", "certificate_3221322", "certificate_1"]
        assert changed["flights"]["HAT001"]["dates"]["2024-05-20"]["available_seats"]["business"] == 3
    else:
        assert list(methods) == ["credit_card_1", "gift_card_1", "certificate_3221322"]
    reloaded = _dump_folder(_write(tmp_path / "changed", changed), mode)
    assert_same_shape(reloaded, changed)
    assert all(json.dumps(reloaded[n]) == json.dumps(changed[n]) for n in FILES)


def _user(d: dict[str, Any]) -> dict[str, Any]:
    return d["users"]["ann_lee_1"]


def _res(d: dict[str, Any]) -> dict[str, Any]:
    return d["reservations"]["ABC123"]


def _day(d: dict[str, Any], day: str = "2024-05-20") -> dict[str, Any]:
    return d["flights"]["HAT001"]["dates"][day]


@pytest.mark.parametrize(
    ("mutate", "file", "fragments"),
    [
        (lambda d: _user(d).pop("email"), "users.json", ["'ann_lee_1'", "email", "missing"]),
        (lambda d: _user(d).update(membership="platinum"), "users.json",
         ["'ann_lee_1'", "membership", "platinum", "regular, silver, gold"]),
        (lambda d: _user(d)["payment_methods"]["gift_card_1"].update(id="gift_card_9"), "users.json",
         ["'ann_lee_1'", "payment_methods.gift_card_1.id", "gift_card_9"]),
        (lambda d: _user(d)["payment_methods"]["gift_card_1"].pop("amount"), "users.json",
         ["'ann_lee_1'", "payment_methods.gift_card_1.amount", "missing"]),
        (lambda d: _user(d)["payment_methods"]["credit_card_1"].update(amount=5), "users.json",
         ["'ann_lee_1'", "payment_methods.credit_card_1.amount", "unexpected"]),
        (lambda d: _user(d)["payment_methods"]["gift_card_1"].update(amount="56"), "users.json",
         ["'ann_lee_1'", "payment_methods.gift_card_1.amount", "number"]),
        (lambda d: _user(d)["payment_methods"]["gift_card_1"].update(source="paypal"), "users.json",
         ["'ann_lee_1'", "payment_methods.gift_card_1.source", "paypal"]),
        (lambda d: _user(d).update(saved_passengers={}), "users.json", ["'ann_lee_1'", "saved_passengers", "list"]),
        (lambda d: _user(d)["saved_passengers"][0].pop("dob"), "users.json",
         ["'ann_lee_1'", "saved_passengers[0].dob", "missing"]),
        (lambda d: _user(d).update(nickname="Annie"), "users.json", ["'ann_lee_1'", "nickname", "unexpected"]),
        (lambda d: _res(d).update(user_id="nobody"), "reservations.json", ["'ABC123'", "user_id", "nobody"]),
        (lambda d: _res(d).update(reservation_id="XYZ999"), "reservations.json",
         ["'ABC123'", "reservation_id", "XYZ999"]),
        (lambda d: _res(d)["flights"][0].update(flight_number="HAT999"), "reservations.json",
         ["'ABC123'", "flights[0].flight_number", "HAT999"]),
        (lambda d: _res(d).update(cabin="first"), "reservations.json", ["'ABC123'", "cabin", "first"]),
        (lambda d: _res(d).update(insurance=True), "reservations.json", ["'ABC123'", "insurance", "string"]),
        (lambda d: _res(d).update(total_baggages=1.0), "reservations.json",
         ["'ABC123'", "total_baggages", "integer"]),
        (lambda d: _res(d)["payment_history"][0].update(amount=True), "reservations.json",
         ["'ABC123'", "payment_history[0].amount", "number"]),
        (lambda d: _res(d).update(status=5), "reservations.json", ["'ABC123'", "status", "string"]),
        (lambda d: _res(d).update(passengers="Ann"), "reservations.json", ["'ABC123'", "passengers", "list"]),
        (lambda d: _day(d)["available_seats"].update(economy=2.5), "flights.json",
         ["'HAT001'", "dates.2024-05-20.available_seats.economy", "integer"]),
        (lambda d: _day(d)["prices"].pop("business"), "flights.json",
         ["'HAT001'", "dates.2024-05-20.prices.business", "missing"]),
        (lambda d: _day(d).pop("prices"), "flights.json", ["'HAT001'", "dates.2024-05-20.prices", "missing"]),
        (lambda d: _day(d, "2024-05-16").update(gate="B2"), "flights.json",
         ["'HAT001'", "dates.2024-05-16.gate", "unexpected"]),
        (lambda d: d["flights"]["HAT001"].update(flight_number="HAT002"), "flights.json",
         ["'HAT001'", "flight_number", "HAT002"]),
        (lambda d: d["flights"]["HAT001"].update(dates=[]), "flights.json", ["'HAT001'", "dates", "object"]),
    ],
)
def test_malformed_records_name_file_key_and_field(
    tmp_path: Path, mutate: Any, file: str, fragments: list[str]
) -> None:
    data = _tiny()
    mutate(data)
    assert_load_fails(AirlineDomain(), _write(tmp_path / "bad", data), file, fragments)


def test_missing_and_invalid_files(tmp_path: Path) -> None:
    folder = _write(tmp_path / "bad", _tiny())
    assert_bad_file_refused(AirlineDomain, folder, "flights.json", '{"HAT001": ', "cannot read airline data file")
