"""Counts printed with their nouns agree in number: ``1 task x 1 trial``, ``2 tasks x 3 trials`` (not ``1 tasks``)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.types.sanitize import counted


def test_counted_agrees_in_number():
    assert [counted(n, "task") for n in (0, 1, 2)] == ["0 tasks", "1 task", "2 tasks"]
    assert counted(1, "trial") == "1 trial" and counted(12, "trial") == "12 trials"
    assert counted(1, "person", "people") == "1 person" and counted(3, "person", "people") == "3 people"


def test_a_run_of_one_task_and_one_trial_says_so():
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--task-ids", "cancel-no-longer-needed",
                                   "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "noise floor (1 task x 1 trial):" in res.output
    assert "1 tasks" not in res.output and "x 1 trials" not in res.output


def _run_document(tmp_path, tasks, trials):
    rows = [{"task_id": f"t{i}", "trial": j, "passed": (i + j) % 2 == 0, "termination_reason": "user_stop"}
            for i in range(tasks) for j in range(trials)]
    doc = {"format": "tausim.run", "version": 1, "config": {"domain": "retail", "trials": trials},
           "planned_task_ids": [f"t{i}" for i in range(tasks)], "trials": rows}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("tasks", "trials", "says"), [(1, 1, "1 task x 1 trial"), (2, 3, "2 tasks x 3 trials"),
                                                       (1, 2, "1 task x 2 trials"), (2, 1, "2 tasks x 1 trial")])
def test_report_and_plan_count_tasks_and_trials_in_words(tmp_path, tasks, trials, says):
    path = _run_document(tmp_path, tasks, trials)
    res = CliRunner().invoke(app, ["report", str(path)])
    assert res.exit_code == 0, res.output
    assert f"noise floor ({says})" in res.output, res.output
    res = CliRunner().invoke(app, ["plan", "--baseline", str(path), "--detect", "0.2"])
    assert res.exit_code == 0, res.output
    assert f"baseline {path}: {says}" in res.output, res.output


def test_a_run_with_personas_counts_tasks_and_personas_as_its_header_does(tmp_path):
    """1 task x 2 personas x 2 trials: the noise floor's 2 cells were called "2 tasks" under ``tasks=1 personas=2``."""
    out = tmp_path / "run.json"
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent", "oracle", "--user", "rule", "--personas",
                                   "cooperative,terse", "--trials", "2", "--task-ids", "cancel-no-longer-needed",
                                   "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "tasks=1 personas=2 trials/cell=2" in res.output
    assert "noise floor (1 task x 2 personas x 2 trials):" in res.output, res.output
    assert "2 tasks" not in res.output
    for args in (["report", str(out)], ["report", str(out), "--html", str(tmp_path / "r.html")]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
    assert "noise floor (1 task x 2 personas x 2 trials):" in res.output
    assert "noise floor (1 task x 2 personas x 2 trials):" in (tmp_path / "r.html").read_text(encoding="utf-8")
