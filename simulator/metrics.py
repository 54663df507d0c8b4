"""Reliability metrics: pass^k, pass@k, success rate, bootstrap intervals, summary statistics.

Definitions (for one task with ``n`` planned trials of which ``c`` succeeded):

- ``pass^k = C(c, k) / C(n, k)``: the probability that ``k`` trials drawn without replacement from the
  ``n`` all succeed, an unbiased estimator of the chance that ``k`` independent trials all succeed.
  Source: Yao et al. 2024, "tau-bench: A Benchmark for Tool-Agent-User Interaction in Real-World
  Domains" (arXiv:2406.12045).
- ``pass@k = 1 - C(n - c, k) / C(n, k)``: the probability that at least one of ``k`` such trials
  succeeds. Source: Chen et al. 2021, "Evaluating Large Language Models Trained on Code" (the Codex
  paper, arXiv:2107.03374), the unbiased estimator of section 2.1.

The suite value of either is the mean over tasks. :func:`reliability` is the one place that turns a run's
trial records into these numbers (grouping trials into task cells, counting a missing trial as a failure,
ignoring a duplicate beyond the first record); the runner, the results store, ``--out``, ``tausim report``,
the gate, regrade and the per-persona tables all call it. The denominator is always the *planned* number of
trials: a trial that crashed or hit an API error must be passed in as a failure (``False``) and is
reported on its own elsewhere; a task with fewer or more recorded outcomes than planned is refused, so a
dropped trial can never silently shrink a denominator. ``k > n`` is refused.

All functions are pure: no global state, and randomness (the bootstrap) only through a
``numpy.random.Generator`` passed in by the caller.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, SupportsIndex

import numpy as np
import numpy.typing as npt

__all__ = [
    "LAYERS",
    "Reliability",
    "SummaryStats",
    "bootstrap_ci",
    "cell_id",
    "pass_at_k",
    "pass_hat_k",
    "per_task_pass_at_k",
    "per_task_pass_hat_k",
    "persona_metrics",
    "reliability",
    "run_metrics",
    "success_counts",
    "suite_metrics",
    "summarize_tool_accuracy",
    "summary_stats",
    "tool_call_accuracy",
    "violation_metrics",
]

# Upper bound on the number of indices drawn at once by bootstrap_ci (memory stays ~8 MB per chunk).
_BOOTSTRAP_CHUNK_CELLS = 1_000_000


def _check_counts(n: SupportsIndex, c: SupportsIndex, k: SupportsIndex) -> tuple[int, int, int]:
    """Validate ``(n, c, k)`` and return them as plain ints.

    Args:
        n: Number of planned trials.
        c: Number of successful trials.
        k: Number of trials drawn.

    Returns:
        ``(n, c, k)`` as Python ints.

    Raises:
        TypeError: If a value is not an integer (floats and bools are refused).
        ValueError: If a value is negative, ``k < 1``, ``c > n`` or ``k > n``.
    """
    values = []
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool):
            raise TypeError(f"{name} must be an integer, got bool {value!r}")
        try:
            values.append(operator.index(value))
        except TypeError:
            raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}") from None
    n_i, c_i, k_i = values
    for name, value in (("n", n_i), ("c", c_i), ("k", k_i)):
        if value < 0:
            raise ValueError(f"{name} must not be negative, got {value}")
    if k_i < 1:
        raise ValueError(f"k must be at least 1, got {k_i}")
    if c_i > n_i:
        raise ValueError(f"c (successes) = {c_i} exceeds n (trials) = {n_i}")
    if k_i > n_i:
        raise ValueError(f"k = {k_i} exceeds n = {n_i}: pass^k/pass@k need at least k planned trials")
    return n_i, c_i, k_i


def pass_hat_k(n: SupportsIndex, c: SupportsIndex, k: SupportsIndex) -> float:
    """Unbiased estimate of pass^k: the chance that ``k`` independent trials of a task all succeed.

    ``pass^k = C(c, k) / C(n, k)``, computed with exact integer binomials (``math.comb``) and one
    correctly rounded division. Source: Yao et al. 2024, "tau-bench: A Benchmark for Tool-Agent-User
    Interaction in Real-World Domains", arXiv:2406.12045.

    Args:
        n: Planned trials of the task (the denominator; crashed trials count as failures).
        c: Successful trials, ``0 <= c <= n``.
        k: Trials that must all succeed, ``1 <= k <= n``.

    Returns:
        The estimate, in ``[0, 1]``. Example: ``pass_hat_k(4, 2, 2) == 1/6``.

    Raises:
        TypeError: If an argument is not an integer.
        ValueError: If an argument is negative, ``k < 1``, ``c > n`` or ``k > n``.
    """
    n_i, c_i, k_i = _check_counts(n, c, k)
    return math.comb(c_i, k_i) / math.comb(n_i, k_i)


def pass_at_k(n: SupportsIndex, c: SupportsIndex, k: SupportsIndex) -> float:
    """Unbiased estimate of pass@k: the chance that at least one of ``k`` independent trials succeeds.

    ``pass@k = 1 - C(n - c, k) / C(n, k)``, computed exactly as ``(C(n, k) - C(n - c, k)) / C(n, k)``.
    Source: Chen et al. 2021, "Evaluating Large Language Models Trained on Code" (Codex paper),
    arXiv:2107.03374, section 2.1.

    Args:
        n: Planned trials of the task.
        c: Successful trials, ``0 <= c <= n``.
        k: Trials drawn, ``1 <= k <= n``.

    Returns:
        The estimate, in ``[0, 1]``. Example: ``pass_at_k(4, 2, 2) == 5/6``.

    Raises:
        TypeError: If an argument is not an integer.
        ValueError: If an argument is negative, ``k < 1``, ``c > n`` or ``k > n``.
    """
    n_i, c_i, k_i = _check_counts(n, c, k)
    total = math.comb(n_i, k_i)
    return (total - math.comb(n_i - c_i, k_i)) / total


def success_counts(outcomes: Mapping[str, Sequence[bool]], planned: int) -> dict[str, int]:
    """Count successes per task after checking that every task has exactly ``planned`` outcomes.

    Args:
        outcomes: Task id -> that task's trial outcomes (``True`` = passed), one per planned trial.
            A crashed or errored trial must be given as ``False``, never left out.
        planned: The planned number of trials per task (``n``), at least 1.

    Returns:
        Task id -> number of successful trials ``c`` (same key order as ``outcomes``).

    Raises:
        TypeError: If ``planned`` is not an integer.
        ValueError: If ``planned < 1``, ``outcomes`` is empty, a task has fewer or more outcomes than
            planned, or an outcome is not a bool (e.g. ``None`` for a trial that never finished).
    """
    if isinstance(planned, bool):
        raise TypeError("planned must be an integer, got bool")
    planned = operator.index(planned)
    if planned < 1:
        raise ValueError(f"planned trials per task must be at least 1, got {planned}")
    if not outcomes:
        raise ValueError("no tasks: outcomes is empty")
    counts: dict[str, int] = {}
    for task_id, trials in outcomes.items():
        if isinstance(trials, str | bytes):
            raise ValueError(f"task {task_id!r}: outcomes must be a sequence of bools, got a string")
        recorded = len(trials)
        if recorded != planned:
            kind = "missing" if recorded < planned else "extra (duplicated?)"
            raise ValueError(
                f"task {task_id!r}: {recorded} outcomes recorded but {planned} planned ({kind} trials); "
                "the denominator is the planned number, record a crashed trial as False"
            )
        c = 0
        for index, outcome in enumerate(trials):
            if not isinstance(outcome, bool | np.bool_):
                raise ValueError(
                    f"task {task_id!r}: outcome of trial {index} is {outcome!r}, expected True or False "
                    "(record a crashed trial as False)"
                )
            c += bool(outcome)
        counts[task_id] = c
    return counts


def per_task_pass_hat_k(outcomes: Mapping[str, Sequence[bool]], planned: int, k: int) -> dict[str, float]:
    """pass^k of each task, e.g. as the per-task values fed to :func:`bootstrap_ci`.

    Args:
        outcomes: Task id -> trial outcomes, exactly ``planned`` of them (see :func:`success_counts`).
        planned: Planned trials per task, ``n``.
        k: Trials that must all succeed, ``1 <= k <= planned``.

    Returns:
        Task id -> ``C(c, k) / C(n, k)``.

    Raises:
        TypeError: If ``planned`` or ``k`` is not an integer.
        ValueError: On a malformed ``outcomes`` (see :func:`success_counts`) or an invalid ``k``.
    """
    counts = success_counts(outcomes, planned)
    return {task_id: pass_hat_k(planned, c, k) for task_id, c in counts.items()}


def per_task_pass_at_k(outcomes: Mapping[str, Sequence[bool]], planned: int, k: int) -> dict[str, float]:
    """pass@k of each task.

    Args:
        outcomes: Task id -> trial outcomes, exactly ``planned`` of them (see :func:`success_counts`).
        planned: Planned trials per task, ``n``.
        k: Trials drawn, ``1 <= k <= planned``.

    Returns:
        Task id -> ``1 - C(n - c, k) / C(n, k)``.

    Raises:
        TypeError: If ``planned`` or ``k`` is not an integer.
        ValueError: On a malformed ``outcomes`` (see :func:`success_counts`) or an invalid ``k``.
    """
    counts = success_counts(outcomes, planned)
    return {task_id: pass_at_k(planned, c, k) for task_id, c in counts.items()}


def suite_metrics(
    outcomes: Mapping[str, Sequence[bool]],
    planned: int,
    ks: Iterable[int] | None = None,
) -> dict[str, float]:
    """Suite-level pass^k, pass@k and success rate: each the mean over tasks.

    Args:
        outcomes: Task id -> trial outcomes (``True`` = passed), exactly ``planned`` per task. Crashed or
            errored trials must be given as ``False``.
        planned: Planned trials per task, ``n`` (the denominator, whatever was recorded).
        ks: The values of ``k`` to report; default ``1..planned``. Each must satisfy ``1 <= k <= planned``.

    Returns:
        ``{"pass^k": ..., "pass@k": ...}`` for each ``k`` in ascending order, plus ``"success_rate"``
        (successful trials / planned trials over the suite, which equals ``pass^1``). Example, one task
        with outcomes ``[True, True, False, False]``: ``pass^1 = 0.5``, ``pass^2 = 1/6``,
        ``pass@2 = 5/6``, ``pass^4 = 0``, ``pass@4 = 1``.

    Raises:
        TypeError: If ``planned`` or a ``k`` is not an integer.
        ValueError: If a task has more or fewer outcomes than planned (the message names the task), an
            outcome is not a bool, there are no tasks, ``ks`` is empty, or a ``k`` is outside
            ``1..planned``.
    """
    counts = success_counts(outcomes, planned)
    n = operator.index(planned)
    k_values = sorted(set(range(1, n + 1) if ks is None else (operator.index(k) for k in ks)))
    if not k_values:
        raise ValueError("ks is empty: give at least one k, or None for 1..planned")
    c_values = list(counts.values())
    result: dict[str, float] = {}
    for k in k_values:
        result[f"pass^{k}"] = float(np.mean([pass_hat_k(n, c, k) for c in c_values]))
        result[f"pass@{k}"] = float(np.mean([pass_at_k(n, c, k) for c in c_values]))
    result["success_rate"] = sum(c_values) / (n * len(c_values))
    return result


@dataclass(frozen=True)
class Reliability:
    """pass^k and pass@k of a run over its planned task cells (see :func:`reliability`).

    Attributes:
        trials_per_task: planned trials per cell, ``n`` (the denominator).
        outcomes: planned cell id -> its ``n`` outcomes in trial order; a missing trial is ``False``.
        records: ``(cell id, trial index)`` -> the first record of each recorded *planned* pair, in the order
            the records came.
        missing: planned pairs without a record.
        duplicates: records beyond the first of their (cell, trial) pair (planned or not).
        unplanned: distinct recorded pairs the plan does not have (unknown cell or trial index outside 0..n-1).
        suite: ``pass^k``/``pass@k`` for each ``k`` and ``success_rate``: means over cells (see
            :func:`suite_metrics`).
        per_cell: cell id -> ``{"successes": c, "pass^1", "pass@1", "pass^2", ...}`` for the same ``k``.
    """

    trials_per_task: int
    outcomes: dict[str, list[bool]]
    records: dict[tuple[str, int], Mapping[str, Any]]
    missing: int
    duplicates: int
    unplanned: int
    suite: dict[str, float]
    per_cell: dict[str, dict[str, float]]

    @property
    def complete(self) -> bool:
        """True when every planned pair is recorded exactly once and nothing unplanned is recorded."""
        return not (self.missing or self.duplicates or self.unplanned)


def reliability(
    trials: Iterable[Mapping[str, Any]],
    task_ids: Sequence[str],
    trials_per_task: int,
    *,
    personas: Sequence[str] | None = None,
    incomplete: str = "refuse",
    ks: Iterable[int] | None = None,
) -> Reliability:
    """pass^k and pass@k of a run from its trial records, with the planned denominator: the one aggregation.

    For each planned cell with ``c`` successes out of the planned ``n``: ``pass^k = C(c, k) / C(n, k)`` (Yao et al.
    2024, "tau-bench", arXiv:2406.12045) and ``pass@k = 1 - C(n - c, k) / C(n, k)`` (Chen et al. 2021); the suite
    value is the mean over cells.

    Args:
        trials: trial records, each with ``task_id``, ``trial`` (0-based index) and ``passed``, and ``persona``
            in a run with personas (the JSON form of ``TrialResult``, or any mapping with those keys).
        task_ids: the planned tasks (repeats ignored).
        trials_per_task: planned trials per cell, ``n``.
        personas: the planned persona names of a run with personas: the cells are then ``task@persona``
            (:func:`cell_id`) for every task and persona; None or empty: the cells are the tasks.
        incomplete: ``"refuse"``: a record of an unplanned pair, a duplicated pair or a missing planned pair
            raises ValueError naming the cell and trial (the first such problem, records in order, then missing
            pairs in plan order); ``"count"``: a missing trial counts as a failure, only the first record of a
            pair counts, unplanned records are ignored, and all three are counted in the result.
        ks: the ``k`` values; default ``1..n``.

    Returns:
        The :class:`Reliability`. Example: tasks ``a``, ``b``, ``n = 3``, records a/0 passed, a/1 failed, a/0
        again (failed, ignored), b/0..2 passed, ``incomplete="count"``: a's outcomes ``[True, False, False]``
        (a/2 missing), ``suite["pass^1"] = (1/3 + 1) / 2``, ``suite["pass^2"] = (0 + 1) / 2``, missing 1,
        duplicates 1.

    Raises:
        ValueError: no planned task, ``n < 1``, an invalid ``incomplete`` or ``k``, or with ``"refuse"`` an
            unplanned, duplicated or missing trial.
    """
    if incomplete not in ("refuse", "count"):
        raise ValueError(f"incomplete must be 'refuse' or 'count', got {incomplete!r}")
    if isinstance(trials_per_task, bool):
        raise TypeError("trials_per_task must be an integer, got bool")
    n = operator.index(trials_per_task)
    if n < 1:
        raise ValueError(f"planned trials per task must be at least 1, got {n}")
    names: list[str | None] = list(dict.fromkeys(personas or []))
    planned_ids = [cell_id(str(t), p) for t in dict.fromkeys(task_ids) for p in (names or [None])]
    if not planned_ids:
        raise ValueError("no tasks: the run plans none")
    planned_set = set(planned_ids)
    refuse = incomplete == "refuse"
    records: dict[tuple[str, int], Mapping[str, Any]] = {}
    seen_unplanned: set[tuple[str, int]] = set()
    duplicates = 0
    for t in trials:
        key = (cell_id(str(t["task_id"]), t.get("persona") if names else None), int(t["trial"]))
        if key[0] not in planned_set or not 0 <= key[1] < n:
            if refuse:
                raise ValueError(f"task {key[0]!r}: trial {key[1]} is not planned (tasks {len(planned_ids)}, "
                                 f"trials per task {n})")
            if key in seen_unplanned:
                duplicates += 1
            seen_unplanned.add(key)
            continue
        if key in records:
            if refuse:
                raise ValueError(f"task {key[0]!r}: trial {key[1]} recorded more than once (duplicated trial)")
            duplicates += 1
            continue
        records[key] = t
    outcomes: dict[str, list[bool]] = {}
    missing = 0
    for cell in planned_ids:
        row: list[bool] = []
        for i in range(n):
            rec = records.get((cell, i))
            if rec is None:
                if refuse:
                    have = sum(1 for j in range(n) if (cell, j) in records)
                    raise ValueError(f"task {cell!r}: trial {i} is missing ({have} of {n} planned trials recorded); "
                                     "the denominator is the planned number of trials")
                missing += 1
                row.append(False)
            else:
                row.append(bool(rec.get("passed")))
        outcomes[cell] = row
    suite = suite_metrics(outcomes, n, ks)
    k_values = sorted(int(key[5:]) for key in suite if key.startswith("pass^"))
    per_cell: dict[str, dict[str, float]] = {}
    for cell, row in outcomes.items():
        c = sum(row)
        entry: dict[str, float] = {"successes": c}
        for k in k_values:
            entry[f"pass^{k}"] = pass_hat_k(n, c, k)
            entry[f"pass@{k}"] = pass_at_k(n, c, k)
        per_cell[cell] = entry
    return Reliability(trials_per_task=n, outcomes=outcomes, records=records, missing=missing, duplicates=duplicates,
                       unplanned=len(seen_unplanned), suite=suite, per_cell=per_cell)


def bootstrap_ci(
    values: Sequence[float] | npt.NDArray[Any],
    *,
    rng: np.random.Generator,
    n_resamples: int = 2000,
    alpha: float = 0.05,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval for the mean, resampling tasks with replacement.

    Each resample draws ``len(values)`` values with replacement and takes their mean; the interval is
    the ``alpha/2`` and ``1 - alpha/2`` quantiles (numpy's default linear interpolation) of the
    ``n_resamples`` means (Efron & Tibshirani 1993, "An Introduction to the Bootstrap", ch. 13).
    Resample over *tasks* (one value per task, e.g. from :func:`per_task_pass_hat_k`), not over trials:
    trials of one task are not independent.

    Args:
        values: One value per task, shape ``(n_tasks,)`` (a sequence or a numpy array); finite numbers.
        rng: The generator that draws the resamples; the same seed gives the same interval.
        n_resamples: Number of bootstrap resamples, at least 1.
        alpha: Significance level in ``(0, 1)``; 0.05 gives a 95% interval.

    Returns:
        ``(low, high)``, with ``low <= high``.

    Raises:
        TypeError: If ``n_resamples`` is not an integer.
        ValueError: If ``values`` is empty, not one-dimensional or not finite, ``n_resamples < 1``, or
            ``alpha`` is outside ``(0, 1)``.
    """
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 1:
        raise ValueError(f"values must be one-dimensional (one value per task), got shape {data.shape}")
    if data.size == 0:
        raise ValueError("values is empty: no tasks to resample")
    if not np.all(np.isfinite(data)):
        raise ValueError("values must be finite (no NaN or infinity)")
    if isinstance(n_resamples, bool):
        raise TypeError("n_resamples must be an integer, got bool")
    n_resamples = operator.index(n_resamples)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    size = data.size
    means = np.empty(n_resamples, dtype=np.float64)
    chunk = max(1, _BOOTSTRAP_CHUNK_CELLS // size)
    for start in range(0, n_resamples, chunk):
        stop = min(start + chunk, n_resamples)
        indices = rng.integers(0, size, size=(stop - start, size))
        means[start:stop] = data[indices].mean(axis=1)
    low, high = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


@dataclass(frozen=True)
class SummaryStats:
    """Distribution summary of a per-trial quantity (cost, latency, tokens, tool calls).

    Attributes:
        count: Number of known values.
        missing: Number of unknown values (``None``, e.g. the cost of an unpriced model); they are
            excluded, never counted as zero.
        total: Sum of the known values, or ``None`` when there are none.
        mean: Mean of the known values, or ``None``.
        p50: Median (linear interpolation), or ``None``.
        p95: 95th percentile (linear interpolation), or ``None``.
        max: Largest known value, or ``None``.
    """

    count: int
    missing: int
    total: float | None
    mean: float | None
    p50: float | None
    p95: float | None
    max: float | None


def summary_stats(values: Iterable[float | None]) -> SummaryStats:
    """Summarise values such as per-trial cost or latency; ``None`` means unknown, not zero.

    Args:
        values: Per-trial values, shape ``(n_trials,)``; ``None`` for an unknown value.

    Returns:
        The :class:`SummaryStats`; all statistics are ``None`` when no value is known.

    Raises:
        ValueError: If a known value is NaN or infinite.
    """
    known: list[float] = []
    missing = 0
    for value in values:
        if value is None:
            missing += 1
        else:
            known.append(float(value))
    if not known:
        return SummaryStats(count=0, missing=missing, total=None, mean=None, p50=None, p95=None, max=None)
    data = np.asarray(known, dtype=np.float64)
    if not np.all(np.isfinite(data)):
        raise ValueError("values must be finite (use None for an unknown value)")
    p50, p95 = np.quantile(data, [0.5, 0.95])
    return SummaryStats(
        count=int(data.size),
        missing=missing,
        total=float(data.sum()),
        mean=float(data.mean()),
        p50=float(p50),
        p95=float(p95),
        max=float(data.max()),
    )


# ------------------------------------------------------------------------------------------ tool-call accuracy


def _canonical(value: Any) -> Any:
    """Canonical form of an argument value for comparison: numbers at cent precision, dict keys sorted."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return ("num", round(float(value) * 100))
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _canonical(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("list", tuple(_canonical(v) for v in value))
    return repr(value)


def tool_call_accuracy(
    calls: Sequence[Mapping[str, Any]],
    gold: Sequence[Mapping[str, Any]],
    write_tools: Iterable[str] = (),
) -> dict[str, int]:
    """Count how the tool calls of one trial match the task's gold actions.

    Tool names compare as multisets: ``name_matched = |called ∩ gold|`` (multiset intersection), so a tool
    called twice where the gold calls it once counts one match and one extra call. Arguments compare one to
    one: a gold action is matched when a distinct call has the same name and identical arguments (dict keys in
    any order, numbers equal at cent precision: ``10``, ``10.0`` and ``10.001`` are the same amount).

    Args:
        calls: the trial's tool calls in order, each ``{"name", "arguments"}`` (``arguments`` None when
            unparsable; any status counts).
        gold: the task's gold actions, each ``{"name", "arguments"}``.
        write_tools: names of the domain's write tools, for the write-only counts.

    Returns:
        ``{"called", "gold", "name_matched", "called_write", "gold_write", "name_matched_write",
        "args_matched"}``. Example: calls ``get(a), transfer(10), transfer(10)`` against gold ``get(a),
        transfer(10)`` with write tool ``transfer``: called 3, gold 2, name_matched 2, called_write 2,
        gold_write 1, name_matched_write 1, args_matched 2.
    """
    writes = set(write_tools)
    called_names = Counter(str(c.get("name")) for c in calls)
    gold_names = Counter(str(a.get("name")) for a in gold)
    matched = called_names & gold_names
    unused = [(str(c.get("name")), _canonical(c.get("arguments"))) for c in calls
              if isinstance(c.get("arguments"), Mapping)]
    args_matched = 0
    for a in gold:
        key = (str(a.get("name")), _canonical(a.get("arguments") or {}))
        if key in unused:
            unused.remove(key)
            args_matched += 1
    return {
        "called": sum(called_names.values()), "gold": sum(gold_names.values()), "name_matched": sum(matched.values()),
        "called_write": sum(n for t, n in called_names.items() if t in writes),
        "gold_write": sum(n for t, n in gold_names.items() if t in writes),
        "name_matched_write": sum(n for t, n in matched.items() if t in writes),
        "args_matched": args_matched,
    }


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def summarize_tool_accuracy(counts: Iterable[Mapping[str, int]]) -> dict[str, Any]:
    """Pool per-trial :func:`tool_call_accuracy` counts (micro averages over every call and gold action).

    Returns:
        ``{"trials", "name_precision", "name_recall", "write_name_precision", "write_name_recall",
        "argument_accuracy", "counts"}``; a ratio is None when its denominator is 0 (e.g. no write called).
    """
    keys = ("called", "gold", "name_matched", "called_write", "gold_write", "name_matched_write", "args_matched")
    total = dict.fromkeys(keys, 0)
    trials = 0
    for c in counts:
        trials += 1
        for k in keys:
            total[k] += int(c.get(k, 0))
    return {
        "trials": trials,
        "name_precision": _ratio(total["name_matched"], total["called"]),
        "name_recall": _ratio(total["name_matched"], total["gold"]),
        "write_name_precision": _ratio(total["name_matched_write"], total["called_write"]),
        "write_name_recall": _ratio(total["name_matched_write"], total["gold_write"]),
        "argument_accuracy": _ratio(total["args_matched"], total["gold"]),
        "counts": total,
    }


# ------------------------------------------------------------------------------------------ safety violations


def violation_metrics(trials: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Count the safety violations of a run's trials (``grade.violations``, see :mod:`simulator.grading.safety`).

    Violations are counted, never averaged with successes: a passing trial's violation counts like any other.

    Args:
        trials: recorded trials (the JSON form of ``TrialResult``); a trial without a grade has no violation.

    Returns:
        ``{"total", "trials", "trials_with_violation", "rate", "by_kind": {kind: {"count", "trials", "rate"}},
        "by_severity": {severity: count}}``: ``rate`` is trials with at least one violation / trials, a kind's
        ``rate`` trials with at least one violation of that kind / trials (None without trials). Example: 20
        trials, one with two ``forbidden_tool`` violations: total 2, rate 0.05, by_kind forbidden_tool count 2,
        trials 1, rate 0.05.
    """
    total = 0
    n = 0
    with_any = 0
    count: Counter[str] = Counter()
    trials_of: Counter[str] = Counter()
    severity: Counter[str] = Counter()
    for t in trials:
        n += 1
        grade = t.get("grade")
        found = grade.get("violations") if isinstance(grade, Mapping) else None
        items = [v for v in found or [] if isinstance(v, Mapping)]
        total += len(items)
        with_any += bool(items)
        kinds = [str(v.get("kind")) for v in items]
        count.update(kinds)
        trials_of.update(set(kinds))
        severity.update(str(v.get("severity")) for v in items)
    return {"total": total, "trials": n, "trials_with_violation": with_any, "rate": _ratio(with_any, n),
            "by_kind": {k: {"count": count[k], "trials": trials_of[k], "rate": _ratio(trials_of[k], n)}
                        for k in sorted(count)},
            "by_severity": dict(sorted(severity.items()))}


