"""Failure clusters: failed trials grouped by signature (:func:`simulator.grading.signature.signature`).

A signature condenses a failed trial: the failing layer (``grade.failure``), the termination reason, the first state
difference as ``table.field`` (or the first failing assertion), the first violated rule, the last tool call before
the first divergence from the gold writes, and the user's flags. :func:`cluster` groups a hunt's trials by it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from simulator.grading.signature import signature
from simulator.hunt.snapshot import HuntTrial
from simulator.types.tasks import Task
from simulator.world.tools import Toolbox

__all__ = ["Cluster", "cluster", "tool_kinds"]


def tool_kinds(toolbox: Toolbox) -> dict[str, str | None]:
    """Tool name -> kind (``read``, ``write``; ``ending`` for a tool that ends the conversation)."""
    return {name: ("ending" if spec.ends_conversation else spec.kind) for name, spec in toolbox.specs.items()}


@dataclass
class Cluster:
    """Failed trials sharing one signature.

    Attributes:
        signature: the shared signature.
        trials: the trials, in the order found.
        shortest: the failing trial with the fewest user turns.
        script: the shrunk user turns (:func:`shrink`), or None before shrinking.
    """

    signature: tuple[str, ...]
    trials: list[HuntTrial] = field(default_factory=list)
    script: list[str] | None = None

    @property
    def shortest(self) -> HuntTrial:
        """The member with the fewest user turns (the first found on ties)."""
        return min(self.trials, key=lambda t: len(t.user_turns()))

    @property
    def case_id(self) -> str:
        """A stable id of the cluster's regression case."""
        h = hashlib.sha256(json.dumps(self.signature).encode()).hexdigest()[:10]
        return f"hunt-{self.shortest.result.task_id}-{h}"


def cluster(trials: Sequence[HuntTrial], tasks: Mapping[str, Task], kinds: Mapping[str, str | None]
            ) -> list[Cluster]:
    """Group failed trials by signature, in the order each signature was first found.

    Args:
        trials: the trials (failed or not: a passed trial has no signature and joins no cluster).
        tasks: task id -> task.
        kinds: tool name -> kind (:func:`tool_kinds`).

    Returns:
        The clusters, in the order their signature was first found.
    """
    out: dict[tuple[str, ...], Cluster] = {}
    for t in trials:
        sig = signature(tasks[t.result.task_id], t.result, kinds)
        if sig is not None:
            out.setdefault(sig, Cluster(sig)).trials.append(t)
    return list(out.values())
