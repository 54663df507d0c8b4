"""The run as a library call (``simulator.run``): what a library user gets is exactly what ``tausim run`` gets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

import simulator
from simulator.cli import app
from simulator.errors import OptionError, SpecError
from simulator.execution.session import RunOutcome, RunStart
from simulator.storage.store import ResultsStore, trials
from simulator.types.results import TrialResult
from simulator.types.spec import RunSpec

REPO = Path(__file__).resolve().parents[2]

TASKS = 12
TRIALS = 4
PLANNED = TASKS * TRIALS

_LIBRARY_RUN = """
import sys
import simulator
spec = simulator.RunSpec.model_validate_json(open(sys.argv[1]).read())
result = simulator.run(spec, store=sys.argv[2], run_id=sys.argv[3])
print("done", len(result.trials))
"""


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def _recorded(url: str, run_id: str) -> int:
    try:
        with ResultsStore(url, create=False) as st:  # never race the run at creating the tables
            return len(st.recorded_keys(run_id))
    except Exception:  # noqa: BLE001 - the database may not exist yet
        return 0


def _essence(t: TrialResult) -> dict[str, Any]:
    """What a trial did (not how long it took): outcome, grade, messages and tool calls."""
    traj = t.trajectory
    return {"key": (t.task_id, t.persona, t.trial), "seed": t.seed, "passed": t.passed,
            "termination_reason": t.termination_reason, "error": t.error,
            "grade": None if t.grade is None else t.grade.model_dump(mode="json"),
            "messages": [(m.role, m.content) for m in traj.messages],
            "tool_calls": [(c.name, json.dumps(c.arguments, sort_keys=True), c.status) for c in traj.tool_calls]}


def _spec() -> RunSpec:
    from domains.retail import RetailDomain

    ids = [t.id for t in RetailDomain().load_tasks(None)][:TASKS]
    return RunSpec(domain="retail", agent="py:tests._support.slow_agents:slow_oracle", task_ids=ids, trials=TRIALS,
                   concurrency=4, seed=3)


def test_a_killed_library_run_resumes_with_its_run_id_like_tausim_run(tmp_path):
    """SIGKILL a ``simulator.run(spec, store=..., run_id=...)`` mid-run, call it again: every trial once, and the
    same trials as ``tausim run --spec ... --run-id`` records."""
    spec = _spec()
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(spec.model_dump_json())
    script = tmp_path / "library_run.py"
    script.write_text(_LIBRARY_RUN)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    env = {**os.environ, "PYTHONPATH": str(REPO), "TAUSIM_TEST_STEP_SLEEP": "0.05"}
    log = tmp_path / "killed.log"  # a file, not a pipe: a full pipe could stall the run
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, str(script), str(spec_file), url, "L"], cwd=REPO, env=env,
                                stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and _recorded(url, "L") < 8:
            time.sleep(0.02)
        assert proc.poll() is None, f"the run ended before it could be killed: {log.read_text()[-2000:]}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    killed_at = _recorded(url, "L")
    assert 8 <= killed_at < PLANNED, killed_at

    starts: list[RunStart] = []
    ran: list[TrialResult] = []
    result = simulator.run(spec, store=url, run_id="L", on_start=starts.append, on_trial=ran.append)
    assert isinstance(result, RunOutcome) and result.run_id == "L"
    (start,) = starts
    assert (start.created, start.resumed, start.planned, start.recorded, start.to_run) == (
        False, True, PLANNED, killed_at, PLANNED - killed_at)
    assert result.session_trials == len(ran) == PLANNED - killed_at
    assert len(result.trials) == PLANNED and result.metrics["pass^4"] == 1.0
    assert result.document["run_id"] == "L" and result.document["duplicates"] == 0

    cli = invoke("run", "--spec", spec_file, "--store", url, "--run-id", "C", "--no-progress")
    assert cli.exit_code == 0, cli.output
    with ResultsStore(url) as st:
        with st.engine.connect() as conn:
            rows = conn.execute(select(trials.c.task_id, trials.c.trial).where(trials.c.run_id == "L")).all()
        assert len(rows) == PLANNED and len(set(rows)) == PLANNED  # no trial recorded twice
        library, command = st.load_trials("L"), st.load_trials("C")
        assert st.get_run("L").config == st.get_run("C").config  # type: ignore[union-attr]
    assert sorted(map(_essence, library), key=lambda e: e["key"]) == \
        sorted(map(_essence, command), key=lambda e: e["key"])


_PROVENANCE = ("git_revision", "packages", "python", "split", "task_tags", "planned_task_ids", "config", "planned")


def test_the_library_run_writes_the_provenance_the_command_line_writes(tmp_path):
    ids = ["cancel-no-longer-needed", "modify-order-address"]
    spec = RunSpec(domain="retail", task_ids=ids, trials=2)
    out = tmp_path / "library.json"
    result = simulator.run(spec, out=str(out))
    assert result.out == out and not (tmp_path / "library.json.partial.jsonl").exists()
    library = json.loads(out.read_text())
    assert library == json.loads(json.dumps(result.document, default=str))
    cli_out = tmp_path / "cli.json"
    res = invoke("run", "--task-ids", ",".join(ids), "--trials", 2, "--out", cli_out, "--no-progress")
    assert res.exit_code == 0, res.output
    command = json.loads(cli_out.read_text())
    assert library["git_revision"] is not None or command["git_revision"] is None
    for field in _PROVENANCE:
        assert field in command, field
        assert library[field] == command[field], field
    assert library["planned_task_ids"] == ids and set(library["task_tags"]) == set(ids)
    assert {"tausim", "pydantic"} <= set(library["packages"])
    assert [(t["task_id"], t["trial"]) for t in library["trials"]] == \
        [(t["task_id"], t["trial"]) for t in command["trials"]]


def test_the_library_run_resumes_a_partial_file_and_refuses_bad_arguments(tmp_path):
    ids = ["cancel-no-longer-needed", "modify-order-address"]
    spec = RunSpec(domain="retail", task_ids=ids, trials=2)
    first = simulator.run(spec, out=tmp_path / "a.json")
    partial = tmp_path / "b.json.partial.jsonl"
    header = {"format": "tausim.partial", "version": 1, "config": first.config.model_dump(mode="json"),
              "planned": 4, "planned_task_ids": ids}
    partial.write_text("\n".join([json.dumps(header), *(t.model_dump_json() for t in first.trials[:3])]) + "\n")
    ran: list[TrialResult] = []
    resumed = simulator.run(spec, out=tmp_path / "b.json", resume=partial, on_trial=ran.append)
    assert [(t.task_id, t.trial) for t in ran] == [(first.trials[3].task_id, first.trials[3].trial)]
    assert len(resumed.trials) == 4 and resumed.session_trials == 1 and not partial.exists()
    other = spec.model_copy(update={"seed": 9})
    partial.write_text("\n".join([json.dumps(header), first.trials[0].model_dump_json()]) + "\n")
    with pytest.raises(SpecError, match="seed: stored 0, now 9"):
        simulator.run(other, resume=partial)
    with pytest.raises(OptionError, match="in-memory database") as e:
        simulator.run(spec, store="sqlite://")
    assert e.value.option == "store"
    with pytest.raises(OptionError, match="does not exist"):
        simulator.run(spec, out=tmp_path / "nowhere" / "run.json")
    with pytest.raises(OptionError, match="without a store"):
        simulator.run(spec, store=f"sqlite:///{tmp_path / 'r.db'}", resume=partial)
