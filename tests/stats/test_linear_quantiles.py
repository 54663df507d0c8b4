"""``linear_quantiles``: numpy's default quantiles, to the last bit, without importing ``numpy.ma``."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from simulator.stats.estimators import linear_quantiles


def test_by_hand() -> None:
    # h = q (n - 1) over [1, 2, 4, 8]: q=0.5 -> h=1.5 -> 2 + 0.5 * (4 - 2) = 3; q=0.25 -> h=0.75 -> 1 + 0.75 = 1.75
    assert linear_quantiles(np.array([8.0, 1.0, 4.0, 2.0]), [0.5, 0.25, 0.0, 1.0]).tolist() == [3.0, 1.75, 1.0, 8.0]
    assert linear_quantiles(np.array([5.0]), [0.025, 0.975]).tolist() == [5.0, 5.0]


@pytest.mark.parametrize("seed", range(4))
def test_the_same_floats_as_numpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for i in range(2000):
        n = int(rng.integers(1, 80)) if i % 50 else int(rng.integers(1000, 5000))
        values = [rng.random(n), rng.integers(0, 5, n) / 7.0, rng.normal(size=n) * 1e-3,
                  np.round(rng.random(n), 2)][i % 4]
        qs = [0.025, 0.975] if i % 3 else list(rng.random(3))
        assert np.array_equal(linear_quantiles(values, qs), np.quantile(values, qs)), (values, qs)


def test_numpy_ma_is_not_imported() -> None:
    code = ("import sys, numpy as np; from simulator.stats.estimators import linear_quantiles, bootstrap_ci; "
            "linear_quantiles(np.arange(5.0), [0.5]); print('numpy.ma' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
