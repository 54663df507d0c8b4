"""Process grading: rules on how the agent reached its end state, checked on the trajectory."""

from __future__ import annotations

from pydantic import BaseModel, Field

from simulator.orchestrator import Trajectory
from simulator.tasks import ProcessRules
from simulator.tools import Toolbox

__all__ = ["ProcessResult", "check_process"]


class ProcessResult(BaseModel):
    """Outcome of the process rules."""

    passed: bool
    violations: list[str] = Field(default_factory=list)
    """One readable line per broken rule, e.g. ``"forbidden tool called: cancel_pending_order"``."""


def check_process(rules: ProcessRules, trajectory: Trajectory, toolbox: Toolbox) -> ProcessResult:
    """Check a task's process rules against a finished trajectory.

    Args:
        rules: the task's rules.
        trajectory: the trial's trajectory (tool calls with statuses, termination reason).
        toolbox: the domain's tools (to know which are write tools and which end the conversation).

    Returns:
        :class:`ProcessResult`; ``passed`` when no rule is broken.
    """
    violations: list[str] = []
    called = [c.name for c in trajectory.tool_calls]
    succeeded = {c.name for c in trajectory.tool_calls if c.status == "ok"}
    for name in rules.forbidden_tools:
        if name in called:
            violations.append(f"forbidden tool called: {name}")
    for name in rules.required_tools:
        if name not in succeeded:
            violations.append(f"required tool never called successfully: {name}")
    if rules.no_writes:
        ending = {name for name, spec in toolbox.specs.items() if spec.ends_conversation}
        writes = sorted({c.name for c in trajectory.tool_calls if c.kind == "write" and c.name not in ending})
        if writes:
            violations.append(f"write tool(s) called where none is allowed: {', '.join(writes)}")
    if rules.expected_termination is not None:
        reason = str(trajectory.termination_reason)
        if reason not in rules.expected_termination:
            violations.append(f"termination {reason}, expected {' or '.join(rules.expected_termination)}")
    return ProcessResult(passed=not violations, violations=violations)
