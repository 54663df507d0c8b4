"""GradingMemo: a task's gold and reference call keys made on its first graded trial, the grades unchanged."""

from __future__ import annotations

import pytest

from simulator import grading
from simulator.grading import GradingMemo, TaskKeys, grade_trial
from simulator.types.state import StateDiff
from simulator.types.tasks import Action, Task, UserScenario
from tests.grading.test_grading_rules import TB, build

GOLD = [Action(name="get_balance", arguments={"account_id": "A1"}),
        Action(name="transfer", arguments={"src": "A1", "dst": "B2", "amount": 25})]
TASK = Task(id="t", scenario=UserScenario(instructions="move money"), gold_actions=GOLD)
TRIALS = [
    build([("user", "hi"), ("call", "get_balance", {"account_id": "A1"}, "ok"),
           ("call", "transfer", {"src": "A1", "dst": "B2", "amount": 25.0}, "ok"), ("agent", "done")]),
    build([("user", "hi"), ("call", "transfer", {"src": "A1", "dst": "B2", "amount": 30}, "ok"),
           ("call", "transfer", {"src": "A1", "dst": "B2", "amount": 30}, "ok"), ("agent", "done")]),
    build([("user", "hi"), ("agent", "I cannot help.")]),
]


def test_keys_of_a_task_by_hand() -> None:
    keys = TaskKeys.of(TASK, TB)
    assert keys.writes == frozenset(n for n, spec in TB.specs.items() if spec.kind == "write")
    assert "transfer" in keys.writes and "get_balance" not in keys.writes
    assert keys.gold == [{"name": "get_balance", "arguments": {"account_id": "A1"}},
                         {"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 25}}]
    assert keys.reference == keys.gold  # no explicit reference: the gold actions
    assert keys.gold_keys[1] == ("transfer", (("amount", ("num", 2500)), ("dst", "B2"), ("src", "A1")))
    assert TaskKeys.of(Task(id="n", scenario=UserScenario(instructions="x")), TB).reference is None


def test_a_memo_gives_the_same_grades_and_makes_the_keys_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = TaskKeys.of.__func__  # type: ignore[attr-defined]

    def counting(cls: type[TaskKeys], task: Task, toolbox: object) -> TaskKeys:
        made.append(task.id)
        return real(cls, task, toolbox)

    without = [grade_trial(TASK, t, StateDiff(), TB) for t in TRIALS]
    monkeypatch.setattr(grading.TaskKeys, "of", classmethod(counting))
    memo = GradingMemo()
    with_memo = [grade_trial(TASK, t, StateDiff(), TB, memo=memo) for t in TRIALS]
    assert made == ["t"]  # three trials of one task: its keys made once
    assert [g.model_dump() for g in with_memo] == [g.model_dump() for g in without]
    # by hand: trial 1 calls both gold actions with their arguments (25.0 == 25); trial 2 transfers 30 twice
    assert [g.tool_accuracy["args_matched"] for g in with_memo] == [2, 0, 0]  # type: ignore[index]
    assert [g.trajectory["exact"] for g in with_memo] == [True, False, False]  # type: ignore[index]
    assert with_memo[1].trajectory["redundant"] == 1  # type: ignore[index]


def test_another_version_of_a_task_gets_keys_of_its_own() -> None:
    memo = GradingMemo()
    first = memo.keys(TASK, TB)
    assert memo.keys(TASK, TB) is first
    other = TASK.model_copy(update={"gold_actions": GOLD[:1]})  # same id, other gold (e.g. an alternative's)
    keys = memo.keys(other, TB)
    assert keys is not first and len(keys.gold) == 1
    assert memo.keys(TASK, TB) is first  # the remembered one is still the first version's
    assert grade_trial(other, TRIALS[0], StateDiff(), TB, memo=memo).tool_accuracy["gold"] == 1  # type: ignore[index]
