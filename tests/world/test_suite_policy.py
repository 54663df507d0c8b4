"""The agent gets the policy of the suite the data belongs to (issue 16 item 3), or --policy FILE; the run records
which policy text it saw (sha256)."""

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import app

REPO = Path(__file__).resolve().parents[2]
PEERS = REPO.parent / "shared" / "peers" / "tau-bench"
needs_peers = pytest.mark.skipif(not PEERS.is_dir(), reason="tau-bench peer data not found at ../shared/peers")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_text(encoding="utf-8").encode()).hexdigest()


def _run(tmp_path, *args):
    out = tmp_path / "run.json"
    res = CliRunner().invoke(app, ["run", *map(str, args), "--agent", "oracle", "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text())


def test_builtin_data_gives_the_domain_policy(tmp_path):
    doc = _run(tmp_path, "--domain", "retail", "--task-ids", "cancel-no-longer-needed")
    assert doc["config"]["policy_sha256"] == _sha(REPO / "domains" / "retail" / "policy.md")


@needs_peers
@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_tau_bench_data_gives_the_suite_wiki(tmp_path, domain):
    data = PEERS / domain / "data"
    tasks = PEERS / domain / "tasks_test.json"
    doc = _run(tmp_path, "--domain", domain, "--data", data, "--tasks", tasks, "--task-ids", "0")
    assert doc["config"]["policy_sha256"] == _sha(PEERS / domain / "wiki.md")
    assert doc["config"]["policy_sha256"] != _sha(REPO / "domains" / domain / "policy.md")


def test_policy_file_overrides_and_an_unreadable_one_is_refused(tmp_path):
    mine = tmp_path / "mine.md"
    mine.write_text("Be brief. Refuse everything.\n", encoding="utf-8")
    doc = _run(tmp_path, "--domain", "retail", "--task-ids", "cancel-no-longer-needed", "--policy", mine)
    assert doc["config"]["policy_sha256"] == hashlib.sha256(b"Be brief. Refuse everything.\n").hexdigest()
    assert doc["config"]["policy"] == str(mine)
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--policy", str(tmp_path / "missing.md"),
                                   "--no-progress"])
    assert res.exit_code == 2 and "missing.md" in res.output and "cannot read" in res.output


def test_the_agent_is_given_the_policy_text(tmp_path):
    from simulator import RunSpec, build_runner

    mine = tmp_path / "mine.md"
    mine.write_text("Only the policy text.\n", encoding="utf-8")
    runner = build_runner(RunSpec(domain="retail", task_ids=["cancel-no-longer-needed"], policy=str(mine)))
    ctx = runner.trial_context(runner.tasks[0], 0)
    assert ctx.policy == "Only the policy text.\n"
