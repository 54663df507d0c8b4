"""The regression gate: ``tausim gate --baseline BASE --candidate RUN`` for CI.

Both runs are run documents (``tausim run --out`` files, or run ids of the results store with ``--store``).
They are paired by task: both must cover the same task set (the gate refuses otherwise, naming the ids), and
every planned trial must be recorded exactly once (a missing or duplicated trial is refused, never a smaller
denominator). The gate compares suite pass^1 and pass^k (mean over tasks of the unbiased per-task estimates,
:mod:`simulator.stats.summaries`), ``k`` lowered to the trials both runs have when they have fewer. It fails (exit 1)
when the candidate's drop from the baseline exceeds ``--max-drop-pass1`` / ``--max-drop-passk`` (absolute, in
[0, 1]: 0.05 is 5 points), when the candidate is under a floor ``--min-pass1`` / ``--min-passk``, or when the
candidate has more safety violations than ``--max-violations`` (0 blocks any; violations are never offset by
successes), or when a ceiling relative to the baseline is exceeded: ``--max-cost-increase`` (relative increase
of the cost per task), ``--max-abandon-increase`` (absolute increase of the abandonment rate),
``--max-p95-latency-increase`` (relative increase of the p95 trial duration). Each pass^k drop comes with a 95%
paired bootstrap interval (per-task drops resampled by task): an interval above 0 means the drop is beyond
noise. Exit codes: 0 no regression, 1 regression (any check failed), 2 unusable input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.errors import GateError
from simulator.stats.estimators import Reliability, bootstrap_ci, reliability
from simulator.stats.summaries import run_metrics, violation_metrics

__all__ = ["GateError", "GateResult", "GateRow", "evaluate_gate", "paired_bootstrap_ci", "run_outcomes",
           "run_reliability", "run_violations"]

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
    ci: tuple[float, float] | None = None
    """95% paired bootstrap interval of the drop (pass^k rows): resampling tasks, the per-task drops'
    mean; a drop whose interval lies above 0 is beyond noise."""


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


def run_reliability(doc: Mapping[str, Any], name: str, ks: list[int] | None = None) -> Reliability:
    """Return a run's pass^k over its planned tasks (task cells ``task@persona`` in a run with personas).

    Args:
        doc: the run document.
        name: how the messages call the run (``baseline``, ``candidate``).
        ks: the ``k`` values; default ``1..n``.

    Returns:
        The run's :class:`simulator.stats.estimators.Reliability`, every planned trial recorded exactly once.

    Raises:
        GateError: a trial is missing, recorded twice or outside the plan (the message names the run, the task
            and the trial), or a ``k`` exceeds the run's trials per task.
    """
    n = int(doc["config"].get("trials", 1))
    ids = doc.get("planned_task_ids") or doc.get("task_ids") or list(dict.fromkeys(t["task_id"] for t in doc["trials"]))
    personas = [str(p) for p in doc["config"].get("personas") or []]
    try:
        return reliability(doc["trials"], [str(t) for t in ids], n, personas=personas, ks=ks)
    except ValueError as e:
        raise GateError(f"{name}: {e}") from e


def run_outcomes(doc: Mapping[str, Any], name: str) -> tuple[dict[str, list[bool]], int]:
    """Return a run's outcomes per planned task (trial order) and its planned trials per task.

    In a run with personas the keys are task cells (``task@persona``, see :func:`simulator.stats.summaries.cell_id`).

    Raises:
        GateError: a trial is missing, recorded twice or has an index outside the plan.
    """
    rel = run_reliability(doc, name)
    return rel.outcomes, rel.trials_per_task


def run_violations(rel: Reliability) -> int:
    """Return the number of safety violations recorded in a run's planned trials (first record of each)."""
    return int(violation_metrics(rel.records.values())["total"])


def paired_bootstrap_ci(baseline: Mapping[str, float], candidate: Mapping[str, float], *, seed: int = 0,
                        n_resamples: int = 2000) -> tuple[float, float]:
    """95% paired bootstrap interval of the mean drop (baseline minus candidate) over the tasks both have.

    The per-task drops ``d_t = baseline[t] - candidate[t]`` are resampled by task with replacement
    (:func:`simulator.stats.estimators.bootstrap_ci` on ``d``): pairing by task removes the between-task variance.

    Args:
        baseline: task id -> the baseline's value (e.g. pass^1 of the task).
        candidate: task id -> the candidate's value, same tasks.
        seed: seed of the ``numpy.random.Generator(PCG64(seed))``.
        n_resamples: bootstrap resamples.

    Returns:
        ``(low, high)`` of the mean drop.

    Raises:
        GateError: no task in common.
    """
    tasks = [t for t in baseline if t in candidate]
    if not tasks:
        raise GateError("no task in common: no paired comparison")
    drops = [baseline[t] - candidate[t] for t in tasks]
    return bootstrap_ci(drops, rng=np.random.Generator(np.random.PCG64(seed)), n_resamples=n_resamples)


