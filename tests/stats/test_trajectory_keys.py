"""Call metrics with keys made once per task: the same figures, the gold and reference keys not made per trial."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.stats import trajectory
from simulator.stats.trajectory import call_keys, gold_keys, tool_call_accuracy, trial_trajectory_metrics

WRITES = frozenset({"transfer"})
GOLD = [{"name": "get", "arguments": {"id": "a"}}, {"name": "transfer", "arguments": {"amount": 10, "to": "b"}}]


def call(name: str, status: str = "ok", **args: Any) -> dict[str, Any]:
    return {"name": name, "arguments": args, "status": status, "kind": "write" if name in WRITES else "read"}


def test_keys_are_name_and_canonical_arguments() -> None:
    # by hand: numbers at cent precision (10 -> 1000), keys sorted, strings as they are
    assert gold_keys(GOLD) == [("get", (("id", "a"),)), ("transfer", (("amount", ("num", 1000)), ("to", "b")))]
    assert call_keys(GOLD) == gold_keys(GOLD)
    assert gold_keys([{"name": "x", "arguments": None}]) == [("x", ())]  # no arguments: {}
    assert call_keys([{"name": "x", "arguments": None, "raw_arguments": "{bad"}]) == [("x", ("raw", "{bad"))]


@pytest.mark.parametrize("calls", [
    [],
    [call("get", id="a")],
    [call("get", id="a"), call("transfer", amount=10.0, to="b")],
    [call("transfer", amount=10.001, to="b"), call("transfer", amount=10, to="b"), call("get", id="z")],
    [{"name": "transfer", "arguments": None, "raw_arguments": "{", "status": "invalid_arguments", "kind": "write"}],
])
def test_given_keys_give_the_same_figures(calls: list[dict[str, Any]]) -> None:
    assert tool_call_accuracy(calls, GOLD, WRITES, gold_keys=gold_keys(GOLD)) == tool_call_accuracy(calls, GOLD, WRITES)
    assert trial_trajectory_metrics(calls, GOLD, WRITES, reference_keys=call_keys(GOLD)) == (
        trial_trajectory_metrics(calls, GOLD, WRITES))


def test_given_keys_are_the_ones_compared() -> None:
    calls = [call("get", id="a"), call("transfer", amount=10, to="b")]
    assert tool_call_accuracy(calls, GOLD, WRITES)["args_matched"] == 2
    wrong = [("get", (("id", "zz"),)), ("transfer", ())]  # keys of other arguments: nothing matches
    assert tool_call_accuracy(calls, GOLD, WRITES, gold_keys=wrong)["args_matched"] == 0
    assert trial_trajectory_metrics(calls, GOLD, WRITES)["exact"]
    assert not trial_trajectory_metrics(calls, GOLD, WRITES, reference_keys=wrong)["exact"]


def test_gold_arguments_of_a_tool_never_called_are_not_canonicalised(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real = trajectory._canonical

    def counting(value: Any) -> Any:
        seen.append(value)
        return real(value)

    monkeypatch.setattr(trajectory, "_canonical", counting)
    # by hand: "get" called once with the gold's arguments; "transfer" never called
    counts = tool_call_accuracy([{"name": "get", "arguments": {"id": "a"}}], GOLD, WRITES)
    assert counts == {"called": 1, "gold": 2, "name_matched": 1, "called_write": 0, "gold_write": 1,
                      "name_matched_write": 0, "args_matched": 1}
    assert {"amount": 10, "to": "b"} not in seen  # the transfer's arguments were never made into a key
    seen.clear()
    assert tool_call_accuracy([], GOLD, WRITES)["args_matched"] == 0
    assert seen == []  # no call: no key at all


def test_a_trial_without_calls_builds_no_intersection(monkeypatch: pytest.MonkeyPatch) -> None:
    """No call: nothing in common with the reference, counted without intersecting the counts (by hand)."""
    def refuse(self: Any, other: Any) -> Any:
        raise AssertionError("intersected the counts of a trial without calls")

    monkeypatch.setattr(trajectory.Counter, "__and__", refuse)
    metrics = trial_trajectory_metrics([], GOLD, WRITES, reference_keys=call_keys(GOLD))
    assert metrics == {"calls": 0, "reference_calls": 2, "exact": False, "in_order": False, "set": False,
                       "prefix": 0.0, "decision": False, "name_matched": 0, "exact_calls": 0, "selection_den": 2,
                       "abstention_applies": False, "abstained": None, "redundant": 0, "failed": 0, "recovered": 0,
                       "tool_calls": {}}
    assert tool_call_accuracy([], GOLD, WRITES, gold_keys=gold_keys(GOLD)) == {
        "called": 0, "gold": 2, "name_matched": 0, "called_write": 0, "gold_write": 1, "name_matched_write": 0,
        "args_matched": 0}
