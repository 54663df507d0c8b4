"""Task files: formats, refusals naming file, task, field and value (splits, env assertions, user moves)."""

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from simulator.cli import app
from simulator.types.persona import Persona
from simulator.types.tasks import TaskFileError, UserScenario, load_tasks
from simulator.world.domain import DomainError, get_domain
from tests._support.peers import TAU2, needs_tau2


def write(tmp_path, doc, name="t.json"):
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def test_tau_bench_list_gets_index_ids(tmp_path):
    p = write(tmp_path, [
        {"user_id": "u1", "instruction": "do x", "actions": [{"name": "a", "kwargs": {"k": 1}}], "outputs": ["5"]},
        {"user_id": "u2", "instruction": "do y", "actions": [], "outputs": []},
    ])
    tasks = load_tasks(p)
    assert [t.id for t in tasks] == ["0", "1"]
    assert tasks[0].gold_actions[0].name == "a" and tasks[0].gold_actions[0].arguments == {"k": 1}
    assert tasks[0].required_outputs == ["5"] and tasks[0].scenario.instructions == "do x"


def test_errors_name_file_task_and_field(tmp_path):
    p = write(tmp_path, {"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "ok", "scenario": {"instructions": "x"}},
        {"id": "broken", "scenario": {"instructions": "x"}, "gold_actions": [{"name": 3}]},
    ]})
    with pytest.raises(TaskFileError) as e:
        load_tasks(p)
    msg = str(e.value)
    assert str(p) in msg and "task [1]" in msg and "'broken'" in msg and "gold_actions.0.name" in msg


def test_unknown_field_and_duplicate_ids(tmp_path):
    p = write(tmp_path, {"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "a", "scenario": {"instructions": "x"}, "gold_action": []}]})
    with pytest.raises(TaskFileError, match="gold_action"):
        load_tasks(p)
    p = write(tmp_path, {"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "a", "scenario": {"instructions": "x"}}, {"id": "a", "scenario": {"instructions": "y"}}]})
    with pytest.raises(TaskFileError, match="duplicate task id 'a'"):
        load_tasks(p)


def test_not_json_and_missing_file(tmp_path):
    with pytest.raises(TaskFileError, match=r"invalid JSON at line 1"):
        load_tasks(write(tmp_path, "{nope"))
    with pytest.raises(TaskFileError, match="cannot read"):
        load_tasks(tmp_path / "absent.json")
    with pytest.raises(TaskFileError, match="missing field"):
        load_tasks(write(tmp_path, [{"user_id": "u"}]))
    with pytest.raises(TaskFileError, match="not a task file"):
        load_tasks(write(tmp_path, {"tasks": []}))


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


@needs_tau2
@pytest.mark.parametrize(("env_type", "side"), [("assistant", "agent"), ("user", "user")])
def test_unknown_env_assertion_function_is_refused_at_load(tmp_path, env_type, side):
    """An env assertion naming no function of the domain used to load, and then simply fail (or not count)."""
    tasks = json.loads((TAU2 / "mock" / "tasks.json").read_text())
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
    tasks = get_domain("mock").load_tasks(str(TAU2 / "mock" / "tasks.json"))
    assert sum(len(t.env_assertions) for t in tasks) >= 3


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


@pytest.mark.parametrize(("fragment", "where"), [
    ('"required_outputs": ["NaN\\ud83d"]', "tasks[0].required_outputs[0]"),
    ('"scenario": {"instructions": "say hi", "known_info": {"\\udc00name": "x"}}',
     "tasks[0].scenario.known_info.\\udc00name"),
])
def test_a_lone_surrogate_in_a_task_file_is_refused_naming_file_and_field(tmp_path, fragment, where):
    """A JSON escape of half a UTF-16 pair used to end the run when trials were recorded, naming nothing (tour F4)."""
    text = ('{"format": "tausim.tasks", "version": 1, "tasks": [{"id": "t", '
            + ('"scenario": {"instructions": "say hi"}, ' if "scenario" not in fragment else "") + fragment + "}]}")
    path = tmp_path / "tasks.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TaskFileError) as e:
        load_tasks(path)
    message = str(e.value)
    assert message.startswith(f"{path}: {where}: ")
    assert "lone surrogate" in message
    message.encode("utf-8")  # the message itself can be printed and stored: no lone surrogate in it
    ok = tmp_path / "ok.json"  # the same text with a whole pair loads
    ok.write_text(text.replace("\\ud83d", "\\ud83d\\ude00").replace("\\udc00", "\\ud83d\\ude00"), encoding="utf-8")
    assert load_tasks(ok)[0].id == "t"
