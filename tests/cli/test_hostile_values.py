"""Values no record can hold as they are (usage past a store's INTEGER, objects that are not JSON) are data.

Each run goes through the command line with ``--store`` (SQLite) and ``--out``: every trial is recorded with a
note, the run ends as any run whose trials fail without error (exit 0), no traceback.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.interop import loopback
from simulator.storage.store import ResultsStore
from tests._support.openai_server import openai_server

TASK = "cancel-no-longer-needed"


def run_agent(tmp_path, agent):
    """Run ``agent`` of ``tests._support.hostile_values`` for 2 trials; return the result, stored trials, out doc."""
    out, url = tmp_path / "out.json", f"sqlite:///{tmp_path / 'store.db'}"
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent", f"py:tests._support.hostile_values:{agent}",
                                   "--user", "rule", "--task-ids", TASK, "--trials", "2", "--store", url,
                                   "--run-id", "r", "--out", str(out), "--no-progress"])
    assert "Traceback" not in res.output, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    store = ResultsStore(url)
    try:
        trials = store.load_trials("r")
    finally:
        store.close()
    doc = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    return res, trials, doc


def test_usage_past_a_stores_integer_is_recorded_as_zero_with_a_note(tmp_path):
    res, trials, doc = run_agent(tmp_path, "big_tokens")
    assert res.exit_code == 0, res.output  # failed trials (the agent solves nothing), no error: exit 0
    assert len(trials) == 2 and len(doc["trials"]) == 2
    for t in trials:
        traj = t.trajectory
        steps = sum(1 for m in traj.messages if m.role == "assistant")  # each reported 7 completion tokens
        assert steps >= 2
        assert traj.agent_usage.prompt_tokens == 0 and traj.agent_usage.calls == 0  # 2**63 and 2**70: refused
        assert traj.agent_usage.completion_tokens == 7 * steps
        assert traj.agent_usage.cost_usd == pytest.approx(0.5 * steps)
        assert "agent step 0: prompt_tokens 9223372036854775808 > 1,000,000,000,000: recorded as 0" in traj.notes
        assert "agent step 0: calls (an integer of 71 bits) > 1,000,000,000,000: recorded as 0" in traj.notes


def test_a_cost_that_is_no_number_and_negative_tokens_are_recorded_with_notes(tmp_path):
    res, trials, doc = run_agent(tmp_path, "bad_cost")
    assert res.exit_code == 0, res.output
    assert len(trials) == 2 and len(doc["trials"]) == 2
    for t in trials:
        usage = t.trajectory.agent_usage
        steps = sum(1 for m in t.trajectory.messages if m.role == "assistant")
        assert usage.cost_usd is None and usage.prompt_tokens == 0 and usage.completion_tokens == 2 * steps
        assert ("agent step 0: cost (a value of type Unprintable) is not an amount in [0, 1e+09] USD: recorded as "
                "unknown") in t.trajectory.notes
        assert "agent step 0: prompt_tokens -3 < 0: recorded as 0" in t.trajectory.notes


@pytest.mark.parametrize(("agent", "kind"), [("object_arguments", "object"), ("unprintable_arguments", "Unprintable")])
def test_arguments_that_are_not_json_become_an_invalid_arguments_error_and_every_trial_is_recorded(tmp_path, agent,
                                                                                                   kind):
    res, trials, doc = run_agent(tmp_path, agent)
    assert res.exit_code == 0, res.output
    assert len(trials) == 2 and len(doc["trials"]) == 2
    for t in trials:
        call = t.trajectory.tool_calls[0]
        assert call.status == "invalid_arguments" and call.arguments is None
        assert call.raw_arguments == f'{{"order_id": "<{kind}>"}}'
        assert (f"agent step 0: tool call 'get_order_details' has a value of type {kind} (not JSON) at order_id: "
                "refused as invalid_arguments") in t.trajectory.notes


@pytest.mark.parametrize(("agent", "path", "kind"), [("object_metadata", "o", "object"),
                                                     ("unprintable_metadata", "w[0]", "Unprintable")])
def test_metadata_that_is_not_json_is_left_out_with_a_note_and_every_trial_is_recorded(tmp_path, agent, path, kind):
    res, trials, doc = run_agent(tmp_path, agent)
    assert res.exit_code == 0, res.output
    assert len(trials) == 2 and [t["trajectory"]["agent_metadata"] for t in doc["trials"]] == [{}, {}]
    for t in trials:
        assert t.trajectory.agent_metadata == {}
        assert f"agent metadata: a value of type {kind} (not JSON) at {path}: not recorded" in t.trajectory.notes
        assert t.trajectory.tool_calls[0].status != "invalid_arguments"  # its call is a plain one


def test_an_llm_agents_usage_past_a_stores_integer_is_recorded_as_zero_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    answer = loopback._completion

    def huge_usage(model, entry, n):  # the model's answer reports 2**63 prompt tokens
        return answer(model, entry, n) | {"usage": {"prompt_tokens": 2**63, "completion_tokens": 3,
                                                    "total_tokens": 2**63 + 3}}

    monkeypatch.setattr(loopback, "_completion", huge_usage)
    out, url = tmp_path / "out.json", f"sqlite:///{tmp_path / 'store.db'}"
    with openai_server({"tausim-agent": ["Done."] * 40}) as service:
        res = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent", "litellm:openai/tausim-agent",
                                       "--api-base", service.api_base, "--user", "rule", "--task-ids", TASK,
                                       "--trials", "1", "--max-turns", "4", "--no-preflight", "--store", url,
                                       "--run-id", "r", "--out", str(out), "--no-progress"])
    assert res.exit_code == 0 and "Traceback" not in res.output, res.output
    store = ResultsStore(url)
    try:
        (trial,) = store.load_trials("r")
    finally:
        store.close()
    traj = trial.trajectory
    answers = sum(1 for m in traj.messages if m.role == "assistant")  # one model call each, 3 completion tokens
    assert answers >= 1 and traj.agent_usage.calls == answers
    assert (traj.agent_usage.prompt_tokens, traj.agent_usage.completion_tokens) == (0, 3 * answers)
    assert "agent step 0: prompt_tokens 9223372036854775808 > 1,000,000,000,000: recorded as 0" in traj.notes
    assert len(json.loads(out.read_text(encoding="utf-8"))["trials"]) == 1
