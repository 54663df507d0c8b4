"""Grading: each component recorded separately; a trial passes when every component passes.

Components: ``state`` (final database vs goal state) and ``outputs`` (required outputs stated by the agent).
A trial that ended on an error reason (``tool_bug``, ``infra_error``, ...) fails whatever its components say.
"""

from __future__ import annotations

from pydantic import BaseModel

from simulator.database import StateDiff
from simulator.grading.outputs import OutputsResult, check_outputs
from simulator.grading.state import StateResult, grade_state
from simulator.orchestrator import ERROR_REASONS, Trajectory
from simulator.tasks import Task

__all__ = ["Grade", "OutputsResult", "StateResult", "check_outputs", "grade_state", "grade_trial"]


class Grade(BaseModel):
    """The grade of one trial."""

    passed: bool
    state: StateResult
    outputs: dict  # type: ignore[type-arg]
    """``{"passed": bool, "missing": [str]}``."""
    failure: str | None = None
    """Why the trial failed, in short (``state``, ``outputs``, or the error termination reason)."""


def grade_trial(task: Task, trajectory: Trajectory, diff: StateDiff) -> Grade:
    """Grade one trial.

    Args:
        task: the task (required outputs).
        trajectory: the finished trajectory (agent messages, termination reason).
        diff: goal state versus the trial database's final state.

    Returns:
        The :class:`Grade`.
    """
    state = grade_state(diff)
    out = check_outputs(task.required_outputs, trajectory.agent_texts())
    failures = []
    if trajectory.termination_reason in ERROR_REASONS:
        failures.append(str(trajectory.termination_reason))
    if not state.passed:
        failures.append("state")
    if not out.passed:
        failures.append("outputs")
    return Grade(
        passed=not failures, state=state, outputs={"passed": out.passed, "missing": list(out.missing)},
        failure=", ".join(failures) or None,
    )
