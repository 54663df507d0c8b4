"""`tausim gate`: a candidate that lost 10 points of pass^1 fails, an identical one passes (values by hand)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.analysis.gate import GateError, evaluate_gate
from simulator.cli import app


def invoke(*args: Any):
    return CliRunner().invoke(app, [str(a) for a in args])


def run_doc(passing: dict[str, list[bool]], trials: int = 4) -> dict[str, Any]:
    return {"format": "tausim.run", "version": 1, "config": {"domain": "retail", "trials": trials},
            "planned_task_ids": list(passing),
            "trials": [{"task_id": t, "trial": i, "passed": p, "termination_reason": "user_stop"}
                       for t, outs in passing.items() for i, p in enumerate(outs)]}


# 10 tasks x 4 trials; 8 tasks always pass: pass^1 = pass^4 = 0.8
BASE = {f"t{i}": [i < 8] * 4 for i in range(10)}
# the candidate also fails t7 every time: pass^1 = pass^4 = 0.7, 10 points lost
WORSE = {**BASE, "t7": [False] * 4}


def write(tmp_path, name: str, doc: dict[str, Any]):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_lost_ten_points_fails(tmp_path):
    r = evaluate_gate(run_doc(BASE), run_doc(WORSE))
    assert not r.passed and r.k == 4
    assert [(x.metric, round(x.baseline, 4), round(x.candidate, 4), round(x.drop, 4), x.passed) for x in r.rows] == [
        ("pass^1", 0.8, 0.7, 0.1, False), ("pass^4", 0.8, 0.7, 0.1, False)]
    assert r.regressed_tasks == [("t7", 1.0, 0.0)]
    res = invoke("gate", "--baseline", write(tmp_path, "base.json", run_doc(BASE)),
                 "--candidate", write(tmp_path, "cand.json", run_doc(WORSE)))
    assert res.exit_code == 1, res.output
    for text in ("metric", "baseline", "candidate", "drop", "threshold", "verdict", "pass^1", "pass^4", "0.8000",
                 "0.7000", "+0.1000", "drop <= 0.0500", "FAIL", "t7 1.00->0.00"):
        assert text in res.output, text


def test_identical_run_passes(tmp_path):
    r = evaluate_gate(run_doc(BASE), run_doc(BASE))
    assert r.passed and all(x.drop == 0 for x in r.rows) and not r.regressed_tasks
    path = write(tmp_path, "base.json", run_doc(BASE))
    res = invoke("gate", "--baseline", path, "--candidate", path)
    assert res.exit_code == 0, res.output
    assert "gate: pass" in res.output and "FAIL" not in res.output


def test_thresholds_and_floors():
    # one task of 20 lost: a drop of exactly 0.05 is allowed, 0.04 is not
    base = {f"t{i}": [True] * 4 for i in range(20)}
    cand = {**base, "t0": [False] * 4}
    assert evaluate_gate(run_doc(base), run_doc(cand)).passed
    assert not evaluate_gate(run_doc(base), run_doc(cand), max_drop_pass1=0.04, max_drop_passk=0.5).passed
    # pass^k can regress alone: t0 passes 2 of 4 instead of 4 of 4 -> pass^1 drops 0.025, pass^4 drops 0.05
    flaky = {**base, "t0": [True, False, True, False]}
    r = evaluate_gate(run_doc(base), run_doc(flaky), max_drop_passk=0.04)
    assert [(x.metric, x.passed) for x in r.rows] == [("pass^1", True), ("pass^4", False)]
    # floors: identical runs under a floor fail
    r = evaluate_gate(run_doc(BASE), run_doc(BASE), min_pass1=0.9, min_passk=0.8)
    assert [(x.metric, x.threshold, x.passed) for x in r.rows] == [
        ("pass^1", "drop <= 0.0500", True), ("pass^1", "candidate >= 0.9000", False),
        ("pass^4", "drop <= 0.0500", True), ("pass^4", "candidate >= 0.8000", True)]


def test_k_is_lowered_to_the_trials_both_runs_have():
    one = {t: outs[:1] for t, outs in BASE.items()}
    r = evaluate_gate(run_doc(BASE), run_doc(one, trials=1))
    assert r.k == 1 and r.passed and [x.metric for x in r.rows] == ["pass^1"]
    assert r.notes == ["k lowered from 4 to 1: baseline has 4, candidate 1 trials per task"]


def test_refuses_different_task_sets_naming_ids(tmp_path):
    other = {k: v for k, v in BASE.items() if k != "t3"} | {"x1": [True] * 4}
    with pytest.raises(GateError, match="only in the baseline: t3; only in the candidate: x1"):
        evaluate_gate(run_doc(BASE), run_doc(other))
    res = invoke("gate", "--baseline", write(tmp_path, "a.json", run_doc(BASE)),
                 "--candidate", write(tmp_path, "b.json", run_doc(other)))
    assert res.exit_code == 2 and "t3" in res.output and "x1" in res.output


def test_refuses_missing_or_duplicated_trials():
    missing = run_doc(BASE)
    missing["trials"] = missing["trials"][1:]
    with pytest.raises(GateError, match=r"candidate: task 't0': trial 0 is missing \(3 of 4 planned"):
        evaluate_gate(run_doc(BASE), missing)
    dup = run_doc(BASE)
    dup["trials"].append(dict(dup["trials"][0]))
    with pytest.raises(GateError, match="candidate: task 't0': trial 0 recorded more than once"):
        evaluate_gate(run_doc(BASE), dup)


def test_unreadable_input_exits_2(tmp_path):
    res = invoke("gate", "--baseline", tmp_path / "nope.json", "--candidate", tmp_path / "nope.json")
    assert res.exit_code == 2


def test_paired_bootstrap_interval_says_whether_a_drop_is_beyond_noise(tmp_path):
    # one task of ten lost: resamples without t7 (probability 0.9^10 = 0.35 > 0.025) have no drop -> low 0
    r = evaluate_gate(run_doc(BASE), run_doc(WORSE))
    assert r.rows[0].ci is not None and r.rows[0].ci[0] == 0.0 and r.rows[0].ci[1] > 0.1
    # every task loses one trial of four: each per-task pass^1 drop is 0.25 (the 8 passing ones) or 0 -> the
    # interval of a constant drop over tasks that all dropped is that constant
    base = {f"t{i}": [True] * 4 for i in range(10)}
    cand = {t: [True, True, True, False] for t in base}
    r = evaluate_gate(run_doc(base), run_doc(cand), max_drop_pass1=1, max_drop_passk=1)
    assert r.rows[0].ci == (pytest.approx(0.25), pytest.approx(0.25))
    res = invoke("gate", "--baseline", write(tmp_path, "b.json", run_doc(base)), "--candidate",
                 write(tmp_path, "c.json", run_doc(cand)), "--max-drop-pass1", 1, "--max-drop-passk", 1)
    assert res.exit_code == 0 and "beyond noise" in res.output, res.output


def _with_usage(doc: dict[str, Any], cost: float, seconds: float, abandon: int = 0) -> dict[str, Any]:
    for i, t in enumerate(doc["trials"]):
        t["trajectory"] = {"agent_usage": {"cost_usd": cost}, "user_usage": {"cost_usd": 0.0}}
        t["duration_s"] = seconds
        if i < abandon:
            t["termination_reason"] = "user_abandon"
    return doc


def test_ceilings_on_cost_abandonment_and_p95_latency():
    base = _with_usage(run_doc(BASE), 0.01, 2.0)
    # 40 trials of 10 tasks: cost per task 0.04 -> 0.05 (+25%), p95 latency 2.0 -> 3.0 (+50%), abandonment
    # 0 -> 4/40 = 0.1
    cand = _with_usage(run_doc(BASE), 0.0125, 3.0, abandon=4)
    r = evaluate_gate(base, cand, max_cost_increase=0.3, max_abandon_increase=0.1, max_p95_latency_increase=0.5)
    assert r.passed, r.rows
    got = {x.metric: (x.baseline, x.candidate, x.passed) for x in r.rows[2:]}
    assert got["cost per task (USD)"] == (pytest.approx(0.04), pytest.approx(0.05), True)
    assert got["abandonment rate"] == (0.0, pytest.approx(0.1), True)
    assert got["p95 trial latency (s)"] == (pytest.approx(2.0), pytest.approx(3.0), True)
    r = evaluate_gate(base, cand, max_cost_increase=0.2, max_abandon_increase=0.05, max_p95_latency_increase=0.4)
    assert [x.passed for x in r.rows[2:]] == [False, False, False]
    # an unknown cost cannot pass a cost ceiling
    unknown = _with_usage(run_doc(BASE), 0.01, 2.0)
    unknown["trials"][0]["trajectory"]["agent_usage"]["cost_usd"] = None
    assert not evaluate_gate(base, unknown, max_cost_increase=1.0).passed


def test_runs_of_different_domains_are_named_first():
    """Runs of two domains that also differ in personas: the gate names the domains, the root cause."""
    airline = run_doc(BASE)
    airline["config"] = {**airline["config"], "domain": "airline", "personas": ["terse"]}
    with pytest.raises(GateError, match=r"different domains \(baseline: retail; candidate: airline\)"):
        evaluate_gate(run_doc(BASE), airline)
