"""`tausim gate`: a candidate that lost 10 points of pass^1 fails, an identical one passes (values by hand)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.gate import GateError, evaluate_gate


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
