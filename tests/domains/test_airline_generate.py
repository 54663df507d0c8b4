"""The airline data generator: determinism, the shipped data, the tau-bench file shape and its consistency."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from domains.airline import generate as gen
from tests._support.json_folder import file_bytes

DATA_DIR = Path(gen.__file__).parent / "data"
PEER_DATA = Path(__file__).resolve().parents[3] / "shared" / "peers" / "tau-bench" / "airline" / "data"

USER_KEYS = ["name", "address", "email", "dob", "payment_methods", "saved_passengers", "membership", "reservations"]
RESERVATION_KEYS = ["reservation_id", "user_id", "origin", "destination", "flight_type", "cabin", "flights",
                    "passengers", "payment_history", "created_at", "total_baggages", "nonfree_baggages", "insurance"]
FLIGHT_KEYS = ["flight_number", "origin", "destination", "scheduled_departure_time_est",
               "scheduled_arrival_time_est", "dates"]
SEGMENT_KEYS = ["origin", "destination", "flight_number", "date", "price"]
PERSON_KEYS = ["first_name", "last_name", "dob"]
METHOD_KEYS = {
    "credit_card": ["source", "brand", "last_four", "id"],
    "gift_card": ["source", "amount", "id"],
    "certificate": ["source", "amount", "id"],
}
DATE_KEYS = {
    "available": ["status", "available_seats", "prices"],
    "landed": ["status", "actual_departure_time_est", "actual_arrival_time_est"],
    "cancelled": ["status"],
    "flying": ["status", "actual_departure_time_est", "estimated_arrival_time_est"],
    "on time": ["status", "estimated_departure_time_est", "estimated_arrival_time_est"],
    "delayed": ["status", "estimated_departure_time_est", "estimated_arrival_time_est"],
}
NOW = datetime(2024, 5, 15, 15, 0, 0)


def _t(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S")


def _at(day: str, clock: str) -> datetime:
    """A flight's scheduled time on a date (``+1`` is the next day)."""
    hh, mm, ss = clock.removesuffix("+1").split(":")
    base = datetime.fromisoformat(day) + timedelta(hours=int(hh), minutes=int(mm), seconds=int(ss))
    return base + timedelta(days=1) if clock.endswith("+1") else base


@pytest.fixture(scope="module")
def data() -> gen.AirlineData:
    return gen.generate(gen.DEFAULT_SEED)


def _bytes(folder: Path) -> dict[str, bytes]:
    return file_bytes(folder, gen.DATA_FILES)


# --------------------------------------------------------------------------------------------- determinism
def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    assert gen.main(["--seed", "11", "--users", "12", "--reservations", "30", "--out", str(tmp_path / "a")]) == 0
    assert gen.main(["--seed", "11", "--users", "12", "--reservations", "30", "--out", str(tmp_path / "b")]) == 0
    assert _bytes(tmp_path / "a") == _bytes(tmp_path / "b")
    assert (tmp_path / "a" / "README.md").read_bytes() == (tmp_path / "b" / "README.md").read_bytes()


def test_different_seed_gives_different_data(tmp_path: Path) -> None:
    gen.write_data(gen.generate(1, n_users=12, n_reservations=30), tmp_path / "s1")
    gen.write_data(gen.generate(2, n_users=12, n_reservations=30), tmp_path / "s2")
    a, b = _bytes(tmp_path / "s1"), _bytes(tmp_path / "s2")
    assert all(a[name] != b[name] for name in gen.DATA_FILES)


def test_shipped_data_equals_a_fresh_generation(tmp_path: Path) -> None:
    readme = (DATA_DIR / "README.md").read_text(encoding="utf-8")
    m = re.search(r"--seed (\d+) --users (\d+) --reservations (\d+)", readme)
    assert m, "data/README.md must record the generation command"
    seed, users, reservations = (int(g) for g in m.groups())
    assert (seed, users, reservations) == (gen.DEFAULT_SEED, gen.DEFAULT_USERS, gen.DEFAULT_RESERVATIONS)
    gen.write_data(gen.generate(seed, n_users=users, n_reservations=reservations), tmp_path, seed=seed,
                   n_users=users, n_reservations=reservations)
    assert _bytes(tmp_path) == _bytes(DATA_DIR), "shipped data is stale: run scripts/generate-data airline"
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == readme


