"""Small findings of the new-user tour (items 8-15 of its "Left" list), each pinned by a test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.types.messages import Message
from simulator.types.tasks import Action
from simulator.users._scripted import ConfirmingUser

PEERS = Path(__file__).resolve().parents[2].parent / "shared" / "peers" / "tau2-bench"
needs_tau2 = pytest.mark.skipif(not (PEERS / "mock" / "tasks.json").is_file(), reason="tau2-bench data absent")


# ------------------------------------------------------------------------------------------------ 8: confirming user
def test_confirming_user_says_its_opening_after_a_prior_conversation():
    """A tau2 ``message_history`` holds user messages that are not the confirming user's: it used to stop at once."""
    history = [Message(role="user", content="I need to create a task."),
               Message(role="assistant", content="I've created the task task_2 for you.")]
    user = ConfirmingUser("Please mark task_2 as completed.")
    turn = user.reply(history)
    assert turn.content == "Please mark task_2 as completed." and not turn.stop
    after = user.reply([*history, Message(role="user", content=turn.content),
                        Message(role="assistant", content="Done: task_2 is completed.")])
    assert after.stop and not after.tool_calls


def test_confirming_user_performs_its_side_of_the_task_when_asked():
    act = Action(name="dismiss_notification", arguments={"notification_id": "notif_1"}, requestor="user")
    user = ConfirmingUser("My task is done.", [act])
    convo = [Message(role="assistant", content="Hi! How can I help you today?")]
    assert user.reply(convo).content == "My task is done."
    convo += [Message(role="user", content="My task is done."),
              Message(role="assistant", content="Please do this on your side: dismiss_notification(notif_1).")]
    turn = user.reply(convo)
    calls = [(c.name, c.arguments) for c in turn.tool_calls]
    assert calls == [("dismiss_notification", {"notification_id": "notif_1"})]
    assert not turn.stop


@needs_tau2
def test_oracle_with_confirming_user_passes_every_mock_task(tmp_path):
    """Was 7/10: no user-side actions, and the message history taken for the user's own opening."""
    out = tmp_path / "run.json"
    res = CliRunner().invoke(app, ["run", "--domain", "mock", "--data", str(PEERS / "mock"), "--tasks",
                                   str(PEERS / "mock" / "tasks.json"), "--agent", "oracle", "--user", "confirming",
                                   "--no-progress", "--out", str(out)])
    assert res.exit_code == 0, res.output
    trials = json.loads(out.read_text())["trials"]
    ids = {str(t["id"]) for t in json.loads((PEERS / "mock" / "tasks.json").read_text())}
    assert {t["task_id"] for t in trials} == ids
    assert [t["task_id"] for t in trials if not t["passed"]] == []


# ------------------------------------------------------------------------------------------------ 9: lint duplicate
RETURNS = Path(__file__).resolve().parents[2] / "domains" / "returns" / "tasks" / "builtin.json"
_PREFIX = {"messages": [{"role": "user", "content": "I want to return my order."}],
           "next_step": {"must_not_call": [{"kind": "write"}]}}
_PERSONA = {"name": "terse", "description": "Short answers."}


def _returns_lint(tasks: list[dict]):
    from simulator.authoring import lint_tasks
    from simulator.types.tasks import parse_tasks
    from simulator.world.domain import get_domain

    doc = json.loads(RETURNS.read_text())
    dom = get_domain("returns")
    return lint_tasks(dom, dom._checked(parse_tasks({**doc, "tasks": tasks}, "cases.json", "returns"), "cases.json"))


def _returns_task() -> dict:
    return next(t for t in json.loads(RETURNS.read_text())["tasks"] if t["id"] == "return-6201")


def _pin(task: dict, case_id: str, **pins) -> dict:
    out = json.loads(json.dumps(task))
    out["id"] = case_id
    for key, value in pins.items():
        if key in ("moves", "persona"):
            out["scenario"][key] = value
        else:
            out[key] = value
    return out


@pytest.mark.parametrize("pins", [{"seed": 11}, {"moves": {"0": "off_topic"}}, {"persona": _PERSONA},
                                  {"prefix": _PREFIX}], ids=["seed", "moves", "persona", "prefix"])
def test_lint_duplicate_skips_hunt_cases_that_pin_something_else(pins):
    """Hunt cases of one task share its user and gold writes by construction: they used to warn ``duplicate``."""
    task = _returns_task()
    first = _pin(task, "case-1", seed=7) if "seed" in pins else _pin(task, "case-1")
    other = _pin(task, "case-2", **pins)
    assert [f for f in _returns_lint([first, other]) if f.rule == "duplicate"] == []


