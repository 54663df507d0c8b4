"""Grading: each component recorded separately; a trial passes when every component passes.

Components: ``state`` (final database vs goal state), ``outputs`` (required outputs stated by the agent),
``process`` (the task's rules on the trajectory, merged over the domain's defaults: forbidden/required tools,
no writes, expected termination, precedence, confirmation before writes), ``loops`` (the same tool call
repeated more than the task's threshold) and ``budget`` (steps, tool calls, tokens, cost ceilings).
A trial that ended on an error reason (``tool_bug``, ``infra_error``, ...) or was cut off by a cap (``max_turns``,
``max_steps``, ``budget_exceeded``) fails whatever its components say.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from simulator.database import StateDiff
from simulator.grading.budget import BudgetResult, check_budget
from simulator.grading.loops import LoopsResult, check_loops
from simulator.grading.outputs import OutputsResult, check_outputs
from simulator.grading.process import ProcessResult, check_process
from simulator.grading.state import StateResult, grade_state
from simulator.orchestrator import CAP_REASONS, ERROR_REASONS, Trajectory
from simulator.tasks import Budget, Task
from simulator.tools import Toolbox

if TYPE_CHECKING:
    from simulator.domain import Domain

__all__ = ["BudgetResult", "Grade", "LoopsResult", "OutputsResult", "ProcessResult", "StateResult", "check_budget",
           "check_loops", "check_outputs", "check_process", "grade_state", "grade_trial"]

DEFAULT_LOOP_THRESHOLD = 2
"""Identical repeats allowed when neither the task nor a domain says otherwise."""


class Grade(BaseModel):
    """The grade of one trial."""

    passed: bool
    state: StateResult
    outputs: dict  # type: ignore[type-arg]
    """``{"passed": bool, "missing": [str]}``."""
    process: ProcessResult
    loops: LoopsResult = Field(default_factory=LoopsResult)
    """Loop detection (passing by default for grades recorded before it existed)."""
    budget: BudgetResult = Field(default_factory=BudgetResult)
    """Budget check (passing by default for grades recorded before it existed)."""
    failure: str | None = None
    """Why the trial failed, in short (``state``, ``outputs``, ``process``, ``loops``, ``budget``, or the error
    termination reason)."""


def grade_trial(task: Task, trajectory: Trajectory, diff: StateDiff, toolbox: Toolbox, *,
                domain: Domain | None = None, budget: Budget | None = None) -> Grade:
    """Grade one trial.

    Args:
        task: the task (required outputs, process rules, loop threshold, budget).
        trajectory: the finished trajectory (agent messages, termination reason).
        diff: goal state versus the trial database's final state.
        toolbox: the domain's tools (kinds, for the process rules).
        domain: the domain, for its default process rules, volatile arguments and loop threshold; None: no
            defaults (threshold :data:`DEFAULT_LOOP_THRESHOLD`).
        budget: the run's budget for this task (e.g. from ``--budgets``); applied with the task's own, the
            tighter ceiling winning.

    Returns:
        The :class:`Grade`.
    """
    state = grade_state(diff)
    out = check_outputs(task.required_outputs, trajectory.agent_texts())
    failures = []
    if trajectory.termination_reason in ERROR_REASONS or trajectory.termination_reason in CAP_REASONS:
        failures.append(str(trajectory.termination_reason))
    if not state.passed:
        failures.append("state")
    if not out.passed:
        failures.append("outputs")
    rules = task.process if domain is None else task.process.merged_over(domain.default_process_rules())
    process = check_process(rules, trajectory, toolbox)
    if not process.passed:
        failures.append("process")
    threshold = task.loop_threshold
    if threshold is None:
        threshold = domain.default_loop_threshold() if domain is not None else DEFAULT_LOOP_THRESHOLD
    loops = check_loops(trajectory, threshold, domain.volatile_arguments() if domain is not None else None)
    if not loops.passed:
        failures.append("loops")
    ceilings = task.budget.tightest(budget) if task.budget is not None else budget
    budget_result = check_budget(trajectory, ceilings)
    if not budget_result.passed:
        failures.append("budget")
    return Grade(
        passed=not failures, state=state, outputs={"passed": out.passed, "missing": list(out.missing)},
        process=process, loops=loops, budget=budget_result, failure=", ".join(failures) or None,
    )
