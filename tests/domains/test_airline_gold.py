"""Gold parity with tau-bench airline: replaying each task's gold actions reproduces the peer's recorded outcome.

The peer's own environment recorded, for the 25 airline test tasks with an even index, the response of every
gold action and the final state diff (``../shared/peers/tau-bench/gold/airline_test_even.json``). In mode
``tau-bench`` (the default for a ``--data`` folder) our replay must give the same diff (numbers at cent
precision) and the same pattern of error/non-error responses (up to a transfer that ends the episode); the
successful responses are also compared exactly (record JSON: key order and number types included). The odd
tasks have no recorded outcome: they must replay cleanly, and a few of their outcomes, worked out by hand from
the task's instruction and the data files, are checked.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from domains.airline import AirlineDomain
from simulator.execution.parity import ReplayResult, replay_tasks
from simulator.types.tasks import Task, load_tasks
from simulator.world.database import TemplateDatabase
from tests._support.peer_gold import mismatch, peer_domain_dir


@pytest.fixture(scope="module")
def tasks(peers_dir: Path) -> list[Task]:
    return load_tasks(peer_domain_dir(peers_dir, "airline", "tasks_test.json") / "tasks_test.json")


@pytest.fixture(scope="module")
def replayed(airline_peer_dir: Path, tasks: list[Task]) -> dict[str, list[ReplayResult]]:
    """Every test task replayed once per mode (the peer data set defaults to ``tau-bench``)."""
    domain = AirlineDomain()
    out = {}
    for mode in ("tau-bench", "tausim"):
        template: TemplateDatabase = domain.template(airline_peer_dir / "data", None if mode == "tau-bench" else
                                                     {"mode": mode})
        assert template.options == {"mode": mode}
        t0 = time.perf_counter()
        out[mode] = list(replay_tasks(domain, template, tasks))  # raises GoldToolBug on a bug in a tool
        elapsed = time.perf_counter() - t0
        print(f"\n{mode}: {len(tasks)} tasks replayed in {elapsed:.2f} s ({elapsed / len(tasks) * 1000:.1f} ms/task)")
    return out


def test_gold_parity_even_tasks(replayed: dict[str, list[ReplayResult]], peers_dir: Path) -> None:
    gold_file = peers_dir / "gold" / "airline_test_even.json"
    if not gold_file.is_file():
        pytest.skip(f"gold outcomes not found at {gold_file}")
    gold = {g["task_index"]: g for g in json.loads(gold_file.read_text())}
    assert len(gold) == 25 and all(i % 2 == 0 for i in gold)
    results = {r.task_index: r for r in replayed["tau-bench"]}
    problems = [f"task {i}: {why}" for i in sorted(gold) if (why := mismatch(results[i], gold[i]))]
    assert not problems, f"{len(gold) - len(problems)}/{len(gold)} match\n" + "\n".join(problems)


def test_every_task_replays_cleanly_in_both_modes(replayed: dict[str, list[ReplayResult]], tasks: list[Task]) -> None:
    for mode, results in replayed.items():
        assert len(results) == len(tasks)
        for task, result in zip(tasks, results, strict=True):
            names = [a.name for a in task.gold_actions]
            assert set(result.statuses) <= {"ok"}, (mode, task.id, result.statuses, result.responses)
            if "transfer_to_human_agents" in names:
                stop = names.index("transfer_to_human_agents")
                assert len(result.responses) == stop + 1 and result.responses[-1] == "Transfer successful"
            else:
                assert len(result.responses) == len(names)


def _changed(result: ReplayResult, table: str, key: str) -> dict[str, Any]:
    return dict(result.diff[table]["changed"][key])


def test_held_out_outcomes_worked_out_by_hand(replayed: dict[str, list[ReplayResult]]) -> None:
    r = replayed["tau-bench"]
    # 9: three bookings with one certificate each get HATHAT, HATHAU, HATHAV; the certificates are spent
    user = _changed(r[9], "users", "mohamed_silva_9265")
    assert [user[f"reservations[{i}]"]["new"] for i in (1, 2, 3)] == ["HATHAT", "HATHAU", "HATHAV"]
    for cert in ("certificate_3765853", "certificate_9984806", "certificate_2765295"):
        assert list(user[f"payment_methods.{cert}"]) == ["old"]
    # 11: HAT097 (175) + HAT251 (200) in economy for one passenger = 375 = gift card 128 + card 247
    booked = r[11].diff["reservations"]["added"]["HATHAT"]
    assert [f["price"] for f in booked["flights"]] == [175, 200]
    assert booked["payment_history"] == [{"payment_id": "gift_card_8516878", "amount": 128},
                                         {"payment_id": "credit_card_3563913", "amount": 247}]
    # 23: the flight change refunds 186 to the gift card, two non-free bags cost 100: 152 + 186 - 100 = 238
    amount = _changed(r[23], "users", "yara_garcia_1905")["payment_methods.gift_card_6941833.amount"]
    assert amount == {"old": 152, "new": 238}
    # 33: three basic-economy reservations moved to business: re-priced and charged, cabin left as it was
    for rid, charge in (("NM1VX1", 484), ("KC18K6", 740), ("H8Q05L", 163)):
        change = _changed(r[33], "reservations", rid)
        assert "cabin" not in change and change["payment_history[1]"]["new"]["amount"] == charge
    # 13, 15, 17, 21, 49: transfers and refusals leave the data unchanged
    assert all(r[i].diff == {} for i in (13, 15, 17, 21, 49))


def test_tausim_mode_corrects_the_bookkeeping_of_peer_tasks(
    replayed: dict[str, list[ReplayResult]], tasks: list[Task]
) -> None:
    tau, fixed = replayed["tau-bench"], replayed["tausim"]
    # 0: one economy passenger on HAT136 and HAT039 (2024-05-20): one seat fewer on each
    assert "flights" not in tau[0].diff
    assert fixed[0].diff["flights"]["changed"] == {
        "HAT039": {"dates.2024-05-20.available_seats.economy": {"old": 10, "new": 9}},
        "HAT136": {"dates.2024-05-20.available_seats.economy": {"old": 14, "new": 13}},
    }
    # 2: five business reservations changed to economy: the cabin follows
    for rid in ("JG7FMM", "2FBBAH", "X7BYG1", "EQ1G6C", "BOH180"):
        assert _changed(fixed[2], "reservations", rid)["cabin"] == {"old": "business", "new": "economy"}
        assert "cabin" not in _changed(tau[2], "reservations", rid)
    # 8: cancelling K1NW8N refunds the 567 it paid to gift_card_6136092, then the new booking spends 129 of it
    gift = "payment_methods.gift_card_6136092.amount"
    assert _changed(tau[8], "users", "mohamed_silva_9265")[gift] == {"old": 129, "new": 0}
    assert _changed(fixed[8], "users", "mohamed_silva_9265")[gift] == {"old": 129, "new": 567}  # 129 + 567 - 129
    # reservations are recorded the same way in both modes apart from the cabin field; user records differ
    # only where a cancellation refunds a gift card or certificate
    for task, a, b in zip(tasks, tau, fixed, strict=True):
        assert _without_cabin(a.diff.get("reservations")) == _without_cabin(b.diff.get("reservations")), task.id
        if "cancel_reservation" not in [x.name for x in task.gold_actions]:
            assert a.diff.get("users") == b.diff.get("users"), task.id


def _without_cabin(diff: dict[str, Any] | None) -> Any:
    if diff is None:
        return None
    changed = {k: {p: v for p, v in paths.items() if p != "cabin"} for k, paths in diff["changed"].items()}
    return {**diff, "changed": {k: v for k, v in changed.items() if v}}
