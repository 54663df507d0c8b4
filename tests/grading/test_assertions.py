"""Task files version 2: fixtures, declarative assertions, grade basis, load-time errors (on a toy domain)."""

from __future__ import annotations

import json

import pytest

from simulator.agents import OracleAgent
from simulator.execution.runner import Runner
from simulator.types.spec import RunSpec
from simulator.types.tasks import TaskFileError, parse_tasks
from simulator.users import scripted_user_factory
from tests._support.toy import write_data
from tests.world.test_sinks import SinkBank

PAY = {"name": "pay", "arguments": {"account_id": "C3", "amount": 30.0, "email": "cy@x"}}


def _task(**extra):
    base = {"id": "t", "scenario": {"instructions": "pay out 30 from C3"},
            "initial_state": {"now": "2025-02-03T04:05:06",
                              "insert": {"accounts": [{"id": "C3", "owner": "cy", "balance": 80.0}]},
                              "update": {"accounts": [{"key": {"id": "B2"}, "set": {"balance": 26.0}}]}},
            "assertions": [
                {"type": "count", "table": "ledger", "where": {"account": "C3"}, "equals": 1},
                {"type": "field", "table": "accounts", "key": {"id": "C3"}, "column": "balance", "equals": 50},
                {"type": "net_change", "table": "ledger", "column": "amount", "equals": -30},
                {"type": "unchanged_except", "tables": ["ledger", "outbox"], "rows": [
                    {"table": "accounts", "where": {"id": "C3"}}]},
                {"type": "event_count", "event": "payout_committed", "where": {"account_id": "C3"}, "equals": 1},
                {"type": "event_order", "before": "payout_committed", "after": "message_sent"},
                {"type": "tool_called", "name": "pay", "arguments": {"account_id": "C3"}},
                {"type": "tool_not_called", "name": "get_balance", "arguments": {"account_id": "A1"}},
                {"type": "sent", "recipient": "cy@x", "template": "receipt", "equals": 1}]}
    base.update(extra)
    return base


def _doc(*tasks, version=2):
    return {"format": "tausim.tasks", "version": version, "domain": "sinkbank", "tasks": list(tasks)}


def _load(tmp_path, doc):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(doc))
    return SinkBank().load_tasks(str(path))


def _run(tmp_path, tasks, agent):
    dom = SinkBank()
    cfg = RunSpec(domain="sinkbank", trials=1)
    tpl = dom.template(write_data(tmp_path / "data"))
    return Runner(dom, tpl, tasks, agent, scripted_user_factory(), cfg).run().trials[0]


def _scripted(actions):
    class Agent(OracleAgent):
        def __init__(self, ctx):
            super().__init__(ctx)
            from simulator.types.tasks import Action
            self._actions = [Action(**a) for a in actions]
            self._outputs = []
    return Agent


def test_v2_task_with_fixture_and_assertions_passes_for_the_oracle(tmp_path):
    (task,) = _load(tmp_path, _doc(_task(gold_actions=[PAY])))
    assert task.grade_basis() == ("state", "outputs", "process", "loops", "budget", "assertions")
    trial = _run(tmp_path, [task], OracleAgent)
    assert trial.passed, trial.grade.failure
    results = trial.grade.assertions.results
    assert [r.passed for r in results] == [True] * 9
    assert results[1].actual == 50.0 and results[2].actual == -30.0


def test_assertions_alone_decide_a_task_without_gold_actions_and_name_the_failing_check(tmp_path):
    (task,) = _load(tmp_path, _doc(_task()))
    assert task.grade_basis() == ("assertions", "outputs", "process", "loops", "budget")
    twice = _run(tmp_path, [task], _scripted([PAY, PAY]))
    assert not twice.passed and twice.grade.failure == "assertions"
    failed = {r.index: r for r in twice.grade.assertions.failed()}
    assert set(failed) == {0, 1, 2, 4, 8}
    assert failed[0].actual == 2 and failed[0].expected == "1" and len(failed[0].involved) == 2
    assert failed[2].actual == -60.0
    other = _run(tmp_path, [task], _scripted([PAY, {"name": "pay", "arguments": {
        "account_id": "B2", "amount": 1.0, "email": "b@x"}}]))
    bad = {r.index: r for r in other.grade.assertions.failed()}
    assert 3 in bad and bad[3].involved == [{"table": "accounts", "key": ["B2"], "field": "balance",
                                             "initial": 26.0, "final": 25.0}]
    assert 7 not in bad
    nosy = _run(tmp_path, [task], _scripted([{"name": "get_balance", "arguments": {"account_id": "A1"}}, PAY]))
    assert [r.index for r in nosy.grade.assertions.failed()] == [7]


