"""Run metrics (simulator.stats.summaries.run_metrics): pass^k vs theory, infra errors, layers, costs, tool-call
accuracy."""

from __future__ import annotations

import copy

import pytest

from simulator.execution.runner import Runner, run_summary_json
from simulator.report import analyze_run
from simulator.stats.summaries import run_metrics, summarize_tool_accuracy
from simulator.stats.trajectory import tool_call_accuracy
from simulator.types.messages import AgentTurn, Message
from simulator.types.spec import RunSpec
from simulator.types.tasks import parse_tasks
from simulator.users import scripted_user_factory
from tests._support.toy import BankDomain, write_data


def _tasks(n: int):
    return parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": f"t{i}", "scenario": {"instructions": "ask for the answer"}, "required_outputs": ["42"]}
        for i in range(n)]})


class Flaky:
    """Succeeds (states the required output) with probability 0.6, drawn by the trial's own generator."""

    def __init__(self, ctx):
        self.ok = bool(ctx.rng.random() < 0.6)

    def step(self, messages):
        return AgentTurn(message=Message(role="assistant", content="The answer is 42." if self.ok else "No idea."))


@pytest.fixture()
def bank(tmp_path):
    dom = BankDomain()
    return dom, dom.template(write_data(tmp_path / "d"))


def _run(bank, tasks, agent, trials, seed=0):
    dom, tpl = bank
    cfg = RunSpec(domain="bank", trials=trials, seed=seed)
    return Runner(dom, tpl, tasks, agent, scripted_user_factory(), cfg).run()


def test_pass_hat_k_agrees_with_theory(bank):
    # 800 tasks x 8 trials, p = 0.6: pass^8 = 0.6**8 ~ 0.0168, standard error sqrt(0.0168 * 0.983 / 800) ~ 0.0045
    res = _run(bank, _tasks(800), Flaky, trials=8, seed=3)
    m = run_summary_json(res)["metrics"]
    low, high = m["ci95"]["pass^8"]
    assert low <= 0.6**8 <= high, (m["pass^8"], low, high)
    assert high - low < 0.03
    for k in (1, 2, 4):
        low, high = m["ci95"][f"pass^{k}"]
        assert low <= 0.6**k <= high, (k, m[f"pass^{k}"], low, high)
        low, high = m["ci95"][f"pass@{k}"]
        assert low <= 1 - 0.4**k <= high, (k, m[f"pass@{k}"], low, high)
    assert m["per_task"]["t0"]["successes"] == sum(t.passed for t in res.trials if t.task_id == "t0")


def test_four_trials_three_api_errors_one_pass(bank):
    class ApiDown:
        def __init__(self, ctx):
            self.down = ctx.trial_index < 3

        def step(self, messages):
            if self.down:
                return AgentTurn(message=Message(role="assistant"), error="503 Service Unavailable",
                                 error_kind="infra_error")
            return AgentTurn(message=Message(role="assistant", content="The answer is 42."))

    res = _run(bank, _tasks(1), ApiDown, trials=4)
    m = run_summary_json(res)["metrics"]
    assert m["pass^1"] == 0.25 and m["success_rate"] == 0.25 and m["pass@4"] == 1.0 and m["pass^2"] == 0.0
    assert m["infra_errors"] == 3 and m["infra_error_rate"] == 0.75 and m["errored_trials"] == 3
    assert m["termination_reasons"] == {"infra_error": 3, "user_stop": 1}
    assert res.metrics["pass^1"] == 0.25


# --- hand-made run documents ---------------------------------------------------------------------------------


def _trial(tid, i, layers_failed=(), reason="user_stop", agent_cost=0.01, user_cost=0.002, judge=None,
           calls=(), duration=1.0):
    grade = {layer: {"passed": layer not in layers_failed} for layer in ("state", "outputs", "process", "loops",
                                                                         "budget")}
    if judge is not None:
        status = "not_graded" if judge[0] is None else "passed" if judge[0] else "failed"
        grade["judge"] = {"status": status, "gating": True, "usage": {"cost_usd": judge[1], "prompt_tokens": 100,
                                                                        "completion_tokens": 5, "calls": 1}}
    judged_ok = judge is None or judge[0] is not False
    passed = not layers_failed and reason in ("user_stop", "agent_transfer") and judged_ok
    return {"task_id": tid, "trial": i, "passed": passed, "termination_reason": reason, "grade": grade,
            "duration_s": duration,
            "trajectory": {"agent_usage": {"cost_usd": agent_cost, "prompt_tokens": 10, "completion_tokens": 2,
                                           "calls": 1},
                           "user_usage": {"cost_usd": user_cost, "prompt_tokens": 3, "completion_tokens": 1,
                                          "calls": 1},
                           "tool_calls": [{"name": n, "arguments": a, "status": "ok", "kind": k} for n, a, k in calls],
                           "turns": 2}}


