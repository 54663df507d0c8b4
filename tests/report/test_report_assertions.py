"""Failing declarative assertions in the reports: terminal failure lines, per-assertion pass rates, --out JSON, HTML.

The run: the returns desk's reference agent with ``wrong_item=1`` against the RuleUser, 2 trials of three tasks.
The agent refunds 10% less than the refundable amount (refund-4812: $108.00 of $120.00; refund-5122: $260.10 of
$289.00) and proposes another order of the customer for a cancellation, which the user turns down until the agent
gives up (cancel-7301: nothing written).
"""

from __future__ import annotations

import json
import re
from html import escape

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.report import analyze_run, assertion_label, failure_lines, trial_outcome
from tests._support.report_docs import trial

TASKS = "refund-4812,refund-5122,cancel-7301"


def invoke(*args, env=None):
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("assertions") / "run.json"
    result = invoke("run", "--domain", "returns", "--task-ids", TASKS, "--agent", "reference:wrong_item=1",
                    "--user", "rule", "--trials", "2", "--out", out, "--no-progress", env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return out, result.stdout


def _result(doc, task_id, index, trial_index=0):
    t = next(t for t in doc["trials"] if t["task_id"] == task_id and t["trial"] == trial_index)
    return next(r for r in t["grade"]["assertions"]["results"] if r["index"] == index)


def test_out_json_has_expected_actual_and_rows_of_each_assertion(run):
    doc = json.loads(run[0].read_text())
    assert len(doc["trials"]) == 6 and not any(t["passed"] for t in doc["trials"])
    amount = _result(doc, "refund-4812", 1)
    assert (amount["type"], amount["passed"], amount["expected"], amount["actual"]) == ("field", False, 120.0, 108.0)
    assert amount["involved"] == [{"table": "refunds", "row": {
        "refund_id": "RF4812-1", "order_id": "4812", "amount": 108.0, "approval_id": None,
        "created_at": "2024-06-01T09:00:00"}}]
    books = _result(doc, "refund-5122", 3)
    assert (books["type"], books["expected"], books["actual"]) == ("net_change", -289.0, -260.1)
    assert [i["row"]["amount"] for i in books["involved"]] == [-260.1]
    # the approval came first even with the wrong amount: that assertion holds, with its event as evidence
    order = _result(doc, "refund-5122", 9)
    assert order["passed"] and [e["name"] for e in order["involved"]] == ["refund_approved"]
    sent = _result(doc, "cancel-7301", 3)
    assert (sent["type"], sent["passed"], sent["actual"]) == ("sent", False, 0)
    skipped = _result(doc, "cancel-7301", 5)
    assert skipped["passed"] and skipped["skipped"]


def test_terminal_failure_lines_show_expected_actual_and_rows(run):
    text = run[1]
    lines = text.splitlines()
    block = lines.index("FAIL task refund-4812 trial 0: user_stop; state, assertions")
    after = lines[block:block + 40]
    i = after.index("    assertion #1 field: refunds[refund_id='RF4812-1'].amount = 108.0 (expected 120.0); note: the "
                    "approved amount")
    assert after[i + 1] == "        expected 120.0, actual 108.0"
    assert after[i + 2] == ('        row refunds {"refund_id": "RF4812-1", "order_id": "4812", "amount": 108.0, '
                            '"approval_id": null, "created_at": "2024-06-01T09:00:00"}')
    assert "    assertion #3 sent: messages sent where recipient='ida.berg@mail.test', template='order_cancelled': 0 " \
           "(expected 1)" in lines
    assert "        expected '1', actual 0" in lines
    # passing assertions are not listed among the failures
    assert not any(ln.startswith("    assertion #0 count") for ln in after)


def test_summary_has_per_assertion_pass_rates(run):
    text = run[1]
    # 9 + 10 + 6 assertions; 3 fail in every trial of each task (the skipped event order counts as passed)
    assert "assertions: 16 of 25 passed in every trial (3 tasks)" in text
    row = re.compile(r"refund-4812\s*│\s*1\s*│\s*field\s*│\s*refunds\[refund_id='RF4812-1'\]\.amount "
                     r"\(the approved amount\)\s*│\s*0\s*│\s*2\s*│\s*0\.000")
    assert row.search(text), text
    assert re.search(r"cancel-7301\s*│\s*5\s*│\s*event_order\s*│\s*order_cancelled before email_sent\s*│\s*2\s*│\s*2"
                     r"\s*│\s*1\.000", text)
    report = invoke("report", run[0], "--format", "json")
    assert report.exit_code == 0, report.output
    rates = json.loads(report.stdout)["metrics"]["assertions"]
    assert len(rates) == 25
    assert [(r["task_id"], r["index"]) for r in rates[:2]] == [("refund-4812", 0), ("refund-4812", 1)]
    assert rates[1] == {"task_id": "refund-4812", "index": 1, "type": "field",
                        "label": "refunds[refund_id='RF4812-1'].amount (the approved amount)", "passed": 0,
                        "skipped": 0, "trials": 2, "rate": 0.0}
    last = rates[-1]
    assert (last["task_id"], last["index"], last["passed"], last["skipped"]) == ("cancel-7301", 5, 2, 2)
    assert json.loads(report.stdout)["metrics"]["components"]["assertions"] == {"passed": 0, "graded": 6,
                                                                                  "rate": 0.0}


def test_html_shows_the_failing_assertion_with_expected_and_actual(run, tmp_path):
    html_path = tmp_path / "r.html"
    report = invoke("report", run[0], "--html", html_path)
    assert report.exit_code == 0, report.output
    html = html_path.read_text()
    summary = "refunds[refund_id='RF4812-1'].amount = 108.0 (expected 120.0)"
    m = re.search(r"<tr class=a-fail><td class=n>1</td><td>field</td><td>FAILED</td><td>"
                  + re.escape(escape(summary)) + r".*?</tr>", html)
    assert m, "no failing row for the refund amount"
    cell = m.group(0)
    assert "<td><code>120.0</code></td><td><code>108.0</code></td>" in cell
    assert escape('row refunds {"refund_id": "RF4812-1", "order_id": "4812", "amount": 108.0') in cell
    assert "<h4>Assertions (6 of 9 passed)</h4>" in html
    assert "<h2>Assertions: passed / trials per task</h2>" in html


def test_assertion_only_failure_is_its_own_outcome():
    t = trial("a", 0, False, failure="assertions")
    t["grade"]["assertions"] = {"passed": False, "results": [
        {"index": 2, "type": "tool_not_called", "passed": False, "skipped": False,
         "summary": "receive_return() called 1 time(s) (expected never)", "expected": "receive_return() never called",
         "actual": 1, "involved": [{"step": 4, "name": "receive_return", "arguments": {"order_id": "8701"}}],
         "note": None}]}
    assert trial_outcome(t) == ("assertions", ("assertions",))
    lines = failure_lines(t)
    assert lines[-3:] == [
        "    assertion #2 tool_not_called: receive_return() called 1 time(s) (expected never)",
        "        expected 'receive_return() never called', actual 1",
        '        {"step": 4, "name": "receive_return", "arguments": {"order_id": "8701"}}',
    ]
    assert assertion_label(t["grade"]["assertions"]["results"][0]) == "receive_return()"


def test_runs_without_assertions_report_none():
    from tests._support.report_docs import small_document

    m = analyze_run(small_document()).metrics
    assert m["assertions"] == [] and "assertions" not in m["components"]


def test_many_assertions_all_passing_print_one_line_without_a_dangling_table_title():
    from types import SimpleNamespace

    from rich.console import Console

    from simulator.report._terminal import MAX_ASSERTION_ROWS, _print_assertion_rates

    n = MAX_ASSERTION_ROWS + 5
    rows = [{"task_id": f"t{i % 7}", "index": i, "type": "field", "label": f"a{i}", "passed": 2, "skipped": 0,
             "trials": 2, "rate": 1.0} for i in range(n)]
    console = Console(record=True, width=200)
    _print_assertion_rates(SimpleNamespace(metrics={"assertions": rows}), console)  # type: ignore[arg-type]
    assert console.export_text().strip() == f"assertions: {n} of {n} passed in every trial (7 tasks)"
    rows[3] = {**rows[3], "passed": 1, "rate": 0.5}
    console = Console(record=True, width=200)
    _print_assertion_rates(SimpleNamespace(metrics={"assertions": rows}), console)  # type: ignore[arg-type]
    text = " ".join(console.export_text().split())  # the table's title wraps at the table's width
    assert f"assertions: {n - 1} of {n} passed in every trial (7 tasks); those failing at least once" in text
    assert "│ t3 │ 3 │ field │ a3 │ 1 │ 2 │ 0.500 │" in text and "a4" not in text
