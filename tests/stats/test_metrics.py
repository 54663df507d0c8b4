"""Tests for simulator.stats.summaries: expected values are computed independently (enumeration, hand figures)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from simulator.stats.estimators import (
    SummaryStats,
    bootstrap_ci,
    pass_at_k,
    pass_hat_k,
    per_task_pass_at_k,
    per_task_pass_hat_k,
    success_counts,
    suite_metrics,
    summary_stats,
)

# ---------------------------------------------------------------------------------------------- helpers


def enumerate_pass(outcomes: list[bool], k: int) -> tuple[Fraction, Fraction]:
    """(pass^k, pass@k) by brute force over all k-subsets of the trials."""
    subsets = list(itertools.combinations(outcomes, k))
    all_pass = sum(1 for subset in subsets if all(subset))
    any_pass = sum(1 for subset in subsets if any(subset))
    return Fraction(all_pass, len(subsets)), Fraction(any_pass, len(subsets))


def trials(n: int, c: int) -> list[bool]:
    return [True] * c + [False] * (n - c)


# ----------------------------------------------------------------------------------- pass^k and pass@k


def test_hand_figures_n4_c2() -> None:
    assert pass_hat_k(4, 2, 1) == 0.5
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6, abs=1e-15)
    assert pass_hat_k(4, 2, 3) == 0.0
    assert pass_hat_k(4, 2, 4) == 0.0
    assert pass_at_k(4, 2, 1) == 0.5
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6, abs=1e-15)
    assert pass_at_k(4, 2, 3) == 1.0
    assert pass_at_k(4, 2, 4) == 1.0


def test_hand_figures_other() -> None:
    # 8 trials, 6 successes: pass^2 = C(6,2)/C(8,2) = 15/28; pass^8 = 0; pass@2 = 1 - C(2,2)/C(8,2) = 27/28.
    assert pass_hat_k(8, 6, 2) == pytest.approx(15 / 28, abs=1e-15)
    assert pass_hat_k(8, 6, 8) == 0.0
    assert pass_at_k(8, 6, 2) == pytest.approx(27 / 28, abs=1e-15)
    assert pass_hat_k(5, 5, 5) == 1.0
    assert pass_at_k(5, 0, 5) == 0.0
    assert pass_hat_k(1, 1, 1) == 1.0
    assert pass_hat_k(1, 0, 1) == 0.0


@pytest.mark.parametrize("n", range(1, 10))
def test_formulas_match_enumeration_over_subsets(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            hat, at = enumerate_pass(trials(n, c), k)
            # Both sides are correctly rounded values of the same rational: exact equality is expected.
            assert pass_hat_k(n, c, k) == float(hat), (n, c, k)
            assert pass_at_k(n, c, k) == float(at), (n, c, k)


def test_enumeration_does_not_depend_on_trial_order() -> None:
    rng = np.random.default_rng(7)
    for _ in range(30):
        n = int(rng.integers(1, 9))
        outcomes = [bool(x) for x in rng.random(n) < 0.6]
        c = sum(outcomes)
        for k in range(1, n + 1):
            hat, at = enumerate_pass(outcomes, k)
            assert pass_hat_k(n, c, k) == float(hat)
            assert pass_at_k(n, c, k) == float(at)


def test_monotone_in_k() -> None:
    for n in range(1, 12):
        for c in range(n + 1):
            hats = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
            ats = [pass_at_k(n, c, k) for k in range(1, n + 1)]
            assert all(a >= b for a, b in itertools.pairwise(hats))
            assert all(a <= b for a, b in itertools.pairwise(ats))
            assert hats[0] == ats[0] == c / n


def test_large_counts_are_exact() -> None:
    # Binomials far beyond float range: exact integer math must still give the correctly rounded ratio.
    n, c, k = 2000, 1500, 700
    assert math.comb(n, k) > 10**400
    expected_hat = float(Fraction(math.comb(c, k), math.comb(n, k)))
    expected_at = float(Fraction(math.comb(n, k) - math.comb(n - c, k), math.comb(n, k)))
    assert pass_hat_k(n, c, k) == expected_hat
    assert 0.0 < expected_hat < 1e-50
    assert pass_at_k(n, c, k) == expected_at == 1.0


def test_accepts_numpy_integers() -> None:
    assert pass_hat_k(np.int64(4), np.int32(2), np.int64(2)) == pytest.approx(1 / 6)


@pytest.mark.parametrize("fn", [pass_hat_k, pass_at_k])
@pytest.mark.parametrize(
    ("n", "c", "k", "fragment"),
    [
        (4, 2, 5, "k = 5 exceeds n = 4"),
        (4, 2, 0, "k must be at least 1"),
        (4, 5, 2, "exceeds n"),
        (-1, 0, 1, "n must not be negative"),
        (4, -1, 1, "c must not be negative"),
        (4, 2, -1, "k must not be negative"),
        (0, 0, 1, "exceeds n"),
    ],
)
def test_invalid_counts_refused(fn, n: int, c: int, k: int, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=fragment):
        fn(n, c, k)


@pytest.mark.parametrize("fn", [pass_hat_k, pass_at_k])
def test_non_integers_refused(fn) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError):
        fn(4.0, 2, 2)
    with pytest.raises(TypeError):
        fn(4, True, 1)


# ---------------------------------------------------------------------------------------- suite metrics


def test_suite_metrics_hand_example() -> None:
    outcomes = {"t1": [True, True, False, False], "t2": [True, True, True, True]}
    m = suite_metrics(outcomes, planned=4)
    assert set(m) == {f"pass^{k}" for k in range(1, 5)} | {f"pass@{k}" for k in range(1, 5)} | {"success_rate"}
    assert m["pass^1"] == pytest.approx(0.75)
    assert m["pass^2"] == pytest.approx((1 / 6 + 1) / 2)
    assert m["pass^3"] == pytest.approx(0.5)
    assert m["pass^4"] == pytest.approx(0.5)
    assert m["pass@1"] == pytest.approx(0.75)
    assert m["pass@2"] == pytest.approx((5 / 6 + 1) / 2)
    assert m["pass@4"] == pytest.approx(1.0)
    assert m["success_rate"] == pytest.approx(6 / 8)


def test_suite_metrics_match_enumeration() -> None:
    rng = np.random.default_rng(2024)
    planned = 6
    outcomes = {f"task-{i}": [bool(x) for x in rng.random(planned) < p] for i, p in enumerate(rng.random(25))}
    m = suite_metrics(outcomes, planned)
    for k in range(1, planned + 1):
        hats, ats = zip(*(enumerate_pass(trials_, k) for trials_ in outcomes.values()), strict=True)
        assert m[f"pass^{k}"] == pytest.approx(float(sum(hats) / len(hats)), rel=1e-12)
        assert m[f"pass@{k}"] == pytest.approx(float(sum(ats) / len(ats)), rel=1e-12)
    total = sum(sum(t) for t in outcomes.values())
    assert m["success_rate"] == pytest.approx(total / (planned * len(outcomes)))
    assert m["success_rate"] == pytest.approx(m["pass^1"])


def test_suite_metrics_selected_ks() -> None:
    m = suite_metrics({"a": [True, False, True]}, planned=3, ks=[3, 1, 1])
    assert list(m) == ["pass^1", "pass@1", "pass^3", "pass@3", "success_rate"]
    assert m["pass^3"] == 0.0
    assert m["pass@3"] == 1.0


def test_suite_metrics_accepts_numpy_bools() -> None:
    m = suite_metrics({"a": np.array([True, False])}, planned=2)  # type: ignore[dict-item]
    assert m["pass^1"] == 0.5


def test_crashed_trial_counted_as_failure_keeps_planned_denominator() -> None:
    # 4 planned, 3 passed, 1 crashed (recorded as False): pass^1 = 3/4, not 3/3.
    assert suite_metrics({"t": [True, True, True, False]}, planned=4)["pass^1"] == 0.75


@pytest.mark.parametrize(
    ("outcomes", "fragment"),
    [
        ({"ok": [True, False, True], "short": [True, True]}, r"'short': 2 outcomes recorded but 3 planned"),
        ({"ok": [True, False, True], "dup": [True] * 4}, r"'dup': 4 outcomes recorded but 3 planned"),
        ({"none": [True, None, False]}, r"'none': outcome of trial 1 is None"),
        ({"int": [1, 0, 1]}, r"'int': outcome of trial 0 is 1"),
        ({"str": "TTF"}, r"'str'"),
        ({}, "no tasks"),
    ],
)
def test_malformed_outcomes_refused(outcomes, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=fragment):
        suite_metrics(outcomes, planned=3)
    with pytest.raises(ValueError, match=fragment):
        per_task_pass_hat_k(outcomes, planned=3, k=1)


def test_suite_metrics_refuses_bad_k_and_planned() -> None:
    outcomes = {"a": [True, False]}
    with pytest.raises(ValueError, match="k = 3 exceeds n = 2"):
        suite_metrics(outcomes, planned=2, ks=[1, 3])
    with pytest.raises(ValueError, match="k must be at least 1"):
        suite_metrics(outcomes, planned=2, ks=[0])
    with pytest.raises(ValueError, match="ks is empty"):
        suite_metrics(outcomes, planned=2, ks=[])
    with pytest.raises(ValueError, match="at least 1"):
        suite_metrics({"a": []}, planned=0)


def test_per_task_values() -> None:
    outcomes = {"a": [True, True, False, False], "b": [False] * 4}
    assert success_counts(outcomes, 4) == {"a": 2, "b": 0}
    assert per_task_pass_hat_k(outcomes, 4, 2) == pytest.approx({"a": 1 / 6, "b": 0.0})
    assert per_task_pass_at_k(outcomes, 4, 2) == pytest.approx({"a": 5 / 6, "b": 0.0})
    with pytest.raises(ValueError, match="exceeds"):
        per_task_pass_at_k(outcomes, 4, 5)


# ------------------------------------------------------------------------------------------- bootstrap


def test_bootstrap_contains_mean_and_is_deterministic() -> None:
    data_rng = np.random.default_rng(11)
    for values in (
        data_rng.random(30),
        (data_rng.random(200) < 0.3).astype(float),
        data_rng.normal(5.0, 2.0, size=7),
    ):
        low, high = bootstrap_ci(values.tolist(), rng=np.random.default_rng(123))
        assert low <= float(np.mean(values)) <= high
        assert low < high
        again = bootstrap_ci(values.tolist(), rng=np.random.default_rng(123))
        assert again == (low, high)
        other = bootstrap_ci(values.tolist(), rng=np.random.default_rng(124))
        assert other != (low, high)


def test_bootstrap_width_matches_normal_approximation() -> None:
    # Independent check: for the mean of 400 values, the 95% percentile interval is close to
    # mean +/- 1.96 * sd / sqrt(n).
    values = (np.random.default_rng(3).random(400) < 0.3).astype(float)
    low, high = bootstrap_ci(values, rng=np.random.default_rng(0), n_resamples=4000)
    expected_half = 1.96 * values.std() / math.sqrt(values.size)
    assert (high - low) / 2 == pytest.approx(expected_half, rel=0.1)
    assert (low + high) / 2 == pytest.approx(values.mean(), abs=0.01)


def test_bootstrap_coverage_near_nominal() -> None:
    # 300 simulated suites of 40 tasks with true mean 0.5: about 95% of the intervals cover 0.5.
    rng = np.random.default_rng(99)
    covered = 0
    repetitions = 300
    for _ in range(repetitions):
        values = rng.normal(0.5, 0.2, size=40)
        low, high = bootstrap_ci(values, rng=rng, n_resamples=500)
        covered += low <= 0.5 <= high
    assert 0.88 <= covered / repetitions <= 0.99


def test_bootstrap_alpha_and_degenerate_cases() -> None:
    values = np.random.default_rng(5).random(50)
    wide = bootstrap_ci(values, rng=np.random.default_rng(1), alpha=0.05)
    narrow = bootstrap_ci(values, rng=np.random.default_rng(1), alpha=0.5)
    assert wide[0] < narrow[0] <= narrow[1] < wide[1]
    assert bootstrap_ci([0.25] * 10, rng=np.random.default_rng(0)) == (0.25, 0.25)
    assert bootstrap_ci([0.7], rng=np.random.default_rng(0)) == (0.7, 0.7)


def test_bootstrap_large_input_is_chunked_and_deterministic() -> None:
    values = np.random.default_rng(8).random(5000)  # 5000 x 2000 draws: more than one chunk
    first = bootstrap_ci(values, rng=np.random.default_rng(2))
    assert first == bootstrap_ci(values, rng=np.random.default_rng(2))
    assert first[0] <= values.mean() <= first[1]
    assert first[1] - first[0] == pytest.approx(2 * 1.96 * values.std() / math.sqrt(5000), rel=0.15)


def test_bootstrap_refuses_bad_input() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="empty"):
        bootstrap_ci([], rng=rng)
    with pytest.raises(ValueError, match="finite"):
        bootstrap_ci([0.1, float("nan")], rng=rng)
    with pytest.raises(ValueError, match="one-dimensional"):
        bootstrap_ci([[0.1, 0.2]], rng=rng)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="alpha"):
        bootstrap_ci([0.1], rng=rng, alpha=0.0)
    with pytest.raises(ValueError, match="alpha"):
        bootstrap_ci([0.1], rng=rng, alpha=1.0)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_ci([0.1], rng=rng, n_resamples=0)
    with pytest.raises(TypeError):
        bootstrap_ci([0.1], rng=rng, n_resamples=2.5)  # type: ignore[arg-type]


# -------------------------------------------------------------------------------------- summary stats


def test_summary_stats_unknown_is_not_zero() -> None:
    stats = summary_stats([1.0, None, 3.0])
    assert stats.count == 2
    assert stats.missing == 1
    assert stats.total == 4.0
    assert stats.mean == 2.0  # not 4/3: None is unknown, not $0
    assert stats.max == 3.0


def test_summary_stats_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    stats = summary_stats(reversed(values))
    # Linear interpolation by hand: position q * (n - 1) in the sorted list.
    assert stats.p50 == pytest.approx(50.5)
    assert stats.p95 == pytest.approx(values[94] + 0.05 * (values[95] - values[94]))
    assert stats.mean == pytest.approx(50.5)


def test_summary_stats_empty_and_invalid() -> None:
    assert summary_stats([None, None]) == SummaryStats(
        count=0, missing=2, total=None, mean=None, p50=None, p95=None, max=None
    )
    assert summary_stats([]).count == 0
    with pytest.raises(ValueError, match="finite"):
        summary_stats([1.0, float("inf")])
