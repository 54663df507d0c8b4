"""Trajectory metrics: one hand-computed test per formula of the metric table in docs/concepts/metrics.md."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.grading import grade_trial
from simulator.stats.summaries import run_metrics, summarize_trajectory_metrics
from simulator.stats.trajectory import trial_trajectory_metrics
from simulator.types.state import StateDiff
from simulator.types.tasks import Action, Task, UserScenario
from tests.grading.test_grading_rules import TB, build

WRITES = {"transfer"}


def call(name: str, status: str = "ok", **args: Any) -> dict[str, Any]:
    return {"name": name, "arguments": args, "status": status, "kind": "write" if name in WRITES else "read"}


def ref(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "arguments": args}


GET_A, GET_B, PAY = call("get", id="a"), call("get", id="b"), call("transfer", amount=10)
R = [ref("get", id="a"), ref("transfer", amount=10)]


def m(calls: list[dict[str, Any]], reference: list[dict[str, Any]] = R) -> dict[str, Any]:
    return trial_trajectory_metrics(calls, reference, WRITES)


def test_exact_match():
    assert m([GET_A, PAY])["exact"]
    assert not m([GET_A, GET_B, PAY])["exact"]  # an extra call
    assert not m([PAY, GET_A])["exact"]  # order
    assert m([GET_A, call("transfer", amount=10.0)])["exact"]  # 10 == 10.0 at cent precision


def test_in_order_match():
    assert m([GET_A, GET_B, PAY])["in_order"]  # R = get(a), transfer(10) is a subsequence
    assert not m([PAY, GET_A])["in_order"]
    assert not m([GET_A])["in_order"]


def test_set_match():
    assert m([PAY, GET_A, GET_A])["set"]  # same distinct calls, order and repeats ignored
    assert not m([GET_A, GET_B, PAY])["set"]  # get(b) is not in R


def test_prefix_match():
    assert m([GET_A, GET_B, PAY])["prefix"] == 0.5  # common prefix get(a): 1 of |R| = 2
    assert m([PAY])["prefix"] == 0.0
    assert m([GET_A, PAY, GET_B])["prefix"] == 1.0
    assert m([], [])["prefix"] == 1.0


def test_tool_decision_accuracy():
    rows = [m([]), m([GET_A]), m([], []), m([GET_A], [])]  # wrong, right, right, wrong
    assert [r["decision"] for r in rows] == [False, True, True, False]
    assert summarize_trajectory_metrics(rows)["tool_decision_accuracy"] == 0.5


def test_tool_selection_accuracy():
    # trial 1: A = get, get, transfer -> names ∩ = {get, transfer} = 2, max(3, 2) = 3
    # trial 2: A = get(b) -> names ∩ = {get} = 1, max(1, 2) = 2;  (2 + 1) / (3 + 2) = 0.6
    s = summarize_trajectory_metrics([m([GET_A, GET_B, PAY]), m([GET_B])])
    assert s["tool_selection_accuracy"] == pytest.approx(3 / 5)


def test_parameter_accuracy():
    # trial 1: name-matched 2, exact calls 2; trial 2: get(b) name-matched 1, exact 0 -> 2 / 3
    s = summarize_trajectory_metrics([m([GET_A, PAY]), m([GET_B])])
    assert s["parameter_accuracy"] == pytest.approx(2 / 3)


def test_utilisation_accuracy():
    # trial 1: 3 calls, 2 reference calls made exactly; trial 2: 1 call, 0 -> 2 / 4
    s = summarize_trajectory_metrics([m([GET_A, GET_B, PAY]), m([GET_B])])
    assert s["utilisation_accuracy"] == pytest.approx(0.5)


def test_abstention_rate():
    reads_only = [ref("get", id="a")]  # nothing to act on
    rows = [m([GET_A], reads_only),  # abstained
            m([GET_A, PAY], reads_only),  # acted: a write
            m([call("delete_everything", "unknown_tool")], reads_only),  # invented a tool
            m([GET_A, PAY])]  # R has a write: abstention does not apply
    assert [r["abstained"] for r in rows] == [True, False, False, None]
    s = summarize_trajectory_metrics(rows)
    assert s["abstention_trials"] == 3 and s["abstention_rate"] == pytest.approx(1 / 3)


def test_redundant_call_rate():
    # get(a) ok, get(a) again (redundant), transfer ok (a write: reads may be repeated), get(a) (not redundant),
    # get(b) failed, get(b) (not redundant: the first did not return ok) -> 1 of 6
    row = m([GET_A, GET_A, PAY, GET_A, call("get", "tool_error", id="b"), GET_B])
    assert row["redundant"] == 1
    assert summarize_trajectory_metrics([row])["redundant_call_rate"] == pytest.approx(1 / 6)


def test_a_repeated_identical_write_is_redundant_and_a_retry_after_a_failure_is_not():
    pay20 = call("transfer", amount=20)
    # transfer(10) ok, transfer(10) again (redundant: the same write applied twice), get(a), transfer(10) (still
    # redundant: no other write came between), transfer(20) ok (another write), transfer(10) (not redundant: the
    # last ok write was transfer(20)) -> 2 of 6
    assert m([PAY, PAY, GET_A, PAY, pay20, PAY])["redundant"] == 2
    # a failed transfer(10), then the retry ok, then the same once more -> only the last is redundant
    assert m([call("transfer", "tool_error", amount=10), PAY, PAY])["redundant"] == 1
    # the repeat counts even when the service refuses it (the agent tried to apply the same write twice)
    assert m([PAY, call("transfer", "tool_error", amount=10)])["redundant"] == 1


def test_recovery_rate():
    # transfer fails then succeeds (recovered); get(b) fails and no later get succeeds (not recovered)
    row = m([GET_A, call("transfer", "invalid_arguments"), PAY, call("get", "tool_error", id="b")])
    assert (row["failed"], row["recovered"]) == (2, 1)
    assert summarize_trajectory_metrics([row])["recovery_rate"] == 0.5
    assert summarize_trajectory_metrics([m([GET_A])])["recovery_rate"] is None  # no failed call


def test_per_tool_error_rate():
    rows = [m([GET_A, call("get", "tool_error", id="b"), PAY]), m([call("get", "tool_error", id="c")])]
    # get: 3 calls, 2 failed; transfer: 1 call, 0 failed
    assert summarize_trajectory_metrics(rows)["per_tool_error_rate"] == {"get": pytest.approx(2 / 3),
                                                                        "transfer": 0.0}


def test_mean_steps_timeout_rate_and_per_task_in_run_metrics():
    def rec(task: str, trial: int, steps: int, reason: str, traj: dict[str, Any] | None) -> dict[str, Any]:
        return {"task_id": task, "trial": trial, "passed": reason == "user_stop", "termination_reason": reason,
                "grade": {"trajectory": traj}, "trajectory": {"steps": steps}}

    trials = [rec("t1", 0, 4, "user_stop", m([GET_A, PAY])), rec("t1", 1, 9, "timeout", m([GET_A])),
              rec("t2", 0, 2, "user_stop", None), rec("t2", 1, 3, "user_stop", None)]
    out = run_metrics(trials, ["t1", "t2"], 2)
    assert out["mean_steps"] == pytest.approx((4 + 9 + 2 + 3) / 4)
    assert out["timeout_rate"] == pytest.approx(1 / 4)
    assert out["trajectory"]["trials"] == 2 and out["trajectory"]["exact_match"] == 0.5
    assert out["trajectory_per_task"] == {"t1": out["trajectory"]}
    # the trajectory metrics never change pass^k
    assert out["pass^1"] == pytest.approx((1 / 2 + 1) / 2)


def test_grade_records_the_trajectory_metrics_against_gold_or_an_explicit_reference():
    traj = build([("call", "get_balance", {"account_id": "A1"}, "ok"),
                  ("call", "transfer", {"src": "A1", "dst": "B2", "amount": 25}, "ok")])
    gold = [Action(name="transfer", arguments={"src": "A1", "dst": "B2", "amount": 25})]
    task = Task(id="t", scenario=UserScenario(instructions="x"), gold_actions=gold)
    g = grade_trial(task, traj, StateDiff(), TB)
    assert g.trajectory is not None
    assert (g.trajectory["exact"], g.trajectory["in_order"], g.trajectory["prefix"]) == (False, True, 0.0)
    with_reads = [Action(name="get_balance", arguments={"account_id": "A1"}), *gold]
    g = grade_trial(task.model_copy(update={"reference": with_reads}), traj, StateDiff(), TB)
    assert g.trajectory is not None and g.trajectory["exact"]
    assert grade_trial(Task(id="t", scenario=UserScenario(instructions="x")), traj, StateDiff(), TB).trajectory is None


def test_the_duplicate_write_agent_scores_a_redundant_call_rate_above_zero():
    from simulator import RunSpec, build_runner
    from simulator.storage.documents import run_summary_json

    tasks = ["cancel-no-longer-needed", "modify-user-address"]
    run = build_runner(RunSpec(domain="retail", agent="faulty:duplicate_write=1", user="rule", task_ids=tasks,
                               preflight=False)).run()
    calls = [c for t in run.trials for c in t.trajectory.tool_calls if c.requestor == "agent"]
    # an independent count: each write call equal (name and arguments) to the write call just before it
    writes = [(c.name, repr(sorted(c.arguments.items()))) for c in calls if c.kind == "write"]
    repeats = sum(a == b for a, b in zip(writes, writes[1:], strict=False))
    assert repeats == len(tasks)  # the faulty agent repeated each task's one write once
    rate = run_summary_json(run)["metrics"]["trajectory"]["redundant_call_rate"]
    assert rate == pytest.approx(repeats / len(calls)) and rate > 0


def test_non_finite_arguments_compare_without_crashing():
    from simulator.stats.trajectory import tool_call_accuracy

    nan, inf = float("nan"), float("inf")
    calls = [{"name": "get", "arguments": {"id": nan}}, {"name": "get", "arguments": {"id": inf}},
             {"name": "get", "arguments": {"id": 7}}]
    counts = tool_call_accuracy(calls, [{"name": "get", "arguments": {"id": inf}}, {"name": "get",
                                                                                  "arguments": {"id": 7.0}}])
    assert counts["called"] == 3 and counts["args_matched"] == 2  # inf == inf as text; 7 == 7.0 at cents
    huge = [{"name": "get", "arguments": {"id": 1.7e306}}, {"name": "get", "arguments": {"id": 10**400}}]
    assert tool_call_accuracy(huge, [{"name": "get", "arguments": {"id": 10**400}}])["args_matched"] == 1
