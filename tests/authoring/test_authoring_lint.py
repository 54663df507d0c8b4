"""tausim tasks lint: each rule on a deliberately broken task, the run refusing lint errors, and tau-bench's tasks.

Also the ``duplicate`` rule on hunt cases of one task, and the ``no-criteria`` warning on tau2-bench tasks.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.authoring import errors, lint_tasks
from simulator.cli import app
from simulator.types.tasks import parse_tasks
from simulator.world.domain import get_domain
from tests._support.peers import TAU2, needs_tau2
from tests._support.returns_cases import PERSONA, PREFIX, RETURNS, pin, returns_task

PEERS = Path(__file__).resolve().parents[3] / "shared" / "peers" / "tau-bench"


def _base() -> dict:
    doc = json.loads(RETURNS.read_text())
    task = next(t for t in doc["tasks"] if t["id"] == "return-6201")
    return {**doc, "tasks": [task]}


def _lint(tasks: list[dict], *, file_rules: bool = True):
    """Lint tasks in a copy of the returns file (``file_rules`` False: without the file's policy rules)."""
    dom = get_domain("returns")
    doc = {**_base(), "tasks": tasks}
    if not file_rules:
        doc.pop("process", None)
    parsed = dom._checked(parse_tasks(doc, "test.json", "returns"), "test.json")
    return lint_tasks(dom, parsed)


def _variant(task_id: str, change) -> dict:
    task = copy.deepcopy(_base()["tasks"][0])
    task["id"] = task_id
    change(task)
    return task


def _rules(findings, task_id):
    """The (rule, severity) pairs of a task's findings, duplicates aside (the variants share user and writes)."""
    return {(f.rule, f.severity) for f in findings if f.task_id == task_id and f.rule != "duplicate"}


def test_a_clean_task_has_no_finding():
    assert _lint(_base()["tasks"]) == []


def test_wrong_id_in_third_gold_action_is_an_error_naming_task_and_tool():
    def wrong(t):
        t["gold_actions"][2]["arguments"]["order_id"] = "9999"
    findings = _lint([_variant("wrong-id", wrong)])
    unknown = [f for f in findings if f.rule == "unknown-id"]
    assert [(f.severity, f.task_id, f.tool) for f in unknown] == [("error", "wrong-id", "open_return")]
    assert "'9999'" in unknown[0].message and "gold write action 2" in unknown[0].message
    # the oracle's final state no longer has the return the assertions expect
    assert ("assertion-fails-oracle", "error") in _rules(findings, "wrong-id")


def test_rules_on_broken_tasks():
    def reads_only(t):
        t["gold_actions"] = t["gold_actions"][:2]
        t["assertions"] = []

    def other_user(t):
        t["user_id"] = "cus_nobody"

    def wrong_expectation(t):
        t["assertions"][0]["equals"] = 2

    def contradicting(t):
        t["scenario"]["known_info"]["order_id"] = "6299"

    def unsourced_output(t):
        t["required_outputs"] = ["77.77"]

    def undiscoverable(t):
        t["gold_actions"][1]["arguments"]["order_id"] = "1042"

    def refused(t):
        t["gold_actions"].insert(2, {"name": "cancel_order", "arguments": {"order_id": "6201"}})

    tasks = [_variant(name, change) for name, change in [
        ("reads-only", reads_only), ("other-user", other_user), ("wrong-expectation", wrong_expectation),
        ("contradicting", contradicting), ("unsourced", unsourced_output), ("undiscoverable", undiscoverable),
        ("refused", refused)]]
    findings = _lint(tasks)
    # the file's identify-first rule (at the end of the trial) fails a do-nothing agent; without the file's rules a
    # do-nothing agent passes, a note for a task with no gold write (a refusal or information task) ...
    assert _rules(findings, "reads-only") == set()
    assert _rules(_lint([_variant("reads-only", reads_only)], file_rules=False), "reads-only") == {
        ("null-passes", "note")}

    def noop_write(t):  # ... and a warning when its one gold write changes nothing (refused: a gold error)
        reads_only(t)
        t["gold_actions"].append({"name": "cancel_order", "arguments": {"order_id": "6201"}})
    assert _rules(_lint([_variant("noop-write", noop_write)], file_rules=False), "noop-write") == {
        ("null-passes", "warning"), ("gold-error", "note")}
    assert _rules(findings, "other-user") == {("unknown-user", "error")}
    assert _rules(findings, "wrong-expectation") == {("assertion-fails-oracle", "error")}
    assert _rules(findings, "contradicting") == {("scenario-contradiction", "warning")}
    assert _rules(findings, "unsourced") == {("output-unsourced", "note")}
    assert _rules(findings, "undiscoverable") == {("undiscoverable", "note")}
    assert ("gold-error", "note") in _rules(findings, "refused")
    assert all(f.message and "\n" not in f.message for f in findings)
    # the check before a run (errors only) finds the same errors without running the warning-only rules
    dom = get_domain("returns")
    parsed = dom._checked(parse_tasks({**_base(), "tasks": tasks}, "test.json", "returns"), "test.json")
    quick = lint_tasks(dom, parsed, errors_only=True)
    assert errors(quick) == errors(findings) and len(errors(quick)) >= 2
    warning_only = {"null-passes", "scenario-contradiction", "output-unsourced", "undiscoverable", "forbidden-write",
                    "duplicate", "no-criteria"}
    assert not {f.rule for f in quick} & warning_only


def test_duplicates_name_the_first_task():
    base = _base()["tasks"][0]
    findings = _lint([base, {**copy.deepcopy(base), "id": "again"}])
    assert [(f.rule, f.task_id) for f in findings] == [("duplicate", "again")]
    assert "return-6201" in findings[0].message


def _write(tmp_path, tasks):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps({**_base(), "tasks": tasks}))
    return path


