"""Checks shared by the tests of the built-in task files: gold replays and expected state diffs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from simulator.execution.parity import ReplayResult
from simulator.types.tasks import Task

__all__ = [
    "assert_every_gold_action_succeeds",
    "assert_no_change_without_a_write",
    "assert_same_diff",
    "assert_transfer_ends_the_replay",
]


def assert_every_gold_action_succeeds(tasks: list[Task], replays: Mapping[str, ReplayResult]) -> None:
    """Every gold action of every task ran, and none was refused."""
    for t in tasks:
        r = replays[t.id]
        assert len(r.statuses) == len(t.gold_actions), t.id
        bad = [(a.name, s, c) for a, s, c in zip(t.gold_actions, r.statuses, r.responses, strict=True) if s != "ok"]
        assert not bad, f"{t.id}: {bad}"


def assert_no_change_without_a_write(
    tasks: list[Task], replays: Mapping[str, ReplayResult], write_tools: set[str]
) -> None:
    """A task's replay changes the state exactly when its gold actions include a write tool."""
    for t in tasks:
        writes = [a for a in t.gold_actions if a.name in write_tools]
        assert (replays[t.id].diff == {}) == (not writes), t.id


def assert_transfer_ends_the_replay(tasks: list[Task], replays: Mapping[str, ReplayResult]) -> None:
    """The replay of a task tagged ``transfer`` ends with the transfer's response."""
    for t in tasks:
        if "transfer" in t.tags:
            assert replays[t.id].responses[-1] == "Transfer successful", t.id


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        if not value:
            yield path, {}
        for k, v in value.items():
            yield from _leaves(v, f"{path}/{k}")
    elif isinstance(value, list):
        if not value:
            yield path, []
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def assert_same_diff(expected: dict[str, Any], actual: dict[str, Any]) -> None:
    """Compare two diffs leaf by leaf, money at cent precision (|a - b| < 0.005)."""
    exp, act = dict(_leaves(expected)), dict(_leaves(actual))
    assert sorted(exp) == sorted(act), f"paths differ:\n  only expected {sorted(set(exp) - set(act))}\n" \
                                       f"  only actual {sorted(set(act) - set(exp))}"
    for path, e in exp.items():
        a = act[path]
        if isinstance(e, float) or isinstance(a, float):
            assert isinstance(a, int | float) and abs(a - e) < 0.005, (path, e, a)
        else:
            assert a == e, (path, e, a)
