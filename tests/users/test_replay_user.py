"""The replay user: recorded user turns said again to a new agent, until the conversation diverges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.users.replay_user import parse_replay_source

TASKS = "cancel-no-longer-needed,modify-order-address,modify-payment-to-paypal,modify-items-two-refund"


def cli(*args: Any, ok: bool = True) -> str:
    res = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert (res.exit_code == 0) == ok, res.output
    return res.output


def run(tmp_path: Path, name: str, *args: Any) -> dict[str, Any]:
    out = tmp_path / f"{name}.json"
    cli("run", "--domain", "retail", "--task-ids", TASKS, "--trials", "2", "--out", out, "--no-progress", *args)
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("recorded")
    doc = run(folder, "rule", "--agent", "reference", "--user", "rule")
    return folder / "rule.json", doc


def _conversation(trial: dict[str, Any]) -> list[Any]:
    traj = trial["trajectory"]
    return [traj["messages"], [(c["name"], c["arguments"], c["status"], c["content"]) for c in traj["tool_calls"]],
            trial["termination_reason"], trial["passed"]]


def test_replay_reproduces_the_recording_against_the_agent_that_produced_it(
        tmp_path: Path, recorded: tuple[Path, dict[str, Any]]) -> None:
    path, before = recorded
    assert all(t["trajectory"]["turns"] >= 4 for t in before["trials"])  # real multi-turn conversations
    again = run(tmp_path, "replayed", "--agent", "reference", "--user", f"replay:{path}")
    assert len(again["trials"]) == len(before["trials"]) == 8
    by_key = {(t["task_id"], t["trial"]): t for t in before["trials"]}
    for trial in again["trials"]:
        original = by_key[(trial["task_id"], trial["trial"])]
        assert _conversation(trial) == _conversation(original)
        replay = trial["trajectory"]["user_metadata"]["replay"]
        assert replay["diverged_at"] is None and replay["replayed"] == replay["recorded_turns"] > 1
        assert "replay_diverged" not in trial["trajectory"]["user_metadata"]["flags"]


def test_divergence_is_recorded_and_the_user_stops_without_a_fallback(
        tmp_path: Path, recorded: tuple[Path, dict[str, Any]]) -> None:
    path, before = recorded
    doc = run(tmp_path, "null", "--agent", "null", "--user", f"replay:{path}")
    first_user = {(t["task_id"], t["trial"]): t["trajectory"]["messages"][0]["content"] for t in before["trials"]}
    for trial in doc["trials"]:
        meta = trial["trajectory"]["user_metadata"]
        # the opening turn is replayed; the null agent's answer is not the recorded one: diverged at turn 1
        assert meta["replay"]["diverged_at"] == 1 and meta["replay"]["replayed"] == 1
        assert meta["replay"]["recorded_agent"] and meta["replay"]["new_agent"] != meta["replay"]["recorded_agent"]
        assert "replay_diverged" in meta["flags"]
        users = [m["content"] for m in trial["trajectory"]["messages"] if m["role"] == "user"]
        assert users == [first_user[(trial["task_id"], trial["trial"])]]
        assert trial["termination_reason"] == "user_stop"


def test_a_fallback_user_continues_after_the_divergence(tmp_path: Path, recorded: tuple[Path, dict[str, Any]]) -> None:
    path, _ = recorded
    doc = run(tmp_path, "faulty", "--agent", "null", "--user", f"replay:{path}", "--fallback-user", "rule")
    for trial in doc["trials"]:
        meta = trial["trajectory"]["user_metadata"]
        assert meta["replay"]["diverged_at"] == 1 and meta["replay"]["fallback"] is True
        users = [m for m in trial["trajectory"]["messages"] if m["role"] == "user"]
        assert len(users) >= 2  # the rule user answered the null agent after the replayed opening


def test_a_stored_run_and_one_recorded_trial(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    cli("run", "--domain", "retail", "--task-ids", "modify-order-address", "--trials", "2", "--agent", "reference",
        "--user", "rule", "--store", url, "--run-id", "R1", "--no-progress")
    out = tmp_path / "again.json"
    cli("run", "--domain", "retail", "--task-ids", "modify-order-address", "--trials", "2", "--agent", "reference",
        "--user", "replay:R1:modify-order-address/1", "--store", url, "--run-id", "R2", "--out", out, "--no-progress")
    trials = json.loads(out.read_text())["trials"]
    sources = {t["trajectory"]["user_metadata"]["replay"]["source"] for t in trials}
    assert sources == {"R1:modify-order-address/1"}
    assert all(t["trajectory"]["user_metadata"]["replay"]["diverged_at"] is None and t["passed"] for t in trials)
    # errors name what is missing
    text = cli("run", "--domain", "retail", "--task-ids", "modify-order-address", "--agent", "reference", "--user",
               "replay:R1:modify-order-address/7", "--store", url, "--no-progress", ok=False)
    assert "no recorded trial 7 of task 'modify-order-address'" in text
    text = cli("run", "--domain", "retail", "--agent", "reference", "--user", "replay:R9", "--no-progress", ok=False)
    assert "no --store to find run 'R9'" in text


@pytest.mark.parametrize(("text", "parsed"), [
    ("R1", ("R1", None, None)),
    ("R1:cancel-x/0", ("R1", "cancel-x", 0)),
    ("runs/a.json:t/3/12", ("runs/a.json", "t/3", 12)),
    ("runs/a.json", ("runs/a.json", None, None)),
])
def test_parse_replay_source(text: str, parsed: tuple[str, str | None, int | None]) -> None:
    assert parse_replay_source(text) == parsed
