"""Trajectory-prefix regression cases: capture, resume, grade the next turn, export, round trip, lint.

A case's ``prefix.user`` is typed: a bogus one is refused at load naming file, field and value.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from simulator.authoring import errors as lint_errors
from simulator.authoring.lint import lint_tasks
from simulator.dialogue.prefix import apply_state, message_properties
from simulator.errors import TaskFileError
from simulator.execution.runner import Runner
from simulator.hunt import Harness, every_turn, export_cases, first_error, hunt, prefix_at, run_case
from simulator.types.tasks import NextStep, StepCall, Task, load_tasks, parse_tasks
from simulator.world.database import snapshot as db_snapshot
from simulator.world.events import read_events
from simulator.world.replay import prepare_trial, replay_trajectory
from tests._support.hunt_runners import FAULTS, PERSONAS, make_runner
from tests._support.returns_cases import PERSONA, PREFIX, RETURNS, pin, returns_task


@pytest.fixture(scope="module")
def retail() -> Runner:
    return make_runner("retail", f"reference:{FAULTS}", PERSONAS)


@pytest.fixture(scope="module")
def clean() -> Runner:
    return make_runner("retail", "reference")


@pytest.fixture(scope="module")
def exported(retail, clean, tmp_path_factory):
    result = hunt(retail, 600, seed=1)
    doc, notes = export_cases(retail, result, clean=clean, prefix=True)
    path = tmp_path_factory.mktemp("prefix") / "regressions.json"
    path.write_text(json.dumps(doc))
    return result, doc, notes, path


def _user_messages(runner: Runner, played) -> list[int]:
    return [i for i, m in enumerate(played.result.trajectory.messages)
            if m.role == "user" and m.content and not m.tool_calls and m.requestor is None]


def test_a_prefix_resumes_the_database_the_original_trial_had_at_that_turn(clean):
    """Captured at every user message of a trial with writes, applied to a fresh copy: the same rows and events as
    replaying the original trial's tool calls up to that message on another fresh copy (an independent path)."""
    harness = Harness(clean)
    spec = clean.domain.state_spec()
    task = next(t for t in clean.tasks if t.id == "modify-items-two-refund")
    played = harness.play(task, 0, None, capture=every_turn)
    traj = played.result.trajectory
    assert played.result.passed and any(c.kind == "write" for c in traj.tool_calls)
    expect = NextStep(must_not_call=[StepCall(kind="write")])
    non_empty = 0
    for u in _user_messages(clean, played):
        prefix = prefix_at(clean, played, u, expect)
        done = {c.id for m in traj.messages[:u] for c in m.tool_calls}
        calls = [c for c in traj.tool_calls if c.call_id in done]
        with clean.template.trial() as db:  # independent: the template, the fixture and the calls made so far
            prepare_trial(clean.domain, db, task)
            replay_trajectory(clean.domain.toolbox(), db, traj.model_copy(update={"tool_calls": calls}))
            expected = db_snapshot(db.raw, spec)
            expected_events = [(e.kind, e.name, e.data) for e in read_events(db.raw)]
        with clean.template.trial() as db:  # as the runner resumes a prefix case
            prepare_trial(clean.domain, db, task)
            apply_state(db.raw, clean.template.metadata, prefix)
            assert db_snapshot(db.raw, spec) == expected, u
            assert [(e.kind, e.name, e.data) for e in read_events(db.raw)] == expected_events
        non_empty += bool(prefix.rows)
        assert prefix.messages == traj.messages[:u + 1]
        assert len(prefix.agent_steps) == sum(1 for m in traj.messages[:u] if m.role == "assistant")
    assert non_empty >= 1  # some prefix comes after a write (a non-trivial state)


