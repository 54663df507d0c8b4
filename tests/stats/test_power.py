"""The noise floor: minimum detectable difference and trials needed, checked by hand and by seeded simulation."""

from __future__ import annotations

import json
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.stats.power import min_detectable_difference, pass_hat_k_variance, trials_needed
from tests._support.report_docs import trial

Z = 1.959964 + 0.841621  # z_0.975 + z_0.80, from a normal table


def test_variance_by_hand():
    # n = 4, k = 2, p = 1/2: C(c,2)/6 for c = 2, 3, 4 is 1/6, 1/2, 1 with probabilities 6/16, 4/16, 1/16;
    # E[X^2] = 6/16/36 + 4/16/4 + 1/16 = 13/96, p^4 = 6/96: variance 7/96
    assert pass_hat_k_variance(0.5, 4, 2) == pytest.approx(7 / 96)
    assert pass_hat_k_variance(0.3, 5, 1) == pytest.approx(0.3 * 0.7 / 5)
    assert pass_hat_k_variance(1.0, 4, 4) == 0.0
    with pytest.raises(ValueError):
        pass_hat_k_variance(0.5, 2, 3)


def test_mdd_by_hand():
    # one task, 2 of 4 passed: p = 2.5/5 = 0.5; MDD = Z * sqrt(2 * 0.25 / 4) / 1
    assert min_detectable_difference([2], 4, 1) == pytest.approx(Z * (2 * 0.25 / 4) ** 0.5, rel=1e-5)
    # trials needed to detect 0.1: Z^2 * 2 * 0.25 / 0.01 = 392.4... -> 393 trials
    assert trials_needed([2], 4, 1, 0.1) == 393


def test_trials_needed_is_the_smallest():
    successes, n = [4, 4, 3, 1, 0, 2, 4, 4], 4
    for k in (1, 3):
        need = trials_needed(successes, n, k, 0.08)
        assert need is not None and need >= k
        assert min_detectable_difference(successes, n, k, trials=need) <= 0.08
        if need > k:
            assert min_detectable_difference(successes, n, k, trials=need - 1) > 0.08


@pytest.mark.parametrize("k", [1, 2])
def test_mdd_matches_a_seeded_simulation(k):
    """Second method: simulate paired runs; the spread of the mean per-task difference and the power at the MDD."""
    rng = np.random.Generator(np.random.PCG64(7))
    n, tasks = 4, 40
    successes = rng.integers(1, n, size=tasks)  # 1..3 of 4: p away from 0 and 1, so that a shift stays in range
    p = (successes + 0.5) / (n + 1)
    mdd = min_detectable_difference(successes.tolist(), n, k)
    table = np.array([comb(c, k) / comb(n, k) for c in range(n + 1)])  # the unbiased pass^k estimate per count

    def suite(probs: np.ndarray, reps: int) -> np.ndarray:
        return table[rng.binomial(n, probs, size=(reps, tasks))].mean(axis=1)

    reps = 20000
    null = suite(p, reps) - suite(p, reps)
    se = mdd / Z
    assert null.std() == pytest.approx(se, rel=0.05)
    # power: lower every task's pass^k by the MDD (p^k - mdd, back to p); a z-test at the formula's SE rejects ~80%
    shifted = (p ** k - mdd).clip(0, 1) ** (1 / k)
    diff = suite(p, reps) - suite(shifted, reps)
    power = float((np.abs(diff / se) > 1.959964).mean())
    # the formula takes the alternative's variance to be the null's: exact enough for pass^1; for pass^2 the
    # shifted tasks' variance differs, and the measured power strays further from 80% (0.71 with this seed)
    assert power == pytest.approx(0.8, abs=0.04 if k == 1 else 0.12)


