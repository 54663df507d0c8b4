"""Floor 6, tools: failure hunting.

Snapshot and fork trials (:mod:`~simulator.hunt.snapshot`), search from decision points
(:mod:`~simulator.hunt.search`), cluster failures by signature (:mod:`~simulator.hunt.clusters`), shrink them
(:mod:`~simulator.hunt.shrink`) and export regression cases (:mod:`~simulator.hunt.cases`); the hunt as one call
(:mod:`~simulator.hunt.session`, what ``tausim hunt`` runs).
"""

from simulator.hunt.cases import export_cases, first_error, prefix_at, prefix_case
from simulator.hunt.clusters import Cluster, cluster, tool_kinds
from simulator.hunt.search import HuntResult, hunt
from simulator.hunt.shrink import replay_script, run_case, shrink
from simulator.hunt.snapshot import (
    MOVES,
    Harness,
    HuntTrial,
    Snapshot,
    Snapshots,
    at_decisions,
    decision_kind,
    every_turn,
)

__all__ = ["MOVES", "Cluster", "Harness", "HuntResult", "HuntTrial", "Snapshot", "Snapshots", "at_decisions",
           "cluster", "decision_kind", "every_turn", "export_cases", "first_error", "hunt", "prefix_at", "prefix_case",
           "replay_script", "run_case", "shrink", "tool_kinds"]
