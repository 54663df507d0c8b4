"""Resuming never drops recorded trials: trials outside the resumed run's plan are refused, the file kept.

A resume with fewer trials per task, or over a task set that lost a task, kept only the trials of its plan and
rewrote the partial file without the others: finished trials vanished without a word.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import app
from simulator.errors import OptionError
from simulator.execution.recording import open_partial, partial_path
from simulator.types.results import TrialResult
from simulator.types.spec import RunSpec

A, B = "cancel-no-longer-needed", "modify-order-address"


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def two_by_two(tmp_path_factory) -> list[TrialResult]:
    """The 4 trials of tasks A and B, 2 trials each (the oracle)."""
    spec = RunSpec(domain="retail", task_ids=[A, B], trials=2, preflight=False)
    result = simulator.run(spec, out=tmp_path_factory.mktemp("done") / "done.json")
    assert len(result.trials) == 4
    return list(result.trials)


def _oneline(text: str) -> str:
    return " ".join(text.split())


def test_resumed_trials_outside_the_plan_are_refused_naming_them(tmp_path, two_by_two):
    """Fewer trials per task: trial 1 of A and of B are outside the plan (they were dropped silently)."""
    spec = RunSpec(domain="retail", task_ids=[A, B], trials=1, preflight=False)
    out = tmp_path / "run.json"
    with pytest.raises(OptionError) as info:
        simulator.run(spec, resume=two_by_two, out=out)
    e = info.value
    assert e.option == "resume"
    assert "2 of the 4 recorded trials are not in this run's plan" in e.reason, e.reason
    assert f"task {A} trial 1" in e.reason and f"task {B} trial 1" in e.reason
    assert "same tasks and trials per task" in e.reason and "new run with another out file" in e.reason
    assert not out.exists() and not partial_path(out).exists()


def test_a_partial_file_holding_trials_outside_its_plan_is_refused_and_kept(tmp_path, two_by_two):
    """The file's own spec plans task A alone, once; it holds all four trials (a task set that lost a task)."""
    built = simulator.run(RunSpec(domain="retail", task_ids=[A], trials=1, preflight=False)).config
    spec = built.model_copy(update={"task_ids": [A], "trials": 1})
    out = tmp_path / "run.json"
    partial = partial_path(out)
    open_partial(partial, spec, 1, two_by_two, [A]).close()
    before = partial.read_bytes()
    with pytest.raises(OptionError) as info:
        simulator.run(spec, resume=partial, out=out)
    assert info.value.subject == str(partial)
    assert "3 of the 4 recorded trials are not in this run's plan" in info.value.reason, info.value.reason
    assert partial.read_bytes() == before and not out.exists()

    res = invoke("run", "--resume-from", partial, "--no-progress")
    assert res.exit_code == 2, res.output
    said = _oneline(res.output)
    assert f"--resume-from {partial}: 3 of the 4 recorded trials are not in this run's plan" in said, said
    assert f"task {A} trial 1" in said and f"task {B} trial 0" in said
    assert partial.read_bytes() == before and not out.exists()
    assert not Path(f"{partial}.lock").exists()


def test_many_trials_outside_the_plan_are_counted_and_the_first_few_named(tmp_path, two_by_two):
    many = [t.model_copy(update={"trial": i}) for i in range(2, 12) for t in two_by_two[:1]]
    spec = RunSpec(domain="retail", task_ids=[A, B], trials=2, preflight=False)
    with pytest.raises(OptionError) as info:
        simulator.run(spec, resume=[*two_by_two, *many])
    reason = info.value.reason
    assert "10 of the 14 recorded trials are not in this run's plan" in reason, reason
    assert f"task {A} trial 2" in reason and f"task {A} trial 4" in reason and f"task {A} trial 5" not in reason
    assert "and 7 more" in reason


def test_trials_of_the_plan_resume_as_before(tmp_path, two_by_two):
    spec = RunSpec(domain="retail", task_ids=[A, B], trials=2, preflight=False)
    out = tmp_path / "run.json"
    result = simulator.run(spec, resume=two_by_two[:3], out=out)
    assert result.session_trials == 1 and len(result.trials) == 4
    assert len(json.loads(out.read_text())["trials"]) == 4
