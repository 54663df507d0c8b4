"""The loop skips adding a turn's usage that would change nothing; checked against the addition itself."""

from __future__ import annotations

import itertools
import math

from simulator.dialogue.conversation import _adds_nothing
from simulator.types.messages import Usage


def _same(a: Usage, b: Usage) -> bool:
    """Field by field, floats by their representation (so 0.0 and -0.0, 1 and 1.0 differ)."""
    return all(repr(getattr(a, f)) == repr(getattr(b, f)) and type(getattr(a, f)) is type(getattr(b, f))
               for f in Usage.model_fields)


def test_skipping_is_exact_whenever_it_happens():
    totals = [Usage(), Usage(prompt_tokens=3, cost_usd=0.25, calls=1, attempts=2), Usage(cost_usd=None),
              Usage.model_construct(cost_usd=-0.0), Usage.model_construct(cost_usd=1)]
    turns = [Usage(), Usage(cost_usd=-0.0), Usage(cost_usd=None), Usage(prompt_tokens=1), Usage(calls=1),
             Usage(cost_usd=0.5), Usage(attempts=1), Usage(completion_tokens=2)]
    skipped = 0
    for total, turn in itertools.product(totals, turns):
        if _adds_nothing(total, turn):
            skipped += 1
            assert _same(total + turn, total), (total, turn)
    assert skipped >= 4  # the model-free turn's zero usage is skipped on ordinary totals


def test_the_edge_cases_are_added():
    assert not _adds_nothing(Usage.model_construct(cost_usd=-0.0), Usage())  # -0.0 + 0.0 is 0.0
    assert not _adds_nothing(Usage.model_construct(cost_usd=1), Usage())  # an int cost becomes a float
    assert not _adds_nothing(Usage(), Usage(cost_usd=None))  # an unknown cost makes the total unknown
    assert math.copysign(1.0, (Usage.model_construct(cost_usd=-0.0) + Usage()).cost_usd or 0.0) > 0