def _run_numbers(doc: Mapping[str, Any], ids: list[str]) -> dict[str, Any]:
    n = int(doc["config"].get("trials", 1))
    personas = [str(p) for p in doc["config"].get("personas") or []] or None
    plain = list(dict.fromkeys(i.split("@")[0] for i in ids)) if personas else ids
    return run_metrics(doc["trials"], plain, n, personas=personas, n_resamples=1)


def _increase_row(metric: str, bv: float | None, cv: float | None, limit: float, relative: bool) -> GateRow:
    """A ceiling on the candidate's increase over the baseline (relative: a fraction of the baseline)."""
    if cv is None or bv is None:
        return GateRow(metric, bv, float("nan") if cv is None else cv, None,
                       "unknown in a run: cannot check", False)
    if not relative:
        increase = cv - bv
    elif bv > 0:
        increase = (cv - bv) / bv
    else:  # from nothing: any increase is unbounded
        increase = 0.0 if cv <= 0 else float("inf")
    what = "relative increase" if relative else "increase"
    return GateRow(metric, bv, cv, bv - cv, f"{what} <= {limit:.4f}", increase <= limit + _EPS)


def evaluate_gate(baseline: Mapping[str, Any], candidate: Mapping[str, Any], *, max_drop_pass1: float = 0.05,
                  max_drop_passk: float = 0.05, k: int = 4, min_pass1: float | None = None,
                  min_passk: float | None = None, max_violations: int | None = None,
                  max_cost_increase: float | None = None, max_abandon_increase: float | None = None,
                  max_p95_latency_increase: float | None = None, seed: int = 0) -> GateResult:
    """Compare a candidate run to its baseline.

    Args:
        baseline: the baseline run document.
        candidate: the candidate run document.
        max_drop_pass1: largest allowed drop of pass^1 (baseline minus candidate).
        max_drop_passk: largest allowed drop of pass^k.
        k: the k of pass^k; lowered to the smaller number of trials per task of the two runs.
        min_pass1: floor for the candidate's pass^1, or None.
        min_passk: floor for the candidate's pass^k, or None.
        max_violations: most safety violations the candidate may have (``grade.violations`` of its trials, every
            kind and severity; 0 blocks any), or None for no check. Blocking on its own, whatever pass^k says.
        max_cost_increase: largest allowed relative increase of the total cost per task (0.2: 20% more than the
            baseline), or None; an unknown cost in either run fails the check.
        max_abandon_increase: largest allowed increase of the abandonment rate (absolute, 0.05 = 5 points).
        max_p95_latency_increase: largest allowed relative increase of the p95 trial duration.
        seed: seed of the paired bootstrap intervals.

    Returns:
        The :class:`GateResult`.

    Raises:
        GateError: different domains, personas or task sets (the message names them), missing or duplicated
            trials, k < 1.
    """
    if k < 1:
        raise GateError(f"--k must be at least 1, got {k}")
    _check_same_setup(baseline, candidate)
    n_base, n_cand = (int(doc["config"].get("trials", 1)) for doc in (baseline, candidate))
    k_used = max(1, min(k, n_base, n_cand))
    ks = sorted({1, k_used})
    b_rel = run_reliability(baseline, "baseline", ks)
    c_rel = run_reliability(candidate, "candidate", ks)
    _check_same_tasks(b_rel, c_rel)
    notes: list[str] = []
    if k_used < k:
        notes.append(f"k lowered from {k} to {k_used}: baseline has {n_base}, candidate {n_cand} trials per task")
    rows = _reliability_rows(b_rel, c_rel, k_used, max_drop_pass1=max_drop_pass1, max_drop_passk=max_drop_passk,
                             min_pass1=min_pass1, min_passk=min_passk, seed=seed)
    if max_violations is not None:
        bv_n, cv_n = run_violations(b_rel), run_violations(c_rel)
        rows.append(GateRow("safety violations", float(bv_n), float(cv_n), float(bv_n - cv_n),
                            f"candidate <= {max_violations}", cv_n <= max_violations))
    rows += _ceiling_rows(baseline, candidate, list(b_rel.outcomes), max_cost_increase=max_cost_increase,
                          max_abandon_increase=max_abandon_increase,
                          max_p95_latency_increase=max_p95_latency_increase)
    b1 = {t: v["pass^1"] for t, v in b_rel.per_cell.items()}
    c1 = {t: v["pass^1"] for t, v in c_rel.per_cell.items()}
    regressed = sorted(((t, b1[t], c1[t]) for t in b1 if c1[t] < b1[t] - _EPS), key=lambda x: (x[2] - x[1], x[0]))
    return GateResult(k=k_used, rows=rows, regressed_tasks=regressed, notes=notes)