def test_cli_sizes_and_bad_sizes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert gen.main(["--out", str(tmp_path), "--users", "4", "--reservations", "6"]) == 0
    assert "4 users, 6 reservations, 44 flights" in capsys.readouterr().out
    assert f"--seed {gen.DEFAULT_SEED} --users 4 --reservations 6" in (tmp_path / "README.md").read_text("utf-8")
    with pytest.raises(SystemExit):
        gen.main(["--out", str(tmp_path), "--users", "0"])
    with pytest.raises(SystemExit):
        gen.main(["--out", str(tmp_path), "--reservations", "-1"])


# --------------------------------------------------------------------------------------------- shape
def test_sizes_and_variety(data: gen.AirlineData) -> None:
    users, reservations, flights = data["users"], data["reservations"], data["flights"]
    assert (len(users), len(reservations), len(flights)) == (50, 120, 44)
    assert all(u["reservations"] for u in users.values()), "every user has a reservation"
    assert len({a.code for a in gen.AIRPORTS}) == 20
    assert {f["origin"] for f in flights.values()} == {a.code for a in gen.AIRPORTS}
    dates = [(gen.FIRST_DATE + timedelta(days=i)).isoformat() for i in range(30)]
    assert all(list(f["dates"]) == dates for f in flights.values())
    statuses = Counter(d["status"] for f in flights.values() for d in f["dates"].values())
    assert set(statuses) == set(DATE_KEYS)
    assert {r["cabin"] for r in reservations.values()} == set(gen.CABINS)
    assert {r["flight_type"] for r in reservations.values()} == {"one_way", "round_trip"}
    assert {len(r["flights"]) for r in reservations.values()} == {1, 2, 4}
    assert {u["membership"] for u in users.values()} == {"regular", "silver", "gold"}
    assert Counter(r.get("status") for r in reservations.values())["cancelled"] >= 3
    assert sum(_t(r["created_at"]) > NOW - timedelta(hours=24) for r in reservations.values()) >= 5


def test_id_formats_and_uniqueness(data: gen.AirlineData) -> None:
    for uid, user in data["users"].items():
        first, last = user["name"]["first_name"].lower(), user["name"]["last_name"].lower()
        assert re.fullmatch(rf"{first}_{last}_\d{{4}}", uid)
        assert re.fullmatch(r"[a-z]+\.[a-z]+\d+@example\.com", user["email"])
        for mid, method in user["payment_methods"].items():
            assert mid == method["id"] and re.fullmatch(rf"{method['source']}_\d{{7}}", mid)
            assert mid not in ("certificate_3221322", "certificate_3221323", "certificate_3221324")
    for rid, reservation in data["reservations"].items():
        assert rid == reservation["reservation_id"] and re.fullmatch(r"[A-Z0-9]{6}", rid)
        assert rid not in ("HATHAT", "HATHAU", "HATHAV"), "ids a booking creates"
    for number, flight in data["flights"].items():
        assert number == flight["flight_number"] and re.fullmatch(r"HAT\d{3}", number)
    assert sorted(data["flights"]) == [f"HAT{i:03d}" for i in range(1, 45)]
    method_ids = [m for u in data["users"].values() for m in u["payment_methods"]]
    assert len(method_ids) == len(set(method_ids))
    names = [(u["name"]["first_name"], u["name"]["last_name"]) for u in data["users"].values()]
    assert len(names) == len(set(names))


