"""The task lint checks each alternative outcome's gold actions like the task's own."""

from __future__ import annotations

from simulator.authoring.lint import lint_tasks
from simulator.types.tasks import Action, Task
from simulator.world.domain import get_domain


def _with_alternative_gold(task: Task, gold: list[Action]) -> Task:
    alt = task.alternatives[0].model_copy(update={"gold_actions": gold})
    return task.model_copy(update={"alternatives": [alt]})


def test_builtin_alternatives_lint_clean() -> None:
    domain = get_domain("returns")
    tasks = [t for t in domain.load_tasks("builtin") if t.alternatives]
    assert tasks
    assert [f for f in lint_tasks(domain, tasks) if f.message.startswith("alternative")] == []


def test_a_failing_alternative_gold_action_is_an_error_naming_the_alternative() -> None:
    domain = get_domain("returns")
    task = next(t for t in domain.load_tasks("builtin") if t.id == "cancel-7301")
    good = task.alternatives[0].gold_actions
    # order 7399 is in no fixture or data row of this task: cancelling it fails
    bad = _with_alternative_gold(task, [*good[:2], Action(name="cancel_order", arguments={"order_id": "7399"})])
    findings = lint_tasks(domain, [bad], errors_only=True)
    errors = [f for f in findings if f.severity == "error"]
    assert errors and all(f.message.startswith("alternative 'cancel-7351-instead': ") for f in errors)
    assert any("cancel_order" in f.message for f in errors)
    assert not [f for f in lint_tasks(domain, [task], errors_only=True) if f.severity == "error"]
