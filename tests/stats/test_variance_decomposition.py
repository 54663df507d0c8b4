"""The variance decomposition on small tables computed by hand (simulator.stats.variance)."""

from fractions import Fraction as F
from statistics import variance

import numpy as np
import pytest

from simulator.stats.variance import decompose_variance, task_variance


def rng(seed=0):
    return np.random.Generator(np.random.PCG64(seed))


def test_task_variance_is_the_unbiased_bernoulli_variance():
    # c passes of n: c (n - c) / (n (n - 1)); 2 of 4 -> 4/12, 3 of 4 -> 3/12, 0 of 4 -> 0
    assert task_variance([1, 0, 1, 0]) == pytest.approx(float(F(1, 3)))
    assert task_variance([1, 1, 1, 0]) == pytest.approx(float(F(1, 4)))
    assert task_variance([0, 0, 0, 0]) == 0.0
    # a second method: the standard library's sample variance
    assert task_variance([0.2, 0.9, 0.4]) == pytest.approx(variance([0.2, 0.9, 0.4]))
    with pytest.raises(ValueError, match="at least 2 trials"):
        task_variance([1.0])
    with pytest.raises(ValueError, match="finite"):
        task_variance([1.0, float("nan")])


TABLE = {
    # both: t1 2/4 -> 1/3, t2 3/4 -> 1/4: mean 7/24
    "both": {"t1": [1, 0, 1, 0], "t2": [1, 1, 1, 0]},
    # user only: t1 1/3, t2 0: mean 4/24
    "user": {"t1": [1, 1, 0, 0], "t2": [1, 1, 1, 1]},
    # agent only: t1 0, t2 1/4: mean 3/24
    "agent": {"t1": [1, 1, 1, 1], "t2": [0, 1, 1, 1]},
}


def test_decomposition_by_hand():
    d = decompose_variance(TABLE, rng=rng())
    assert d.spread == pytest.approx({"both": 7 / 24, "user": 4 / 24, "agent": 3 / 24})
    # user = 4/7, agent = 3/7, interaction = (4 + 3 - 7)/7 = 0; main effects 1 - the other's total
    assert d.shares == pytest.approx({"user": 4 / 7, "agent": 3 / 7, "interaction": 0.0, "user_main": 4 / 7,
                                      "agent_main": 3 / 7})
    assert d.components == pytest.approx({"agent_main": 3 / 24, "user_main": 4 / 24, "interaction": 0.0})
    assert d.per_task["t1"] == pytest.approx({"both": 1 / 3, "user": 1 / 3, "agent": 0.0, "mean_both": 0.5})
    assert d.trials == 4 and d.tasks == ("t1", "t2")
    # bootstrap over the two tasks: {t1, t1} gives user share 1, {t2, t2} gives 0, a mix 4/7; each pure resample
    # has probability 1/4, so the 2.5% and 97.5% quantiles of 2000 resamples are 0 and 1
    low, high = d.intervals["user"]
    assert (low, high) == (pytest.approx(0.0), pytest.approx(1.0))


def test_an_interaction_by_hand():
    # one task: both 1/3, user 1/3, agent 1 pass of 4 -> 3/12 = 1/4
    table = {"both": {"t": [1, 0, 1, 0]}, "user": {"t": [1, 0, 1, 0]}, "agent": {"t": [1, 0, 0, 0]}}
    d = decompose_variance(table, rng=rng())
    # user 1, agent 3/4, interaction (1/3 + 1/4 - 1/3) / (1/3) = 3/4, user_main (1/3 - 1/4)/(1/3) = 1/4, agent_main 0
    assert d.shares == pytest.approx({"user": 1.0, "agent": 0.75, "interaction": 0.75, "user_main": 0.25,
                                      "agent_main": 0.0})
    assert d.shares["user_main"] + d.shares["agent_main"] + d.shares["interaction"] == pytest.approx(1.0)
    # one task: every resample is that task, the interval is the point
    assert d.intervals["agent"] == (pytest.approx(0.75), pytest.approx(0.75))


def test_no_spread_at_all_leaves_the_shares_undefined():
    flat = {c: {"t": [1, 1, 1]} for c in ("both", "user", "agent")}
    d = decompose_variance(flat, rng=rng())
    assert d.spread == {"both": 0.0, "user": 0.0, "agent": 0.0}
    assert all(v is None for v in d.shares.values()) and all(v is None for v in d.intervals.values())
    doc = d.as_dict()
    assert doc["shares"]["user"] is None and doc["tasks"] == 1


def test_mismatched_runs_are_refused():
    with pytest.raises(ValueError, match="missing: agent"):
        decompose_variance({"both": TABLE["both"], "user": TABLE["user"]}, rng=rng())
    with pytest.raises(ValueError, match="tasks differ"):
        decompose_variance({**TABLE, "agent": {"t1": [1, 1, 1, 1]}}, rng=rng())
    with pytest.raises(ValueError, match="same number of trials"):
        decompose_variance({**TABLE, "agent": {"t1": [1, 1, 1], "t2": [0, 1, 1]}}, rng=rng())


def test_the_same_seed_gives_the_same_intervals():
    a = decompose_variance(TABLE, rng=rng(3), n_resamples=300)
    b = decompose_variance(TABLE, rng=rng(3), n_resamples=300)
    assert a.intervals == b.intervals