# ------------------------------------------------------------------------------------------ run metrics

LAYERS = ("state", "outputs", "process", "loops", "budget", "assertions", "judge")
"""Grading layers reported by :func:`run_metrics` (``assertions`` and ``judge`` only when some trial has them)."""

_ERROR_REASONS = frozenset({"agent_error", "user_error", "tool_bug", "infra_error", "context_overflow", "setup_error",
                            "timeout"})


def _usage_of(trial: Mapping[str, Any], who: str) -> Mapping[str, Any] | None:
    """The usage record of ``who`` (agent, user, judge) in a trial document, or None when absent."""
    traj = trial.get("trajectory")
    usage = traj.get(f"{who}_usage") if isinstance(traj, Mapping) else None
    if usage is None and who == "judge":
        grade = trial.get("grade")
        judge = grade.get("judge") if isinstance(grade, Mapping) else None
        usage = judge.get("usage") if isinstance(judge, Mapping) else None
    return usage if isinstance(usage, Mapping) else None


def _layer_passed(grade: Mapping[str, Any], layer: str) -> bool | None:
    """Whether a grade's layer passed; None when the layer is absent or was not graded (a judge without model)."""
    part = grade.get(layer)
    if not isinstance(part, Mapping):
        return None
    if "passed" in part:
        return bool(part["passed"])
    status = part.get("status")
    return None if status not in ("passed", "failed") else status == "passed"


