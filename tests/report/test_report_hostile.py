"""Reports of hostile runs: huge texts are cut on the page, unknown costs stay unknown, data is never markup."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.report import analyze_run, render_html
from simulator.report._html import TEXT_LIMIT
from tests._support.report_docs import trial

MB10 = 10 * 1024 * 1024


def _document(trials):
    return {"format": "tausim.run", "version": 1, "run_id": "hostile",
            "config": {"domain": "retail", "agent": "null", "user": "scripted", "trials": len(trials), "seed": 0,
                       "task_ids": ["a"]},
            "trials": trials}


def test_three_10_mb_messages_make_a_small_page_with_the_full_length_noted():
    big = [{"role": role, "content": ch * MB10, "tool_calls": [], "tool_call_id": None, "name": None}
           for role, ch in (("user", "u"), ("assistant", "a"), ("assistant", "b"))]
    t = trial("a", 0, False, failure="state", messages=big)
    t["error"] = "e" * MB10
    page = render_html(analyze_run(_document([t])))
    assert len(page) < 1_000_000  # was 40 MB: every text whole
    assert page.count(f"cut: {MB10:,} characters in all, the first {TEXT_LIMIT:,} shown") == 4
    assert "a" * TEXT_LIMIT in page and "a" * (TEXT_LIMIT + 1) not in page


def test_non_finite_costs_of_an_older_document_are_unknown(tmp_path):
    trials = [trial("a", 0, True, agent_cost=0.5), trial("a", 1, False, failure="state", agent_cost=math.nan),
              trial("a", 2, False, failure="state", agent_cost=math.inf)]
    trials[0]["trajectory"]["user_usage"]["cost_usd"] = -1.0
    path = tmp_path / "old.json"
    path.write_text(json.dumps(_document(trials)), encoding="utf-8")  # json writes NaN and Infinity
    cost = analyze_run(json.loads(path.read_text(encoding="utf-8"))).metrics["cost_usd"]
    assert cost["total"]["per_task"] is None and cost["per_success"] is None  # unknown, never nan or inf
    assert cost["agent"]["per_task"] is None
    res = CliRunner().invoke(app, ["report", str(path)])
    assert res.exit_code == 0, res.output
    assert "$nan" not in res.output and "$inf" not in res.output and "unknown" in res.output


def test_rich_markup_and_emoji_codes_in_messages_are_text():
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--executor", "local:100", "--task-ids",
                                   "cancel-no-longer-needed"])
    assert res.exit_code == 2
    assert "--executor local:100:" in res.output and "\U0001F4AF" not in res.output  # was "local💯"


_BAD_NUMBERS = [math.nan, math.inf, -math.inf, -1, "fast", [1], True, "\x1b]0;owned\x07", "\ud800"]


def _write(path, doc):
    # json writes NaN and Infinity; a lone surrogate is kept as its \ud800 escape
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("value", _BAD_NUMBERS, ids=repr)
def test_a_bad_duration_is_not_available_with_a_note_naming_the_field(tmp_path, value):
    trials = [trial("a", 0, True, duration=1.0), trial("a", 1, True, duration=3.0),
              trial("a", 2, False, failure="state", duration=5.0)]
    trials[2]["duration_s"] = value
    path = _write(tmp_path / "run.json", _document(trials))
    res = CliRunner().invoke(app, ["report", str(path)])
    assert res.exit_code == 0, res.output  # was a traceback: summary_stats refused NaN and inf
    notes = [line for line in res.output.splitlines() if line.startswith("note: duration_s")]
    assert len(notes) == 1 and "1 trial" in notes[0] and "not available" in notes[0], res.output
    assert "\x1b" not in res.output and "\x07" not in res.output and "\ud800" not in res.output
    latency = analyze_run(json.loads(path.read_text(encoding="utf-8"))).metrics["latency_s"]["trial"]
    # by hand: the two good durations 1.0 and 3.0; the bad one is unknown, never a number
    assert (latency["count"], latency["missing"], latency["total"], latency["mean"]) == (2, 1, 4.0, 2.0)
    res = CliRunner().invoke(app, ["report", str(path), "--format", "json", "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert "duration_s" in json.loads(res.stdout)["data_notes"][0]
    assert "duration_s: 1 trial" in (tmp_path / "r.html").read_text(encoding="utf-8")


_FIELDS = {
    "trajectory.agent_seconds": ("trajectory", "agent_seconds"),
    "trajectory.turns": ("trajectory", "turns"),
    "trajectory.agent_usage.prompt_tokens": ("trajectory", "agent_usage", "prompt_tokens"),
    "trajectory.agent_usage.calls": ("trajectory", "agent_usage", "calls"),
    "grade.tool_accuracy": ("grade", "tool_accuracy", "called"),
    "grade.trajectory": ("grade", "trajectory", "calls"),
}


@pytest.mark.parametrize("field", _FIELDS)
@pytest.mark.parametrize("value", [math.nan, math.inf, "fast", None, [1]], ids=repr)
def test_every_recorded_number_that_is_not_one_is_reported_not_a_crash(tmp_path, field, value):
    trials = [trial("a", 0, True), trial("a", 1, True)]
    for t in trials:
        t["grade"]["tool_accuracy"] = {"called": 2, "gold": 2, "name_matched": 2, "called_write": 1,
                                       "gold_write": 1, "name_matched_write": 1, "args_matched": 2}
        t["grade"]["trajectory"] = {"calls": 2, "reference_calls": 2, "exact": True, "in_order": True, "set": True,
                                    "prefix": 1.0, "decision": True, "name_matched": 2, "exact_calls": 2,
                                    "selection_den": 2, "abstention_applies": False, "abstained": None,
                                    "redundant": 0, "failed": 0, "recovered": 0,
                                    "tool_calls": {"get_order_details": [2, 0]}}
    *where, key = _FIELDS[field]
    part = trials[0]
    for w in where:
        part = part[w]
    part[key] = value
    path = _write(tmp_path / "run.json", _document(trials))
    run = str(path)
    for command in (["report", run], ["report", run, "--format", "json", "--html", str(tmp_path / "r.html")],
                    ["export", run, "--format", "tau2", "--out", str(tmp_path / "e.json")],
                    ["baseline", run, "--out", str(tmp_path / "b.json")], ["plan", "--baseline", run],
                    ["gate", "--baseline", run, "--candidate", run]):
        res = CliRunner().invoke(app, command)
        assert res.exception is None or isinstance(res.exception, SystemExit), (command, repr(res.exception))
        assert res.exit_code == 0, (command, res.output)
    res = CliRunner().invoke(app, ["report", run])
    # a null number is unknown (no note); in a count table, which needs every count, it is named like the rest
    named = value is not None or field.startswith("grade.")
    assert (f"note: {field}" in res.output) == named, res.output


def test_hostile_text_where_the_report_expects_names_renders_or_is_one_line_naming_the_field(tmp_path):
    trials = [trial("a", 0, True), trial("\ud800b", 0, False, failure="state")]
    doc = _document(trials)
    doc["config"]["task_ids"] = ["a", "\ud800b"]
    doc["task_tags"] = {"a": ["x", 3, None], "\ud800b": 7}  # tags that are not lists of strings
    doc["git_revision"] = 12345
    path = _write(tmp_path / "run.json", doc)
    res = CliRunner().invoke(app, ["report", str(path), "--html", str(tmp_path / "r.html")])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)  # was TypeError
    assert res.exit_code == 0, res.output
    assert "\ud800" not in res.output and "\\ud800b" in res.output
    trials[0]["trajectory"]["messages"][0]["content"] = 5
    path = _write(tmp_path / "run2.json", _document(trials))
    res = CliRunner().invoke(app, ["export", str(path), "--format", "tau-bench"])
    assert res.exit_code == 2 and "trajectory.messages[0]" in res.output and "content" in res.output, res.output