def test_cli_lint_exit_codes_and_json(tmp_path):
    def wrong(t):
        t["gold_actions"][2]["arguments"]["order_id"] = "9999"
    bad = _write(tmp_path, [_variant("wrong-id", wrong)])
    res = CliRunner().invoke(app, ["tasks", "lint", str(bad), "--format", "json"])
    assert res.exit_code == 1, res.output
    doc = json.loads(res.output)
    assert {(f["rule"], f["severity"]) for f in doc["findings"]} == {
        ("unknown-id", "error"), ("assertion-fails-oracle", "error"), ("undiscoverable", "note")}
    assert doc["errors"] == sum(f["severity"] == "error" for f in doc["findings"]) >= 2
    good = _write(tmp_path, _base()["tasks"])
    res = CliRunner().invoke(app, ["tasks", "lint", str(good)])
    assert res.exit_code == 0 and "0 error(s), 0 warning(s)" in res.output


def test_run_refuses_lint_errors_unless_allowed(tmp_path):
    def wrong(t):
        t["gold_actions"][2]["arguments"]["order_id"] = "9999"
    bad = _write(tmp_path, [_variant("wrong-id", wrong)])
    args = ["run", "--domain", "returns", "--tasks", str(bad), "--agent", "oracle", "--user", "scripted"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2
    assert "lint error" in res.output and "wrong-id" in res.output and "--allow-lint-errors" in res.output
    res = CliRunner().invoke(app, [*args, "--allow-lint-errors"])
    assert res.exit_code == 0, res.output


peers = pytest.mark.skipif(not (PEERS / "airline" / "tasks_test.json").exists(), reason="peer data not found")


def _peer_lint(domain: str, file: str):
    dom = get_domain(domain)
    template = dom.template(PEERS / domain / "data")
    return lint_tasks(dom, dom.load_tasks(str(PEERS / domain / file)), template=template)


@peers
def test_tau_bench_airline_flown_cancellations_and_do_nothing_tasks():
    findings = _peer_lint("airline", "tasks_test.json")
    assert not errors(findings)
    flown = {f.task_id for f in findings if f.rule == "forbidden-write"}
    # independently: the gold cancels reservation NQNU5R, whose segments flew on 2024-05-13 and -14 (before
    # the policy's now, 2024-05-15 15:00), in tasks 26 and 27
    raw = json.loads((PEERS / "airline" / "tasks_test.json").read_text())
    assert flown == {str(i) for i, t in enumerate(raw)
                     if any(a["name"] == "cancel_reservation" and a["kwargs"]["reservation_id"] == "NQNU5R"
                            for a in t["actions"])} == {"26", "27"}
    gold = json.loads((PEERS / "gold" / "airline_test_even.json").read_text())
    covered = {str(g["task_index"]) for g in gold}
    expected = {str(g["task_index"]) for g in gold if not g["diff"] and not raw[g["task_index"]]["outputs"]}
    assert expected and {f.task_id for f in findings if f.rule == "null-passes"} & covered == expected


@peers
def test_tau_bench_retail_duplicates():
    findings = _peer_lint("retail", "tasks_test.json")
    assert not errors(findings)
    raw = json.loads((PEERS / "retail" / "tasks_test.json").read_text())
    writes = {"cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
              "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
              "return_delivered_order_items"}
    seen: dict[str, int] = {}
    expected = set()
    for i, t in enumerate(raw):
        key = json.dumps([t["user_id"], [[a["name"], a["kwargs"]] for a in t["actions"] if a["name"] in writes]],
                         sort_keys=True)
        if not any(a["name"] in writes for a in t["actions"]):
            continue
        if key in seen:
            expected.add(str(i))
        seen.setdefault(key, i)
    assert expected and {f.task_id for f in findings if f.rule == "duplicate"} == expected


TAU2_TELECOM = PEERS.parent / "tau2-bench" / "telecom"


@pytest.mark.skipif(not (TAU2_TELECOM / "tasks_small.json").exists(), reason="tau2-bench telecom data not found")
def test_dual_control_tasks_lint_with_user_side_gold_and_env_assertions():
    # tau2's telecom tasks: gold actions the user makes on their own phone, and assertions calling the domain's
    # assertion functions. Lint used to crash on the latter and skip the former (then call every assertion
    # failing on the "gold final state"), so `tausim run` refused the task set.
    dom = get_domain("telecom")
    tasks = dom.load_tasks(str(TAU2_TELECOM / "tasks_small.json"))
    assert any(a.requestor == "user" for t in tasks for a in t.gold_actions)
    findings = lint_tasks(dom, tasks, template=dom.template(TAU2_TELECOM))
    assert errors(findings) == []
    assert errors(lint_tasks(dom, tasks, template=dom.template(TAU2_TELECOM), errors_only=True)) == []
    res = CliRunner().invoke(app, ["tasks", "lint", str(TAU2_TELECOM / "tasks_small.json"), "--domain", "telecom",
                                   "--data", str(TAU2_TELECOM)])
    assert res.exit_code == 0, res.output
    assert "(20 tasks, domain telecom): 0 error(s)" in res.output


def _returns_lint(tasks: list[dict]):
    from simulator.authoring import lint_tasks
    from simulator.types.tasks import parse_tasks
    from simulator.world.domain import get_domain

    doc = json.loads(RETURNS.read_text())
    dom = get_domain("returns")
    return lint_tasks(dom, dom._checked(parse_tasks({**doc, "tasks": tasks}, "cases.json", "returns"), "cases.json"))


@pytest.mark.parametrize("pins", [{"seed": 11}, {"moves": {"0": "off_topic"}}, {"persona": PERSONA},
                                  {"prefix": PREFIX}], ids=["seed", "moves", "persona", "prefix"])
def test_lint_duplicate_skips_hunt_cases_that_pin_something_else(pins):
    """Hunt cases of one task share its user and gold writes by construction: they used to warn ``duplicate``."""
    task = returns_task()
    first = pin(task, "case-1", seed=7) if "seed" in pins else pin(task, "case-1")
    other = pin(task, "case-2", **pins)
    assert [f for f in _returns_lint([first, other]) if f.rule == "duplicate"] == []


def test_lint_duplicate_still_fires_for_identical_pins():
    task = returns_task()
    same = {"seed": 7, "prefix": PREFIX, "moves": {"0": "off_topic"}}
    findings = _returns_lint([pin(task, "case-1", **same), pin(task, "case-2", **same)])
    assert [(f.rule, f.task_id) for f in findings if f.rule == "duplicate"] == [("duplicate", "case-2")]


@needs_tau2
def test_lint_warns_on_a_tau2_task_without_evaluation_criteria(tmp_path):
    """Such a task loads and passes for any agent (tau2 reward 1): lint only said the generic null-passes."""
    tasks = json.loads((TAU2 / "mock" / "tasks.json").read_text())[:2]
    del tasks[0]["evaluation_criteria"]
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(tasks))
    res = CliRunner().invoke(app, ["tasks", "lint", str(path), "--domain", "mock", "--data", str(TAU2 / "mock"),
                                   "--format", "json"])
    assert res.exit_code == 0, res.output
    found = [(f["rule"], f["severity"], f["task_id"]) for f in json.loads(res.output)["findings"]]
    assert found == [("no-criteria", "warning", tasks[0]["id"])]
    assert "evaluation_criteria" in json.loads(res.output)["findings"][0]["message"]