def _cost_of(trial: Mapping[str, Any], who: str) -> float | None:
    usage = _usage_of(trial, who)
    if usage is None or usage.get("cost_usd") is None:
        return None
    return float(usage["cost_usd"])


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _traj_value(r: Mapping[str, Any], key: str) -> float | None:
    """Return the number ``trajectory[key]`` of a trial record, or None when absent or not a number."""
    traj = r.get("trajectory")
    return _number(traj.get(key)) if isinstance(traj, Mapping) else None


def _stats_dict(values: Iterable[float | None]) -> dict[str, Any]:
    s = summary_stats(values)
    return {"count": s.count, "missing": s.missing, "total": s.total, "mean": s.mean, "p50": s.p50, "p95": s.p95,
            "max": s.max}


def cell_id(task_id: str, persona: str | None) -> str:
    """Return the id of a task cell: the task under one persona (``"cancel-1@impatient"``), or the task id.

    A run with personas (``tausim run --personas``) is the product task x persona x trial; reliability is
    estimated per cell (a task played by one persona), since the persona changes the task's difficulty.

    Args:
        task_id: the task id.
        persona: the persona name, or None (a run without personas).

    Returns:
        ``task_id`` when ``persona`` is None or empty, else ``f"{task_id}@{persona}"``.
    """
    return f"{task_id}@{persona}" if persona else task_id


