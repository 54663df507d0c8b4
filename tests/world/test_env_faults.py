"""Environment faults (simulator.world.faults): seeded rates, rollback of partial writes, recording, recovery rate."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter

import numpy as np
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from simulator.cli import app
from simulator.execution.build import build_runner
from simulator.execution.runner import Runner
from simulator.stats.faults import recovery_rates
from simulator.storage.documents import run_summary_json
from simulator.types.faults import FAULT_KINDS, FaultRates
from simulator.types.results import RunResult
from simulator.types.spec import RunSpec, spec_differences
from simulator.world.faults import FaultyToolbox, draw_fault
from simulator.world.replay import prepare_trial
from simulator.world.tools import ToolContext

RATES = "transient=0.05,timeout=0.02,slow=0.05,partial_write=0.02"
HEAVY = "transient=0.3,timeout=0.1,slow=0.1,partial_write=0.2,lost_ack=0.2"
TASKS = ["cancel-no-longer-needed", "cancel-gift-card-balance", "modify-order-address", "modify-payment-to-paypal",
         "modify-user-address", "return-original-method"]


def _runner(faults: str | None, seed: int = 0, trials: int = 2, tasks: list[str] | None = None) -> Runner:
    return build_runner(RunSpec(domain="retail", agent="reference", user="rule", trials=trials, seed=seed,
                                task_ids=tasks or TASKS, preflight=False, faults=faults))


@pytest.fixture(scope="module")
def faulty_run() -> RunResult:
    return _runner(HEAVY).run()


def _all_rows(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table (bookkeeping tables included), sorted: a row-level image of the database."""
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return {n: sorted(conn.execute(f'SELECT * FROM "{n}"').fetchall(), key=repr) for n in names}


def test_fault_rates_parse_and_refuse_bad_items():
    rates = FaultRates.parse(RATES)
    assert rates.rates() == {"transient": 0.05, "timeout": 0.02, "partial_write": 0.02, "slow": 0.05, "lost_ack": 0.0}
    assert FaultRates.parse(rates.text()) == rates and rates.active()
    assert not FaultRates().active() and FaultRates().text() == "none"
    for bad, word in (("flaky=0.1", "flaky"), ("transient=x", "'x'"), ("transient=0.1,transient=0.2", "twice"),
                      ("transient=0.6,timeout=0.6", "more than 1"), ("slow", "KIND=RATE")):
        with pytest.raises(ValueError, match=word):
            FaultRates.parse(bad)
    with pytest.raises(ValidationError):
        FaultRates.parse("timeout=1.5")
    assert RunSpec(domain="retail", faults=RATES).faults == rates


def _classify(rates: dict[str, float], seed: int, step: int, kind: str) -> str | None:
    """A second computation of a call's fault, straight from the SeedSequence (not through draw_fault)."""
    u = np.random.default_rng(np.random.SeedSequence([0xFA017, seed, step])).random()
    t, o, p, s, lost = rates["transient"], rates["timeout"], rates["partial_write"], rates["slow"], rates["lost_ack"]
    if u < t:
        return "transient"
    if u < t + o:
        return "timeout"
    if u < t + o + p:
        return "partial_write" if kind == "write" else None
    if u < t + o + p + s:
        return "slow"
    if u < t + o + p + s + lost:
        return "lost_ack" if kind == "write" else None
    return None