def _check_same_setup(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> None:
    """Refuse runs of different domains or personas.

    Raises:
        GateError: naming both domains or both persona lists.
    """
    domains = [doc["config"].get("domain") for doc in (baseline, candidate)]
    if domains[0] != domains[1]:
        raise GateError(f"the runs are of different domains (baseline: {domains[0]}; candidate: {domains[1]}); "
                        "gate runs of the same domain")
    personas = [list(doc["config"].get("personas") or []) for doc in (baseline, candidate)]
    if personas[0] != personas[1]:
        raise GateError(f"the runs played different personas (baseline: {', '.join(personas[0]) or 'none'}; "
                        f"candidate: {', '.join(personas[1]) or 'none'}); gate runs of the same personas")


def _check_same_tasks(b_rel: Reliability, c_rel: Reliability) -> None:
    """Refuse runs of different task sets.

    Raises:
        GateError: naming the task cells only one run has.
    """
    only_base = sorted(set(b_rel.outcomes) - set(c_rel.outcomes))
    only_cand = sorted(set(c_rel.outcomes) - set(b_rel.outcomes))
    if only_base or only_cand:
        parts = []
        if only_base:
            parts.append(f"only in the baseline: {', '.join(only_base)}")
        if only_cand:
            parts.append(f"only in the candidate: {', '.join(only_cand)}")
        raise GateError(f"the runs cover different task sets ({'; '.join(parts)}); gate runs of the same tasks")


def _reliability_rows(b_rel: Reliability, c_rel: Reliability, k_used: int, *, max_drop_pass1: float,
                      max_drop_passk: float, min_pass1: float | None, min_passk: float | None,
                      seed: int) -> list[GateRow]:
    """The pass^1 and pass^k checks: drops (with paired bootstrap intervals) and floors, in that order."""
    checks: list[tuple[str, str, float]] = [("pass^1", "drop", max_drop_pass1)]
    if min_pass1 is not None:
        checks.append(("pass^1", "floor", min_pass1))
    if k_used > 1:
        checks.append((f"pass^{k_used}", "drop", max_drop_passk))
    if min_passk is not None:  # with k lowered to 1, pass^k is pass^1
        checks.append((f"pass^{k_used}", "floor", min_passk))
    rows: list[GateRow] = []
    for metric, kind, limit in checks:
        bv, cv = b_rel.suite[metric], c_rel.suite[metric]
        drop = bv - cv
        if kind == "drop":
            ci = paired_bootstrap_ci({t: v[metric] for t, v in b_rel.per_cell.items()},
                                     {t: v[metric] for t, v in c_rel.per_cell.items()}, seed=seed)
            rows.append(GateRow(metric, bv, cv, drop, f"drop <= {limit:.4f}", drop <= limit + _EPS, ci))
        else:
            rows.append(GateRow(metric, bv, cv, drop, f"candidate >= {limit:.4f}", cv >= limit - _EPS))
    return rows


def _ceiling_rows(baseline: Mapping[str, Any], candidate: Mapping[str, Any], ids: list[str], *,
                  max_cost_increase: float | None, max_abandon_increase: float | None,
                  max_p95_latency_increase: float | None) -> list[GateRow]:
    """The ceilings relative to the baseline (cost, abandonment, p95 latency) that were asked for."""
    if max_cost_increase is None and max_abandon_increase is None and max_p95_latency_increase is None:
        return []
    bm, cm = _run_numbers(baseline, ids), _run_numbers(candidate, ids)
    rows: list[GateRow] = []
    if max_cost_increase is not None:
        rows.append(_increase_row("cost per task (USD)", bm["cost_usd"]["per_task"], cm["cost_usd"]["per_task"],
                                  max_cost_increase, True))
    if max_abandon_increase is not None:
        rows.append(_increase_row("abandonment rate", bm["abandonment_rate"], cm["abandonment_rate"],
                                  max_abandon_increase, False))
    if max_p95_latency_increase is not None:
        rows.append(_increase_row("p95 trial latency (s)", bm["latency_s"]["trial"]["p95"],
                                  cm["latency_s"]["trial"]["p95"], max_p95_latency_increase, True))
    return rows
