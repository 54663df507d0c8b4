"""Shared by the adapter tests: one built-in retail task run natively (the oracle) and through an adapter.

The adapter's model is the loopback server (:mod:`simulator.interop.loopback`) answering the oracle's script of
the task, so an adapter that carries the calls faithfully gives the oracle run's tool-call records and grade.
"""

from __future__ import annotations

from typing import Any

from simulator.execution.build import build_runner
from simulator.types.protocols import AgentFactory
from simulator.types.results import TrialResult
from simulator.types.spec import RunSpec
from simulator.types.tasks import Task

TASK_ID = "cancel-gift-card-balance"
"""A retail task with reads, a write and a required output."""


def retail_task(task_id: str = TASK_ID) -> Task:
    """The built-in retail task."""
    runner = build_runner(_spec(task_id))
    return next(t for t in runner.tasks if t.id == task_id)


def _spec(task_id: str) -> RunSpec:
    return RunSpec(domain="retail", agent="oracle", user="rule", task_ids=[task_id], trials=1, seed=5,
                   preflight=False)


def run_task(factory: AgentFactory | None = None, task_id: str = TASK_ID) -> TrialResult:
    """Run one trial of the task with ``factory``'s agent (None: the oracle) and the rule user."""
    runner = build_runner(_spec(task_id))
    if factory is not None:
        runner.agent_factory = factory
    result = runner.run()
    assert len(result.trials) == 1
    return result.trials[0]


def records(trial: TrialResult) -> list[tuple[str, Any, str, str]]:
    """The trial's tool-call records without ids and timings: (name, arguments, status, requestor)."""
    return [(c.name, c.arguments, c.status, c.requestor) for c in trial.trajectory.tool_calls]


def assert_same_as_oracle(trial: TrialResult, oracle: TrialResult) -> None:
    """The adapter's trial made the oracle's calls, with the same outcomes, and got the same grade."""
    assert trial.error is None and trial.trajectory.error is None, trial.trajectory.error or trial.error
    assert records(trial) == records(oracle)
    assert trial.termination_reason == oracle.termination_reason
    assert trial.passed == oracle.passed is True
    assert trial.grade is not None and oracle.grade is not None
    assert _grade(trial) == _grade(oracle)


def _grade(trial: TrialResult) -> dict[str, Any]:
    """The grade without what only the agent's model use decides (the tokens and cost the budget counted)."""
    assert trial.grade is not None
    grade = trial.grade.model_dump()
    if isinstance(grade.get("budget"), dict):
        grade["budget"].pop("used", None)
    return grade