def test_fault_draws_honour_the_rates_and_match_a_second_computation():
    rates = FaultRates.parse("transient=0.1,timeout=0.05,partial_write=0.2,slow=0.15")
    n = 3000
    counts: Counter[str | None] = Counter()
    expected: Counter[str | None] = Counter()
    for i in range(n):
        seed, step = 1000 + i // 10, i % 10
        fault, latency = draw_fault(rates, seed, step, "write")
        counts[fault] += 1
        expected[_classify(rates.rates(), seed, step, "write")] += 1
        if fault == "timeout":
            assert latency == 30.0
        elif fault == "slow":
            assert 2.0 <= latency <= 12.0
        else:
            assert latency == 0.0
    assert counts == expected  # exact, for these seeds
    for kind, rate in rates.rates().items():  # and within 4.5 standard deviations of the rate
        assert abs(counts[kind] - n * rate) <= 4.5 * (n * rate * (1 - rate)) ** 0.5, (kind, counts)
    reads = Counter(draw_fault(rates, 1000 + i // 10, i % 10, "read")[0] for i in range(n))
    assert "partial_write" not in reads and reads["transient"] == counts["transient"]


def test_a_partial_write_runs_the_tool_then_leaves_the_database_exactly_as_before():
    runner = _runner(None)
    task = next(t for t in runner.tasks if any(a.name == "cancel_pending_order" for a in t.gold_actions))
    action = next(a for a in task.gold_actions if a.name == "cancel_pending_order")
    toolbox = runner.domain.toolbox()
    faulty = FaultyToolbox(toolbox, FaultRates(partial_write=1.0), 7)
    with runner.template.trial() as db:
        prepare_trial(runner.domain, db, task)
        before = _all_rows(db.raw)
        statements: list[str] = []
        db.raw.set_trace_callback(statements.append)
        ctx = ToolContext(db.session, db.options)
        ctx.step = 3
        out = faulty.dispatch(ctx, action.name, action.arguments)
        db.raw.set_trace_callback(None)
        assert out.status == "tool_error" and getattr(out, "fault", None) == "partial_write"
        assert "rolled back" in out.content
        assert any(s.lstrip().upper().startswith(("UPDATE", "INSERT")) for s in statements), statements
        assert any("ROLLBACK" in s.upper() for s in statements), statements
        assert _all_rows(db.raw) == before
        ok = toolbox.dispatch(ctx, action.name, action.arguments)  # the same call without a fault writes
        assert ok.status == "ok" and _all_rows(db.raw) != before


def test_a_lost_answer_applies_the_write_and_tells_the_agent_the_outcome_is_unknown():
    runner = _runner(None)
    task = next(t for t in runner.tasks if any(a.name == "cancel_pending_order" for a in t.gold_actions))
    action = next(a for a in task.gold_actions if a.name == "cancel_pending_order")
    toolbox = runner.domain.toolbox()
    images = []
    for box in (toolbox, FaultyToolbox(toolbox, FaultRates(lost_ack=1.0), 7)):
        with runner.template.trial() as db:
            prepare_trial(runner.domain, db, task)
            before = _all_rows(db.raw)
            ctx = ToolContext(db.session, db.options)
            ctx.step = 3
            out = box.dispatch(ctx, action.name, action.arguments)
            after = _all_rows(db.raw)
            assert after != before  # the write was applied either way
            images.append(after)
            if box is toolbox:
                assert out.status == "ok"
                continue
            assert out.status == "tool_error" and getattr(out, "fault", None) == "lost_ack"
            assert "not known whether" in out.content and out.content.startswith("Error:")
            again = box.dispatch(ctx, action.name, action.arguments)  # a blind retry: the service refuses it
            assert again.status == "tool_error" and getattr(again, "fault", None) is None
            assert _all_rows(db.raw) == after
            read = box.dispatch(ctx, "get_order_details", {"order_id": action.arguments["order_id"]})
            assert read.status == "ok" and getattr(read, "fault", None) is None  # reads never lose their answer
    assert images[0] == images[1]  # exactly the state of the same call without a fault


def test_lost_answers_are_counted_and_the_recovery_rate_reported():
    run = _runner("lost_ack=0.3", trials=1).run()
    faulted = [t for t in run.trials if t.faults]
    assert faulted and all(set(t.faults or {}) == {"lost_ack"} for t in faulted)
    rec = run_summary_json(run)["recovery"]
    assert rec["by_kind"]["lost_ack"]["trials"] == len(faulted)
    assert rec["by_kind"]["lost_ack"]["recovered"] == sum(t.passed for t in faulted)
    result = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent", "reference", "--user", "rule",
                                      "--faults", "lost_ack=0.3", "--no-preflight",
                                      "--task-ids", ",".join(TASKS)])
    assert result.exit_code in (0, 1), result.output
    assert "recovery" in result.output.lower() and "lost_ack" in result.output


