"""Limits: timeouts in every command that runs trials, bounded plans, numbers checked against their ranges."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.types.spec import MAX_PLANNED_TRIALS, RunSpec

REPO = Path(__file__).resolve().parents[2]
TASK = "cancel-no-longer-needed"


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def test_hunt_with_a_trial_timeout_ends_with_a_hung_agent(tmp_path):
    out = tmp_path / "hunt.json"
    # in a subprocess with its own deadline: before the fix the hunt never ends, and the test must not hang
    done = subprocess.run([sys.executable, "-m", "simulator.cli", "hunt", "--agent",
                           "py:tests._support.slow_agents:stuck", "--task-ids", TASK, "--trial-timeout", "0.5",
                           "--budget", "100", "--max-steps", "60", "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    import json

    doc = json.loads(out.read_text())
    assert doc["trials"] == 2 and doc["agent_turns"] == 120  # each timed-out trial is charged --max-steps turns
    assert doc["clusters"] and all("timeout" in json.dumps(c["signature"]) for c in doc["clusters"])


def test_hunt_request_timeout_reaches_the_spec(monkeypatch):
    from simulator.cli import hunt as hunt_cli

    seen: dict[str, Any] = {}

    def fake(spec: RunSpec, *a: Any, **kw: Any) -> Any:
        seen["spec"] = spec
        raise ValueError("stop here")

    monkeypatch.setattr(hunt_cli, "run_hunt", fake)
    res = invoke("hunt", "--request-timeout", 7.5, "--trial-timeout", "inf")
    assert res.exit_code == 2 and "stop here" in res.output
    assert seen["spec"].request_timeout == 7.5 and seen["spec"].trial_timeout is None


def test_an_infinite_trial_timeout_is_no_limit():
    assert RunSpec(domain="retail", trial_timeout=float("inf")).trial_timeout is None
    res = invoke("run", "--task-ids", TASK, "--trial-timeout", "inf", "--no-preflight")
    assert res.exit_code == 0, res.output  # before: OverflowError (timestamp out of range for platform time_t)
    assert "Traceback" not in res.output


@pytest.mark.parametrize(("args", "message"), [
    (["--trials", 100_000_000], f"field trials: Input should be less than or equal to {MAX_PLANNED_TRIALS}"),
    (["--trials", 40_000], f"error: the run plans 1,160,000 trials (29 tasks x 1 personas x 40000 trials); the "
                           f"limit is {MAX_PLANNED_TRIALS:,}"),
    (["--temperature", "nan"], "field agent.temperature: Input should be a finite number"),
    (["--temperature", -3], "field agent.temperature: Input should be greater than or equal to 0"),
    (["--temperature", 2.5], "field agent.temperature: Input should be less than or equal to 2"),
    (["--request-timeout", "inf"], "field request_timeout: Input should be a finite number"),
    (["--judge", "m", "--judge-min-kappa", "nan"], "field judge.min_kappa: Input should be a finite number"),
])
def test_numbers_out_of_range_are_refused(args, message):
    res = invoke("run", *args, "--no-preflight")
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output
    assert len([line for line in res.output.splitlines() if line.strip()]) == 1


def test_run_options_given_with_spec_are_refused_not_ignored(tmp_path):
    """(With ``--resume-from`` they are compared with the file's instead: tests/cli/test_resume_options.py.)"""
    spec = tmp_path / "spec.json"
    spec.write_text('{"domain": "retail", "task_ids": ["cancel-no-longer-needed"]}')
    res = invoke("run", "--spec", spec, "--trials", 3, "--agent", "reference", "--no-preflight")
    assert res.exit_code == 2
    assert res.output.strip() == ("error: --agent, --trials: ignored with --spec (the run is the file's); leave "
                                  "them out, or edit the file")
    res = invoke("run", "--spec", spec, "--strict-judge", "--no-preflight")  # was ignored silently
    assert res.exit_code == 2
    assert res.output.strip() == ("error: --strict-judge: ignored with --spec (the run is the file's); leave it "
                                  "out, or edit the file")
    policy = tmp_path / "policy.md"
    policy.write_text("Other rules.\n")
    res = invoke("run", "--spec", spec, "--policy", policy, "--no-preflight")  # replaced the file's policy
    assert res.exit_code == 2
    assert res.output.strip() == ("error: --policy: ignored with --spec (the run is the file's); leave it out, or "
                                  "edit the file")
    # execution options still apply to a spec run
    res = invoke("run", "--spec", spec, "--concurrency", 2, "--no-preflight", "--progress-every", 0)
    assert res.exit_code == 0, res.output
