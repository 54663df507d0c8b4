"""`tausim export --format tau2 | tau2-submission` and the import of τ³ results (single file and directory format).

``tests/data/tau2_results`` holds a τ³ results file written by τ³ 1.0.1's own ``Results.save`` (json and dir
formats) from a small tausim run on τ³ retail (tasks 0 and 5, two trials, a faulty agent): task 5 trial 0 passed,
the other three failed. Its policy text and task list were left out before τ³ saved it.
"""

from __future__ import annotations

import gzip
import json
import tarfile
from math import comb
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.errors import PeerResultsError
from simulator.interop.peer_results import read_peer_results
from simulator.report import RunDocumentError, to_tau2, to_tau2_submission
from simulator.world.domain import get_domain
from tests._support.peers import TAU2, needs_tau2

DATA = Path(__file__).resolve().parents[1] / "data" / "tau2_results"
SCHEMA = TAU2 / "leaderboard" / "submission.schema.json"
EXPECTED = {("0", 0): 0.0, ("0", 1): 0.0, ("5", 0): 1.0, ("5", 1): 0.0}  # what τ³'s file holds (see above)


def cli(*args: Any, code: int = 0) -> str:
    res = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert res.exit_code == code, res.output
    return res.output


@pytest.fixture(scope="module")
def run_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tausim run on τ³ retail: 3 tasks x 4 trials, a faulty agent (some trials pass, some fail)."""
    if not (TAU2 / "retail" / "tasks.json").is_file():
        pytest.skip(f"tau2-bench data absent at {TAU2}")
    out = tmp_path_factory.mktemp("run") / "run.json"
    cli("run", "--domain", "retail", "--data", TAU2 / "retail", "--tasks", TAU2 / "retail" / "tasks.json",
        "--task-ids", "0,1,2", "--agent", "faulty:wrong_argument=0.5", "--trials", "4", "--seed", "2",
        "--out", out, "--no-progress")
    return out


def _tau2_file(tmp_path: Path) -> Path:
    path = tmp_path / "results.json"
    path.write_bytes(gzip.decompress((DATA / "retail.json.gz").read_bytes()))
    return path


def _tau2_dir(tmp_path: Path) -> Path:
    with tarfile.open(DATA / "dir.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "dir"


# ------------------------------------------------------------------------------------------------ results file
def test_tau2_export_holds_every_trial_with_its_messages_and_reward(run_file: Path) -> None:
    run = json.loads(run_file.read_text())
    doc = to_tau2(str(run_file))
    assert set(doc) == {"timestamp", "info", "tasks", "simulations"}
    assert doc["info"]["num_trials"] == 4 and doc["info"]["environment_info"]["domain_name"] == "retail"
    assert "refund" in doc["info"]["environment_info"]["policy"].lower()  # τ³ retail's own policy
    assert [t["id"] for t in doc["tasks"]] == ["0", "1", "2"]  # the τ³ task entries themselves
    assert "user_scenario" in doc["tasks"][0] and "evaluation_criteria" in doc["tasks"][0]
    sims = {(s["task_id"], s["trial"]): s for s in doc["simulations"]}
    trials = {(t["task_id"], t["trial"]): t for t in run["trials"]}
    assert sims.keys() == trials.keys() and len(sims) == 12
    assert len({s["id"] for s in doc["simulations"]}) == 12
    for key, sim in sims.items():
        trial = trials[key]
        assert sim["reward_info"]["reward"] == (1.0 if trial["passed"] else 0.0)
        assert sim["termination_reason"] == "user_stop" and trial["termination_reason"] == "user_stop"
        recorded = trial["trajectory"]["tool_calls"]
        tool_msgs = [m for m in sim["messages"] if m["role"] == "tool"]
        assert [(m["id"], m["content"], m["error"]) for m in tool_msgs] == [
            (r["call_id"], r["content"], r["status"] != "ok") for r in recorded]
        calls = [c for m in sim["messages"] if m["role"] == "assistant" for c in m["tool_calls"] or []]
        assert [(c["name"], c["arguments"], c["requestor"]) for c in calls] == [
            (r["name"], r["arguments"], "assistant") for r in recorded]
        assert sim["messages"][0] == {"role": "assistant", "content": "Hi! How can I help you today?",
                                      "tool_calls": None, "turn_idx": 0}  # τ³'s greeting opens every conversation
        assert sim["info"]["tausim"]["termination_reason"] == "user_stop"
    assert sum(s["reward_info"]["reward"] for s in sims.values()) not in (0, 12)  # both outcomes present


def test_cli_writes_the_tau2_file(run_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    assert "12 simulations" in cli("export", run_file, "--format", "tau2", "--out", out)
    assert len(json.loads(out.read_text())["simulations"]) == 12
    text = cli("export", run_file, run_file, "--format", "tau2", code=2)
    assert "give one run" in text


# ------------------------------------------------------------------------------------------------ submission
def _pass_hat(successes: list[int], n: int, k: int) -> float:
    """pass^k by hand: the mean over tasks of C(c, k) / C(n, k) (τ³'s and tau-bench's estimator)."""
    return sum(comb(c, k) / comb(n, k) for c in successes) / len(successes)


@needs_tau2
def test_submission_is_valid_against_the_leaderboard_schema(run_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "submission.json"
    cli("export", run_file, "--format", "tau2-submission", "--out", out, "--model-name", "my-model",
        "--model-organization", "Acme", "--submitting-organization", "Acme", "--contact-email", "a@acme.test")
    sub = json.loads(out.read_text())
    jsonschema.validate(sub, json.loads(SCHEMA.read_text()), format_checker=jsonschema.FormatChecker())
    run = json.loads(run_file.read_text())
    successes = [sum(t["passed"] for t in run["trials"] if t["task_id"] == tid) for tid in ("0", "1", "2")]
    retail = sub["results"]["retail"]
    for k in range(1, 5):
        assert retail[f"pass_{k}"] == pytest.approx(100 * _pass_hat(successes, 4, k), abs=1e-3)
    assert retail["cost"] == 0.0  # the faulty agent is priced at 0 per call
    assert sub["submission_type"] == "custom" and sub["model_name"] == "my-model"
    assert sub["methodology"]["tau2_bench_version"] == "1.0.1"
    assert sub["methodology"]["verification"]["omitted_questions"] is True  # 3 of retail's 114 tasks


@needs_tau2
def test_submission_of_fewer_trials_leaves_higher_k_empty(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    cli("run", "--domain", "airline", "--data", TAU2 / "airline", "--tasks", TAU2 / "airline" / "tasks.json",
        "--task-ids", "0,1", "--trials", "2", "--out", out, "--no-progress")
    sub = to_tau2_submission([str(out)], model_name="oracle")
    jsonschema.validate(sub, json.loads(SCHEMA.read_text()))
    assert [sub["results"]["airline"][f"pass_{k}"] for k in range(1, 5)] == [100.0, 100.0, None, None]


def test_submission_refuses_domains_off_the_leaderboard_and_twins(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    cli("run", "--domain", "airline", "--trials", "1", "--out", out, "--no-progress")
    with pytest.raises(RunDocumentError, match="two runs"):
        to_tau2_submission([str(out), str(out)])
    with pytest.raises(RunDocumentError, match="standard or custom"):
        to_tau2_submission([str(out)], submission_type="best")
    doc = json.loads(out.read_text())
    doc["config"]["domain"] = "mock"
    with pytest.raises(RunDocumentError, match="'mock' is not on the τ³ leaderboard"):
        to_tau2_submission([doc])


# ------------------------------------------------------------------------------------------------ import, round trip
def _trials(run: Any) -> dict[tuple[str, int], tuple[Any, ...]]:
    return {(t.task_id, t.trial): (t.passed, t.termination_reason, [(m.role, m.content) for m in
                                                                    t.trajectory.messages],
                                   [(c.name, c.arguments, c.status, c.content) for c in t.trajectory.tool_calls])
            for t in run.trials}


@needs_tau2
def test_tau2_directory_format_imports_like_the_single_file(tmp_path: Path) -> None:
    retail = get_domain("retail")
    single = read_peer_results(_tau2_file(tmp_path), "tau2", retail, data_dir=TAU2 / "retail")
    folder = _tau2_dir(tmp_path)
    by_dir = read_peer_results(folder, "tau2", retail, data_dir=TAU2 / "retail")
    by_meta = read_peer_results(folder / "results.json", "tau2", retail, data_dir=TAU2 / "retail")
    assert {k: v[0] for k, v in _trials(single).items()} == {k: v == 1.0 for k, v in EXPECTED.items()}
    assert _trials(by_dir) == _trials(single) == _trials(by_meta)
    assert by_dir.source["records"] == 4
    next(iter((folder / "simulations").glob("*.json"))).unlink()  # a simulation the index lists is gone
    with pytest.raises(PeerResultsError, match="do not match the index"):
        read_peer_results(folder, "tau2", retail, data_dir=TAU2 / "retail")


@needs_tau2
def test_round_trip_tau2_import_export_import_keeps_every_trial(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    source = _tau2_file(tmp_path)
    common = ("--domain", "retail", "--data", TAU2 / "retail", "--store", url)
    assert "imported 4 conversations of 2 tasks" in cli("import", source, "--format", "tau2", *common,
                                                         "--run-id", "first")
    exported = tmp_path / "again.json"
    cli("export", "first", "--store", url, "--format", "tau2", "--out", exported)
    cli("import", exported, "--format", "tau2", *common, "--run-id", "second")
    retail = get_domain("retail")
    first = read_peer_results(source, "tau2", retail, data_dir=TAU2 / "retail")
    second = read_peer_results(exported, "tau2", retail, data_dir=TAU2 / "retail")
    assert _trials(second) == _trials(first)
    assert {k: v[0] for k, v in _trials(second).items()} == {k: v == 1.0 for k, v in EXPECTED.items()}
