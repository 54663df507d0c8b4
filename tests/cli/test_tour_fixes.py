"""Regressions found on a hostile new-user tour (bad inputs must be refused naming file, field and value; exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from simulator.cli import app
from simulator.errors import TaskFileError
from simulator.types.messages import Message
from simulator.types.persona import Persona
from simulator.types.tasks import UserScenario
from simulator.users._scripted import ConfirmingUser
from simulator.world.domain import DomainError, get_domain
from simulator.world.tau2_tasks import GREETING

PEERS = Path(__file__).resolve().parents[2].parent / "shared" / "peers" / "tau2-bench"
needs_tau2 = pytest.mark.skipif(not (PEERS / "mock" / "tasks.json").is_file(), reason="tau2-bench data absent")


# ------------------------------------------------------------------------------------------------ --split
@pytest.mark.parametrize("source", [None, "builtin"])
def test_split_without_a_tau2_task_file_is_refused(source):
    """--split on the built-in tasks used to be ignored silently (every built-in task ran)."""
    with pytest.raises(DomainError, match=r"--split test: splits apply to tau2-bench task files"):
        get_domain("retail").load_tasks(source, split="test")


def test_cli_split_without_a_tau2_task_file_exits_2():
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent", "oracle", "--split", "test",
                                   "--no-progress"])
    assert res.exit_code == 2, res.output
    assert "--split test" in res.output and "Traceback" not in res.output


# ------------------------------------------------------------------------------------------------ env_assertions
@needs_tau2
@pytest.mark.parametrize(("env_type", "side"), [("assistant", "agent"), ("user", "user")])
def test_unknown_env_assertion_function_is_refused_at_load(tmp_path, env_type, side):
    """An env assertion naming no function of the domain used to load, and then simply fail (or not count)."""
    tasks = json.loads((PEERS / "mock" / "tasks.json").read_text())
    tasks[0]["evaluation_criteria"]["env_assertions"] = [
        {"env_type": env_type, "func_name": "no_such_check", "arguments": {}}]
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(tasks))
    with pytest.raises(TaskFileError) as e:
        get_domain("mock").load_tasks(str(path))
    msg = str(e.value)
    assert f"task '{tasks[0]['id']}': field evaluation_criteria.env_assertions[0].func_name" in msg
    assert "'no_such_check'" in msg and f"{side}-side" in msg and str(path) in msg


@needs_tau2
def test_known_env_assertion_functions_still_load():
    tasks = get_domain("mock").load_tasks(str(PEERS / "mock" / "tasks.json"))
    assert sum(len(t.env_assertions) for t in tasks) >= 3


# ------------------------------------------------------------------------------------------------ pinned moves
def test_unknown_user_move_is_refused():
    with pytest.raises(ValidationError, match=r"unknown user move 'dance'"):
        UserScenario(instructions="x", moves={1: "dance"})
    with pytest.raises(ValidationError, match=r"switch_persona:ghost.*move_personas"):
        UserScenario(instructions="x", moves={0: "switch_persona:ghost"})
    with pytest.raises(ValidationError, match=r"'switch_persona' must name a persona"):
        UserScenario(instructions="x", moves={0: "switch_persona"})
    with pytest.raises(ValidationError, match=r"'deny' takes no argument"):
        UserScenario(instructions="x", moves={0: "deny:now"})
    terse = Persona(name="terse", description="short answers")
    ok = UserScenario(instructions="x", moves={0: "change_mind", 2: "switch_persona:terse", 3: "drip_reveal"},
                      move_personas=[terse])
    assert ok.moves[2] == "switch_persona:terse"


def test_task_file_with_an_unknown_move_names_file_field_and_value(tmp_path):
    doc = json.loads((Path(__file__).resolve().parents[2] / "domains" / "retail" / "tasks" / "builtin.json")
                     .read_text())
    task = doc["tasks"][0]
    task["scenario"]["moves"] = {"1": "dance"}
    path = tmp_path / "regressions.json"
    path.write_text(json.dumps({**doc, "version": 2, "tasks": [task]}))
    res = CliRunner().invoke(app, ["tasks", "lint", str(path), "--domain", "retail"])
    assert res.exit_code == 2, res.output
    out = res.output.replace("\n", "")
    assert str(path) in out and "field scenario.moves" in out and "'dance'" in out


# ------------------------------------------------------------------------------------------------ hunt
def test_hunt_without_the_model_key_exits_2_naming_it(monkeypatch):
    """A hunt with an LLM user and no key used to play every trial (all setup_error), report them as failure
    clusters and exit 0."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    res = CliRunner().invoke(app, ["hunt", "--domain", "retail", "--agent", "reference", "--user",
                                   "llm:openai/gpt-4o-mini", "--budget", "20"])
    assert res.exit_code == 2, res.output
    assert "OPENAI_API_KEY" in res.output and "Failure clusters" not in res.output


def test_hunt_stops_on_a_setup_error_trial():
    """Without the pre-flight (library use), the first trial ending setup_error stops the hunt."""
    from simulator.errors import SetupError
    from simulator.execution.build import build_runner
    from simulator.hunt import hunt
    from simulator.types.spec import RunSpec

    runner = build_runner(RunSpec(domain="retail", agent="reference", user="llm:openai/gpt-4o-mini",
                                  task_ids=["cancel-no-longer-needed"], preflight=False))
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OPENAI_API_KEY", raising=False)
        with pytest.raises(SetupError, match=r"cancel-no-longer-needed.*setup_error"):
            hunt(runner, 20)


@pytest.mark.parametrize("option", ["--export", "--out"])
def test_hunt_to_an_unwritable_path_exits_2_before_hunting(tmp_path, option):
    target = tmp_path / "gone" / "x.json"
    res = CliRunner().invoke(app, ["hunt", "--domain", "retail", "--budget", "20", option, str(target)])
    assert res.exit_code == 2, res.output
    assert f"{option} {target}" in res.output.replace("\n", "") and "Failure clusters" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)


def test_hunt_prefix_without_export_exits_2():
    res = CliRunner().invoke(app, ["hunt", "--domain", "retail", "--budget", "20", "--prefix"])
    assert res.exit_code == 2, res.output
    assert "--prefix" in res.output and "--export" in res.output


# ------------------------------------------------------------------------------------------------ confirming user
def test_confirming_user_answers_the_agents_greeting_with_its_opening():
    """tau2 suites have the agent greet first; the confirming user used to stop at once (11/114 retail)."""
    user = ConfirmingUser("I want to cancel an order.")
    turn = user.reply([Message(role="assistant", content=GREETING)])
    assert turn.content == "I want to cancel an order." and not turn.stop
    after = user.reply([Message(role="assistant", content=GREETING), Message(role="user", content=turn.content),
                        Message(role="assistant", content="Done, your order is cancelled.")])
    assert after.stop