def test_every_prefix_case_fails_on_the_faulty_agent_and_passes_on_the_clean_one(retail, clean, exported):
    _, doc, notes, path = exported
    cases = [c for c in load_tasks(path, domain="retail") if c.prefix is not None]
    assert cases, f"no prefix case exported; notes: {notes}"
    for case in cases:
        assert case.id.endswith("-prefix") and "hunt-prefix" in case.tags
        faulty = run_case(retail, case)
        assert not faulty.passed and faulty.termination_reason == "next_step", case.id
        assert faulty.grade is not None and faulty.grade.failure == "next_step"
        assert faulty.grade.next_step is not None and faulty.grade.next_step.failures
        # only the next turn ran: the prefix is given, then one agent turn (tool calls and one closing message)
        new = faulty.trajectory.messages[len(case.prefix.messages):]
        assert faulty.trajectory.messages[:len(case.prefix.messages)] == case.prefix.messages
        assert [m.role for m in new if m.role != "tool" and not m.tool_calls] == ["assistant"]
        ok = run_case(clean, case)
        assert ok.passed, (case.id, ok.grade.next_step if ok.grade else ok.error)


def test_prefix_cases_round_trip_and_lint_clean(retail, exported):
    _, doc, _, path = exported
    first = load_tasks(path, domain="retail")
    dumped = {"format": "tausim.tasks", "version": 2, "domain": "retail",
              "tasks": [t.model_dump(mode="json", exclude_defaults=True) for t in first]}
    again = parse_tasks(json.loads(json.dumps(dumped)), "again.json")
    assert again == first
    assert any(t.prefix is not None for t in again)
    assert lint_errors(lint_tasks(retail.domain, again, template=retail.template)) == []


def test_tausim_run_replays_prefix_cases_with_summary(exported, tmp_path):
    from typer.testing import CliRunner

    from simulator.cli import app

    _, doc, _, path = exported
    out = tmp_path / "run.json"
    cli = CliRunner().invoke(app, ["run", "--domain", "retail", "--tasks", str(path), "--user", "rule",
                                   "--agent", "reference", "--out", str(out), "--no-preflight", "--trials", "2"])
    assert cli.exit_code == 0, cli.output
    run = json.loads(out.read_text())
    prefixed = {c["id"] for c in doc["tasks"] if "prefix" in c}
    steps = [t for t in run["trials"] if t["task_id"] in prefixed]
    assert len(steps) == 2 * len(prefixed) and all(t["passed"] for t in steps)
    assert all(t["termination_reason"] == "next_step" and t["grade"]["next_step"]["passed"] for t in steps)
    assert run["metrics"]["pass^2"] == 1.0


def _case_doc(next_step: dict) -> dict:
    return {"format": "tausim.tasks", "version": 2, "domain": "retail", "tasks": [{
        "id": "p", "scenario": {"instructions": "x"},
        "prefix": {"messages": [{"role": "user", "content": "hi"}], "next_step": next_step}}]}


def test_a_malformed_expectation_names_file_field_and_value():
    with pytest.raises(TaskFileError, match=r"cases\.json: task \[0\] \(id 'p'\): field prefix\.next_step\."
                                            r"must_say\.0: .*'confirmation'.*\(value: \"confirm\"\)"):
        parse_tasks(_case_doc({"must_say": ["confirm"]}), "cases.json")
    with pytest.raises(TaskFileError,
                       match=r"field prefix\.next_step\.must_not_call\.0\.kind: .*\(value: \"delete\"\)"):
        parse_tasks(_case_doc({"must_not_call": [{"kind": "delete"}]}), "cases.json")
    with pytest.raises(TaskFileError, match="at least one expectation"):
        parse_tasks(_case_doc({}), "cases.json")
    v1 = _case_doc({"must_say": ["question"]}) | {"version": 1}
    with pytest.raises(TaskFileError, match="field prefix: needs a version 2 file"):
        parse_tasks(v1, "cases.json")
    with pytest.raises(ValidationError, match="last message of a prefix must be the user's"):
        Task.model_validate({"id": "p", "scenario": {"instructions": "x"}, "prefix": {
            "messages": [{"role": "assistant", "content": "hi"}], "next_step": {"must_say": ["question"]}}})


