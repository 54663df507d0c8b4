"""`tausim report` / `tausim export`: counts, metrics checked by hand, a self-contained and escaped HTML page.

The terminal FAIL lines of a trial, a prefix case's next-step failures among them.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.report import (
    RunDocumentError,
    analyze_run,
    load_run_document,
    render_html,
    to_tau_bench,
    trial_anchor,
)
from simulator.stats.estimators import bootstrap_ci
from tests._support.report_docs import FAILED_MARKER, INJECTED, small_document, trial


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def doc_file(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(small_document()))
    return path


def test_json_summary_counts_duplicates_and_missing(doc_file):
    res = invoke("report", doc_file, "--format", "json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert set(out) == {"run_id", "planned", "recorded", "duplicates", "metrics"}
    assert out["run_id"] == "hand-1"
    assert (out["planned"], out["recorded"], out["duplicates"]) == (6, 5, 1)
    assert out["metrics"]["missing_trials"] == 1


def test_metrics_by_hand():
    # a = [pass, pass, fail], b = [fail, missing (= fail), pass]; n = 3 planned trials per task.
    m = analyze_run(small_document()).metrics
    assert m["tasks"] == 2 and m["trials_per_task"] == 3
    assert m["pass^1"] == pytest.approx(0.5)
    assert m["pass^2"] == pytest.approx((1 / 3 + 0) / 2)
    assert m["pass^3"] == 0.0
    assert m["pass@2"] == pytest.approx((1 + 2 / 3) / 2)
    assert m["pass@3"] == 1.0
    assert m["success_rate"] == pytest.approx(0.5)
    # The interval is the percentile bootstrap over the two tasks' values with the fixed seed 0.
    expected = bootstrap_ci([2 / 3, 1 / 3], rng=np.random.Generator(np.random.PCG64(0)))
    assert m["ci95"]["pass^1"] == pytest.approx(list(expected))
    assert m["ci95"]["pass^1"][0] <= m["pass^1"] <= m["ci95"]["pass^1"][1]
    assert analyze_run(small_document()).metrics == m  # reproducible
    assert m["components"]["state"] == {"passed": 4, "graded": 5, "rate": 0.8}
    assert m["components"]["outputs"] == {"passed": 4, "graded": 5, "rate": 0.8}
    assert m["components"]["process"] == {"passed": 5, "graded": 5, "rate": 1.0}
    assert m["failure_kinds"] == {"state": 1, "outputs": 1, "missing": 1}
    assert m["outcomes"] == {"passed": 3, "state": 1, "outputs": 1, "process": 0, "loops": 0, "budget": 0,
                             "assertions": 0, "cutoff": 0, "error": 0, "missing": 1}
    assert m["assertions"] == [] and "assertions" not in m["components"]  # no task of this run has assertions
    assert m["termination_reasons"] == {"user_stop": 5}
    # Unknown cost (None) is excluded and counted, never $0; the duplicate's 0.5 is ignored.
    agent = m["cost_usd"]["agent"]
    assert (agent["count"], agent["missing"]) == (4, 1)
    assert agent["total"] == pytest.approx(0.10)
    assert m["cost_usd"]["per_task"] is None and m["cost_usd"]["total"]["missing"] == 1
    lat = m["latency_s"]["trial"]
    assert lat["p50"] == pytest.approx(3.0) and lat["p95"] == pytest.approx(4.8)
    assert m["personas"]["patient"]["trials"] == 2 and m["personas"]["patient"]["success_rate"] == 1.0
    assert m["personas"]["impatient"]["trials"] == 3
    assert m["personas"]["impatient"]["success_rate"] == pytest.approx(1 / 3)
    assert m["tool_calls"]["statuses"] == {"tool_error": 1} and m["tool_calls"]["errors"] == 1


def test_error_trials_and_ungraded_trials_are_errors():
    doc = small_document()
    doc["trials"] = [trial("a", 0, False, reason="infra_error", failure="infra_error"),
                     trial("a", 1, False, reason="tool_bug", graded=False)]
    doc["config"]["trials"] = 2
    doc["config"]["task_ids"] = ["a"]
    report = analyze_run(doc)
    assert [c.outcome for c in report.cells] == ["error", "error"]
    assert report.metrics["errored_trials"] == 2
    assert report.metrics["failure_kinds"] == {"infra_error": 1, "tool_bug": 1}


def test_planned_tasks_default_to_recorded_tasks():
    doc = small_document()
    del doc["config"]["task_ids"]
    report = analyze_run(doc)
    assert report.task_ids == ["a", "b"] and report.planned == 6


def test_text_summary(doc_file):
    res = invoke("report", doc_file)
    assert res.exit_code == 0, res.output
    for text in ("planned 6, recorded 5, duplicates 1", "pass^k", "patient", "(+1 unknown)",
                 "FAIL task a persona impatient trial 2"):
        assert text in res.stdout


def test_html_is_self_contained_and_escapes_transcripts(doc_file, tmp_path):
    html_file = tmp_path / "report.html"
    res = invoke("report", doc_file, "--html", html_file)
    assert res.exit_code == 0, res.output
    page = html_file.read_text()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert "http://" not in page and "https://" not in page
    assert "@import" not in page
    # The failed trial's transcript is in the page, its injected script escaped.
    assert INJECTED not in page
    assert "Cancel my order please &lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert f"Sorry, {FAILED_MARKER}." in page
    assert "&quot;#W1&lt;b&gt;&quot;" in page  # tool arguments escaped too
    assert page.count("<script") == 1  # the page's own script only
    assert f'href="#{trial_anchor("b", 0)}"' in page
    assert "forbidden tool" not in page  # no process violation in this run
    assert "180.42" in page  # missing output of the failed trial


def test_html_without_tasks_or_with_one_trial():
    doc = small_document()
    doc["config"]["trials"] = 1
    doc["trials"] = [trial("a", 0, False, failure="state, process")]
    page = render_html(analyze_run(doc))
    assert "forbidden tool called: cancel_order" in page and "<svg" in page


def test_loader_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(RunDocumentError, match=r"bad\.json: invalid JSON at line 1"):
        load_run_document(bad)
    bad.write_text(json.dumps({"format": "other"}))
    with pytest.raises(RunDocumentError, match=r"bad\.json: not a tausim run document"):
        load_run_document(bad)
    doc = small_document()
    doc["trials"][0]["trial"] = "x"
    with pytest.raises(RunDocumentError, match=r"trials\[0\]"):
        load_run_document(doc)
    res = invoke("report", tmp_path / "missing.json")
    assert res.exit_code == 2 and "missing.json: no such file" in res.output
    res = invoke("report", "some-run-id")
    assert res.exit_code == 2 and "--store" in res.output
    res = invoke("report", bad, "--format", "yaml")
    assert res.exit_code == 2


def test_export_tau_bench(doc_file, tmp_path):
    out = tmp_path / "tb.json"
    res = invoke("export", doc_file, "--format", "tau-bench", "--out", out)
    assert res.exit_code == 0, res.output
    results = json.loads(out.read_text())
    assert len(results) == 5  # the duplicate once, the missing trial absent
    for r in results:
        assert set(r) == {"task_id", "reward", "info", "traj", "trial"}
        assert isinstance(r["task_id"], int) and r["reward"] in (0.0, 1.0)
    by_key = {(r["info"]["tausim_task_id"], r["trial"]): r for r in results}
    assert by_key[("a", 1)]["reward"] == 1.0  # first record of the duplicated trial
    failed = by_key[("b", 0)]
    assert failed["task_id"] == 1 and failed["reward"] == 0.0
    call = failed["traj"][1]["tool_calls"][0]
    assert call["type"] == "function" and json.loads(call["function"]["arguments"]) == {"order_id": "#W1<b>"}
    assert failed["traj"][2] == {"role": "tool", "content": '{"order_id": "#W1", "status": "pending"}',
                                 "tool_call_id": "c1", "name": "get_order_details"}
    assert failed["info"]["reward_info"]["info"]["failure"] == "outputs"
    # Numeric task ids (tau-bench tasks) keep their number.
    doc = small_document()
    for t in doc["trials"]:
        t["task_id"] = {"a": "7", "b": "12"}[t["task_id"]]
    doc["config"]["task_ids"] = ["7", "12"]
    assert {r["task_id"] for r in to_tau_bench(doc)} == {7, 12}
    res = invoke("export", doc_file, "--format", "csv")
    assert res.exit_code == 2


def test_report_from_results_store(tmp_path):
    pytest.importorskip("simulator.storage.store")
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    res = invoke("run", "--agent", "null", "--task-ids", "cancel-no-longer-needed,modify-order-address",
                 "--trials", "2", "--store", url, "--run-id", "r1")
    assert res.exit_code == 0, res.output
    res = invoke("report", "r1", "--store", url, "--format", "json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert (out["run_id"], out["planned"], out["recorded"], out["duplicates"]) == ("r1", 4, 4, 0)
    assert out["metrics"]["pass^1"] == 0.0
    res = invoke("report", "nope", "--store", url)
    assert res.exit_code == 2 and "no run 'nope'" in res.output
    res = invoke("export", "r1", "--store", url)
    assert res.exit_code == 0 and len(json.loads(res.stdout)) == 4


def test_unplanned_records_are_counted_but_not_scored():
    doc = small_document()
    doc["trials"] += [trial("zzz", 0, True), trial("a", 5, True)]
    report = analyze_run(doc)
    assert (report.planned, report.recorded, report.duplicates, report.unplanned) == (6, 7, 1, 2)
    assert report.metrics["pass^1"] == pytest.approx(0.5)  # unchanged


def test_unknown_cost_is_never_zero(tmp_path):
    doc = small_document()
    for t in doc["trials"]:
        t["trajectory"]["agent_usage"]["cost_usd"] = None
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    res = invoke("report", path)
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.stdout.splitlines() if "cost agent" in ln)
    assert "unknown" in line and "$0" not in line
    assert "cost per task: unknown" in res.stdout
    m = analyze_run(doc).metrics["cost_usd"]
    assert m["agent"]["total"] is None and m["agent"]["missing"] == 5 and m["per_task"] is None


def test_run_and_report_print_the_same_summary(tmp_path):
    out = tmp_path / "run.json"
    run = invoke("run", "--task-ids", "cancel-no-longer-needed,modify-order-address", "--agent", "null",
                 "--user", "py:tests.users.test_personas_run:PersonaUser", "--personas", "terse,abandoner",
                 "--trials", "2", "--out", out, "--no-progress")
    assert run.exit_code == 0, run.output
    report = invoke("report", out, "--max-failures", "20")
    assert report.exit_code == 0, report.output
    run_lines, report_lines = run.stdout.splitlines(), report.stdout.splitlines()
    # the run first says which executor it chose (and why); a report has no executor
    assert run_lines[0].startswith("executor: auto: threads (")
    run_lines = run_lines[1:]
    assert run_lines[0].startswith("tausim run ") and report_lines[0].startswith("tausim report ")
    assert run_lines[-1] == f"wrote {out}"
    assert run_lines[1:-1] == report_lines[1:]  # one renderer: everything but the headline is the same
    doc = json.loads(out.read_text())
    failed = [t for t in doc["trials"] if not t["passed"]]
    assert len(failed) == 8  # the null agent changes nothing: every trial of the 2 tasks x 2 personas fails
    assert sum(1 for ln in run_lines if ln.startswith("FAIL task ")) == len(failed)
    text = run.stdout
    for part in ("by persona", "task cells (task@persona) passing every trial: 0/4", "termination reason",
                 "FAIL task cancel-no-longer-needed persona terse trial 0", "expected 'cancelled', got 'pending'"):
        assert part in text, part


def test_failure_lines_show_every_failed_layer():
    from simulator.report import failure_lines

    t = trial("a@p", 1, False, failure="state, outputs, process", persona="p")
    t["grade"]["loops"] = {"passed": False, "threshold": 2, "repeats": [{"tool": "get", "arguments": {"x": 1},
                                                                         "count": 4}]}
    t["grade"]["budget"] = {"passed": False, "exceeded": ["tool_calls 9 > 5"]}
    t["grade"]["judge"] = {"status": "failed", "gating": True, "assertions": [
        {"assertion": "asked first", "passed": False, "verdict": "no", "reason": "it did not ask"}]}
    t["error"] = "Traceback ...\nValueError: boom\n"
    assert failure_lines(t) == [
        "FAIL task a persona p trial 1: user_stop; state, outputs, process",
        "    error: ValueError: boom",
        "    orders['#W1'].status: expected 'cancelled', got 'pending'",
        "    missing outputs: ['180.42']",
        "    process: forbidden tool called: cancel_order",
        '    loop: get({"x": 1}) called 4 times (2 repeats allowed)',
        "    budget: tool_calls 9 > 5",
        "    judge: 'asked first': no: it did not ask",
    ]
    t["grade"]["judge"]["gating"] = False  # a judge that does not gate is not a reason for failing
    assert not any(line.startswith("    judge") for line in failure_lines(t))


def test_component_labels_name_the_component_and_only_its_set_parameters():
    from simulator.report import component_label

    assert component_label({"name": "oracle", "temperature": None, "api_base": None, "max_tokens": None,
                            "args": {}}) == "oracle"
    assert component_label({"name": "litellm:openai/m", "temperature": 0.0, "api_base": None, "args": {}}) \
        == "litellm:openai/m (temperature=0.0)"
    assert component_label("reference") == "reference"  # documents written before run specs


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


def test_a_store_edited_by_hand_gives_one_line_naming_the_trial_and_field(tmp_path):
    pytest.importorskip("simulator.storage.store")
    import sqlite3

    db = tmp_path / "runs.db"
    url = f"sqlite:///{db}"
    res = invoke("run", "--agent", "null", "--task-ids", "cancel-no-longer-needed", "--trials", "1",
                 "--store", url, "--run-id", "r1")
    assert res.exit_code == 0, res.output
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE trials SET turns = 'abc\x1b[31m'")
    for args in (("report", "r1"), ("gate", "--baseline", "r1", "--candidate", "r1")):
        res = invoke(*args, "--store", url)
        assert res.exit_code == 2, res.output
        assert "Traceback" not in res.output and "\x1b" not in res.output
        assert "cancel-no-longer-needed" in res.output and "turns" in res.output


def test_a_failed_trial_s_lines_are_bounded_whatever_its_error_holds():
    """A model's 48 kB error line (deeply nested arguments it could not convert) once filled the terminal."""
    from simulator.report import failure_lines

    error = "Traceback (most recent call last):\n  ...\nValueError: " + "]" * 48_000
    lines = failure_lines({"task_id": "t", "trial": 0, "termination_reason": "infra_error", "error": error,
                           "grade": None})
    assert lines[0].startswith("FAIL task t trial 0: infra_error;")
    assert len(lines) == 2 and len(lines[1]) <= 400 + 40  # the cut's own words: " ... (N characters cut) ... "
    assert lines[1].startswith("    error: ValueError: ]]]") and lines[1].endswith("]" * 50)
    # "    error: ValueError: " is 23 characters, then 48,000: 48,023 in all, 400 kept
    assert " ... (47,623 characters cut) ... " in lines[1]


