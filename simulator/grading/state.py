"""State grading: the trial's final database against the task's goal state."""

from __future__ import annotations

from pydantic import BaseModel, Field

from simulator.database import StateDiff

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


def grade_state(diff: StateDiff) -> StateResult:
    """Turn the difference between the goal state and the trial's final state into the state component.

    Args:
        diff: goal (expected) versus final (actual) database, e.g. from
            :func:`simulator.database.diff_against`, compared at the domain's declared precision.

    Returns:
        :class:`StateResult`; ``passed`` when there is no difference.
    """
    j = diff.to_json()
    return StateResult(passed=diff.equal, differences=j["differences"], added=j["added"], removed=j["removed"])
