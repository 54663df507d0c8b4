"""The pre-flight of ``tausim run``: a user that cannot play the task set stops the run before any trial.

The hostile tour ran the rule-based user on tasks it could not play (then tau-bench's airline tasks; now every
task with an instruction gets a derived scenario, so here tau-bench's airline tasks with their instructions blanked,
which say nothing the user wants): every trial ended ``user_error`` and the run exited 0. Now the pre-flight
builds the user of the first task and stops the run with exit 2; without the pre-flight, ``--max-error-rate``
stops it after the first ten trials with a non-zero exit, keeping what finished.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import app

PEER = Path(__file__).resolve().parents[2] / ".." / "shared" / "peers" / "tau-bench" / "airline"

needs_peer = pytest.mark.skipif(not (PEER / "tasks_test.json").exists(), reason="tau-bench peer data not present")


def _run(tmp_path: Path, *extra: object):
    tasks = json.loads((PEER / "tasks_test.json").read_text())
    blank = tmp_path / "tasks_blank.json"
    blank.write_text(json.dumps([{**t, "instruction": ""} for t in tasks]))
    args = ["run", "--domain", "airline", "--data", PEER / "data", "--tasks", blank, "--user",
            "rule", "--agent", "oracle", "--no-progress", *extra]
    return CliRunner().invoke(app, [str(a) for a in args])


@needs_peer
def test_rule_user_on_tasks_it_cannot_play_is_a_setup_error_exit_2(tmp_path):
    out = tmp_path / "run.json"
    res = _run(tmp_path, "--task-ids", "0,1,2", "--out", out)
    assert res.exit_code == 2, res.output
    line = " ".join(res.output.split())
    assert "set-up error (factory)" in line and "--user rule" in line and "cannot play" in line
    assert not out.exists()  # stopped before any trial


@needs_peer
def test_without_preflight_the_error_rate_stops_the_run_non_zero(tmp_path):
    out = tmp_path / "run.json"
    res = _run(tmp_path, "--task-ids", ",".join(str(i) for i in range(12)), "--no-preflight", "--out", out)
    assert res.exit_code not in (0, None), res.output
    assert "max_error_rate" in " ".join(res.output.split())
    doc = json.loads(out.read_text())
    assert 10 <= len(doc["trials"]) <= 12
    assert {t["termination_reason"] for t in doc["trials"]} == {"user_error"}
