"""A run never starts over the partial file of an earlier run that did not finish: its trials would be lost."""

import json

from typer.testing import CliRunner

from simulator.cli import app
from simulator.execution.recording import open_partial, partial_path
from simulator.types.results import TrialResult
from simulator.types.spec import RunSpec

TASK = "cancel-no-longer-needed"


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _unfinished(tmp_path):
    """A finished one-trial run's trial, written as the partial file of another --out (as a killed run leaves it)."""
    done = tmp_path / "done.json"
    res = invoke("run", "--task-ids", TASK, "--out", done, "--no-progress")
    assert res.exit_code == 0, res.output
    doc = json.loads(done.read_text())
    trials = [TrialResult.model_validate(t) for t in doc["trials"]]
    assert len(trials) == 1
    spec = RunSpec.model_validate(doc["config"])
    out = tmp_path / "run.json"
    handle = open_partial(partial_path(out), spec, 1, trials, [TASK])
    handle.close()
    return out, partial_path(out)


def test_a_run_over_an_unfinished_partial_file_is_refused_and_the_file_kept(tmp_path):
    out, partial = _unfinished(tmp_path)
    before = partial.read_text()
    res = invoke("run", "--task-ids", TASK, "--out", out, "--no-progress")
    assert res.exit_code == 2, res.output
    assert "finished trial(s) of an earlier run that did not finish" in res.output
    assert f"--resume-from {partial}" in res.output.replace("\n", "")
    assert partial.read_text() == before
    assert not out.exists()


def test_without_a_partial_file_or_after_a_finished_run_the_same_out_runs_again(tmp_path):
    out = tmp_path / "run.json"
    for _ in range(2):  # the second run finds no partial file: the first removed it once its document was written
        res = invoke("run", "--task-ids", TASK, "--out", out, "--no-progress")
        assert res.exit_code == 0, res.output
        assert not partial_path(out).exists()


def test_a_stored_run_resumed_by_its_run_id_starts_its_partial_file_over(tmp_path):
    """An interrupted stored run says "rerun with --run-id": that rerun is not refused over its partial file."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    out = tmp_path / "run.json"
    res = invoke("run", "--task-ids", TASK, "--out", out, "--store", url, "--run-id", "r1", "--no-progress")
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    trials = [TrialResult.model_validate(t) for t in doc["trials"]]
    open_partial(partial_path(out), RunSpec.model_validate(doc["config"]), 1, trials, [TASK]).close()  # as if killed
    res = invoke("run", "--task-ids", TASK, "--out", out, "--store", url, "--run-id", "r1", "--no-progress")
    assert res.exit_code == 0, res.output
    assert len(json.loads(out.read_text())["trials"]) == 1
    assert not partial_path(out).exists()


def test_a_new_stored_run_over_an_unfinished_partial_file_is_refused(tmp_path):
    out, partial = _unfinished(tmp_path)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    res = invoke("run", "--task-ids", TASK, "--out", out, "--store", url, "--run-id", "new", "--no-progress")
    assert res.exit_code == 2, res.output
    assert "without --store and --run-id" in res.output.replace("\n", " ")
    from simulator.storage.store import ResultsStore
    with ResultsStore(url) as st:
        assert st.get_run("new") is None  # refused before the run was created
