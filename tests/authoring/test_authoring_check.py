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