def test_record_shapes_match_tau_bench(data: gen.AirlineData) -> None:
    for user in data["users"].values():
        assert list(user) == USER_KEYS
        assert list(user["name"]) == ["first_name", "last_name"]
        assert list(user["address"]) == ["address1", "address2", "city", "country", "state", "zip"]
        assert re.fullmatch(r"\d{5}", user["address"]["zip"]) and user["address"]["country"] == "USA"
        date.fromisoformat(user["dob"])
        assert any(m["source"] in ("credit_card", "gift_card") for m in user["payment_methods"].values())
        for method in user["payment_methods"].values():
            assert list(method) == METHOD_KEYS[method["source"]]
            if method["source"] != "credit_card":
                assert isinstance(method["amount"], int) and method["amount"] > 0
            else:
                assert re.fullmatch(r"\d{4}", method["last_four"])
        assert user["membership"] in gen.FREE_BAGS
        for person in user["saved_passengers"]:
            assert list(person) == PERSON_KEYS
    for reservation in data["reservations"].values():
        expected = RESERVATION_KEYS + (["status"] if "status" in reservation else [])
        assert list(reservation) == expected
        assert all(list(s) == SEGMENT_KEYS for s in reservation["flights"])
        assert all(list(p) == PERSON_KEYS for p in reservation["passengers"])
        assert all(list(p) == ["payment_id", "amount"] for p in reservation["payment_history"])
        assert reservation["insurance"] in ("yes", "no")
    for flight in data["flights"].values():
        assert list(flight) == FLIGHT_KEYS
        assert re.fullmatch(r"\d{2}:00:00", flight["scheduled_departure_time_est"])
        assert re.fullmatch(r"\d{2}:[03]0:00(\+1)?", flight["scheduled_arrival_time_est"])
        for record in flight["dates"].values():
            assert list(record) == DATE_KEYS[record["status"]]
            if record["status"] == "available":
                assert list(record["available_seats"]) == list(gen.CABINS) == list(record["prices"])
                assert all(isinstance(v, int) and 0 <= v <= 20 for v in record["available_seats"].values())
                prices = record["prices"]
                assert all(isinstance(v, int) and v > 0 for v in prices.values())
                assert prices["basic_economy"] < prices["economy"] < prices["business"]


@pytest.mark.skipif(not PEER_DATA.is_dir(), reason="peer tau-bench data not available")
def test_same_keys_as_the_peer_files_and_our_own_vocabulary() -> None:
    peer = {name: json.loads((PEER_DATA / f"{name}.json").read_text(encoding="utf-8"))
            for name in ("users", "reservations", "flights")}
    ours = {name: json.loads((DATA_DIR / f"{name}.json").read_text(encoding="utf-8"))
            for name in ("users", "reservations", "flights")}
    for name in ("users", "reservations", "flights"):
        peer_first, our_first = next(iter(peer[name].values())), next(iter(ours[name].values()))
        assert list(our_first) == list(peer_first), name
    peer_users = peer["users"].values()
    assert not {u["name"]["first_name"] for u in peer_users} & set(gen.FIRST_NAMES)
    assert not {u["name"]["last_name"] for u in peer_users} & set(gen.LAST_NAMES)
    assert not {u["address"]["city"] for u in peer_users} & {a.city for a in gen.AIRPORTS}


# --------------------------------------------------------------------------------------------- consistency
def test_flight_statuses_agree_with_now(data: gen.AirlineData) -> None:
    today = NOW.date().isoformat()
    for flight in data["flights"].values():
        for day, record in flight["dates"].items():
            status = record["status"]
            if day < today:
                assert status in ("landed", "cancelled"), (flight["flight_number"], day)
            elif day > today:
                assert status == "available", (flight["flight_number"], day)
            else:
                assert status in ("landed", "flying", "on time", "delayed"), (flight["flight_number"], day)
            if status == "landed":
                assert _t(record["actual_departure_time_est"]) < _t(record["actual_arrival_time_est"]) <= NOW
            elif status == "flying":
                assert _t(record["actual_departure_time_est"]) <= NOW < _t(record["estimated_arrival_time_est"])
            elif status in ("on time", "delayed"):
                departs = _t(record["estimated_departure_time_est"])
                assert departs > NOW
                late = departs - _at(day, flight["scheduled_departure_time_est"])
                assert (late >= timedelta(minutes=30)) == (status == "delayed")


