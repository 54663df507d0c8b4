"""TrialContext.rng: the generator given, or one made from the seed when first read (same stream either way)."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.types.protocols import TrialContext


def _ctx(rng: np.random.Generator | None, seed: int = 1234) -> TrialContext:
    return TrialContext(task=None, tools=[], policy="", seed=seed, rng=rng, domain="retail")  # type: ignore[arg-type]


def test_a_deferred_generator_draws_the_stream_of_pcg64_of_the_seed():
    ctx = _ctx(None, seed=20261206)
    first = ctx.rng
    assert ctx.rng is first  # made once
    expected = np.random.Generator(np.random.PCG64(20261206)).integers(0, 10**9, 5)
    assert list(first.integers(0, 10**9, 5)) == list(expected)


def test_a_given_generator_is_kept_and_the_field_stays_required():
    rng = np.random.Generator(np.random.PCG64(7))
    assert _ctx(rng).rng is rng
    with pytest.raises(TypeError, match="rng"):
        TrialContext(task=None, tools=[], policy="", seed=1, domain="retail")  # type: ignore[call-arg, arg-type]