def persona_tag_document():
    """Tasks a (cancel, refund), b (cancel), c (info) x personas p, q x 2 planned trials; b@q's trial 1 is missing."""
    outcomes = {("a", "p"): [True, True], ("a", "q"): [True, False], ("b", "p"): [False, False],
                ("b", "q"): [True], ("c", "p"): [True, True], ("c", "q"): [False, True]}
    trials = [trial(task, i, ok, persona=persona, failure=None if ok else "state")
              for (task, persona), oks in outcomes.items() for i, ok in enumerate(oks)]
    return {"format": "tausim.run", "version": 1, "run_id": "tags-1",
            "config": {"domain": "retail", "agent": "null", "user": "rule", "trials": 2, "seed": 0,
                       "task_ids": ["a", "b", "c"], "personas": ["p", "q"]},
            "task_tags": {"a": ["cancel", "refund"], "b": ["cancel"], "c": ["info"]}, "trials": trials}


# by hand: a tag's tasks are the distinct tasks carrying it; its pass^k is the mean over their task cells (task x
# persona), a missing trial failing; its trials are the recorded trials of those cells.
# cancel: a, b -> cells a@p [1, 1], a@q [1, 0], b@p [0, 0], b@q [1, missing]: pass^1 (1 + .5 + 0 + .5) / 4 = .5,
#   pass^2 (1 + 0 + 0 + 0) / 4 = .25, trials 2 + 2 + 2 + 1 = 7
# refund: a -> a@p, a@q: pass^1 (1 + .5) / 2 = .75, pass^2 (1 + 0) / 2 = .5, trials 4; info: c -> the same numbers
BY_TAG = {"cancel": (2, 4, 7, 0.5, 0.25), "refund": (1, 2, 4, 0.75, 0.5), "info": (1, 2, 4, 0.75, 0.5)}


