"""`tausim calibrate`: a simulated run against a real one, per task and overall, with the inflation of pass^1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.analysis.calibrate import calibrate
from simulator.cli import app

TASKS = "cancel-no-longer-needed,modify-order-address,modify-payment-to-paypal"


def cli(*args: Any, ok: bool = True) -> str:
    res = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert (res.exit_code == 0) == ok, res.output
    return res.output


def _trial(task: str, i: int, passed: bool, turns: int, calls: int, reason: str = "user_stop") -> dict[str, Any]:
    return {"task_id": task, "trial": i, "seed": 0, "passed": passed, "termination_reason": reason, "grade": None,
            "duration_s": 0.0, "trajectory": {"turns": turns, "tool_calls": [{}] * calls}}


def _doc(trials: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": "tausim.run", "version": 1, "config": {"domain": "retail", "trials": 2}, "trials": trials}


def test_hand_computed_calibration() -> None:
    real = _doc([_trial("a", 0, True, 6, 3), _trial("a", 1, False, 4, 1, "user_abandon"),
                 _trial("b", 0, True, 8, 4), _trial("b", 1, True, 8, 2), _trial("r", 0, True, 2, 0)])
    sim = _doc([_trial("a", 0, True, 4, 2), _trial("a", 1, True, 4, 2), _trial("b", 0, True, 6, 2),
                _trial("b", 1, True, 6, 2), _trial("s", 0, False, 2, 0)])
    result = calibrate(real, sim, n_resamples=2000)
    assert result.k == 2  # a and b have 2 trials in both runs; "r" and "s" (one trial each) are left out
    assert [t.task_id for t in result.tasks] == ["a", "b"] and result.only_real == ["r"] and result.only_sim == ["s"]
    a, b = result.tasks
    assert (a.real.pass1, a.sim.pass1, b.real.pass1, b.sim.pass1) == (0.5, 1.0, 1.0, 1.0)
    assert (a.real.turns, a.real.tool_calls, a.real.abandonment) == (5.0, 2.0, 0.5)
    assert (a.real.pass_k, a.sim.pass_k, b.real.pass_k) == (0.0, 1.0, 1.0)  # C(1,2)/C(2,2) = 0
    assert result.inflation == pytest.approx(0.25)  # mean of +0.5 and 0
    # two tasks: resampled means are 0, 0.25 or 0.5 (each extreme with probability 1/4)
    assert result.inflation_ci95 == (0.0, 0.5)
    assert result.overall_real.trials == 4 and result.overall_sim.pass1 == 1.0


def test_k_is_the_fewest_trials_of_a_common_task() -> None:
    real = _doc([_trial("a", i, i < 2, 4, 1) for i in range(3)])
    sim = _doc([_trial("a", i, True, 4, 1) for i in range(3)])
    result = calibrate(real, sim)
    assert result.k == 3
    assert result.tasks[0].real.pass_k == 0.0 and result.tasks[0].sim.pass_k == 1.0  # C(2,3)/C(3,3), C(3,3)/C(3,3)


def test_calibrate_two_own_runs_prints_the_table(tmp_path: Path) -> None:
    real, sim = tmp_path / "real.json", tmp_path / "sim.json"
    common = ("--domain", "retail", "--task-ids", TASKS, "--trials", "2", "--no-progress")
    # the "real" run's agent makes mistakes the simulated run's does not: the simulated run is inflated
    cli("run", *common, "--agent", "reference:early_transfer=0.4,repeat_question=0.3", "--user", "rule", "--out", real)
    cli("run", *common, "--agent", "reference", "--user", "rule", "--out", sim)
    docs = {name: json.loads(p.read_text()) for name, p in (("real", real), ("sim", sim))}
    text = cli("calibrate", "--real", real, "--sim", sim)
    assert "3 common tasks, k = 2" in text and "simulator inflation of pass^1:" in text
    rates = {}
    for name, doc in docs.items():
        for task in TASKS.split(","):
            trials = [t for t in doc["trials"] if t["task_id"] == task]
            rates[name, task] = sum(t["passed"] for t in trials) / len(trials)
    for task in TASKS.split(","):
        line = next(line for line in text.splitlines() if line.startswith(f"│ {task}"))
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert cells[2:5] == [f"{rates['real', task]:.3f}", f"{rates['sim', task]:.3f}",
                              f"{rates['sim', task] - rates['real', task]:+.3f}"]
    expected = sum(rates["sim", t] - rates["real", t] for t in TASKS.split(",")) / 3
    assert expected > 0
    assert f"simulator inflation of pass^1: {expected:+.3f}" in text


def test_runs_without_common_tasks_are_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_doc([_trial("a", 0, True, 2, 0)])))
    b.write_text(json.dumps(_doc([_trial("b", 0, True, 2, 0)])))
    assert "no task in common" in cli("calibrate", "--real", a, "--sim", b, ok=False)
