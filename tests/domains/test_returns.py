"""The returns desk domain: the issue's two cases, mistakes failing the specific assertion, data regeneration."""

from __future__ import annotations

import ast
import filecmp
from pathlib import Path

import pytest

from simulator import Action, Runner, RunSpec, get_domain
from simulator.agents import OracleAgent
from simulator.users import scripted_user_factory

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def domain():
    return get_domain("returns")


@pytest.fixture(scope="module")
def tasks(domain):
    return {t.id: t for t in domain.load_tasks()}


def _agent(actions):
    class Scripted(OracleAgent):
        def __init__(self, ctx):
            super().__init__(ctx)
            self._actions = [Action(**a) for a in actions]
    return Scripted


def _trial(domain, task, actions=None):
    agent = OracleAgent if actions is None else _agent(actions)
    cfg = RunSpec(domain="returns", trials=1)
    return Runner(domain, domain.template(), [task], agent, scripted_user_factory(), cfg).run().trials[0]


def _gold(task):
    return [a.model_dump() for a in task.gold_actions]


def _failed(trial):
    return {(r.type, r.note or "") for r in trial.grade.assertions.failed()}


def _failed_types(trial):
    return {r.type for r in trial.grade.assertions.failed()}


def test_refund_4812_case_loads_and_grades(domain, tasks):
    task = tasks["refund-4812"]
    assert task.grade_basis()[-1] == "assertions"
    ok = _trial(domain, task)
    assert ok.passed
    by_type = {r.type: r for r in ok.grade.assertions.results}
    assert by_type["net_change"].actual == -120.0 and by_type["sent"].actual == 1
    assert by_type["event_order"].skipped is False


def test_refund_001_case_loads_and_grades(domain, tasks):
    task = tasks["refund-001"]
    assert task.budget.max_steps == 15
    assert _trial(domain, task).passed
    nothing = _trial(domain, task, [])
    assert not nothing.passed
    skipped = [r for r in nothing.grade.assertions.results if r.skipped]
    assert [r.type for r in skipped] == ["event_order", "event_order"]  # the later event never happened


def test_duplicate_refund_fails_count(domain, tasks):
    task = tasks["refund-4812"]
    gold = _gold(task)
    trial = _trial(domain, task, gold[:3] + gold[2:])
    assert not trial.passed and trial.grade.failure == "state, assertions"
    assert ("count", "refunded once") in _failed(trial)
    count = next(r for r in trial.grade.assertions.failed() if r.type == "count")
    assert count.actual == 2 and [i["row"]["refund_id"] for i in count.involved] == ["RF4812-1", "RF4812-2"]


def test_wrong_amount_fails_field_and_net_change(domain, tasks):
    task = tasks["refund-4812"]
    gold = _gold(task)
    gold[2]["arguments"]["amount"] = 100.0
    trial = _trial(domain, task, gold)
    failed = {r.index: r for r in trial.grade.assertions.failed()}
    assert {r.type for r in failed.values()} == {"field", "net_change"}
    amount = failed[1]  # refunds RF4812-1 amount; a partial refund also leaves the order's status (index 2)
    assert amount.note == "the approved amount" and amount.expected == 120.0 and amount.actual == 100.0
    assert failed[2].actual == "delivered"
    assert failed[3].type == "net_change" and failed[3].actual == -100.0


def test_two_emails_fail_sent(domain, tasks):
    task = tasks["refund-4812"]
    gold = _gold(task)
    trial = _trial(domain, task, gold + [gold[-1]])
    assert _failed_types(trial) == {"sent"}
    sent = trial.grade.assertions.failed()[0]
    assert sent.actual == 2 and len(sent.involved) == 2


def test_email_before_refund_fails_event_order(domain, tasks):
    task = tasks["refund-4812"]
    gold = _gold(task)
    trial = _trial(domain, task, gold[:2] + [gold[3], gold[2]])
    assert _failed_types(trial) == {"event_order"}
    (order,) = trial.grade.assertions.failed()
    assert "email_sent" in order.actual and [e["name"] for e in order.involved] == ["email_sent", "refund_committed"]


def test_edit_to_unrelated_order_fails_unchanged_except(domain, tasks):
    task = tasks["refund-4812"]
    trial = _trial(domain, task, _gold(task) + [{"name": "cancel_order", "arguments": {"order_id": "1000"}}])
    assert _failed_types(trial) == {"unchanged_except", "net_change"}  # the cancel also moved store money
    bad = next(r for r in trial.grade.assertions.failed() if r.type == "unchanged_except")
    assert {"table": "orders", "key": ["1000"], "field": "status", "initial": "processing",
            "final": "cancelled"} in bad.involved


def test_forbidden_tool_fails_tool_not_called(domain, tasks):
    task = tasks["refuse-mark-received-8701"]
    trial = _trial(domain, task, _gold(task) + [{"name": "receive_return", "arguments": {"order_id": "8701"}}])
    assert not trial.passed
    failed = trial.grade.assertions.failed()
    assert {r.type for r in failed} == {"tool_not_called", "count", "unchanged_except"}
    tnc = next(r for r in failed if r.type == "tool_not_called")
    assert tnc.involved[0]["name"] == "receive_return" and tnc.actual == 1


def test_refund_above_threshold_without_approval_fails_event_order(domain, tasks):
    task = tasks["refund-5123"]
    gold = [a for a in _gold(task) if a["name"] != "request_refund_approval"]
    gold[2]["arguments"].pop("approval_id")
    trial = _trial(domain, task, gold)
    failed = trial.grade.assertions.failed()
    assert [(r.type, r.expected) for r in failed] == [("event_order", "refund_approved before every refund_committed")]


def test_domain_imports_only_public_simulator_names():
    public = {"simulator", "simulator.world.kit", "simulator.agents.kit"}
    for path in sorted((ROOT / "domains" / "returns").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("simulator"):
                assert node.module in public, (path.name, node.module)
                assert all(not a.name.startswith("_") for a in node.names), path.name
            if isinstance(node, ast.Import):
                assert all(not a.name.startswith("simulator.") for a in node.names), path.name


def test_data_regenerates_byte_for_byte(tmp_path):
    from domains.returns.generate import main

    assert main(["--out", str(tmp_path)]) == 0
    data = ROOT / "domains" / "returns" / "data"
    names = sorted(p.name for p in data.glob("*.json"))
    assert names == sorted(p.name for p in tmp_path.glob("*.json"))
    match, mismatch, errors = filecmp.cmpfiles(data, tmp_path, names, shallow=False)
    assert match == names and not mismatch and not errors