def test_network_is_hub_and_spoke(data: gen.AirlineData) -> None:
    hubs = {a.code for a in gen.AIRPORTS if a.hub is None}
    spoke_hub = {a.code: a.hub for a in gen.AIRPORTS if a.hub is not None}
    routes = Counter((f["origin"], f["destination"]) for f in data["flights"].values())
    for (origin, destination), n in routes.items():
        assert (origin in hubs and destination in hubs) or spoke_hub.get(origin) == destination \
            or spoke_hub.get(destination) == origin
        assert routes[destination, origin] == n, "every route is flown both ways"
    for spoke, hub in spoke_hub.items():
        assert routes[spoke, hub] >= 1


def test_reservations_are_consistent(data: gen.AirlineData) -> None:
    users, flights = data["users"], data["flights"]
    owners = {rid: uid for uid, u in users.items() for rid in u["reservations"]}
    assert sorted(owners) == sorted(data["reservations"]), "each reservation is listed by exactly its user"
    for user in users.values():
        stamps = [data["reservations"][rid]["created_at"] for rid in user["reservations"]]
        assert stamps == sorted(stamps), "a user lists reservations in booking order"
    for rid, r in data["reservations"].items():
        user = users[r["user_id"]]
        assert owners[rid] == r["user_id"]
        segments = r["flights"]
        for s in segments:
            flight = flights[s["flight_number"]]
            assert (s["origin"], s["destination"]) == (flight["origin"], flight["destination"])
            assert s["date"] in flight["dates"] and isinstance(s["price"], int) and s["price"] > 0
        times = [(_at(s["date"], flights[s["flight_number"]]["scheduled_departure_time_est"]),
                  _at(s["date"], flights[s["flight_number"]]["scheduled_arrival_time_est"])) for s in segments]
        for i in range(1, len(segments)):  # each segment leaves from where, and after, the previous one lands
            assert segments[i - 1]["destination"] == segments[i]["origin"] and times[i][0] > times[i - 1][1], rid
        assert segments[0]["origin"] == r["origin"]
        if r["flight_type"] == "one_way":
            assert segments[-1]["destination"] == r["destination"] and len(segments) <= 2
        else:
            half = len(segments) // 2
            assert len(segments) % 2 == 0
            assert segments[half - 1]["destination"] == r["destination"] == segments[half]["origin"]
            assert segments[-1]["destination"] == r["origin"]
        n = len(r["passengers"])
        assert 1 <= n <= 5
        assert len({(p["first_name"], p["last_name"]) for p in r["passengers"]}) == n
        free = gen.FREE_BAGS[user["membership"]][r["cabin"]] * n
        assert r["nonfree_baggages"] == max(0, r["total_baggages"] - free)
        total = sum(s["price"] for s in segments) * n + 50 * r["nonfree_baggages"]
        total += 30 * n if r["insurance"] == "yes" else 0
        payment = r["payment_history"][0]
        assert payment["amount"] == total
        assert user["payment_methods"][payment["payment_id"]]["source"] in ("credit_card", "gift_card")
        created, first_departure = _t(r["created_at"]), times[0][0]
        assert created < first_departure and created < NOW
        if created > NOW - timedelta(hours=25):
            assert NOW - timedelta(hours=23) <= created <= NOW - timedelta(hours=1), rid
            assert first_departure > NOW + timedelta(days=1), rid
        if r.get("status") == "cancelled":
            assert r["payment_history"] == [payment, {"payment_id": payment["payment_id"], "amount": -total}]
            assert first_departure > NOW
        else:
            assert "status" not in r and len(r["payment_history"]) == 1
