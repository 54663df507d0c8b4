"""The main job on real input: tau-bench's retail data and tasks through `tausim run` and `tausim replay`."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import app

PEERS = Path(__file__).resolve().parents[2] / "shared" / "peers" / "tau-bench"
RETAIL = PEERS / "retail"
if not (RETAIL / "data" / "orders.json").exists():
    pytest.skip(f"peer data not found at {PEERS} (present in CI; absent in a user's own clone)",
                allow_module_level=True)


def run_cli(*args):
    res = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def test_oracle_scores_one_on_test_split(tmp_path):
    out = tmp_path / "oracle.json"
    text = run_cli("run", "--domain", "retail", "--data", RETAIL / "data", "--tasks", RETAIL / "tasks_test.json",
                   "--agent", "oracle", "--user", "scripted", "--trials", "2", "--out", out)
    doc = json.loads(out.read_text())
    assert doc["metrics"]["pass^1"] == 1.0 and doc["metrics"]["pass^2"] == 1.0 and doc["metrics"]["pass@1"] == 1.0
    assert len(doc["trials"]) == 230
    assert {t["task_id"] for t in doc["trials"]} == {str(i) for i in range(115)}
    assert all(t["passed"] and isinstance(t["trial"], int) for t in doc["trials"])
    assert "pass^" in text and not (tmp_path / "oracle.json.partial.jsonl").exists()


def test_null_agent_passes_exactly_unchanged_no_output_tasks_dev(tmp_path):
    """Expected set from the peer's gold: dev tasks whose gold diff is empty and that require no output."""
    gold = json.loads((PEERS / "gold" / "retail_dev.json").read_text())
    tasks = json.loads((RETAIL / "tasks_dev.json").read_text())
    expected = {str(g["task_index"]) for g in gold if not g["diff"] and not tasks[g["task_index"]]["outputs"]}
    assert expected  # dev 17 is one (gold README)
    out = tmp_path / "null.json"
    run_cli("run", "--domain", "retail", "--data", RETAIL / "data", "--tasks", RETAIL / "tasks_dev.json",
            "--agent", "null", "--trials", "1", "--out", out)
    doc = json.loads(out.read_text())
    assert {t["task_id"] for t in doc["trials"] if t["passed"]} == expected


def test_null_agent_on_test_split_matches_replay(tmp_path):
    """The test split has no gold here: the expected set comes from `tausim replay` (JSON dump diff), a
    different path from the runner's snapshot comparison."""
    replay = run_cli("replay", "--domain", "retail", "--data", RETAIL / "data", "--tasks", RETAIL / "tasks_test.json")
    tasks = json.loads((RETAIL / "tasks_test.json").read_text())
    lines = [json.loads(line) for line in replay.splitlines() if line.startswith("{")]
    assert len(lines) == 115
    expected = {str(r["task_index"]) for r in lines if not r["diff"] and not tasks[r["task_index"]]["outputs"]}
    out = tmp_path / "null.json"
    text = run_cli("run", "--domain", "retail", "--data", RETAIL / "data", "--tasks", RETAIL / "tasks_test.json",
                   "--agent", "null", "--trials", "2", "--out", out)
    doc = json.loads(out.read_text())
    passed = {t["task_id"] for t in doc["trials"] if t["passed"]}
    assert passed == expected
    assert len(passed) < 115 and doc["metrics"]["pass^1"] == pytest.approx(len(expected) / 115)
    # failed trials are printed with their state differences
    assert "FAIL task" in text and "expected" in text


def test_replay_matches_gold_dev_via_cli(tmp_path):
    replay = run_cli("replay", "--domain", "retail", "--data", RETAIL / "data", "--tasks", RETAIL / "tasks_dev.json",
                     "--format", "tau-bench-diff")
    rows = [json.loads(line) for line in replay.splitlines()]
    assert [sorted(r) for r in rows] == [["diff", "responses", "task_index"]] * 20
    gold = {g["task_index"]: g for g in json.loads((PEERS / "gold" / "retail_dev.json").read_text())}
    for r in rows:
        g = gold[r["task_index"]]
        assert [s.startswith("Error") for s in r["responses"]] == [s.startswith("Error") for s in g["responses"]]
        assert set(r["diff"]) == set(g["diff"])


def test_bad_inputs_give_clear_errors(tmp_path):
    res = CliRunner().invoke(app, ["run", "--domain", "nowhere"])
    assert res.exit_code == 2 and "unknown domain 'nowhere'" in res.output
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--tasks", str(tmp_path / "none.json")])
    assert res.exit_code == 2 and "none.json" in res.output
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent", "genius"])
    assert res.exit_code == 2 and "unknown agent" in res.output
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--data", str(RETAIL / "data"),
                                   "--tasks", str(RETAIL / "tasks_dev.json"), "--task-ids", "0,999"])
    assert res.exit_code == 2 and "999" in res.output