def test_grade_basis_leaves_other_components_recorded(tmp_path):
    (task,) = _load(tmp_path, _doc(_task(gold_actions=[PAY], grade=["assertions"])))
    trial = _run(tmp_path, [task], _scripted([PAY, {"name": "get_balance", "arguments": {"account_id": "B2"}}]))
    assert trial.passed
    (task2,) = _load(tmp_path, _doc(_task(gold_actions=[PAY], grade=["state"], required_outputs=["nope"])))
    trial2 = _run(tmp_path, [task2], _scripted([PAY]))
    assert trial2.passed and not trial2.grade.outputs["passed"]


@pytest.mark.parametrize("change, message", [
    ({"assertions": [{"type": "count", "table": "nope", "equals": 1}]},
     "task 't': field assertions[0].table: unknown table 'nope'"),
    ({"assertions": [{"type": "count", "table": "ledger", "where": {"acct": "C3"}, "equals": 1}]},
     "field assertions[0].where.acct: unknown column 'acct' of table 'ledger'"),
    ({"assertions": [{"type": "event_count", "event": "refunded", "equals": 1}]},
     "field assertions[0].event: unknown event 'refunded'"),
    ({"assertions": [{"type": "tool_not_called", "name": "delete_account"}]},
     "field assertions[0].name: unknown tool 'delete_account'"),
    ({"assertions": [{"type": "field", "table": "accounts", "key": {"id": "A1"}, "column": "balance",
                      "equals": "lots"}]},
     "field assertions[0].column: expected a float for column 'balance'"),
    ({"assertions": [{"type": "count", "table": "ledger", "equals": "one"}]}, "assertions.0.count.equals"),
    ({"initial_state": {"insert": {"accounts": [{"id": "Z"}]}}},
     "field initial_state.insert.accounts[0]: missing required column(s) owner, balance"),
    ({"initial_state": {"setup": [{"name": "pay", "arguments": {"account_id": 3}}]}},
     "field initial_state.setup[0].arguments.account_id"),
])
def test_bad_assertions_and_fixtures_are_refused_at_load_time(tmp_path, change, message):
    task = {"id": "t", "scenario": {"instructions": "x"}, **change}
    with pytest.raises(TaskFileError) as e:
        _load(tmp_path, _doc(task))
    assert message in str(e.value) and "tasks.json" in str(e.value)


def test_version_1_files_refuse_version_2_fields_and_still_load():
    with pytest.raises(TaskFileError, match="needs a version 2 file"):
        parse_tasks(_doc(_task(), version=1), "f.json")
    (t,) = parse_tasks(_doc({"id": "a", "scenario": {"instructions": "x"}}, version=1), "f.json")
    assert t.grade_basis() == ("state", "outputs", "process", "loops", "budget")
    # a version-1 task dumped by the Task model carries the newer fields empty: it still loads as version 1
    (again,) = parse_tasks(_doc(t.model_dump(mode="json"), version=1), "f.json")
    assert again == t


def test_a_fixture_that_cannot_apply_fails_the_trial_naming_the_task(tmp_path):
    task = _task(initial_state={"update": {"accounts": [{"key": {"id": "Q9"}, "set": {"balance": 1.0}}]}})
    (t,) = _load(tmp_path, _doc(task))
    trial = _run(tmp_path, [t], OracleAgent)
    assert not trial.passed and "initial_state.update.accounts[0]: no row with key" in trial.error
