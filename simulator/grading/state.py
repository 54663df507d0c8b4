"""State grading: the trial's final database against the task's goal state."""

from __future__ import annotations

from pydantic import BaseModel, Field

from simulator.database import Snapshot, StateSpec, diff_snapshots

__all__ = ["StateResult", "grade_state"]


class StateResult(BaseModel):
    """Outcome of the state comparison."""

    passed: bool
    differences: list[dict] = Field(default_factory=list)  # type: ignore[type-arg]
    """``[{"table", "key", "field", "expected", "actual"}]`` for changed fields."""
    added: list[dict] = Field(default_factory=list)  # type: ignore[type-arg]
    """Rows in the final state that the goal state lacks: ``[{"table", "key", "row"}]``."""
    removed: list[dict] = Field(default_factory=list)  # type: ignore[type-arg]
    """Rows of the goal state missing from the final state."""


def grade_state(goal: Snapshot, final: Snapshot, spec: StateSpec) -> StateResult:
    """Compare a final snapshot with the goal snapshot at the domain's declared precision.

    Args:
        goal: snapshot of the goal state (template + gold actions).
        final: snapshot of the trial's database at termination.
        spec: the domain's state spec (precision, excluded tables and volatile columns).

    Returns:
        :class:`StateResult`; ``passed`` when there is no difference.
    """
    diff = diff_snapshots(goal, final, spec)
    j = diff.to_json()
    return StateResult(passed=diff.equal, differences=j["differences"], added=j["added"], removed=j["removed"])
