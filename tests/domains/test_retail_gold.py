"""Gold parity with tau-bench: replaying each task's gold actions reproduces the peer's recorded outcome.

The peer's own environment recorded, per task, the response of every gold action and the final state diff
(``../shared/peers/tau-bench/gold``). Our replay must give the same diff (numbers at cent precision) and the
same pattern of error/non-error responses (up to a transfer that ends the episode). Successful responses
are also compared exactly: they are the record JSON the peer returns, so equality checks key order and
unrounded amounts as well.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from domains.retail import RetailDomain
from simulator.execution.parity import replay_tasks
from simulator.types.tasks import load_tasks
from tests._support.peer_gold import mismatch


@pytest.fixture(scope="module")
def retail(retail_peer_dir: Path) -> tuple[RetailDomain, Any]:
    domain = RetailDomain()
    return domain, domain.template(retail_peer_dir / "data")


@pytest.mark.parametrize("split", ["train", "dev"])
def test_gold_parity(split: str, retail: tuple[RetailDomain, Any], peers_dir: Path) -> None:
    domain, template = retail
    gold_file = peers_dir / "gold" / f"retail_{split}.json"
    if not gold_file.is_file():
        pytest.skip(f"gold outcomes not found at {gold_file}")
    gold = {g["task_index"]: g for g in json.loads(gold_file.read_text())}
    tasks = load_tasks(peers_dir / "retail" / f"tasks_{split}.json")
    assert len(gold) == len(tasks)
    t0 = time.perf_counter()
    results = list(replay_tasks(domain, template, tasks))
    elapsed = time.perf_counter() - t0
    print(f"\n{split}: {len(results)} tasks replayed in {elapsed:.2f} s ({elapsed / len(results) * 1000:.1f} ms/task)")
    problems = []
    for result in results:
        why = mismatch(result, gold[result.task_index])
        if why:
            problems.append(f"task {result.task_index}: {why}")
    matched = len(results) - len(problems)
    assert not problems, f"{matched}/{len(results)} match\n" + "\n".join(problems[:20])
    assert all(s != "tool_bug" for r in results for s in r.statuses)


def test_held_out_test_split_replays_cleanly(retail: tuple[RetailDomain, Any], retail_peer_dir: Path) -> None:
    """No gold for tasks_test.json: every action must run without a tool bug, stopping at a transfer."""
    domain, template = retail
    tasks = load_tasks(retail_peer_dir / "tasks_test.json")
    results = list(replay_tasks(domain, template, tasks))  # raises GoldToolBug on a bug in a tool
    assert len(results) == len(tasks)
    errors = 0
    for task, result in zip(tasks, results, strict=True):
        names = [a.name for a in task.gold_actions]
        assert set(result.statuses) <= {"ok", "tool_error"}, (task.id, result.statuses)
        if "transfer_to_human_agents" in names:
            stop = names.index("transfer_to_human_agents")
            assert len(result.responses) == stop + 1 and result.responses[-1] == "Transfer successful"
        else:
            assert len(result.responses) == len(names)
        errors += result.statuses.count("tool_error")
        for name, response in zip(names, result.responses, strict=False):
            if name == "calculate":
                float(response)  # a number, rounded to 2 decimals
                assert len(response.split(".")[-1]) <= 2
    assert errors < sum(len(r.responses) for r in results) // 10  # rejections are the exception
