"""Counts of injected environment faults and the recovery rates computed from recorded trials."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from simulator.types.faults import FAULT_KINDS


def fault_counts(tool_calls: Iterable[Any]) -> dict[str, int]:
    """Count the injected faults of a trial's tool calls, by kind.

    Args:
        tool_calls: ``ToolCallRecord`` objects or their JSON form (``{"fault": ...}``).

    Returns:
        ``{kind: calls}`` in :data:`FAULT_KINDS` order, kinds with no call left out.
    """
    counts: Counter[str] = Counter()
    for c in tool_calls:
        fault = c.get("fault") if isinstance(c, Mapping) else getattr(c, "fault", None)
        if fault:
            counts[str(fault)] += 1
    return {k: counts[k] for k in sorted(counts, key=lambda k: (FAULT_KINDS.index(k) if k in FAULT_KINDS
                                                                   else len(FAULT_KINDS), k))}


def _trial_faults(trial: Mapping[str, Any]) -> dict[str, int]:
    faults = trial.get("faults")
    if isinstance(faults, Mapping):
        return {str(k): int(v) for k, v in faults.items() if v}
    return fault_counts(((trial.get("trajectory") or {}).get("tool_calls")) or [])


def recovery_rates(trials: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Recovery from environment faults: of the trials where a fault was injected, the share that passed.

    Args:
        trials: trial records (the JSON form of ``TrialResult``); a trial's faults are its ``faults`` counts, else
            counted from its tool calls' ``fault`` fields.

    Returns:
        ``{"trials": T, "faulted": N, "recovered": R, "rate": R / N or None, "faults": {kind: calls},
        "by_kind": {kind: {"trials", "recovered", "rate"}}}``: ``faulted`` trials met at least one fault,
        ``recovered`` of them passed; per kind, over the trials that met that kind.
    """
    total = faulted = recovered = 0
    calls: Counter[str] = Counter()
    by_kind: dict[str, list[int]] = {}
    for t in trials:
        total += 1
        faults = _trial_faults(t)
        if not faults:
            continue
        passed = bool(t.get("passed"))
        faulted += 1
        recovered += passed
        calls.update(faults)
        for kind in faults:
            entry = by_kind.setdefault(kind, [0, 0])
            entry[0] += 1
            entry[1] += passed
    order = sorted(by_kind, key=lambda k: (FAULT_KINDS.index(k) if k in FAULT_KINDS else len(FAULT_KINDS), k))
    return {
        "trials": total, "faulted": faulted, "recovered": recovered,
        "rate": recovered / faulted if faulted else None,
        "faults": {k: calls[k] for k in order},
        "by_kind": {k: {"trials": by_kind[k][0], "recovered": by_kind[k][1], "rate": by_kind[k][1] / by_kind[k][0]}
                    for k in order},
    }