def test_lint_duplicate_still_fires_for_identical_pins():
    task = _returns_task()
    same = {"seed": 7, "prefix": _PREFIX, "moves": {"0": "off_topic"}}
    findings = _returns_lint([_pin(task, "case-1", **same), _pin(task, "case-2", **same)])
    assert [(f.rule, f.task_id) for f in findings if f.rule == "duplicate"] == [("duplicate", "case-2")]


# ------------------------------------------------------------------------------------------------ 10: prefix FAIL
def test_failed_prefix_case_shows_its_next_step_failures():
    """The FAIL line of a prefix case had no detail: the next-step failures were only in ``--out``."""
    from simulator.report import failure_lines

    record = {"task_id": "c1-prefix", "trial": 0, "termination_reason": "next_step", "passed": False,
              "grade": {"passed": False, "failure": "next_step", "next_step": {
                  "passed": False,
                  "failures": ['must_not_call: kind write: called cancel_order({"order_id": "#W1"})',
                               "must_say: confirmation: not in 'Done.'"],
                  "calls": ['get_order({"order_id": "#W1"})', 'cancel_order({"order_id": "#W1"})'],
                  "message": "Done."}}}
    assert failure_lines(record) == [
        "FAIL task c1-prefix trial 0: next_step; next_step",
        '    next step: must_not_call: kind write: called cancel_order({"order_id": "#W1"})',
        "    next step: must_say: confirmation: not in 'Done.'",
        '    the agent\'s turn: called get_order({"order_id": "#W1"}), cancel_order({"order_id": "#W1"}); '
        'said "Done."',
    ]
    record["grade"]["next_step"].update(calls=[], message=None, failures=["must_call: get_order: not called"])
    assert failure_lines(record)[1:] == ["    next step: must_call: get_order: not called",
                                         "    the agent's turn: no tool call; no closing message"]


# ------------------------------------------------------------------------------------------------ 12: key location
def test_a_bad_move_key_is_named_as_a_key_of_scenario_moves(tmp_path):
    """The message read ``field scenario.moves.abc.:`` (pydantic's ``[key]`` location eaten as rich markup)."""
    doc = json.loads(RETURNS.read_text())
    task = _pin(_returns_task(), "case-1", moves={"abc": "off_topic"})
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({**doc, "tasks": [task]}))
    res = CliRunner().invoke(app, ["run", "--domain", "returns", "--tasks", str(path), "--agent", "oracle",
                                   "--no-progress"])
    assert res.exit_code == 2, res.output
    assert "(id 'case-1'): field scenario.moves: key 'abc': Input should be a valid integer" in res.output
    assert "moves.abc." not in res.output


def test_format_validation_error_names_a_bad_dict_key():
    from pydantic import BaseModel, ValidationError

    from simulator.types.spec import format_validation_error

    class Caps(BaseModel):
        limits: dict[int, str]

    with pytest.raises(ValidationError) as e:
        Caps.model_validate({"limits": {"x1": "a"}})
    assert format_validation_error("caps.json", e.value).startswith("caps.json: field limits: key 'x1': ")


# ------------------------------------------------------------------------------------------------ 11: prefix.user
def _prefix_case_file(tmp_path: Path, user: dict, **scenario) -> Path:
    doc = json.loads(RETURNS.read_text())
    task = _pin(_returns_task(), "case-1-prefix", prefix={**_PREFIX, "user": user})
    task["scenario"].update(scenario)
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({**doc, "tasks": [task]}))
    return path


@pytest.mark.parametrize(("user", "expected"), [
    ({"persona": "nosuch", "turn": 1}, "field prefix.user.persona: unknown persona 'nosuch'"),
    ({"intent": 99, "turn": 1}, "field prefix.user.intent: agenda position 99 is past the scenario's agenda"),
    ({"intent": -1}, "field prefix.user.intent: Input should be greater than or equal to 0 (value: -1)"),
    ({"persona": "Not A Name"}, 'field prefix.user.persona: String should match pattern'),
    ({"turn": 1, "moves": {"0": "dance"}}, "field prefix.user.moves: Value error, reply 0: unknown user move 'dance'"),
    ({"turn": 1, "moves": {"3": "off_topic"}}, "reply 3 is not among the 1 replies made so far"),
    ({"mood": "grumpy"}, "field prefix.user.mood: Extra inputs are not permitted"),
], ids=["persona", "intent-past-agenda", "intent-negative", "persona-pattern", "move", "move-late", "extra"])
def test_a_bogus_prefix_user_is_refused_at_load_naming_file_field_value(tmp_path, user, expected):
    """``prefix.user`` was an untyped dict: a bogus persona or intent loaded, linted and ran clean."""
    from simulator.errors import TaskFileError
    from simulator.world.domain import get_domain

    path = _prefix_case_file(tmp_path, user)
    with pytest.raises(TaskFileError) as e:
        get_domain("returns").load_tasks(str(path))
    msg = str(e.value)
    assert msg.startswith(f"{path}: task [0] (id 'case-1-prefix'): "), msg
    assert expected in msg, msg