def test_a_rejected_call_keeps_its_own_error_and_no_fault():
    runner = _runner(None)
    faulty = FaultyToolbox(runner.domain.toolbox(), FaultRates(partial_write=1.0), 7)
    with runner.template.trial() as db:
        ctx = ToolContext(db.session, db.options)
        ctx.step = 0
        out = faulty.dispatch(ctx, "cancel_pending_order", {"order_id": "#W0000000", "reason": "no longer needed"})
        assert out.status == "tool_error" and getattr(out, "fault", None) is None
        unknown = faulty.dispatch(ctx, "no_such_tool", {})
        assert unknown.status == "unknown_tool"


def test_faults_are_recorded_per_call_and_counted_per_trial(faulty_run):
    rates = faulty_run.config.faults
    assert rates is not None
    seen: Counter[str] = Counter()
    for t in faulty_run.trials:
        calls = [c for c in t.trajectory.tool_calls if c.requestor == "agent"]
        assert t.faults == dict(Counter(c.fault for c in calls if c.fault))
        for c in calls:
            drawn = _classify(rates.rates(), t.seed, c.step, c.kind or "read")
            if c.fault is not None:
                seen[c.fault] += 1
                assert c.fault == drawn
                assert c.status == ("ok" if c.fault == "slow" else "tool_error")
                if c.fault == "slow":
                    assert c.duration_s >= 2.0
                if c.fault == "timeout":
                    assert c.duration_s == 30.0 and "timed out" in c.content
            elif drawn not in (None, "partial_write", "lost_ack"):  # a write the tool refused is its own error
                pytest.fail(f"{t.task_id}#{t.trial} step {c.step}: drawn {drawn}, not recorded")
    assert set(seen) == set(FAULT_KINDS), seen


def test_same_seed_same_faults_and_another_seed_other_faults(faulty_run):
    def faults(run: RunResult) -> list[tuple[str, int, int, str | None]]:
        return [(t.task_id, t.trial, c.step, c.fault) for t in run.trials for c in t.trajectory.tool_calls]

    again = _runner(HEAVY).run()
    assert faults(again) == faults(faulty_run)
    assert [t.passed for t in again.trials] == [t.passed for t in faulty_run.trials]
    other = _runner(HEAVY, seed=1).run()
    assert [f[3] for f in faults(other)] != [f[3] for f in faults(faulty_run)]


def test_the_recovery_rate_equals_an_independent_count(faulty_run):
    doc = run_summary_json(faulty_run)
    rec = doc["recovery"]
    faulted = [t for t in faulty_run.trials if any(c.fault for c in t.trajectory.tool_calls)]
    assert faulted and rec["faulted"] == len(faulted) and rec["trials"] == len(faulty_run.trials)
    assert rec["recovered"] == sum(t.passed for t in faulted)
    assert rec["rate"] == pytest.approx(sum(t.passed for t in faulted) / len(faulted))
    for kind in FAULT_KINDS:
        met = [t for t in faulty_run.trials if any(c.fault == kind for c in t.trajectory.tool_calls)]
        assert rec["by_kind"][kind]["trials"] == len(met)
        assert rec["by_kind"][kind]["recovered"] == sum(t.passed for t in met)
        assert rec["faults"][kind] == sum(c.fault == kind for t in faulty_run.trials for c in t.trajectory.tool_calls)
    # counted from the tool calls when a record has no counts (an older document)
    bare = [{**t, "faults": None} for t in doc["trials"]]
    assert recovery_rates(bare) == rec


def test_the_reference_agent_recovers_from_transient_errors_as_counted():
    run = _runner("transient=0.25", trials=1).run()
    faulted = [t for t in run.trials if t.faults]
    assert faulted and all(set(t.faults or {}) == {"transient"} for t in faulted)
    rec = run_summary_json(run)["recovery"]
    assert rec["by_kind"]["transient"]["recovered"] == sum(t.passed for t in faulted)
    assert rec["rate"] == sum(t.passed for t in faulted) / len(faulted)
    clean = _runner(None, trials=1).run()
    assert "recovery" not in run_summary_json(clean) and all(t.faults is None for t in clean.trials)
    # a fault is no worse than no fault for a trial the agent passes anyway: passes only where the clean run passes
    clean_pass = {t.task_id for t in clean.trials if t.passed}
    assert {t.task_id for t in run.trials if t.passed} <= clean_pass


