"""Trial and run results: what a finished trial and a finished run are, as records."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from simulator.types.grade import Grade
from simulator.types.spec import RunSpec
from simulator.types.trajectory import Trajectory


class TrialResult(BaseModel):
    """One finished trial."""

    task_id: str
    trial: int
    seed: int
    persona: str | None = None
    """The persona the simulated user played (None: a run without personas)."""
    passed: bool
    termination_reason: str
    grade: Grade | None
    """None when the trial could not be graded (its goal state could not be computed)."""
    trajectory: Trajectory
    duration_s: float
    """Wall time of the whole trial in seconds (database copy, conversation, grading)."""
    error: str | None = None
    trace: dict[str, str] | None = None
    """``{"trace_id", "span_id"}`` (hex) of the trial's OpenTelemetry span when the run was traced (``--otel``),
    else None."""
    signature: list[str] | None = None
    """The failure signature of a failed trial (:func:`simulator.grading.signature.signature`: layer, termination
    reason, first
    state difference, violated rule, last tool call before the divergence from gold, user flags), by which the
    reports cluster failures; None for a passed trial (or one recorded before signatures were)."""
    faults: dict[str, int] | None = None
    """Environment faults injected into the trial's tool calls, by kind (``RunSpec.faults``, see
    :mod:`simulator.world.faults`); None when the run injects none."""
    side_seeds: dict[str, int] | None = None
    """The seed each side of the trial was built with when the run held one side (``RunSpec.vary`` ``user`` or
    ``agent``, see :mod:`simulator.execution.seeds`): ``{"agent", "user", "faults"}`` (ints below 2**64; ``seed``
    stays the trial seed). None, and left out of the record, when both sides used the trial seed (``vary`` both)."""

    @model_serializer(mode="wrap")
    def _without_unheld_seeds(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave ``side_seeds`` out of a record of a trial whose sides both used the trial seed (as before it was)."""
        data: dict[str, Any] = handler(self)
        if self.side_seeds is None:
            data.pop("side_seeds", None)
        return data


class RunResult(BaseModel):
    """A run's spec, trials (in task, trial order) and metrics."""

    config: RunSpec
    """The run's spec (stored verbatim)."""
    trials: list[TrialResult]
    metrics: dict[str, float] = Field(default_factory=dict)
    """pass^k, pass@k and success rate; empty when the trials do not cover every planned (task, trial)."""
    termination_reasons: dict[str, int] = Field(default_factory=dict)
    wall_seconds: float = 0.0
    planned: int | None = None
    """Planned trials of the run (tasks x personas x trials); None when unknown."""
    aborted: str | None = None
    """Why the run stopped before its planned trials ran (one line), or None."""
    abort_kind: str | None = None
    """``setup_error`` (a trial met a set-up error), ``error_rate`` (``max_error_rate`` exceeded) or ``write_error``
    (a finished trial could not be recorded: disk full, read-only), or None."""


TrialKey = tuple[str, str | None, int]
"""A planned trial: (task id, persona name or None, trial index)."""


def trial_key(result: TrialResult) -> TrialKey:
    """Return the (task id, persona, trial index) key of a trial."""
    return (result.task_id, result.persona, result.trial)


PEER_REWARD = "peer_reward"
"""Key of the peer's reward in an imported trial's ``trajectory.agent_metadata``."""