def test_layers_got_lucky_loops_and_abandonment():
    trials = [
        _trial("a", 0), _trial("a", 1, ("process",)), _trial("a", 2, ("state", "loops")), _trial("a", 3, ("budget",)),
        _trial("b", 0, reason="user_abandon"), _trial("b", 1, ("loops",)), _trial("b", 2), _trial("b", 3, ("state",)),
    ]
    m = run_metrics(trials, ["a", "b"], 4, n_resamples=10)
    assert m["layers"]["state"] == {"passed": 6, "graded": 8, "rate": 0.75}
    assert m["layers"]["process"]["rate"] == 7 / 8 and m["layers"]["loops"]["passed"] == 6
    # state passed but another layer failed: a/1 (process), a/3 (budget), b/1 (loops); a/2 failed state itself
    assert m["state_pass_other_fail_rate"] == 3 / 8
    assert m["state_pass_other_fail_by_layer"] == {"outputs": 0.0, "process": 1 / 8, "loops": 1 / 8,
                                                   "budget": 1 / 8}
    assert m["loop_rate"] == 2 / 8 and m["abandonment_rate"] == 1 / 8
    assert "judge" not in m["layers"]
    assert m["pass^1"] == 2 / 8  # a: a/0; b: b/2 (b/0 was abandoned: a failure whatever its layers say)


def test_judge_layer_and_costs_per_party():
    trials = [_trial("a", 0, judge=(True, 0.003)), _trial("a", 1, judge=(False, 0.003)),
              _trial("b", 0, judge=(True, 0.003)), _trial("b", 1, ("state",), judge=(True, 0.003)),
              _trial("c", 0, judge=(None, 0.0)), _trial("c", 1, judge=(None, 0.0))]  # no judge model: not graded
    m = run_metrics(trials, ["a", "b", "c"], 2, n_resamples=10)
    assert m["layers"]["judge"] == {"passed": 3, "graded": 4, "rate": 0.75}
    assert m["state_pass_other_fail_rate"] == 1 / 6
    assert m["state_pass_other_fail_by_layer"]["judge"] == 1 / 6
    c = m["cost_usd"]
    assert c["agent"]["total"] == pytest.approx(0.06) and c["user"]["total"] == pytest.approx(0.012)
    assert c["judge"]["total"] == pytest.approx(0.012)
    # 3 tasks, 4 successes (a/0, b/0, c/0, c/1)
    assert c["agent"]["per_task"] == pytest.approx(0.02) and c["agent"]["per_success"] == pytest.approx(0.015)
    assert c["judge"]["per_task"] == pytest.approx(0.004) and c["judge"]["per_success"] == pytest.approx(0.003)
    assert c["per_task"] == pytest.approx(0.084 / 3) and c["per_success"] == pytest.approx(0.084 / 4)
    assert m["tokens"]["judge"] == {"prompt": 600, "completion": 30, "calls": 6}
    assert m["latency_s"]["trial"]["p50"] == 1.0 and m["latency_s"]["trial"]["p95"] == 1.0


def test_unknown_cost_is_none_never_zero():
    trials = [_trial("a", 0, agent_cost=None), _trial("a", 1)]
    c = run_metrics(trials, ["a"], 2, n_resamples=10)["cost_usd"]
    assert c["agent"]["total"] == pytest.approx(0.01) and c["agent"]["missing"] == 1
    assert c["agent"]["per_task"] is None and c["agent"]["per_success"] is None
    assert c["per_task"] is None and c["per_success"] is None
    assert c["user"]["per_task"] == pytest.approx(0.004)


def test_latency_percentiles():
    trials = [_trial("a", i, duration=float(i + 1)) for i in range(20)]
    lat = run_metrics(trials, ["a"], 20, n_resamples=10)["latency_s"]["trial"]
    assert lat["p50"] == pytest.approx(10.5) and lat["p95"] == pytest.approx(19.05)


