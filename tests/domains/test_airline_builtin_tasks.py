"""The built-in airline tasks: well-formed, grounded in the shipped data, and their gold actions do what we meant.

The expected diffs below were written by hand from domains/airline/data (seed 2024), not copied from a replay:
each amount and seat count is derived in the comment next to it. The built-in data runs the tools in mode
``tausim``: bookings take seats, cancellations give seats and gift-card money back, cabin changes set ``cabin``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from simulator.execution.parity import ReplayResult, replay_tasks
from simulator.types.tasks import Task, load_tasks
from tests._support.task_checks import (
    assert_every_gold_action_succeeds,
    assert_no_change_without_a_write,
    assert_same_diff,
    assert_transfer_ends_the_replay,
)

ROOT = Path(__file__).resolve().parents[2]
AIRLINE = ROOT / "domains" / "airline"
TASK_FILE = AIRLINE / "tasks" / "builtin.json"

WRITE_TOOLS = {
    "book_reservation",
    "cancel_reservation",
    "update_reservation_flights",
    "update_reservation_baggages",
    "update_reservation_passengers",
    "send_certificate",
}
READ_TOOLS = {
    "get_user_details",
    "get_reservation_details",
    "list_all_airports",
    "search_direct_flight",
    "search_onestop_flight",
    "calculate",
    "think",
}
TRANSFER = "transfer_to_human_agents"
NOW = "2024-05-15T15:00:00"


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((AIRLINE / "data" / name).read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return load_tasks(TASK_FILE, "airline")


@pytest.fixture(scope="module")
def db() -> dict[str, dict[str, Any]]:
    return {name: _load(f"{name}.json") for name in ("users", "reservations", "flights")}


# --------------------------------------------------------------------------------------------- static checks
def test_file_header_and_count(tasks: list[Task]) -> None:
    doc = json.loads(TASK_FILE.read_text(encoding="utf-8"))
    assert (doc["format"], doc["version"], doc["domain"]) == ("tausim.tasks", 1, "airline")
    assert len(tasks) >= 16
    assert len({t.id for t in tasks}) == len(tasks)


def test_every_write_tool_is_exercised(tasks: list[Task]) -> None:
    used = {a.name for t in tasks for a in t.gold_actions}
    assert WRITE_TOOLS <= used
    assert used <= WRITE_TOOLS | READ_TOOLS | {TRANSFER}


def test_task_kinds_are_covered(tasks: list[Task]) -> None:
    tags = [tag for t in tasks for tag in t.tags]
    assert {"book", "cancel", "change_flights", "change_cabin", "bags", "passengers", "compensation",
            "refusal", "transfer", "multi_intent", "required_output", "partial_refusal"} <= set(tags)
    assert tags.count("refusal") >= 3 and tags.count("transfer") >= 2
    assert sum(len([a for a in t.gold_actions if a.name in WRITE_TOOLS]) >= 2 for t in tasks) >= 3


def test_tags_agree_with_gold_actions_and_process_rules(tasks: list[Task]) -> None:
    for t in tasks:
        writes = [a.name for a in t.gold_actions if a.name in WRITE_TOOLS]
        rules = t.process
        if "refusal" in t.tags:
            assert not writes, f"{t.id}: a refusal task must not write"
            assert rules.no_writes and rules.required_tools, f"{t.id}: a refusal needs no_writes + a look-up"
            assert set(rules.required_tools) <= READ_TOOLS
            assert set(rules.required_tools) <= {a.name for a in t.gold_actions}, t.id
        if "transfer" in t.tags:
            assert t.gold_actions[-1].name == TRANSFER, t.id
            assert rules.expected_termination == ["agent_transfer"], t.id
        else:
            assert all(a.name != TRANSFER for a in t.gold_actions), t.id
            assert rules.expected_termination is None, t.id
        if "required_output" in t.tags:
            assert t.required_outputs, t.id
        if "multi_intent" in t.tags:
            assert len(writes) >= 2, t.id
        if "refusal" not in t.tags and "transfer" not in t.tags:
            assert writes, f"{t.id}: an action task needs a write"
        for tool in rules.forbidden_tools:  # a forbidden tool is never part of the gold path
            assert tool not in {a.name for a in t.gold_actions}, t.id
        # tag names follow the write tools used
        expected = {"book_reservation": "book", "cancel_reservation": "cancel", "send_certificate": "compensation",
                    "update_reservation_baggages": "bags", "update_reservation_passengers": "passengers"}
        for name in writes:
            if name in expected:
                assert expected[name] in t.tags, (t.id, name)
            if name == "update_reservation_flights":
                assert {"change_flights", "change_cabin"} & set(t.tags), t.id


def test_a_do_nothing_agent_cannot_pass(tasks: list[Task]) -> None:
    """Each task needs a write (a goal state unlike the start), a required look-up, or a transfer."""
    for t in tasks:
        writes = any(a.name in WRITE_TOOLS for a in t.gold_actions)
        assert writes or t.process.required_tools or t.process.expected_termination, t.id


def test_tasks_refer_to_existing_records(tasks: list[Task], db: dict[str, dict[str, Any]]) -> None:
    users, reservations, flights = db["users"], db["reservations"], db["flights"]
    for t in tasks:
        assert t.user_id in users, t.id
        user = users[t.user_id]
        for a in t.gold_actions:
            args = a.arguments
            if "user_id" in args:
                assert args["user_id"] == t.user_id, (t.id, a.name)
            if "reservation_id" in args:
                assert args["reservation_id"] in reservations, (t.id, a.name)
                if a.name in WRITE_TOOLS:
                    r = reservations[args["reservation_id"]]
                    assert r["user_id"] == t.user_id and "status" not in r, (t.id, a.name)
            for key in ("payment_id",):
                if key in args:
                    assert user["payment_methods"][args[key]]["source"] != "certificate", t.id
            for payment in args.get("payment_methods", []):
                assert payment["payment_id"] in user["payment_methods"], t.id
            for ref in args.get("flights", []):
                assert flights[ref["flight_number"]]["dates"][ref["date"]]["status"] == "available" or any(
                    s["flight_number"] == ref["flight_number"] and s["date"] == ref["date"]
                    for s in reservations.get(args.get("reservation_id", ""), {}).get("flights", [])
                ), (t.id, ref)
            for key in ("origin", "destination"):
                if key in args:
                    assert any(f[key] == args[key] for f in flights.values()), t.id
        text = t.scenario.instructions + json.dumps(t.scenario.known_info)
        for rid in re.findall(r"\b[A-Z0-9]{6}\b", text):  # every reservation id mentioned exists
            if re.search(r"\d", rid) and re.search(r"[A-Z]", rid):
                assert rid in reservations, (t.id, rid)


def test_scenarios_are_well_formed(tasks: list[Task], db: dict[str, dict[str, Any]]) -> None:
    users, reservations = db["users"], db["reservations"]
    for t in tasks:
        sc = t.scenario
        assert sc.instructions.startswith("You are "), t.id
        known = sc.known_info
        user = users[t.user_id or ""]
        assert t.user_id is not None and known["user_id"] == t.user_id and t.user_id in sc.instructions, t.id
        assert known["name"] == f"{user['name']['first_name']} {user['name']['last_name']}", t.id
        blob = json.dumps(known)
        assert not re.search(r"(credit_card|gift_card|certificate)_\d", blob), f"{t.id}: no payment ids"
        assert not re.search(r"HAT\d{3}", blob + sc.instructions), f"{t.id}: the user does not know flight numbers"
        assert "payment method ids" in sc.unknown_info, t.id
        if any(a.name in ("book_reservation", "update_reservation_flights") for a in t.gold_actions):
            assert "flight numbers" in sc.unknown_info or "prices" in sc.unknown_info, t.id
        # reservation ids the user knows are its own, except where the task is about someone else's
        known_ids = [known["reservation_id"]] if "reservation_id" in known else known.get("reservation_ids", [])
        for rid in known_ids:
            assert (reservations[rid]["user_id"] == t.user_id) != ("other_user" in t.tags), (t.id, rid)
        for out in t.required_outputs:  # required outputs are never handed to the user
            assert re.fullmatch(r"\d+(\.\d+)?", out), (t.id, out)
            assert not re.search(rf"(?<![\d.]){re.escape(out)}(?![\d.])", blob + " " + sc.instructions), (t.id, out)


# --------------------------------------------------------------------------------------------- replay
def _airline_domain() -> Any:
    try:
        from domains.airline import AirlineDomain
    except ImportError as e:  # pragma: no cover - only while the domain package is incomplete
        pytest.skip(f"airline domain not importable yet: {e}")
    return AirlineDomain()


@pytest.fixture(scope="module")
def domain() -> Any:
    return _airline_domain()


@pytest.fixture(scope="module")
def replays(domain: Any, tasks: list[Task]) -> dict[str, ReplayResult]:
    return {r.task_id: r for r in replay_tasks(domain, domain.template(), tasks)}


def test_builtin_data_runs_in_tausim_mode(domain: Any) -> None:
    assert domain.default_options(None) == {"mode": "tausim"}


def test_every_gold_action_succeeds(tasks: list[Task], replays: dict[str, ReplayResult]) -> None:
    assert_every_gold_action_succeeds(tasks, replays)


def test_no_change_without_a_write(tasks: list[Task], replays: dict[str, ReplayResult]) -> None:
    assert_no_change_without_a_write(tasks, replays, WRITE_TOOLS)


def test_transfer_ends_the_replay(tasks: list[Task], replays: dict[str, ReplayResult]) -> None:
    assert_transfer_ends_the_replay(tasks, replays)


def _table(changed: dict[str, Any], added: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"added": added or {}, "removed": [], "changed": changed}


def _seats(changes: dict[tuple[str, str, str], tuple[int, int]]) -> dict[str, Any]:
    """``{(flight, date, cabin): (old, new)}`` -> the flights table diff."""
    changed: dict[str, dict[str, Any]] = {}
    for (flight, day, cabin), (old, new) in changes.items():
        changed.setdefault(flight, {})[f"dates.{day}.available_seats.{cabin}"] = {"old": old, "new": new}
    return _table(changed)


def _paid(payment_id: str, amount: float) -> dict[str, Any]:
    return {"new": {"payment_id": payment_id, "amount": amount}}


def _segment(number: str, day: str, price: int, origin: str, destination: str) -> dict[str, Any]:
    # a segment written by a tool keeps the peer's key order: number, date, price, origin, destination
    return {"flight_number": number, "date": day, "price": price, "origin": origin, "destination": destination}


EXPECTED_DIFFS: dict[str, dict[str, Any]] = {
    # Round trip BOI->SLC for 2 in economy: HAT017 on 05-21 costs 136 (3 seats left), HAT022 on 05-25 costs 142
    # (19 left). (136 + 142) * 2 = 556, insurance 2 * 30 = 60, 3 bags against 2 free (regular economy: 1 each)
    # = 1 non-free, 50. Total 666 = certificate 250 (spent, so deleted) + gift card 322 (-> 0) + Amex 94.
    "book-round-trip-three-methods": {
        "users": _table({"zainab_zapata_8432": {
            "payment_methods.certificate_9331123": {"old": {"source": "certificate", "amount": 250,
                                                            "id": "certificate_9331123"}},
            "payment_methods.gift_card_6406034.amount": {"old": 322, "new": 0},
            "reservations[5]": {"new": "HATHAT"},  # she had 5 reservations
        }}),
        "reservations": _table({}, {"HATHAT": {
            "reservation_id": "HATHAT", "user_id": "zainab_zapata_8432", "origin": "BOI", "destination": "SLC",
            "flight_type": "round_trip", "cabin": "economy",
            "flights": [_segment("HAT017", "2024-05-21", 136, "BOI", "SLC"),
                        _segment("HAT022", "2024-05-25", 142, "SLC", "BOI")],
            "passengers": [{"first_name": "Zainab", "last_name": "Zapata", "dob": "1972-01-02"},
                           {"first_name": "Zoltan", "last_name": "Lachance", "dob": "1973-03-05"}],
            "payment_history": [{"payment_id": "certificate_9331123", "amount": 250},
                                {"payment_id": "gift_card_6406034", "amount": 322},
                                {"payment_id": "credit_card_9557712", "amount": 94}],
            "created_at": NOW, "total_baggages": 3, "nonfree_baggages": 1, "insurance": "yes",
        }}),
        "flights": _seats({("HAT017", "2024-05-21", "economy"): (3, 1),
                           ("HAT022", "2024-05-25", "economy"): (19, 17)}),
    },
    # 3P2SWO: economy, insured, 1 passenger, 727 paid by gift_card_4851204 (balance 198 -> 198 + 727 = 925).
    # Seats back in economy: HAT008 05-18 13, HAT033 05-18 7, HAT009 05-19 17, HAT002 05-20 4 (each + 1).
    "cancel-insured-health": {
        "users": _table({"adaeze_takahashi_5868": {"payment_methods.gift_card_4851204.amount": {"old": 198,
                                                                                                "new": 925}}}),
        "reservations": _table({"3P2SWO": {"payment_history[1]": _paid("gift_card_4851204", -727),
                                           "status": {"new": "cancelled"}}}),
        "flights": _seats({("HAT008", "2024-05-18", "economy"): (13, 14), ("HAT033", "2024-05-18", "economy"): (7, 8),
                           ("HAT009", "2024-05-19", "economy"): (17, 18), ("HAT002", "2024-05-20", "economy"): (4, 5)}),
    },
    # AL3E91: basic economy, 2 passengers, 328 on gift_card_6716866 (364 -> 692). Only the return HAT010 on 05-17
    # (7 basic economy seats) gets seats back: the cancelled HAT039 on 05-10 has no seat counts. Gold member:
    # a certificate of 100 * 2 = 200, the first certificate id send_certificate gives.
    "cancel-airline-cancelled-with-certificate": {
        "users": _table({"vesna_hakimi_2221": {
            "payment_methods.gift_card_6716866.amount": {"old": 364, "new": 692},
            "payment_methods.certificate_3221322": {"new": {"source": "certificate", "amount": 200,
                                                            "id": "certificate_3221322"}},
        }}),
        "reservations": _table({"AL3E91": {"payment_history[1]": _paid("gift_card_6716866", -328),
                                           "status": {"new": "cancelled"}}}),
        "flights": _seats({("HAT010", "2024-05-17", "basic_economy"): (7, 9)}),
    },
    # 73LF7K, 2 passengers: return HAT015 05-25 (paid 139) -> HAT015 05-28 (economy 179, 20 seats).
    # The outbound is kept at 127. (179 - 139) * 2 = 80 charged to the Mastercard.
    "change-return-date": {
        "reservations": _table({"73LF7K": {
            "flights[1].date": {"old": "2024-05-25", "new": "2024-05-28"},
            "flights[1].price": {"old": 139, "new": 179},
            "payment_history[1]": _paid("credit_card_8477069", 80),
        }}),
        "flights": _seats({("HAT015", "2024-05-25", "economy"): (1, 3), ("HAT015", "2024-05-28", "economy"): (20, 18)}),
    },
    # CAPKYS basic economy -> economy on HAT023 + HAT016 on 05-18: economy prices 190 and 134 (5 and 2 seats);
    # paid 146 + 74. 324 - 220 = 104 on the Discover card. Basic economy seats (14, 16) come back.
    "upgrade-basic-to-economy": {
        "reservations": _table({"CAPKYS": {
            "cabin": {"old": "basic_economy", "new": "economy"},
            "flights[0].price": {"old": 146, "new": 190},
            "flights[1].price": {"old": 74, "new": 134},
            "payment_history[1]": _paid("credit_card_8587125", 104),
        }}),
        "flights": _seats({("HAT023", "2024-05-18", "basic_economy"): (14, 15),
                           ("HAT023", "2024-05-18", "economy"): (5, 4),
                           ("HAT016", "2024-05-18", "basic_economy"): (16, 17),
                           ("HAT016", "2024-05-18", "economy"): (2, 1)}),
    },
    # MZU13P: silver member in economy, 1 passenger: 2 free bags. 1 -> 3 bags makes 1 non-free: 50 from
    # gift_card_9421312 (109 -> 59).
    "add-bags": {
        "users": _table({"ulrich_cardenas_5707": {"payment_methods.gift_card_9421312.amount": {"old": 109,
                                                                                               "new": 59}}}),
        "reservations": _table({"MZU13P": {
            "payment_history[1]": _paid("gift_card_9421312", 50),
            "total_baggages": {"old": 1, "new": 3},
            "nonfree_baggages": {"old": 0, "new": 1},
        }}),
    },
    # 4YBNIY: the second passenger, Wendell Kaur (1991-09-01), becomes the saved passenger Malak Valdivia.
    "replace-passenger": {
        "reservations": _table({"4YBNIY": {
            "passengers[1].first_name": {"old": "Wendell", "new": "Malak"},
            "passengers[1].last_name": {"old": "Kaur", "new": "Valdivia"},
            "passengers[1].dob": {"old": "1991-09-01", "new": "1955-10-26"},
        }}),
    },
    # 3O7JL7, 1 passenger: HAT043 + HAT024 move from 05-25 (paid 154 + 118) to 05-26 (economy 168 + 143):
    # +39; then 1 -> 3 bags with 2 free (silver economy): +50. Gift card 357 - 39 - 50 = 268.
    "multi-change-date-and-bags": {
        "users": _table({"fionn_galloway_8894": {"payment_methods.gift_card_4981035.amount": {"old": 357,
                                                                                              "new": 268}}}),
        "reservations": _table({"3O7JL7": {
            "flights[0].date": {"old": "2024-05-25", "new": "2024-05-26"},
            "flights[0].price": {"old": 154, "new": 168},
            "flights[1].date": {"old": "2024-05-25", "new": "2024-05-26"},
            "flights[1].price": {"old": 118, "new": 143},
            "payment_history[1]": _paid("gift_card_4981035", 39),
            "payment_history[2]": _paid("gift_card_4981035", 50),
            "total_baggages": {"old": 1, "new": 3},
            "nonfree_baggages": {"old": 0, "new": 1},
        }}),
        "flights": _seats({("HAT043", "2024-05-25", "economy"): (11, 12), ("HAT024", "2024-05-25", "economy"): (12, 13),
                           ("HAT043", "2024-05-26", "economy"): (12, 11), ("HAT024", "2024-05-26", "economy"): (6, 5)}),
    },
    # PYR6EC, 2 passengers, insured: the delayed HAT001 of today (paid 102) -> HAT001 05-16 (economy 101,
    # 11 seats): (101 - 102) * 2 = -2 refunded to the card; today's date has no seat counts to give back.
    # Delay compensation for an insured reservation: 50 * 2 = 100.
    "delay-change-and-certificate": {
        "users": _table({"solveig_pellegrini_3099": {
            "payment_methods.certificate_3221322": {"new": {"source": "certificate", "amount": 100,
                                                            "id": "certificate_3221322"}}}}),
        "reservations": _table({"PYR6EC": {
            "flights[0].date": {"old": "2024-05-15", "new": "2024-05-16"},
            "flights[0].price": {"old": 102, "new": 101},
            "payment_history[1]": _paid("credit_card_7118229", -2),
        }}),
        "flights": _seats({("HAT001", "2024-05-16", "economy"): (11, 9)}),
    },
    "refuse-cancel-economy-no-insurance": {},
    "refuse-change-basic-economy-flights": {},
    "transfer-cancel-partly-flown": {},
}


@pytest.mark.parametrize("task_id", sorted(EXPECTED_DIFFS))
def test_expected_diff(task_id: str, replays: dict[str, ReplayResult]) -> None:
    assert_same_diff(EXPECTED_DIFFS[task_id], replays[task_id].diff)


def test_required_outputs_follow_from_the_data(db: dict[str, dict[str, Any]], tasks: list[Task]) -> None:
    """Recompute every required output straight from the data files (independently of the tools)."""
    users, reservations, flights = db["users"], db["reservations"], db["flights"]
    by_id = {t.id: t for t in tasks}

    def price(number: str, day: str, cabin: str) -> int:
        value: int = flights[number]["dates"][day]["prices"][cabin]
        return value

    def seats(number: str, day: str, cabin: str) -> int:
        value: int = flights[number]["dates"][day]["available_seats"][cabin]
        return value

    def balance(user_id: str, method: str) -> int:
        value: int = users[user_id]["payment_methods"][method]["amount"]
        return value

    def paid(rid: str) -> int:
        return sum(p["amount"] for p in reservations[rid]["payment_history"])

    def booked(rid: str, i: int) -> int:
        value: int = reservations[rid]["flights"][i]["price"]
        return value

    def n(rid: str) -> int:
        return len(reservations[rid]["passengers"])

    def free_bags(rid: str) -> int:
        r = reservations[rid]
        allowance = {"regular": (0, 1, 2), "silver": (1, 2, 3), "gold": (2, 3, 3)}[users[r["user_id"]]["membership"]]
        return allowance[("basic_economy", "economy", "business").index(r["cabin"])] * len(r["passengers"])

    # the one-stop option over HAT031 has no economy seat, so the booking uses HAT037
    assert seats("HAT031", "2024-05-19", "economy") == 0 < seats("HAT037", "2024-05-19", "economy")
    round_trip = (price("HAT017", "2024-05-21", "economy") + price("HAT022", "2024-05-25", "economy")) * 2 + 2 * 30 + 50
    assert free_bags("IT03XM") == 2 and free_bags("MZU13P") == 2 and free_bags("3O7JL7") == 2
    expect: dict[str, list[float]] = {
        "book-one-way-connection": [price("HAT044", "2024-05-19", "economy")
                                    + price("HAT037", "2024-05-19", "economy")],
        "book-round-trip-three-methods": [round_trip, round_trip - balance("zainab_zapata_8432", "certificate_9331123")
                                          - balance("zainab_zapata_8432", "gift_card_6406034")],
        "book-business-one-certificate": [price("HAT039", "2024-05-22", "business")
                                          + price("HAT007", "2024-05-22", "business")
                                          - balance("joaquin_lindgren_7380", "certificate_3182903")],
        "cancel-within-24-hours": [paid("FFVX16")],
        "cancel-business-change-of-plans": [paid("GR0OJS")],
        "cancel-insured-health": [balance("adaeze_takahashi_5868", "gift_card_4851204") + paid("3P2SWO")],
        "cancel-airline-cancelled-with-certificate": [balance("vesna_hakimi_2221", "gift_card_6716866")
                                                      + paid("AL3E91")],
        "multi-cancel-airline-cancelled-no-compensation": [balance("vesna_ekwueme_3849", "gift_card_5005995")
                                                           + paid("B3YMQL")],
        "change-return-date": [(price("HAT015", "2024-05-28", "economy") - booked("73LF7K", 1)) * n("73LF7K")],
        "upgrade-basic-to-economy": [price("HAT023", "2024-05-18", "economy") + price("HAT016", "2024-05-18", "economy")
                                     - booked("CAPKYS", 0) - booked("CAPKYS", 1)],
        "downgrade-business-refund": [(booked("674EVP", 0) + booked("674EVP", 1)
                                       - price("HAT027", "2024-05-20", "economy")
                                       - price("HAT007", "2024-05-20", "economy")) * n("674EVP")],
        "add-bags": [50 * (3 - free_bags("MZU13P"))],
        "multi-cancel-recent-and-add-bags": [50 * (3 - free_bags("IT03XM"))],
        "multi-change-date-and-bags": [price("HAT043", "2024-05-26", "economy")
                                       + price("HAT024", "2024-05-26", "economy")
                                       - booked("3O7JL7", 0) - booked("3O7JL7", 1) + 50 * (3 - free_bags("3O7JL7"))],
    }
    assert {t.id for t in tasks if t.required_outputs} == set(expect)
    for task_id, values in expect.items():
        assert [float(o) for o in by_id[task_id].required_outputs] == values, task_id


def test_policy_facts_behind_the_tasks(db: dict[str, dict[str, Any]]) -> None:
    """The facts each policy decision rests on, read from the data (the gold actions depend on them)."""
    users, reservations, flights = db["users"], db["reservations"], db["flights"]

    def status(rid: str, i: int) -> str:
        seg = reservations[rid]["flights"][i]
        value: str = flights[seg["flight_number"]]["dates"][seg["date"]]["status"]
        return value

    def recent(rid: str) -> bool:
        created = reservations[rid]["created_at"]
        return bool(created > "2024-05-14T15:00:00")

    def flown(rid: str, i: int) -> bool:
        return status(rid, i) in ("landed", "flying")

    # cancellations allowed by exactly one rule
    assert recent("FFVX16") and reservations["FFVX16"]["cabin"] == "economy"
    assert reservations["FFVX16"]["insurance"] == "no"
    assert reservations["GR0OJS"]["cabin"] == "business" and not recent("GR0OJS")
    assert reservations["3P2SWO"]["insurance"] == "yes" and reservations["3P2SWO"]["cabin"] == "economy"
    assert status("AL3E91", 0) == "cancelled" and not flown("AL3E91", 1)
    assert status("B3YMQL", 0) == "cancelled" and not flown("B3YMQL", 1)
    assert recent("OV6B7T") and reservations["OV6B7T"]["cabin"] == "economy"
    # refused cancellations: economy, booked long ago, no airline cancellation; insurance absent or not covering
    for rid in ("BI52SD", "941VNN"):
        r = reservations[rid]
        assert r["cabin"] == "economy" and not recent(rid)
        assert all(status(rid, i) == "available" for i in range(len(r["flights"])))
    assert reservations["BI52SD"]["insurance"] == "no" and users["marisol_galloway_4378"]["membership"] == "gold"
    assert reservations["941VNN"]["insurance"] == "yes"
    # basic economy flights cannot change
    assert reservations["GZ701Q"]["cabin"] == "basic_economy"
    # compensation: who qualifies
    assert users["vesna_hakimi_2221"]["membership"] == "gold"
    ekwueme = reservations["B3YMQL"]
    assert users["vesna_ekwueme_3849"]["membership"] == "regular" and ekwueme["insurance"] == "no"
    assert ekwueme["cabin"] == "basic_economy"
    assert reservations["DI3JH9"]["cabin"] == "business" and status("DI3JH9", 1) == "cancelled"
    assert users["odile_vasquez_5388"]["membership"] == "regular" and reservations["E492Q4"]["insurance"] == "no"
    assert reservations["E492Q4"]["cabin"] == "economy" and status("E492Q4", 0) == "cancelled"
    assert status("PYR6EC", 0) == "delayed" and reservations["PYR6EC"]["insurance"] == "yes"
    # transfers and other refusals
    assert flown("7O9AS0", 0) and not flown("7O9AS0", 1) and reservations["7O9AS0"]["cabin"] == "business"
    assert len(reservations["SHWIH0"]["passengers"]) == 2
    assert reservations["QW8G70"]["user_id"] != "fionn_galloway_8894"
    assert all(status("KKQGQU", i) == "landed" for i in range(len(reservations["KKQGQU"]["flights"])))


# What the refused requests would do if an agent made them anyway. The tools leave most of the airline
# policy to the agent (as in tau-bench), so these calls succeed: only the agent's judgement stops them.
FORBIDDEN: dict[str, tuple[str, dict[str, Any], str]] = {
    "refuse-cancel-economy-no-insurance": ("cancel_reservation", {"reservation_id": "BI52SD"}, "ok"),
    "refuse-cancel-insurance-reason-not-covered": ("cancel_reservation", {"reservation_id": "941VNN"}, "ok"),
    "refuse-change-basic-economy-flights": ("update_reservation_flights", {
        "reservation_id": "GZ701Q", "cabin": "basic_economy", "payment_id": "credit_card_6782137",
        "flights": [{"flight_number": "HAT004", "date": "2024-05-24"},
                    {"flight_number": "HAT024", "date": "2024-05-27"}]}, "tool_error"),  # no basic seat left
    "refuse-compensation-regular-economy": ("send_certificate", {"user_id": "odile_vasquez_5388", "amount": 100},
                                            "ok"),
    "refuse-add-passenger": ("update_reservation_passengers", {"reservation_id": "SHWIH0", "passengers": [
        {"first_name": "Rustam", "last_name": "Hakimi", "dob": "1996-08-14"},
        {"first_name": "Ilse", "last_name": "Lindgren", "dob": "1968-08-06"},
        {"first_name": "Wendell", "last_name": "Okonkwo", "dob": "1979-02-11"}]}, "tool_error"),
    "refuse-other-users-reservation": ("cancel_reservation", {"reservation_id": "QW8G70"}, "ok"),
    "multi-cancel-airline-cancelled-no-compensation": ("send_certificate", {"user_id": "vesna_ekwueme_3849",
                                                                           "amount": 300}, "ok"),
}


def test_refused_requests_against_the_tools(domain: Any, tasks: list[Task]) -> None:
    from simulator.types.tasks import Action
    from simulator.world.replay import apply_actions

    by_id = {t.id: t for t in tasks}
    assert {t.id for t in tasks if "refusal" in t.tags} <= set(FORBIDDEN)
    template = domain.template()
    for task_id, (name, arguments, status) in FORBIDDEN.items():
        assert task_id in by_id
        with template.trial() as trial:
            (outcome,) = apply_actions(domain.toolbox(), trial, [Action(name=name, arguments=arguments)])
        assert outcome.status == status, (task_id, outcome.content)
