"""Reports of hostile runs: huge texts are cut on the page, unknown costs stay unknown, data is never markup."""

from __future__ import annotations

import json
import math

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
