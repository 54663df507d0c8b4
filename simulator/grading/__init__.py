"""Grading: each component recorded separately; a trial passes when every component passes.

Components: ``state`` (final database vs goal state), ``outputs`` (required outputs stated by the agent) and
``process`` (the task's rules on the trajectory: forbidden/required tools, no writes, expected termination).
A trial that ended on an error reason (``tool_bug``, ``infra_error``, ...) fails whatever its components say.
"""

from __future__ import annotations

from pydantic import BaseModel

from simulator.database import StateDiff
from simulator.grading.outputs import OutputsResult, check_outputs
from simulator.grading.process import ProcessResult, check_process
from simulator.grading.state import StateResult, grade_state
from simulator.orchestrator import ERROR_REASONS, Trajectory
from simulator.tasks import Task
from simulator.tools import Toolbox

__all__ = ["Grade", "OutputsResult", "ProcessResult", "StateResult", "check_outputs", "check_process", "grade_state",
           "grade_trial"]


class Grade(BaseModel):
    """The grade of one trial."""

    passed: bool
    state: StateResult
    outputs: dict  # type: ignore[type-arg]
    """``{"passed": bool, "missing": [str]}``."""
    process: ProcessResult
    failure: str | None = None
    """Why the trial failed, in short (``state``, ``outputs``, or the error termination reason)."""


def grade_trial(task: Task, trajectory: Trajectory, diff: StateDiff, toolbox: Toolbox) -> Grade:
    """Grade one trial.

    Args:
        task: the task (required outputs).
        trajectory: the finished trajectory (agent messages, termination reason).
        diff: goal state versus the trial database's final state.
        toolbox: the domain's tools (kinds, for the process rules).

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
    process = check_process(task.process, trajectory, toolbox)
    if not process.passed:
        failures.append("process")
    return Grade(
        passed=not failures, state=state, outputs={"passed": out.passed, "missing": list(out.missing)},
        process=process, failure=", ".join(failures) or None,
    )