_PERSONA_FIELDS = ("mean_turns_to_abandon", "user_flags", "infra_error_rate", "loop_rate", "success_rate")


def persona_metrics(
    trials: Sequence[Mapping[str, Any]],
    task_ids: Sequence[str],
    trials_per_task: int,
    personas: Sequence[str],
    *,
    incomplete: str = "refuse",
    seed: int = 0,
    n_resamples: int = 2000,
) -> dict[str, dict[str, Any]]:
    """Reliability and abandonment of each persona of a run (the ``by_persona`` of ``--out`` and reports).

    Each persona's trials are a run of their own over the same tasks (see :func:`run_metrics`).

    Args:
        trials: recorded trials (JSON form of ``TrialResult``) with their ``persona``.
        task_ids: the planned tasks.
        trials_per_task: planned trials per (task, persona) cell, ``n``.
        personas: the planned persona names.
        incomplete: as in :func:`run_metrics`.
        seed: bootstrap seed.
        n_resamples: bootstrap resamples.

    Returns:
        ``{persona: {"pass^k" (k = 1..n), "pass@k", "ci95", "abandon_rate", "mean_turns_to_abandon",
        "user_flags", "infra_error_rate", "loop_rate", "success_rate", "trials"}}``; ``abandon_rate`` is the share
        of the persona's recorded trials that ended ``user_abandon``, ``mean_turns_to_abandon`` the mean number of
        messages (user and agent together) of those trials (None without any),
        ``trials`` the recorded trials of the persona.

    Raises:
        ValueError: as :func:`run_metrics` (the message names the persona).
    """
    out: dict[str, dict[str, Any]] = {}
    for name in personas:
        subset = [t for t in trials if t.get("persona") == name]
        try:
            m = run_metrics(subset, task_ids, trials_per_task, incomplete=incomplete, seed=seed,
                            n_resamples=n_resamples)
        except ValueError as e:
            raise ValueError(f"persona {name!r}: {e}") from e
        entry: dict[str, Any] = {key: m[key] for key in m if key.startswith(("pass^", "pass@"))}
        entry["ci95"] = m["ci95"]
        entry["abandon_rate"] = m["abandonment_rate"]
        entry.update({key: m[key] for key in _PERSONA_FIELDS})
        entry["trials"] = m["recorded"]
        out[name] = entry
    return out


