"""Must show (issue 26): hostile model output never crashes a run, never loses a trial, never reaches the terminal raw.

Agents emit NaN and Infinity arguments, lone surrogates, control sequences (window title, clear screen, OSC 52),
rich markup, emoji codes, NaN and infinite costs (``tests/_support/hostile.py``); the run goes through the command
line with ``--store`` (SQLite and PostgreSQL) and ``--out``, then ``tausim report`` reads it back (terminal, JSON,
HTML).
"""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.storage.store import ResultsStore
from tests._support import hostile

TASKS = "cancel-no-longer-needed,exchange-two-items"
_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 (but tab and newline), DEL and C1: none may reach stdout or stderr."""


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def assert_clean(output: str) -> None:
    """No control character, no traceback, no emoji from an emoji code in what a command printed."""
    assert not _RAW_CONTROL.findall(output), sorted(set(_RAW_CONTROL.findall(output)))
    assert "Traceback" not in output
    assert "\U0001F4AF" not in output  # :100: stays text
    output.encode("utf-8")  # no lone surrogate


def run_hostile(tmp_path, store_url, agent, run_id, user="rule"):
    out = tmp_path / f"{run_id}.json"
    res = invoke("run", "--domain", "retail", "--agent", f"py:tests._support.hostile:{agent}", "--user", user,
                 "--task-ids", TASKS, "--trials", "2", "--store", store_url, "--run-id", run_id, "--out", out,
                 "--no-progress")
    return res, out


@pytest.mark.parametrize("agent", ["hostile_agent", "raising_agent"])
def test_hostile_agent_run_records_every_trial_and_prints_no_control_sequence(tmp_path, store_url, agent):
    plain = "null" if agent == "hostile_agent" else "py:tests._support.hostile:plain_raising_agent"
    baseline = invoke("run", "--domain", "retail", "--agent", plain, "--user", "rule", "--task-ids", TASKS,
                      "--trials", "2", "--no-progress")
    res, out = run_hostile(tmp_path, store_url, agent, f"run-{agent}")
    assert res.exit_code == baseline.exit_code, res.output  # as for any failed trial (raising: error rate, 1)
    assert_clean(res.output)
    assert "\\x1b]0;pwned" in res.output or agent == "hostile_agent"  # shown escaped where it is shown at all

    store = ResultsStore(store_url)
    try:
        trials = store.load_trials(f"run-{agent}")
    finally:
        store.close()
    assert len(trials) == 4 and all(not t.passed for t in trials)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert len(doc["trials"]) == 4
    for t in trials:
        traj = t.trajectory
        if agent == "raising_agent":
            assert t.termination_reason == "agent_error" and "RuntimeError: agent crashed" in (traj.error or "")
            assert "\ud83d" not in traj.error and "\ufffd" in traj.error
            continue
        assert t.termination_reason != "tool_bug"
        statuses = [c.status for c in traj.tool_calls]
        assert statuses[:2] == ["invalid_arguments", "invalid_arguments"]  # NaN, Infinity
        assert traj.tool_calls[0].arguments is None and "NaN" in (traj.tool_calls[0].raw_arguments or "")
        assert statuses[3] == "unknown_tool" and "tool_bug" not in statuses
        assert traj.agent_usage.cost_usd is None  # NaN and infinite costs: unknown, never NaN
        assert traj.user_usage.cost_usd is not None
        assert any("non-finite number at order_id" in n for n in traj.notes)
        assert any("lone surrogate" in n for n in traj.notes)
        said = traj.agent_texts()[0]
        assert hostile.TITLE in said and hostile.CLEAR in said and "\x00" in said  # kept in the record
        assert "\ud83d" not in said and "\ufffd" in said

    for args in (["report", f"run-{agent}", "--store", store_url], ["report", out],
                 ["report", out, "--format", "json"]):
        rep = invoke(*args)
        assert rep.exit_code == 0, rep.output
        assert_clean(rep.output)
    page = tmp_path / "page.html"
    rep = invoke("report", out, "--html", page)
    assert rep.exit_code == 0, rep.output
    assert_clean(rep.output)
    html = page.read_text(encoding="utf-8")
    assert not _RAW_CONTROL.findall(html)
    if agent == "hostile_agent":
        assert "\\x1b]0;pwned" in html and "\\x1b]52;c;" in html  # shown, escaped


def test_hostile_user_run_records_every_trial(tmp_path):
    res, out = run_hostile(tmp_path, f"sqlite:///{tmp_path / 'runs.db'}", "hostile_agent", "run-user",
                           user="py:tests._support.hostile:hostile_user")
    assert res.exit_code == 0, res.output
    assert_clean(res.output)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert len(doc["trials"]) == 4
    for t in doc["trials"]:
        traj = t["trajectory"]
        assert traj["user_usage"]["cost_usd"] is None and traj["agent_usage"]["cost_usd"] is None
        assert traj["user_metadata"]["x"] is None  # an infinite number in metadata: null
        assert any(n.startswith("user turn") for n in traj["notes"])