def test_resume_compares_the_faults():
    a = RunSpec(domain="retail", faults=RATES)
    assert spec_differences(a, a.model_copy(update={"faults": FaultRates.parse("transient=0.1")}))[0][0] \
        .startswith("faults")
    assert spec_differences(a, a.model_copy(update={"faults": None}))
    assert not spec_differences(a, RunSpec.model_validate(json.loads(a.model_dump_json())))


def test_tausim_run_and_hunt_accept_faults(tmp_path):
    out = tmp_path / "run.json"
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent", "reference", "--user", "rule",
                                   "--task-ids", ",".join(TASKS[:3]), "--trials", "2", "--faults", "transient=0.4",
                                   "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["config"]["faults"]["transient"] == 0.4
    faulted = [t for t in doc["trials"] if any(c.get("fault") for c in t["trajectory"]["tool_calls"])]
    assert doc["recovery"]["faulted"] == len(faulted) > 0
    assert "recovery" in res.output and f"{sum(t['passed'] for t in faulted)}/{len(faulted)}" in res.output
    bad = CliRunner().invoke(app, ["run", "--domain", "retail", "--faults", "flaky=0.1"])
    assert bad.exit_code == 2 and "flaky" in bad.output
    hunt_out = tmp_path / "hunt.json"
    res = CliRunner().invoke(app, ["hunt", "--domain", "retail", "--task-ids", ",".join(TASKS[:2]), "--budget", "20",
                                   "--faults", "transient=0.3", "--out", str(hunt_out)])
    assert res.exit_code == 0, res.output
    assert json.loads(hunt_out.read_text())["agent_turns"] >= 20


def test_a_forked_trial_meets_the_same_faults_as_its_original():
    from simulator.hunt import Harness, every_turn

    runner = _runner("transient=0.2,slow=0.1,partial_write=0.3", tasks=TASKS[:3])
    harness = Harness(runner)
    met = 0
    for task in runner.tasks:
        orig = harness.play(task, 0, capture=every_turn)
        faults = [(c.step, c.name, c.status, c.fault) for c in orig.result.trajectory.tool_calls]
        met += sum(1 for f in faults if f[3])
        assert orig.result.faults == dict(Counter(f[3] for f in faults if f[3]))
        for snap in orig.snapshots[1:]:
            fork = harness.fork(snap)
            assert [(c.step, c.name, c.status, c.fault) for c in fork.result.trajectory.tool_calls] == faults
            assert fork.result.passed == orig.result.passed
    assert met > 0


@pytest.mark.parametrize("domain", ["retail", "airline", "returns"])
def test_the_reference_agents_make_a_call_again_after_a_retryable_error(domain):
    """After a busy-service or timeout error the next call is the same call; after other errors it is not forced.

    Checked on the recorded trajectories: every call answered by a transient/timeout fault is followed by the same
    call (name and arguments) unless it was already the third try of it.
    """
    run = build_runner(RunSpec(domain=domain, agent="reference", user="rule", trials=1, seed=3, preflight=False,
                               faults="transient=0.3,timeout=0.2")).run()
    checked = 0
    for t in run.trials:
        calls = t.trajectory.tool_calls
        for i, c in enumerate(calls):
            if c.fault not in ("transient", "timeout") or i + 1 >= len(calls):
                continue
            tries = 1
            while tries <= i and (calls[i - tries].name, calls[i - tries].arguments) == (c.name, c.arguments) \
                    and calls[i - tries].fault in ("transient", "timeout"):
                tries += 1
            if tries <= 2:  # a first or second try failed: a third is due
                assert (calls[i + 1].name, calls[i + 1].arguments) == (c.name, c.arguments), (t.task_id, i)
                checked += 1
    assert checked >= 5


def test_retryable_errors_are_told_from_other_tool_errors():
    from simulator.dialogue.cues import is_retryable_error

    assert is_retryable_error("Error: get_order_details is temporarily unavailable (the service is busy); nothing "
                              "was changed. Please try again.")
    assert is_retryable_error("Error: the call to x timed out after 30 s and had no effect. Please try again.")
    assert is_retryable_error("Error: the write of x failed part way and was rolled back; nothing was changed. "
                              "The service had a temporary problem: you may retry.")
    for text in ("Error: order not found", "Error: the order is not pending", '{"status": "try again later"}',
                 "Error: unknown tool 'retry_order'", None, ""):
        assert not is_retryable_error(text), text
