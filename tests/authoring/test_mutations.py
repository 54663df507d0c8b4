"""tausim tasks lint --mutations: the oracle, harmless and harmful mutations of the gold actions, per rule."""

from __future__ import annotations

import copy
import json

from typer.testing import CliRunner

from simulator.authoring import lint_tasks
from simulator.authoring.mutations import _perturb
from simulator.cli import app
from simulator.types.tasks import parse_tasks
from simulator.world.domain import get_domain
from tests._support.returns_cases import RETURNS


def _doc(*changes) -> dict:
    """The returns file with task return-6201 (find customer, get order, open return, send email) changed."""
    doc = json.loads(RETURNS.read_text())
    base = next(t for t in doc["tasks"] if t["id"] == "return-6201")
    tasks = []
    for name, change in changes:
        task = copy.deepcopy(base)
        task["id"] = name
        change(task)
        tasks.append(task)
    return {**doc, "tasks": tasks}


def _mutation_findings(*changes):
    dom = get_domain("returns")
    tasks = dom._checked(parse_tasks(_doc(*changes), "test.json", "returns"), "test.json")
    return [(f.rule, f.severity, f.task_id, f.message) for f in lint_tasks(dom, tasks, mutations=True)
            if f.rule.startswith("mutation-")]


def test_a_sound_contract_gives_no_mutation_finding():
    assert _mutation_findings(("sound", lambda t: None)) == []


def test_an_oracle_that_cannot_pass_is_an_error_naming_the_component():
    def needs_unused_tool(t):
        t["process"] = {"required_tools": ["get_customer"]}  # no gold action calls it

    (found,) = _mutation_findings(("needs-unused", needs_unused_tool))
    assert found[:3] == ("mutation-oracle-fails", "error", "needs-unused") and "(process)" in found[3]


def test_a_contract_that_punishes_a_repeated_read_is_over_strict():
    def no_repeats(t):
        t["loop_threshold"] = 0  # any identical repeat is a loop: a harmless double check fails

    found = _mutation_findings(("no-repeats", no_repeats))
    assert [(r, s) for r, s, _, _ in found] == [("mutation-over-strict", "warning")]
    assert "extra-reads" in found[0][3] and "(loops)" in found[0][3]


def test_a_contract_blind_to_the_writes_is_under_strict():
    def outputs_only(t):
        t["grade"] = ["outputs"]
        t["required_outputs"] = ["6201"]

    found = _mutation_findings(("outputs-only", outputs_only))
    # the two writes (open_return, send_email), each dropped and each with its order id perturbed: all still pass
    assert sorted(m.split(" still")[0] for _, _, _, m in found) == [
        "mutation drop-write[2](open_return)", "mutation drop-write[3](send_email)",
        "mutation perturb-write[2](open_return.order_id)", "mutation perturb-write[3](send_email.order_id)"]
    assert {(r, s) for r, s, _, _ in found} == {("mutation-under-strict", "warning")}


def test_perturbation_prefers_an_entity_id_then_a_number_then_a_string():
    assert _perturb({"order_id": "6201", "amount": 5}, {"order_id": ("orders", "order_id")}) == (
        {"order_id": "6200", "amount": 5}, "order_id", True)
    assert _perturb({"reason": "late", "amount": 5}, {}) == ({"reason": "late", "amount": 6}, "amount", False)
    assert _perturb({"reason": "late"}, {}) == ({"reason": "late-x"}, "reason", False)
    assert _perturb({}, {}) is None


def test_the_cli_prints_counts_per_rule_and_the_share_of_flagged_tasks(tmp_path):
    def no_repeats(t):
        t["loop_threshold"] = 0

    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(_doc(("sound", lambda t: None), ("no-repeats", no_repeats))))
    res = CliRunner().invoke(app, ["tasks", "lint", str(path), "--mutations"])
    assert res.exit_code == 0, res.output
    assert "warning mutation-over-strict: 1" in res.output
    assert "tasks with an error or warning: 1/2 (50%)" in res.output
