"""The "Failure clusters" section: failed trials grouped by failure signature, for a run or a hunt.

A run's trials carry their signature (``TrialResult.signature``, :func:`simulator.grading.signature.signature`); a
hunt's
clusters come from its summary (``tausim hunt --out``, :func:`simulator.cli.hunt.summary`). Both become
:class:`ClusterRow` objects, rendered by the terminal summary and the HTML page alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._analysis import RunReport

__all__ = ["SIGNATURE_FIELDS", "ClusterRow", "hunt_clusters", "run_clusters", "share_text", "transcript_lines"]

SIGNATURE_FIELDS = ("layer", "termination", "first difference", "rule", "diverged after", "user flags")
"""Names of a signature's parts, in order."""


@dataclass(frozen=True)
class ClusterRow:
    """One failure cluster, ready to render.

    Attributes:
        signature: the signature's parts (:data:`SIGNATURE_FIELDS`).
        count: failed trials with that signature.
        trial_share: their share of the run's recorded trials (a run), or of the hunt's trials.
        turn_share: their share of the agent turns spent (a hunt: fresh turns only), or None when unknown.
        example: where the example comes from, e.g. ``"task cancel-1, trial 0, persona impatient"``.
        transcript: the example's transcript as ``(role, text)`` lines (``user``, ``agent``, ``tool``).
        shrunk: the transcript is of the shrunk conversation (user turns dropped or merged while it fails the same
            way).
        case_id: the id of the regression case exported for the cluster, or None.
    """

    signature: tuple[str, ...]
    count: int
    trial_share: float | None
    turn_share: float | None
    example: str
    transcript: list[tuple[str, str]] = field(default_factory=list)
    shrunk: bool = False
    case_id: str | None = None


def _args(arguments: Any) -> str:
    if isinstance(arguments, Mapping):
        return ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in arguments.items())
    return "" if arguments is None else str(arguments)


def transcript_lines(trajectory: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Return a trajectory's conversation as ``(role, text)`` lines.

    Args:
        trajectory: a trajectory (the JSON form of ``Trajectory``).

    Returns:
        ``("user", text)``, ``("agent", text)``, ``("agent", "-> tool(args)")`` for each tool call, and
        ``("tool", "tool: status [fault]: first 160 characters")`` for each result, in order.
    """
    calls = {c.get("call_id"): c for c in trajectory.get("tool_calls") or [] if isinstance(c, Mapping)}
    out: list[tuple[str, str]] = []
    for m in trajectory.get("messages") or []:
        role = m.get("role")
        if role == "user" and m.get("content") and not m.get("tool_calls"):
            out.append(("user", str(m["content"])))
        elif role == "assistant":
            if m.get("content"):
                out.append(("agent", str(m["content"])))
            for c in m.get("tool_calls") or []:
                out.append(("agent", f"-> {c.get('name')}({_args(c.get('arguments'))})"))
        elif role == "tool":
            rec = calls.get(m.get("tool_call_id")) or {}
            status = str(rec.get("status") or "?")
            fault = f" [fault: {rec['fault']}]" if rec.get("fault") else ""
            text = " ".join(str(m.get("content") or "").split())
            out.append(("tool", f"{m.get('name')}: {status}{fault}: {text[:160]}"))
    return out


def _user_turns(trial: Mapping[str, Any]) -> int:
    msgs = (trial.get("trajectory") or {}).get("messages") or []
    return sum(1 for m in msgs if m.get("role") == "user" and m.get("content") and not m.get("tool_calls"))


def _agent_turns(trial: Mapping[str, Any]) -> int:
    return len((trial.get("trajectory") or {}).get("progress") or [])


def run_clusters(report: RunReport) -> tuple[list[ClusterRow], int]:
    """Cluster a run's failed trials by their recorded signature (``TrialResult.signature``).

    Each planned (task, trial) counts once (its first record). Clusters are ordered by count (largest first), then
    by first appearance; a cluster's example is its member with the fewest user turns (the first on ties).

    Args:
        report: the analysed run.

    Returns:
        ``(clusters, unsigned)``: ``unsigned`` counts failed trials recorded without a signature (documents from
        before signatures were recorded), left out of the clusters.
    """
    records = [c.record for c in report.cells if c.record is not None]
    total_turns = sum(_agent_turns(r) for r in records)
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    unsigned = 0
    for c in report.cells:
        if c.record is None or c.outcome == "passed" or c.record.get("passed"):
            continue
        sig = c.record.get("signature")
        if not isinstance(sig, list) or not sig:
            unsigned += 1
            continue
        groups.setdefault(tuple(str(s) for s in sig), []).append(c.record)
    rows = []
    for sig, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):  # stable: first found on ties
        ex = min(members, key=_user_turns)
        persona = ex.get("persona")
        rows.append(ClusterRow(
            signature=sig, count=len(members), trial_share=len(members) / len(records) if records else None,
            turn_share=sum(_agent_turns(m) for m in members) / total_turns if total_turns else None,
            example=f"task {ex.get('task_id')}, trial {ex.get('trial')}" + (f", persona {persona}" if persona else ""),
            transcript=transcript_lines(ex.get("trajectory") or {})))
    return rows, unsigned


def hunt_clusters(summary: Mapping[str, Any]) -> list[ClusterRow]:
    """Return the clusters of a hunt summary (``tausim hunt --out``), in the hunt's order.

    Args:
        summary: the summary (:func:`simulator.cli.hunt.summary`).

    Returns:
        One :class:`ClusterRow` per cluster: ``trial_share`` over the hunt's trials, ``turn_share`` its
        ``budget_share`` (of the agent turns spent); the example's transcript is that of the shrunk conversation
        when the hunt shrank it, else of the shortest member.
    """
    trials = summary.get("trials") or 0
    rows = []
    for c in summary.get("clusters") or []:
        ex = c.get("example") or {}
        transcript = [(str(r), str(t)) for r, t in ex.get("transcript") or []]
        if not transcript:
            transcript = [("user", str(t)) for t in ex.get("user_turns") or []]
        persona = ex.get("persona")
        rows.append(ClusterRow(
            signature=tuple(str(s) for s in c.get("signature") or ()), count=int(c.get("count", 0)),
            trial_share=int(c.get("count", 0)) / trials if trials else None, turn_share=c.get("budget_share"),
            example=f"task {ex.get('task_id')}, seed {ex.get('seed')}" + (f", persona {persona}" if persona else "")
            + (f", moves {ex['moves']}" if ex.get("moves") else ""),
            transcript=transcript, shrunk=bool(ex.get("shrunk")), case_id=c.get("case_id")))
    return rows


def share_text(value: float | None) -> str:
    """Format a share as a percentage (``-`` when unknown)."""
    return "-" if value is None else f"{100 * value:.1f}%"
