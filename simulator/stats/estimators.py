"""Pure statistics: pass^k and pass@k estimators, per-task reliability and bootstrap confidence intervals."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, SupportsIndex

import numpy as np
import numpy.typing as npt

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
    refuse = incomplete == "refuse"
    records, duplicates, unplanned = _index_records(trials, planned_ids, n, with_personas=bool(names), refuse=refuse)
    outcomes, missing = _planned_outcomes(planned_ids, records, n, refuse=refuse)
    suite = suite_metrics(outcomes, n, ks)
    k_values = sorted(int(key[5:]) for key in suite if key.startswith("pass^"))
    per_cell = {cell: _cell_estimates(n, sum(row), k_values) for cell, row in outcomes.items()}
    return Reliability(trials_per_task=n, outcomes=outcomes, records=records, missing=missing, duplicates=duplicates,
                       unplanned=unplanned, suite=suite, per_cell=per_cell)


def _index_records(trials: Iterable[Mapping[str, Any]], planned_ids: Sequence[str], n: int, *, with_personas: bool,
                   refuse: bool) -> tuple[dict[tuple[str, int], Mapping[str, Any]], int, int]:
    """Index trial records by planned ``(cell, trial index)``, first record of each pair.

    Args:
        trials: the trial records, in order.
        planned_ids: the planned cells.
        n: planned trials per cell.
        with_personas: whether the cells are ``task@persona``.
        refuse: raise on an unplanned or duplicated record instead of counting it.

    Returns:
        ``(records, duplicates, unplanned)``: ``{(cell, index): record}``, the records repeating a pair (planned or
        not) and the distinct unplanned pairs.

    Raises:
        ValueError: with ``refuse``, an unplanned or duplicated record (naming the cell and trial).
    """
    planned_set = set(planned_ids)
    records: dict[tuple[str, int], Mapping[str, Any]] = {}
    seen_unplanned: set[tuple[str, int]] = set()
    duplicates = 0
    for t in trials:
        key = (cell_id(str(t["task_id"]), t.get("persona") if with_personas else None), int(t["trial"]))
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
    return records, duplicates, len(seen_unplanned)


def _planned_outcomes(planned_ids: Sequence[str], records: Mapping[tuple[str, int], Mapping[str, Any]], n: int, *,
                      refuse: bool) -> tuple[dict[str, list[bool]], int]:
    """Return each planned cell's outcomes in trial order and the number of missing trials (counted as failed).

    Raises:
        ValueError: with ``refuse``, a missing planned trial (naming the cell, the trial and how many are recorded).
    """
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
    return outcomes, missing


def _cell_estimates(n: int, c: int, k_values: Sequence[int]) -> dict[str, float]:
    """Return one cell's ``{"successes", "pass^k", "pass@k", ...}`` for ``c`` successes of ``n`` trials."""
    entry: dict[str, float] = {"successes": c}
    for k in k_values:
        entry[f"pass^{k}"] = pass_hat_k(n, c, k)
        entry[f"pass@{k}"] = pass_at_k(n, c, k)
    return entry


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
    low, high = linear_quantiles(means, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


def linear_quantiles(values: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    """Quantiles by linear interpolation between order statistics: the numbers ``np.quantile(values, qs)`` gives.

    numpy's default method ("linear", type 7 of Hyndman and Fan 1996, Statistical Science 50(4)): for ``n``
    sorted values ``a`` and a quantile ``q``, ``h = q (n - 1)``, ``t = h - floor(h)`` and the result interpolates
    ``a[floor(h)]`` and the next value, from the lower one when ``t < 0.5`` and back from the upper one otherwise,
    as numpy does, so the floats are the same to the last bit. Written out here because ``np.quantile`` imports
    ``numpy.ma`` on first use (about 50 ms, a twentieth of a one-task run).

    Args:
        values: finite floats, shape ``(n,)``, ``n >= 1``.
        qs: quantiles in ``[0, 1]``.

    Returns:
        The quantiles, shape ``(len(qs),)``, float64.
    """
    a = np.sort(np.asarray(values, dtype=np.float64))
    n = a.size
    h = np.asarray(qs, dtype=np.float64) * (n - 1)
    lower = np.floor(h)
    t = h - lower
    below_index = lower.astype(np.intp)
    below, above = a[below_index], a[np.minimum(below_index + 1, n - 1)]
    diff = above - below
    return np.where(t >= 0.5, above - diff * (1.0 - t), below + diff * t)


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
    p50, p95 = linear_quantiles(data, [0.5, 0.95])
    return SummaryStats(
        count=int(data.size),
        missing=missing,
        total=float(data.sum()),
        mean=float(data.mean()),
        p50=float(p50),
        p95=float(p95),
        max=float(data.max()),
    )


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
