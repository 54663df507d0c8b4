"""The noise floor of a run: the smallest difference in pass^k a paired comparison could detect, and trials needed.

Method (a normal approximation for paired proportions, clustered by task; the power analysis of Miller, "Adding
Error Bars to Evals: A Statistical Approach to Language Model Evaluations", arXiv:2411.00640, 2024, sections 2.2
on clustered/paired differences and 4 on power): two runs of ``T`` tasks with ``n`` trials each are compared by
the mean over tasks of the per-task difference ``d_t = est_A(t) - est_B(t)``, where ``est(t)`` is the unbiased
pass^k estimate ``C(c_t, k) / C(n, k)`` of the task (``c_t`` successes). Pairing by task removes the between-task
variance; what is left is each task's sampling variance. Under the null (the agents are equally good, task ``t``
succeeding with probability ``p_t``) the two runs are independent, so

    Var(mean d) = (2 / T^2) * sum_t V_k(p_t, n),    V_k(p, n) = sum_c Binom(c; n, p) * (C(c, k) / C(n, k))^2 - p^(2k)

(``V_1(p, n) = p (1 - p) / n``: the binomial variance of a proportion; for ``k > 1`` the exact variance of the
U-statistic, summed over the binomial distribution). The minimum detectable difference at two-sided level
``alpha`` with power ``1 - beta`` is

    MDD = (z_{1 - alpha/2} + z_{1 - beta}) * sqrt(Var(mean d))    (5% level, 80% power: 1.95996 + 0.84162 = 2.80158)

``p_t`` is estimated from the run itself, shrunk away from 0 and 1 as ``(c_t + 1/2) / (n + 1)`` (a Jeffreys-type
adjustment) so that tasks that always or never passed in ``n`` trials still carry the sampling variance ``n``
trials cannot rule out. The normal quantiles come from :class:`statistics.NormalDist`.
:func:`trials_needed` inverts the formula: the fewest trials per task (same tasks, same ``p_t``) whose MDD is at
most the difference to detect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import comb, lgamma, log, log1p, sqrt
from statistics import NormalDist
from typing import Any

import numpy as np

__all__ = ["METHOD", "min_detectable_difference", "noise_floor", "pass_hat_k_variance", "trials_needed"]

METHOD = ("paired by task, normal approximation, per-task binomial sampling variance of the unbiased pass^k "
          "estimate with p = (c + 1/2) / (n + 1); two-sided 5% level, 80% power (Miller 2024, arXiv:2411.00640)")
"""How :func:`noise_floor` computes the minimum detectable difference (reported with it)."""

MAX_TRIALS = 100_000
"""The most trials per task :func:`trials_needed` considers."""


def pass_hat_k_variance(p: float, n: int, k: int) -> float:
    """Return the variance of the unbiased pass^k estimate ``C(c, k) / C(n, k)`` when ``c ~ Binomial(n, p)``.

    Args:
        p: a task's success probability, in [0, 1].
        n: trials of the task (n >= k).
        k: the k of pass^k (k >= 1).

    Returns:
        ``sum_c Binom(c; n, p) (C(c, k)/C(n, k))^2 - p^(2k)`` (``p (1 - p) / n`` for ``k = 1``), never negative.

    Raises:
        ValueError: ``k < 1``, ``n < k`` or ``p`` outside [0, 1].
    """
    if k < 1 or n < k:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    if k == 1:
        return p * (1.0 - p) / n
    if p in (0.0, 1.0):
        return 0.0  # c is certain: the estimate is a constant
    if n <= _DIRECT_MAX_N:
        total = comb(n, k)
        direct = 0.0
        for i in range(k, n + 1):
            weight = comb(n, i) * p ** i * (1.0 - p) ** (n - i)
            direct += weight * (comb(i, k) / total) ** 2
        return max(0.0, direct - p ** (2 * k))
    # in logs (comb(n, c) * p**c overflows a float from n ~ 1,030): log Binom(c; n, p) and
    # log(C(c, k) / C(n, k)) from c = k, each step c -> c + 1 adding its ratio
    c = np.arange(k, n, dtype=np.float64)
    log_pmf = _log_comb(n, k) + k * log(p) + (n - k) * log1p(-p) + np.concatenate(
        ([0.0], np.cumsum(np.log((n - c) / (c + 1.0)) + log(p) - log1p(-p))))
    log_ratio = -_log_comb(n, k) + np.concatenate(([0.0], np.cumsum(np.log((c + 1.0) / (c + 1.0 - k)))))
    second = float(np.exp(log_pmf + 2.0 * log_ratio).sum())
    return max(0.0, second - p ** (2 * k))


_DIRECT_MAX_N = 1000
"""Up to this n the sum is taken term by term (C(n, c) still fits a float); beyond, in logs."""


def _log_comb(n: int, k: int) -> float:
    return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)


def _z(alpha: float, power: float) -> float:
    dist = NormalDist()
    return dist.inv_cdf(1.0 - alpha / 2.0) + dist.inv_cdf(power)


def _shrunk(successes: int, n: int) -> float:
    return (successes + 0.5) / (n + 1.0)


def min_detectable_difference(successes: Sequence[int], n: int, k: int, *, trials: int | None = None,
                              alpha: float = 0.05, power: float = 0.8) -> float:
    """Return the minimum detectable difference of suite pass^k between two paired runs (see the module docstring).

    Args:
        successes: per task, the successes ``c_t`` observed in ``n`` trials (they estimate ``p_t``).
        n: the trials per task the successes were observed in.
        k: the k of pass^k.
        trials: the trials per task of the runs to compare (default ``n``: the run as it is).
        alpha: two-sided significance level.
        power: the power, ``1 - beta``.

    Returns:
        The difference (absolute, in [0, 1] units of pass^k) detectable with the given power; ``inf`` without tasks.

    Raises:
        ValueError: ``k`` exceeds the trials, or a success count outside ``0..n``.
    """
    m = n if trials is None else trials
    if not successes:
        return float("inf")
    total = 0.0
    for c in successes:
        if not 0 <= c <= n:
            raise ValueError(f"successes must be in 0..{n}, got {c}")
        total += pass_hat_k_variance(_shrunk(c, n), m, k)
    return _z(alpha, power) * sqrt(2.0 * total) / len(successes)


def trials_needed(successes: Sequence[int], n: int, k: int, detect: float, *, alpha: float = 0.05,
                  power: float = 0.8) -> int | None:
    """Return the fewest trials per task at which two paired runs detect a pass^k difference of ``detect``.

    Args:
        successes: per task, the baseline's successes in ``n`` trials (they estimate ``p_t``).
        n: the baseline's trials per task.
        k: the k of pass^k (the answer is at least ``k``).
        detect: the difference to detect (absolute, e.g. 0.05 for 5 points), > 0.
        alpha: two-sided significance level.
        power: the power.

    Returns:
        The trials per task, or None when even :data:`MAX_TRIALS` are not enough (too few tasks).

    Raises:
        ValueError: ``detect`` not in (0, 1].
    """
    if not 0.0 < detect <= 1.0:
        raise ValueError(f"--detect must be in (0, 1], got {detect}")

    def ok(m: int) -> bool:
        return min_detectable_difference(successes, n, k, trials=m, alpha=alpha, power=power) <= detect

    low, high = k, k
    while not ok(high):  # the variance falls as trials grow: double, then bisect
        if high >= MAX_TRIALS:
            return None
        low, high = high + 1, min(2 * high, MAX_TRIALS)
    while low < high:
        mid = (low + high) // 2
        if ok(mid):
            high = mid
        else:
            low = mid + 1
    return high


def _detectable(mdd: float) -> float | None:
    """An mdd that a difference of probabilities can reach, else None (more than 1, or infinite)."""
    return mdd if mdd <= 1.0 else None


def noise_floor(per_task: Mapping[str, Mapping[str, Any]], n: int) -> dict[str, Any]:
    """Return the minimum detectable differences of a run's pass^1 and pass^n, as reports state them.

    Args:
        per_task: task cell -> ``{"successes": c, ...}`` (``metrics["per_task"]``).
        n: trials per task.

    Returns:
        ``{"pass^1": mdd, "pass^n": mdd, "k": n, "tasks": T, "trials_per_task": n, "alpha": 0.05,
        "power": 0.8, "method": METHOD}`` (``pass^n`` only when ``n > 1``). An mdd is a difference of
        probabilities, at most 1: where the formula gives more (too few tasks x trials, e.g. 1 x 1: 1.72) or no
        tasks, it is None: no difference of pass^k could be detected, the noise floor cannot be estimated.
    """
    successes = [int(v.get("successes", 0)) for v in per_task.values()]
    out: dict[str, Any] = {"pass^1": _detectable(min_detectable_difference(successes, n, 1))}
    if n > 1:
        out[f"pass^{n}"] = _detectable(min_detectable_difference(successes, n, n))
    out.update({"k": n, "tasks": len(successes), "trials_per_task": n, "alpha": 0.05, "power": 0.8,
                "method": METHOD})
    return out
