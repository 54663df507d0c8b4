"""check_domain catches deliberately broken toy domains, and passes the well-behaved one."""

from __future__ import annotations

import pytest

from simulator.authoring import check_domain, errors
from tests._support.broken_domains import (
    MemoClockDomain,
    RandomIdDomain,
    ReadWritesDomain,
    StockDomain,
    WallClockDomain,
    write_data,
)


@pytest.fixture
def data(tmp_path):
    return write_data(tmp_path / "data")


def _check(domain, data, agents=False):
    return check_domain(domain, data_dir=data, tasks=domain.tasks(), agents=agents, lint=False)


def test_well_behaved_domain_has_no_error(data):
    dom = StockDomain()
    findings = _check(dom, data, agents=True)
    assert not errors(findings), [f.line() for f in findings]


def test_read_tool_that_writes_is_caught(data):
    findings = errors(_check(ReadWritesDomain(), data))
    assert [(f.rule, f.tool) for f in findings] == [("read-writes", "count_item")]
    assert "items" in findings[0].message


def test_tool_reading_the_wall_clock_is_caught(data):
    findings = errors(_check(WallClockDomain(), data))
    assert {(f.rule, f.tool) for f in findings} == {("wall-clock", "stamp_note")}


def test_memo_read_tool_reading_the_wall_clock_is_caught(data):
    """The check replays without the read-tool memo: a memo tool's second answer is computed, not remembered."""
    findings = errors(_check(MemoClockDomain(), data))
    assert {(f.rule, f.tool) for f in findings} == {("wall-clock", "item_seen_at")}


def test_non_deterministic_tool_is_caught(data):
    findings = errors(_check(RandomIdDomain(), data))
    assert ("nondeterministic", "ticket_note") in {(f.rule, f.tool) for f in findings}
    assert all(f.rule == "nondeterministic" for f in findings)


def test_same_seed_trajectories_and_agents_on_a_broken_domain(data):
    """With the agent runs on, the random ids also make the oracle's trajectory differ between two same-seed runs."""
    findings = errors(_check(RandomIdDomain(), data, agents=True))
    rules = {f.rule for f in findings}
    assert "trajectory-differs" in rules and "nondeterministic" in rules
    assert {f.task_id for f in findings if f.rule == "trajectory-differs"} == {"note-1", "note-2"}


def test_null_passing_task_and_crashing_gold_are_errors(data):
    dom = StockDomain()
    tasks = dom.tasks()
    looks = tasks[0].model_copy(update={"id": "look", "gold_actions": tasks[0].gold_actions[:1]})
    findings = check_domain(dom, data_dir=data, tasks=[looks, tasks[1]], lint=False)
    assert [(f.rule, f.task_id) for f in errors(findings)] == [("null-passes", "look")]


def test_unknown_values_of_a_declared_enumeration_are_findings(tmp_path):
    """A column declared with one_of(...) (retail: an order's status) holds only those values in the data."""
    import json
    import shutil

    from domains.retail import RetailDomain

    dom = RetailDomain()
    data = tmp_path / "retail"
    shutil.copytree(dom.default_data_dir(), data)
    orders = json.loads((data / "orders.json").read_text(encoding="utf-8"))
    first, second = sorted(orders)[:2]
    orders[first]["status"] = "teleported"
    orders[second]["status"] = "Pending"  # the case matters: the tools compare statuses exactly
    (data / "orders.json").write_text(json.dumps(orders), encoding="utf-8")
    users = json.loads((data / "users.json").read_text(encoding="utf-8"))
    user = sorted(users)[0]
    method = sorted(users[user]["payment_methods"])[0]
    users[user]["payment_methods"][method]["source"] = "bitcoin"
    (data / "users.json").write_text(json.dumps(users), encoding="utf-8")

    findings = [f for f in check_domain(dom, data_dir=data, tasks=[], agents=False, lint=False)
                if f.rule == "unknown-value"]
    assert [(f.severity, f.subject) for f in findings] == [("error", "domain")] * 3
    lines = sorted(f.message for f in findings)
    statuses = ("'pending', 'processed', 'delivered', 'cancelled', 'pending (item modified)', 'return requested', "
                "'exchange requested'")
    assert lines == sorted([
        f"table orders row {first!r}: field status: 'teleported' is not one of its declared values ({statuses})",
        f"table orders row {second!r}: field status: 'Pending' is not one of its declared values ({statuses})",
        f"table payment_methods row ({user!r}, {method!r}): field source: 'bitcoin' is not one of its declared "
        "values ('credit_card', 'paypal', 'gift_card')",
    ]), lines


def test_declared_values_are_checked_for_any_domain_and_null_is_left_to_the_column(tmp_path):
    from tests._support.broken_domains import GradedDomain

    findings = check_domain(GradedDomain(), data_dir=write_data(tmp_path / "data", grades={"I1": 7, "I2": None}),
                            tasks=[], agents=False, lint=False)
    assert [(f.rule, f.message) for f in findings if f.rule == "unknown-value"] == [
        ("unknown-value", "table items row 'I1': field grade: 7 is not one of its declared values (1, 2, 3)")]


def test_one_of_refuses_an_empty_or_repeated_declaration():
    from simulator.world.kit import one_of

    with pytest.raises(ValueError, match="at least one value"):
        one_of()
    with pytest.raises(ValueError, match="'a' is given twice"):
        one_of("a", "b", "a")
