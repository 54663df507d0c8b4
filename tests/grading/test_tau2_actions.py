"""tau2's ACTION component (``check_actions``): a gold action is missing when no call of the trial matches it by
``action_matches`` (name, requestor, compared values). Checked against that pairwise rule over seeded random
trials: calls of the same and other tools, both requestors, unparsable arguments, numbers of other types."""

from __future__ import annotations

import numpy as np

from simulator.grading.tau2 import action_matches, check_actions
from simulator.types.tasks import Action
from simulator.types.trajectory import ToolCallRecord, Trajectory

VALUES = ["a", "b", 1, 1.0, True, None, [1, 2], {"x": 1}]


def _args(rng: np.random.Generator) -> dict[str, object] | None:
    if rng.random() < 0.1:
        return None
    return {k: VALUES[int(rng.integers(len(VALUES)))] for k in ("p", "q") if rng.random() < 0.8}


def test_missing_gold_actions_are_those_no_call_matches_pairwise() -> None:
    rng = np.random.Generator(np.random.PCG64(3))
    seen_missing = seen_found = 0
    for _ in range(300):
        gold = [Action(name=str(rng.choice(["t1", "t2"])), arguments=_args(rng) or {},
                       requestor=str(rng.choice(["assistant", "user"])),
                       compare_args=[None, [], ["p"], ["p", "q"]][int(rng.integers(4))])
                for _ in range(int(rng.integers(1, 4)))]
        calls = [ToolCallRecord(step=i, call_id=f"c{i}", name=str(rng.choice(["t1", "t2", "t3"])), arguments=_args(rng),
                                kind="write", status="ok", content="", duration_s=0.0,
                                requestor=str(rng.choice(["agent", "user"])))
                 for i in range(int(rng.integers(0, 6)))]
        expected = [i for i, a in enumerate(gold) if not any(
            action_matches(a, c.name, c.arguments, "user" if c.requestor == "user" else "assistant") for c in calls)]
        result = check_actions(gold, Trajectory(tool_calls=calls))
        assert [m["index"] for m in result.missing] == expected
        assert result.passed == (not expected)
        seen_missing += bool(expected)
        seen_found += len(gold) - len(expected)
    assert seen_missing > 30 and seen_found > 30