def test_report_and_plan_state_the_noise_floor(tmp_path):
    trials = [{"task_id": f"t{i}", "trial": j, "passed": (i + j) % 3 != 0, "termination_reason": "user_stop"}
              for i in range(10) for j in range(4)]
    doc = {"format": "tausim.run", "version": 1, "config": {"domain": "retail", "trials": 4},
           "planned_task_ids": [f"t{i}" for i in range(10)], "trials": trials}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["report", str(path)])
    assert r.exit_code == 0, r.output
    assert "noise floor (10 tasks x 4 trials)" in r.output and "pass^4 difference of" in r.output
    r = CliRunner().invoke(app, ["report", str(path), "--format", "json"])
    nf = json.loads(r.output)["metrics"]["noise_floor"]
    assert set(nf) >= {"pass^1", "pass^4", "method"} and 0 < nf["pass^1"] < nf["pass^4"]
    r = CliRunner().invoke(app, ["plan", "--baseline", str(path), "--detect", "0.05"])
    assert r.exit_code == 0, r.output
    assert "pass^1: trials per task needed to detect a difference of 0.05:" in r.output
    assert "pass^4: trials per task needed" in r.output


def test_the_html_report_states_the_noise_floor() -> None:
    from simulator.report import analyze_run, render_html

    trials = [{"task_id": f"t{i}", "trial": j, "passed": j == 0, "termination_reason": "user_stop"}
              for i in range(3) for j in range(2)]
    doc = {"format": "tausim.run", "version": 1, "config": {"domain": "retail", "trials": 2},
           "planned_task_ids": ["t0", "t1", "t2"], "trials": trials}
    html = render_html(analyze_run(doc, n_resamples=10))
    assert 'id="noise-floor"' in html and "noise floor (3 tasks x 2 trials)" in html


def test_the_variance_of_many_trials_is_finite_and_matches_exact_rational_arithmetic():
    def exact(p, n, k):  # the same sum in exact rationals: an independent check of the log-space sum
        p = Fraction(p).limit_denominator(10)
        s = sum(comb(n, c) * p ** c * (1 - p) ** (n - c) * Fraction(comb(c, k), comb(n, k)) ** 2
                for c in range(k, n + 1))
        return float(s - p ** (2 * k))

    for p, n, k in [(0.9, 1040, 2), (0.3, 1040, 4)]:  # C(n, c) no longer fits a float: was an OverflowError
        assert pass_hat_k_variance(p, n, k) == pytest.approx(exact(p, n, k), rel=1e-6)


def test_plan_for_a_one_task_baseline_that_always_passed_gives_a_number_of_trials(tmp_path):
    doc = {"format": "tausim.run", "version": 1, "config": {"domain": "retail", "trials": 2, "seed": 0,
                                                            "task_ids": ["a"]},
           "trials": [trial("a", 0, True), trial("a", 1, True)]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    res = CliRunner().invoke(app, ["plan", "--baseline", str(path)])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)  # was OverflowError
    assert res.exit_code == 0 and "trials per task needed" in res.output, res.output


def test_a_one_task_one_trial_run_says_its_noise_floor_cannot_be_estimated(tmp_path):
    # by hand: p = (1 + 1/2) / 2 = 0.75, Var = 2 * 0.75 * 0.25 / 1 = 0.375, mdd = 2.80158 * sqrt(0.375) = 1.716 > 1
    assert min_detectable_difference([1], 1, 1) == pytest.approx(2.80158 * 0.375 ** 0.5, rel=1e-4)
    doc = {"format": "tausim.run", "version": 1, "config": {"domain": "retail", "trials": 1, "seed": 0,
                                                            "task_ids": ["a"]},
           "trials": [trial("a", 0, True)]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    res = CliRunner().invoke(app, ["report", str(path), "--format", "json"])
    assert json.loads(res.stdout)["metrics"]["noise_floor"]["pass^1"] is None  # was 1.716: not a probability
    res = CliRunner().invoke(app, ["report", str(path)])
    line = next(x for x in res.output.splitlines() if x.startswith("noise floor"))
    assert "cannot be estimated" in line and "1.716" not in line, line
    res = CliRunner().invoke(app, ["plan", "--baseline", str(path)])
    assert res.exit_code == 0 and "1.716" not in res.output and "too few tasks x trials" in res.output, res.output
