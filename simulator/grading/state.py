"""State grading: the trial's final database against the task's goal state."""

from __future__ import annotations

from simulator.types.grade import StateResult
from simulator.types.state import StateDiff

__all__ = ["grade_state"]




def grade_state(diff: StateDiff) -> StateResult:
    """Turn the difference between the goal state and the trial's final state into the state component.

    Args:
        diff: goal (expected) versus final (actual) database, e.g. from
            :func:`simulator.world.database.diff_against`, compared at the domain's declared precision.

    Returns:
        :class:`StateResult`; ``passed`` when there is no difference.
    """
    j = diff.to_json()
    return StateResult(passed=diff.equal, differences=j["differences"], added=j["added"], removed=j["removed"])