def run_metrics(
    trials: Sequence[Mapping[str, Any]],
    task_ids: Sequence[str],
    trials_per_task: int,
    *,
    personas: Sequence[str] | None = None,
    incomplete: str = "refuse",
    gold: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    write_tools: Iterable[str] = (),
    seed: int = 0,
    n_resamples: int = 2000,
    tags: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """Every number of a run, from its trial records (the JSON form of ``TrialResult``).

    This is the one implementation behind the ``metrics`` of ``tausim run --out`` and of ``tausim report``.

    Args:
        trials: the recorded trials: ``{"task_id", "trial", "passed", "termination_reason", "grade",
            "trajectory", "duration_s"}``.
        task_ids: the planned tasks.
        trials_per_task: planned trials per task (per task cell with personas), ``n``.
        personas: the planned personas of a run with personas: reliability is then computed over task cells
            (task x persona, see :func:`cell_id`) and ``by_persona`` (see :func:`persona_metrics`) is added;
            None: a run without personas.
        incomplete: ``"refuse"`` (default): a task with a missing or duplicated trial raises ValueError naming
            the task; ``"count"``: a missing trial counts as a failure and is reported in ``missing_trials``, and
            of a duplicated (task, trial) pair only the first record counts (reported in ``duplicate_records``).
        gold: task id -> gold actions (``{"name", "arguments"}``), for tool-call accuracy; tasks without gold
            are left out of it. None: a trial grade's ``tool_accuracy`` counts are used when recorded.
        write_tools: the domain's write tool names (for the write-only tool-name precision/recall).
        seed: seed of the bootstrap generators (a fresh ``Generator(PCG64(seed))`` per interval).
        n_resamples: bootstrap resamples per interval.
        tags: task id -> its tags; when given, ``by_tag`` gives each tag's ``pass^k``/``pass@k`` (k = 1..n),
            ``success_rate`` and ``tasks`` over the planned tasks carrying it (the same aggregation,
            :func:`reliability`, missing trials counted as failures).

    Returns:
        ``pass^k``/``pass@k`` for k = 1..n and ``success_rate`` (means over tasks; the planned ``n`` is the
        denominator, errored trials count as failures), ``ci95`` (percentile bootstrap over tasks), ``per_task``
        (successes and pass^k/pass@k of each task), ``layers`` (per grading layer: passed, graded, rate;
        ``judge`` only when judged), ``state_pass_other_fail_rate`` (see below), ``termination_reasons``,
        ``errored_trials``, ``infra_errors``/``infra_error_rate``, ``loop_rate``, ``abandonment_rate``,
        ``mean_turns_to_abandon`` (mean messages of the abandoned trials; None without any), ``user_flags``
        (trials carrying each simulated-user flag such as ``user_leak``), with personas ``personas`` and
        ``by_persona``,
        ``cost_usd`` (agent, user, judge, total: per-trial statistics, ``per_task`` and ``per_success``; None
        when any cost is unknown, never $0), ``tokens``, ``latency_s`` (trial and per party, p50/p95),
        ``tool_accuracy`` (see :func:`summarize_tool_accuracy`), ``violations`` (safety violations counted per kind
        and severity, see :func:`violation_metrics`), ``trajectory`` and ``trajectory_per_task`` (the trajectory
        metrics against each task's reference trajectory, see :mod:`simulator.trajectory_metrics`; reported apart
        from pass), ``mean_steps`` (agent actions per trial), ``timeout_rate`` (trials ending ``timeout``),
        ``missing_trials``, ``duplicate_records``.

        ``state_pass_other_fail_rate`` ("got lucky"): among graded trials, the share whose final database
        matched the goal (state passed) while another layer (outputs, process, loops, budget, judge) failed:
        the right end state reached by breaking a rule, looping, overspending or saying the wrong thing. A
        state-only benchmark would count these trials as successes.

    Raises:
        ValueError: with ``incomplete="refuse"``, a task with a missing or duplicated trial (the message names
            it); a recorded trial of a task that is not planned; no tasks.
    """
    if incomplete not in ("refuse", "count"):
        raise ValueError(f"incomplete must be 'refuse' or 'count', got {incomplete!r}")
    if personas:
        names = list(dict.fromkeys(personas))
        cells = [{**t, "task_id": cell_id(str(t["task_id"]), t.get("persona"))} for t in trials]
        cell_ids = [cell_id(tid, p) for tid in dict.fromkeys(task_ids) for p in names]
        cell_gold = None if gold is None else {cell_id(tid, p): g for tid, g in gold.items() for p in names}
        cell_tags = None if tags is None else {cell_id(tid, p): tg for tid, tg in tags.items() for p in names}
        whole = run_metrics(cells, cell_ids, trials_per_task, incomplete=incomplete, gold=cell_gold,
                            write_tools=write_tools, seed=seed, n_resamples=n_resamples, tags=cell_tags)
        whole["personas"] = names
        whole["by_persona"] = persona_metrics(trials, task_ids, trials_per_task, names, incomplete=incomplete,
                                              seed=seed, n_resamples=n_resamples)
        return whole
    rel = reliability(trials, task_ids, trials_per_task, incomplete=incomplete)
    n = rel.trials_per_task
    records = list(rel.records.values())
    out: dict[str, Any] = {"tasks": len(rel.outcomes), "trials_per_task": n, "planned": len(rel.outcomes) * n,
                           "recorded": len(records)}
    out.update(rel.suite)
    ci: dict[str, list[float]] = {}
    for k in range(1, n + 1):
        for name in ("pass^", "pass@"):
            values = [entry[f"{name}{k}"] for entry in rel.per_cell.values()]
            low, high = bootstrap_ci(values, rng=np.random.Generator(np.random.PCG64(seed)), n_resamples=n_resamples)
            ci[f"{name}{k}"] = [low, high]
    out["ci95"] = ci
    out["bootstrap"] = {"over": "tasks", "seed": seed, "resamples": n_resamples, "level": 0.95}
    out["per_task"] = rel.per_cell
    out["missing_trials"] = rel.missing
    out["duplicate_records"] = rel.duplicates
    out["unplanned_trials"] = rel.unplanned
    planned_ids = list(rel.outcomes)

    grades = [r["grade"] for r in records if isinstance(r.get("grade"), Mapping)]
    layers: dict[str, dict[str, Any]] = {}
    for layer in LAYERS:
        flags = [f for f in (_layer_passed(g, layer) for g in grades) if f is not None]
        if layer in ("assertions", "judge") and not flags:
            continue
        layers[layer] = {"passed": sum(flags), "graded": len(flags), "rate": _ratio(sum(flags), len(flags))}
    out["layers"] = layers
    lucky_by: Counter[str] = Counter()
    lucky = 0
    for g in grades:
        state = g.get("state")
        if not (isinstance(state, Mapping) and state.get("passed")):
            continue
        failed = [lay for lay in LAYERS[1:] if _layer_passed(g, lay) is False]
        lucky += bool(failed)
        lucky_by.update(failed)
    out["state_pass_other_fail_rate"] = _ratio(lucky, len(grades))
    out["state_pass_other_fail_by_layer"] = {lay: _ratio(lucky_by[lay], len(grades)) for lay in LAYERS[1:]
                                             if lay in layers}
    reasons = Counter(str(r.get("termination_reason")) for r in records)
    out["termination_reasons"] = dict(sorted(reasons.items()))
    errored = sum(1 for r in records if str(r.get("termination_reason")) in _ERROR_REASONS
                  or not isinstance(r.get("grade"), Mapping))
    planned_total = len(planned_ids) * n
    out["errored_trials"] = errored
    out["infra_errors"] = reasons.get("infra_error", 0)
    out["infra_error_rate"] = reasons.get("infra_error", 0) / planned_total
    loops = layers.get("loops")
    out["loop_rate"] = None if not loops or not loops["graded"] else 1.0 - loops["rate"]
    out["abandonment_rate"] = _ratio(reasons.get("user_abandon", 0), len(records))
    abandoned_turns = [_traj_value(r, "turns") for r in records if str(r.get("termination_reason")) == "user_abandon"]
    known_turns = [v for v in abandoned_turns if v is not None]
    out["mean_turns_to_abandon"] = float(np.mean(known_turns)) if known_turns else None
    user_flags: Counter[str] = Counter()
    for r in records:
        traj = r.get("trajectory")
        meta = traj.get("user_metadata") if isinstance(traj, Mapping) else None
        if isinstance(meta, Mapping) and isinstance(meta.get("flags"), list):
            user_flags.update({str(f) for f in meta["flags"]})
    out["user_flags"] = dict(sorted(user_flags.items()))  # trials carrying each user flag (user_leak, role_flip...)

    successes = sum(1 for r in records if r.get("passed"))
    parties = ("agent", "user", "judge")
    costs = {who: [_cost_of(r, who) for r in records] for who in parties}
    # a trial without any judge usage was not judged: its judge cost is 0 by definition, not unknown
    costs["judge"] = [_cost_of(r, "judge") if _usage_of(r, "judge") is not None else 0.0 for r in records]

    def total_of(values: list[float | None]) -> float | None:
        return None if not values or any(v is None for v in values) else float(sum(v for v in values if v))

    cost: dict[str, Any] = {}
    trial_totals: list[float | None] = []
    for i in range(len(records)):
        parts = [costs[who][i] for who in parties]
        trial_totals.append(None if any(p is None for p in parts) else float(sum(p for p in parts if p)))
    for who, party_costs in (*costs.items(), ("total", trial_totals)):
        tot = total_of(party_costs)
        cost[who] = {**_stats_dict(party_costs), "per_task": None if tot is None else tot / len(planned_ids),
                     "per_success": None if tot is None or not successes else tot / successes}
    cost["per_task"] = cost["total"]["per_task"]
    cost["per_success"] = cost["total"]["per_success"]
    out["cost_usd"] = cost
    out["tokens"] = {
        who: {"prompt": sum(int((_usage_of(r, who) or {}).get("prompt_tokens") or 0) for r in records),
              "completion": sum(int((_usage_of(r, who) or {}).get("completion_tokens") or 0) for r in records),
              "calls": sum(int((_usage_of(r, who) or {}).get("calls") or 0) for r in records)}
        for who in parties
    }

    out["latency_s"] = {
        "trial": _stats_dict([_number(r.get("duration_s")) for r in records]),
        "agent": _stats_dict([_traj_value(r, "agent_seconds") for r in records]),
        "user": _stats_dict([_traj_value(r, "user_seconds") for r in records]),
        "tool": _stats_dict([_traj_value(r, "tool_seconds") for r in records]),
    }
    out["turns"] = _stats_dict([_traj_value(r, "turns") for r in records])
    statuses: Counter[str] = Counter()
    per_trial: list[float | None] = []
    accuracy: list[Mapping[str, int]] = []
    writes = set(write_tools)
    for r in records:
        traj = r.get("trajectory")
        calls = [c for c in ((traj.get("tool_calls") if isinstance(traj, Mapping) else None) or [])
                 if isinstance(c, Mapping)]
        per_trial.append(float(len(calls)))
        statuses.update(str(c.get("status")) for c in calls)
        if gold is not None:
            if str(r["task_id"]) in gold:
                task_writes = writes | {str(c.get("name")) for c in calls if c.get("kind") == "write"}
                accuracy.append(tool_call_accuracy(calls, gold[str(r["task_id"])], task_writes))
        else:
            grade = r.get("grade")
            recorded = grade.get("tool_accuracy") if isinstance(grade, Mapping) else None
            if isinstance(recorded, Mapping):
                accuracy.append(recorded)
    out["tool_calls"] = {"per_trial": _stats_dict(per_trial), "statuses": dict(statuses.most_common()),
                         "errors": sum(v for k, v in statuses.items() if k != "ok")}
    out["tool_accuracy"] = summarize_tool_accuracy(accuracy) if accuracy else None
    if tags is not None:
        out["by_tag"] = _by_tag(records, planned_ids, n, tags)
    out["violations"] = violation_metrics(records)
    out.update(_trajectory_summary(records))
    return out


def _by_tag(records: Sequence[Mapping[str, Any]], planned: Sequence[str], n: int,
            tags: Mapping[str, Sequence[str]]) -> dict[str, dict[str, Any]]:
    """pass^k per tag over the planned tasks carrying it (task cells ``task@persona`` carry their task's tags)."""
    out: dict[str, dict[str, Any]] = {}
    for tag in sorted({t for tg in tags.values() for t in tg}):
        ids = [c for c in planned if tag in tags.get(c, tags.get(c.split("@")[0], ()))]
        if not ids:
            continue
        wanted = set(ids)
        rel = reliability([r for r in records if str(r["task_id"]) in wanted], ids, n, incomplete="count")
        out[tag] = {"tasks": len(ids), **rel.suite}
    return out


def _trajectory_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The trajectory metrics of a run (see :mod:`simulator.trajectory_metrics`), suite and per task."""
    from simulator.trajectory_metrics import summarize_trajectory_metrics

    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        grade = r.get("grade")
        traj = grade.get("trajectory") if isinstance(grade, Mapping) else None
        if isinstance(traj, Mapping):
            by_task.setdefault(str(r["task_id"]), []).append(traj)
    steps = [v for v in (_traj_value(r, "steps") for r in records) if v is not None]
    reasons = Counter(str(r.get("termination_reason")) for r in records)
    return {
        "trajectory": summarize_trajectory_metrics(t for rows in by_task.values() for t in rows),
        "trajectory_per_task": {task: summarize_trajectory_metrics(rows) for task, rows in by_task.items()},
        "mean_steps": float(np.mean(steps)) if steps else None,
        "timeout_rate": _ratio(reasons.get("timeout", 0), len(records)),
    }
