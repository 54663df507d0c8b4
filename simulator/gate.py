"""The regression gate: ``tausim gate --baseline BASE --candidate RUN`` for CI.

Both runs are run documents (``tausim run --out`` files, or run ids of the results store with ``--store``).
They are paired by task: both must cover the same task set (the gate refuses otherwise, naming the ids), and
every planned trial must be recorded exactly once (a missing or duplicated trial is refused, never a smaller
denominator). The gate compares suite pass^1 and pass^k (mean over tasks of the unbiased per-task estimates,
:mod:`simulator.metrics`), ``k`` lowered to the trials both runs have when they have fewer. It fails (exit 1)
when the candidate's drop from the baseline exceeds ``--max-drop-pass1`` / ``--max-drop-passk`` (absolute, in
[0, 1]: 0.05 is 5 points), or when the candidate is under a floor ``--min-pass1`` / ``--min-passk``; it exits 0
otherwise and 2 on unusable input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simulator.errors import GateError
from simulator.metrics import cell_id, per_task_pass_hat_k, suite_metrics

__all__ = ["GateError", "GateResult", "GateRow", "evaluate_gate", "run_outcomes"]

_EPS = 1e-9





@dataclass(frozen=True)
class GateRow:
    """One check of the gate."""

    metric: str
    baseline: float | None
    candidate: float
    drop: float | None
    threshold: str
    passed: bool


@dataclass
class GateResult:
    """The gate's checks and verdict."""

    k: int
    rows: list[GateRow]
    regressed_tasks: list[tuple[str, float, float]] = field(default_factory=list)
    """``(task id, baseline pass^1, candidate pass^1)`` of each task whose pass^1 dropped, worst first."""
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        return all(r.passed for r in self.rows)


def run_outcomes(doc: Mapping[str, Any], name: str) -> tuple[dict[str, list[bool]], int]:
    """Return a run's outcomes per planned task (trial order) and its planned trials per task.

    In a run with personas the keys are task cells (``task@persona``, see :func:`simulator.metrics.cell_id`).

    Raises:
        GateError: a trial is recorded twice or has an index outside the plan.
    """
    n = int(doc["config"].get("trials", 1))
    ids = doc.get("planned_task_ids") or doc.get("task_ids") or list(dict.fromkeys(t["task_id"] for t in doc["trials"]))
    personas = [str(p) for p in doc["config"].get("personas") or []]
    if personas:  # a run with personas is compared cell by cell (task@persona)
        ids = [cell_id(str(t), p) for t in ids for p in personas]
    slots: dict[str, dict[int, bool]] = {str(t): {} for t in ids}
    for t in doc["trials"]:
        task_id, i = cell_id(str(t["task_id"]), t.get("persona") if personas else None), int(t["trial"])
        if task_id not in slots:
            raise GateError(f"{name}: trial of task {task_id!r} that its plan does not have")
        if i >= n or i in slots[task_id]:
            what = "recorded twice" if i in slots[task_id] else f"beyond the {n} planned"
            raise GateError(f"{name}: task {task_id!r} trial {i} {what}")
        slots[task_id][i] = bool(t["passed"])
    return {tid: [s[i] for i in sorted(s)] for tid, s in slots.items()}, n


def evaluate_gate(baseline: Mapping[str, Any], candidate: Mapping[str, Any], *, max_drop_pass1: float = 0.05,
                  max_drop_passk: float = 0.05, k: int = 4, min_pass1: float | None = None,
                  min_passk: float | None = None) -> GateResult:
    """Compare a candidate run to its baseline.

    Args:
        baseline: the baseline run document.
        candidate: the candidate run document.
        max_drop_pass1: largest allowed drop of pass^1 (baseline minus candidate).
        max_drop_passk: largest allowed drop of pass^k.
        k: the k of pass^k; lowered to the smaller number of trials per task of the two runs.
        min_pass1: floor for the candidate's pass^1, or None.
        min_passk: floor for the candidate's pass^k, or None.

    Returns:
        The :class:`GateResult`.

    Raises:
        GateError: different task sets (the message names the ids), missing or duplicated trials, k < 1.
    """
    if k < 1:
        raise GateError(f"--k must be at least 1, got {k}")
    personas = [list(doc["config"].get("personas") or []) for doc in (baseline, candidate)]
    if personas[0] != personas[1]:
        raise GateError(f"the runs played different personas (baseline: {', '.join(personas[0]) or 'none'}; "
                        f"candidate: {', '.join(personas[1]) or 'none'}); gate runs of the same personas")
    base, n_base = run_outcomes(baseline, "baseline")
    cand, n_cand = run_outcomes(candidate, "candidate")
    only_base, only_cand = sorted(set(base) - set(cand)), sorted(set(cand) - set(base))
    if only_base or only_cand:
        parts = []
        if only_base:
            parts.append(f"only in the baseline: {', '.join(only_base)}")
        if only_cand:
            parts.append(f"only in the candidate: {', '.join(only_cand)}")
        raise GateError(f"the runs cover different task sets ({'; '.join(parts)}); gate runs of the same tasks")
    notes: list[str] = []
    k_used = min(k, n_base, n_cand)
    if k_used < k:
        notes.append(f"k lowered from {k} to {k_used}: baseline has {n_base}, candidate {n_cand} trials per task")
    try:
        b = suite_metrics(base, n_base, sorted({1, k_used}))
        c = suite_metrics(cand, n_cand, sorted({1, k_used}))
        b1, c1 = per_task_pass_hat_k(base, n_base, 1), per_task_pass_hat_k(cand, n_cand, 1)
    except ValueError as e:
        raise GateError(str(e)) from e
    rows: list[GateRow] = []
    checks: list[tuple[str, str, float]] = [("pass^1", "drop", max_drop_pass1)]
    if min_pass1 is not None:
        checks.append(("pass^1", "floor", min_pass1))
    if k_used > 1:
        checks.append((f"pass^{k_used}", "drop", max_drop_passk))
    if min_passk is not None:  # with k lowered to 1, pass^k is pass^1
        checks.append((f"pass^{k_used}", "floor", min_passk))
    for metric, kind, limit in checks:
        bv, cv = b[metric], c[metric]
        drop = bv - cv
        if kind == "drop":
            rows.append(GateRow(metric, bv, cv, drop, f"drop <= {limit:.4f}", drop <= limit + _EPS))
        else:
            rows.append(GateRow(metric, bv, cv, drop, f"candidate >= {limit:.4f}", cv >= limit - _EPS))
    regressed = sorted(((t, b1[t], c1[t]) for t in b1 if c1[t] < b1[t] - _EPS), key=lambda x: (x[2] - x[1], x[0]))
    return GateResult(k=k_used, rows=rows, regressed_tasks=regressed, notes=notes)