def test_the_prefix_user_hunt_writes_still_loads(tmp_path):
    """The fields of an exported prefix case (simulator.hunt.cases.prefix_at): move keys as strings, persona pinned."""
    from simulator.world.domain import get_domain

    user = {"intent": 1, "stale": 0, "persona": "terse", "turn": 3, "moves": {"1": "switch_persona:impatient"}}
    impatient = {"name": "impatient", "description": "Wants it done now."}
    path = _prefix_case_file(tmp_path, user, persona=_PERSONA, moves={"1": "switch_persona:impatient"},
                             move_personas=[impatient])
    (task,) = get_domain("returns").load_tasks(str(path))
    assert task.prefix is not None
    assert task.prefix.user.model_dump() == {"persona": "terse", "turn": 3, "intent": 1, "stale": 0,
                                             "moves": {1: "switch_persona:impatient"}}
    switched = _prefix_case_file(tmp_path, {**user, "persona": "impatient"})  # a switch the case's moves dropped
    assert get_domain("returns").load_tasks(str(switched))[0].prefix.user.persona == "impatient"


# ------------------------------------------------------------------------------------------------ 13: no criteria
@needs_tau2
def test_lint_warns_on_a_tau2_task_without_evaluation_criteria(tmp_path):
    """Such a task loads and passes for any agent (tau2 reward 1): lint only said the generic null-passes."""
    tasks = json.loads((PEERS / "mock" / "tasks.json").read_text())[:2]
    del tasks[0]["evaluation_criteria"]
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(tasks))
    res = CliRunner().invoke(app, ["tasks", "lint", str(path), "--domain", "mock", "--data", str(PEERS / "mock"),
                                   "--format", "json"])
    assert res.exit_code == 0, res.output
    found = [(f["rule"], f["severity"], f["task_id"]) for f in json.loads(res.output)["findings"]]
    assert found == [("no-criteria", "warning", tasks[0]["id"])]
    assert "evaluation_criteria" in json.loads(res.output)["findings"][0]["message"]


# ------------------------------------------------------------------------------------------------ 15: data folder
@needs_tau2
def test_data_folder_of_another_domain_says_what_the_domain_needs():
    """It said only ``telecom/users.json: cannot read retail data file`` (true, but db.json is what tau2 needs)."""
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--data", str(PEERS / "telecom"), "--tasks",
                                   str(PEERS / "retail" / "tasks.json"), "--agent", "oracle", "--no-progress"])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert f"--data {PEERS / 'telecom'}: not a data folder of domain 'retail', which " \
        "holds either a tau2-bench db.json (an object with the tables users, orders, products) or one JSON file per " \
        "table (users.json, orders.json, products.json" in text
    assert "this one holds db.toml," in text and "Traceback" not in text


def test_a_folder_missing_one_table_file_names_it_and_the_layouts(tmp_path):
    from simulator.world.domain import DomainError, get_domain

    dom = get_domain("airline")
    for name in ("users.json", "reservations.json"):
        (tmp_path / name).write_text((dom.default_data_dir() / name).read_text())
    with pytest.raises(DomainError, match=r"flights\.json: cannot read airline data file: .* \(a data folder of domain "
                                          r"'airline' holds either a tau2-bench db\.json .*\(users\.json, "
                                          r"reservations\.json, flights\.json: tausim's built-in layout"):
        dom.template(tmp_path)


def test_error_messages_keep_square_brackets(tmp_path):
    """An error naming a bracketed value prints it whole (rich markup would swallow ``[mms_issue]``)."""
    from typer.testing import CliRunner

    from simulator.cli import app

    missing = tmp_path / "[mms_issue]tasks.json"
    res = CliRunner().invoke(app, ["run", "--tasks", str(missing)])
    assert res.exit_code == 2
    assert "[mms_issue]tasks.json" in res.output


def test_judge_and_gate_errors_print_markup_as_styles_and_values_as_text(tmp_path):
    """`judge compare` / `gate` on a missing run: no raw ``[bold red]`` tag, and a bracketed file name kept whole."""
    from typer.testing import CliRunner

    from simulator.cli import app

    missing = tmp_path / "[run]a.json"
    for args in (["judge", "compare", str(missing), str(missing), "--criterion", "polite", "--model", "m"],
                 ["gate", "--baseline", str(missing), "--candidate", str(missing)]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        assert "[bold red]" not in res.output and "error:" in res.output, res.output
        assert "[run]a.json" in res.output, res.output