def test_missing_or_duplicated_trials_are_refused_naming_the_task():
    trials = [_trial("a", 0), _trial("a", 1), _trial("b", 0)]
    with pytest.raises(ValueError, match="task 'b': trial 1 is missing"):
        run_metrics(trials, ["a", "b"], 2)
    with pytest.raises(ValueError, match="task 'a': trial 1 recorded more than once"):
        run_metrics([*trials, _trial("b", 1), _trial("a", 1)], ["a", "b"], 2)
    with pytest.raises(ValueError, match="task 'c'"):
        run_metrics([*trials, _trial("b", 1), _trial("c", 0)], ["a", "b"], 2)
    # counted explicitly (the report of a partial run): the missing trial is a failure and reported on its own
    m = run_metrics(trials, ["a", "b"], 2, incomplete="count", n_resamples=10)
    assert m["missing_trials"] == 1 and m["pass^1"] == 0.75 and m["planned"] == 4


def test_report_and_run_out_share_one_implementation(bank):
    tasks = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "move", "scenario": {"instructions": "move $10 from A1 to B2"},
         "gold_actions": [{"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 10}}]},
        {"id": "chat", "scenario": {"instructions": "say hi"}, "required_outputs": ["42"]}]})
    res = _run(bank, tasks, Flaky, trials=3)
    doc = run_summary_json(res)
    report = analyze_run(copy.deepcopy(doc)).metrics
    for key, value in doc["metrics"].items():
        assert report[key] == value, key
    assert doc["metrics"]["tool_accuracy"]["counts"]["gold"] == 3
    assert doc["metrics"]["tool_accuracy"]["write_name_recall"] == 0.0  # Flaky never calls a tool


# --- tool-call accuracy by hand ------------------------------------------------------------------------------

GOLD = [{"name": "get_balance", "arguments": {"account_id": "A1"}},
        {"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 10}}]


def _calls(*pairs):
    return [{"name": n, "arguments": a} for n, a in pairs]


def test_tool_accuracy_exact_match():
    c = tool_call_accuracy(_calls(("get_balance", {"account_id": "A1"}),
                                  ("transfer", {"dst": "B2", "src": "A1", "amount": 10.0})), GOLD, {"transfer"})
    assert c == {"called": 2, "gold": 2, "name_matched": 2, "called_write": 1, "gold_write": 1,
                 "name_matched_write": 1, "args_matched": 2}


def test_tool_accuracy_duplicate_wrong_amount_and_extra_read():
    calls = _calls(("get_balance", {"account_id": "A1"}), ("get_balance", {"account_id": "B2"}),
                   ("transfer", {"src": "A1", "dst": "B2", "amount": 10.004}),  # same at cent precision
                   ("transfer", {"src": "A1", "dst": "B2", "amount": 10}))
    c = tool_call_accuracy(calls, GOLD, {"transfer"})
    # names: called {get_balance: 2, transfer: 2}, gold {get_balance: 1, transfer: 1}: 2 matched
    assert (c["called"], c["gold"], c["name_matched"]) == (4, 2, 2)
    assert (c["called_write"], c["gold_write"], c["name_matched_write"]) == (2, 1, 1)
    assert c["args_matched"] == 2
    s = summarize_tool_accuracy([c])
    assert s["name_precision"] == 0.5 and s["name_recall"] == 1.0
    assert s["write_name_precision"] == 0.5 and s["write_name_recall"] == 1.0 and s["argument_accuracy"] == 1.0


def test_tool_accuracy_wrong_argument_and_missing_write():
    wrong = tool_call_accuracy(_calls(("get_balance", {"account_id": "A1"}),
                                      ("transfer", {"src": "A1", "dst": "B2", "amount": 10.01})), GOLD, {"transfer"})
    assert wrong["name_matched"] == 2 and wrong["args_matched"] == 1
    none = tool_call_accuracy(_calls(("get_balance", {"account_id": "A1"})), GOLD, {"transfer"})
    assert (none["name_matched"], none["called_write"], none["gold_write"], none["args_matched"]) == (1, 0, 1, 1)
    s = summarize_tool_accuracy([wrong, none])
    # pooled: matched names 3 of 3 called and of 4 gold; writes 1 of 1 called, 1 of 2 gold; arguments 2 of 4
    assert s["name_precision"] == 1.0 and s["name_recall"] == 0.75
    assert s["write_name_precision"] == 1.0 and s["write_name_recall"] == 0.5 and s["argument_accuracy"] == 0.5
    assert summarize_tool_accuracy([tool_call_accuracy([], [], ())])["name_precision"] is None