def test_by_tag_counts_tasks_not_task_cells():
    from simulator.stats.summaries import run_metrics

    doc = persona_tag_document()
    from_report = analyze_run(doc).metrics["by_tag"]
    from_run = run_metrics(doc["trials"], ["a", "b", "c"], 2, personas=["p", "q"], incomplete="count",
                           tags=doc["task_tags"])["by_tag"]
    for by_tag in (from_report, from_run):
        assert set(by_tag) == set(BY_TAG)
        for tag, (tasks, cells, trials, pass1, pass2) in BY_TAG.items():
            got = by_tag[tag]
            assert (got["tasks"], got["cells"], got["trials"]) == (tasks, cells, trials), tag
            assert got["pass^1"] == pytest.approx(pass1) and got["pass^2"] == pytest.approx(pass2), tag


def test_by_tag_tables_show_tasks_cells_and_trials(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(persona_tag_document()))
    res = invoke("report", path)
    assert res.exit_code == 0, res.output
    assert "by tag (mean over the task cells carrying it)" in res.stdout
    rows = {line.split()[1]: line.split()[3::2] for line in res.stdout.splitlines()
            if line.startswith("│") and line.split()[1] in BY_TAG}
    assert rows == {tag: [str(v) for v in row[:3]] + [f"{p:.3f}" for p in row[3:]] for tag, row in BY_TAG.items()}
    html = render_html(analyze_run(persona_tag_document()))
    section = html[html.index('<section id="by-tag">'):]
    section = section[:section.index("</section>")]
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>.*?</t[dh]>", section, re.S)]
    assert cells[:6] == ["tag", "tasks", "cells", "trials", "pass^1", "pass^2"]
    body = [cells[i:i + 6] for i in range(6, len(cells), 6)]
    assert {r[0]: r[1:] for r in body} == {tag: [str(v) for v in row[:3]] + [f"{p:.3f}" for p in row[3:]]
                                          for tag, row in BY_TAG.items()}
