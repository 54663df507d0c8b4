"""pass^k as measured and with simulator-caused trials set apart; the share of failures per cause.

Each trial's user review (``trajectory.user_metadata["review"]``, written by :mod:`simulator.users.review`) says
whether the simulated user *caused* the trial's outcome (``causes``: it stopped before a pending write, invented a
fact the agent then acted on, leaked the answer) or only showed a *weakness* that did not change it
(``weaknesses``). :func:`review_summary` counts both and recomputes pass^k without the caused trials: per task,
the unbiased estimate ``C(c', k) / C(n', k)`` over its ``n'`` remaining trials (``c'`` of them passed); a task left
with fewer than ``k`` trials is left out of that ``k``'s mean (``tasks_used`` says how many remain).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from simulator.stats.estimators import cell_id, pass_hat_k

__all__ = ["review_of", "review_summary"]


def review_of(trial: Mapping[str, Any]) -> Mapping[str, Any]:
    """Return a trial record's user review (``{}`` when it has none)."""
    traj = trial.get("trajectory") or {}
    review = (traj.get("user_metadata") or {}).get("review") if isinstance(traj, Mapping) else None
    return review if isinstance(review, Mapping) else {}


def review_summary(trials: Iterable[Mapping[str, Any]], task_ids: Sequence[str], n: int, *,
                   ks: Sequence[int] | None = None) -> dict[str, Any]:
    """Summarise the user reviews of a run's trials.

    Args:
        trials: trial records (``{"task_id", "persona", "trial", "passed", "trajectory"}``); the first record of
            each planned (cell, trial) pair counts, a planned trial without a record is a failure.
        task_ids: the planned task cells (``task`` or ``task@persona``).
        n: planned trials per cell.
        ks: the ``k`` values (default ``1..n``).

    Returns:
        ``{"flags": {flag: trials}, "failures": F, "caused": {cause: failed trials}, "caused_failures": trials,
        "failure_share_by_cause": {cause: share of F}, "weakness_only_failures": failed trials with flags but no
        cause, "caused_passes": passed trials with a cause (an answer leak), "measured": {"pass^k": ...},
        "set_apart": {"pass^k": ...}, "tasks_used": {"pass^k": tasks}, "set_apart_trials": [cell trial (causes)]}``.
    """
    ks = list(ks) if ks is not None else list(range(1, n + 1))
    planned = set(task_ids)
    seen: dict[tuple[str, int], Mapping[str, Any]] = {}
    for t in trials:
        cell = cell_id(str(t.get("task_id")), t.get("persona") if isinstance(t.get("persona"), str) else None)
        key = (cell, int(t.get("trial", -1)))
        if cell in planned and 0 <= key[1] < n and key not in seen:
            seen[key] = t
    flags: Counter[str] = Counter()
    caused: Counter[str] = Counter()
    failures = caused_failures = weakness_only = caused_passes = 0
    kept: dict[str, list[bool]] = {cell: [] for cell in task_ids}
    everything: dict[str, list[bool]] = {cell: [] for cell in task_ids}
    apart: list[str] = []
    for cell in task_ids:
        for i in range(n):
            rec = seen.get((cell, i))
            passed = bool(rec is not None and rec.get("passed"))
            review = review_of(rec) if rec is not None else {}
            flags.update(review.get("flags") or [])
            causes = list(review.get("causes") or [])
            everything[cell].append(passed)
            if not passed:
                failures += 1
                caused.update(causes)
                caused_failures += bool(causes)
                weakness_only += bool(not causes and review.get("flags"))
            elif causes:
                caused_passes += 1
            if causes:
                apart.append(f"{cell} trial {i} ({', '.join(causes)})")
            else:
                kept[cell].append(passed)
    measured, set_apart, used = {}, {}, {}
    for k in ks:
        name = f"pass^{k}"
        measured[name] = _mean([pass_hat_k(len(v), sum(v), k) for v in everything.values() if len(v) >= k])
        values = [pass_hat_k(len(v), sum(v), k) for v in kept.values() if len(v) >= k]
        set_apart[name], used[name] = _mean(values), len(values)
    return {"flags": dict(flags.most_common()), "failures": failures, "caused": dict(caused.most_common()),
            "caused_failures": caused_failures,
            "failure_share_by_cause": {c: v / failures for c, v in caused.most_common()} if failures else {},
            "weakness_only_failures": weakness_only, "caused_passes": caused_passes, "measured": measured,
            "set_apart": set_apart, "tasks_used": used, "set_apart_trials": apart}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