def test_lint_names_unknown_tools_and_arguments_of_expectations(retail):
    base = next(t for t in retail.tasks if t.id == "modify-items-two-refund")
    case = base.model_copy(update={"id": "p", "prefix": parse_tasks(_case_doc({
        "must_call": [{"name": "no_such_tool"}],
        "must_not_call": [{"name": "get_order_details", "arguments": {"colour": "red"}, "kind": "write"}]}),
        "c.json")[0].prefix})
    found = [f for f in lint_tasks(retail.domain, [case], template=retail.template) if f.rule == "prefix"]
    text = "\n".join(f.message for f in found)
    assert all(f.severity == "error" for f in found) and len(found) == 3, text
    assert "must_call[0].name: unknown tool 'no_such_tool'" in text
    assert "must_not_call[0].arguments: get_order_details has no argument 'colour'" in text
    assert "must_not_call[0].kind: get_order_details is a read tool, not 'write'" in text


def test_first_error_and_message_properties():
    runner = make_runner("retail", "reference:wrong_item=1.0")
    kinds = {n: s.kind for n, s in runner.domain.toolbox().specs.items()}
    gold_writes = {(a.name, json.dumps(a.arguments, sort_keys=True)) for t in runner.tasks for a in t.gold_actions}
    # a trial whose agent made a write with a wrong item (none of the gold writes of its task)
    task, res = next((t, r) for t in runner.tasks for r in [runner.run_trial(t, 0)]
                     if any(c.kind == "write" and c.status == "ok" and kinds[c.name] == "write"
                            and (c.name, json.dumps(c.arguments, sort_keys=True)) not in gold_writes
                            for c in r.trajectory.tool_calls))
    assert not res.passed
    err = first_error(task, res.trajectory, runner.domain.toolbox(), confirm_writes=True)
    assert err is not None
    u, expect = err
    msgs = res.trajectory.messages
    assert msgs[u].role == "user"
    (pattern,) = expect.must_not_call
    wrong = next(c for c in res.trajectory.tool_calls if c.name == pattern.name)
    gold = next((a for a in task.gold_actions if a.name == pattern.name), None)
    # the key arguments are those the agent got wrong, with its wrong values
    assert pattern.arguments and all(wrong.arguments[k] == v for k, v in pattern.arguments.items())
    assert gold is None or all(gold.arguments.get(k) != v for k, v in pattern.arguments.items())
    # the erring call is in the turn the prefix's last user message opened
    at = next(i for i, m in enumerate(msgs) if any(c.id == wrong.call_id for c in m.tool_calls))
    assert u < at and not any(m.role == "user" and m.content for m in msgs[u + 1:at])
    assert message_properties("Shall I proceed? (yes/no)", []) >= {"confirmation", "question"}
    assert "repeated_question" in message_properties("What is your order id?", ["Hello. What is your order id?"])
    assert "refusal" in message_properties("Sorry, I can't do that.", [])
    assert message_properties("Done.", []) == set()


def _prefix_case_file(tmp_path: Path, user: dict, **scenario) -> Path:
    doc = json.loads(RETURNS.read_text())
    task = pin(returns_task(), "case-1-prefix", prefix={**PREFIX, "user": user})
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
    path = _prefix_case_file(tmp_path, user, persona=PERSONA, moves={"1": "switch_persona:impatient"},
                             move_personas=[impatient])
    (task,) = get_domain("returns").load_tasks(str(path))
    assert task.prefix is not None
    assert task.prefix.user.model_dump() == {"persona": "terse", "turn": 3, "intent": 1, "stale": 0,
                                             "moves": {1: "switch_persona:impatient"}}
    switched = _prefix_case_file(tmp_path, {**user, "persona": "impatient"})  # a switch the case's moves dropped
    assert get_domain("returns").load_tasks(str(switched))[0].prefix.user.persona == "impatient"
