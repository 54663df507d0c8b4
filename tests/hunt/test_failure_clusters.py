"""The "Failure clusters" report section (terminal and HTML), for a run and for a hunt, checked against counts made
here from the trials; and the recovery rate in both reports."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from html import escape

import pytest
from rich.console import Console

from personas.loader import load_personas
from simulator.cli.hunt import summary
from simulator.execution.build import build_runner
from simulator.execution.runner import Runner
from simulator.grading.signature import signature
from simulator.hunt import export_cases, hunt
from simulator.report import analyze_run, hunt_clusters, print_summary, render_html, render_hunt_html, run_clusters
from simulator.storage.documents import run_summary_json
from simulator.types.results import RunResult
from simulator.types.spec import RunSpec

KNOBS = "wrong_item=0.2,forget_constraint=0.2,repeat_question=0.1,skip_confirmation=0.2"


def _kinds(runner: Runner) -> dict[str, str | None]:
    return {n: ("ending" if s.ends_conversation else s.kind) for n, s in runner.domain.toolbox().specs.items()}


@pytest.fixture(scope="module")
def faulty_run() -> tuple[Runner, RunResult, dict]:
    runner = build_runner(RunSpec(domain="retail", agent=f"reference:{KNOBS}", user="rule", trials=2, seed=5,
                                  preflight=False, faults="transient=0.1"))
    result = runner.run()
    return runner, result, run_summary_json(result)


def _user_turns(trial) -> int:
    return sum(1 for m in trial.trajectory.messages if m.role == "user" and m.content and not m.tool_calls)


def test_a_run_clusters_its_failures_by_signature(faulty_run):
    runner, result, doc = faulty_run
    tasks = {t.id: t for t in runner.tasks}
    kinds = _kinds(runner)
    groups = defaultdict(list)
    for t in result.trials:  # the independent count: the hunt's signature function on the trial results
        sig = signature(tasks[t.task_id], t, kinds)
        assert (sig is None) == t.passed
        if sig is not None:
            groups[sig].append(t)
    assert len(groups) >= 2, "the faulty agent should fail in more than one way"
    rows, unsigned = run_clusters(analyze_run(doc))
    assert unsigned == 0
    assert {r.signature: r.count for r in rows} == {s: len(ts) for s, ts in groups.items()}
    assert [r.count for r in rows] == sorted((r.count for r in rows), reverse=True)
    total_turns = sum(len(t.trajectory.progress) for t in result.trials)
    for r in rows:
        members = groups[r.signature]
        assert r.trial_share == pytest.approx(len(members) / len(result.trials))
        assert r.turn_share == pytest.approx(sum(len(t.trajectory.progress) for t in members) / total_turns)
        shortest = min(members, key=_user_turns)
        first_user = next(m.content for m in shortest.trajectory.messages if m.role == "user")
        assert r.transcript[0] == ("user", first_user)
        assert f"task {shortest.task_id}, trial {shortest.trial}" in r.example
        assert r.case_id is None and not r.shrunk

    console = Console(record=True, width=400, color_system=None)
    print_summary(analyze_run(doc), console, max_failures=0)
    text = console.export_text()
    failed = sum(len(ts) for ts in groups.values())
    assert f"Failure clusters ({len(groups)} signatures, {failed} failed trials)" in text
    section = text[text.index("Failure clusters ("):].splitlines()
    for i, (sig, members) in enumerate(sorted(groups.items(), key=lambda kv: -len(kv[1]))[:10], start=1):
        cells = next(c for c in ([c.strip() for c in line.strip("│ ").split("│")] for line in section
                                 if line.startswith("│")) if c[0] == str(i))
        assert cells[1:7] == list(sig)
        assert int(cells[7]) == len(members)
        assert cells[8] == f"{100 * len(members) / len(result.trials):.1f}%"
        assert f"cluster {i} example (task " in text

    page = render_html(analyze_run(doc))
    assert f"Failure clusters ({len(groups)} signatures)" in page
    assert page.count("<details class=cluster") == len(groups)
    for sig in groups:
        assert escape(" / ".join(sig), quote=True) in page


def test_the_recovery_rate_is_in_the_terminal_and_html_reports(faulty_run):
    _, result, doc = faulty_run
    faulted = [t for t in result.trials if any(c.fault for c in t.trajectory.tool_calls)]
    passed = sum(t.passed for t in faulted)
    assert faulted
    report = analyze_run(doc)
    console = Console(record=True, width=400, color_system=None)
    print_summary(report, console, max_failures=0)
    assert f"recovery from environment faults: {passed}/{len(faulted)} faulted trials passed" in console.export_text()
    page = render_html(report)
    assert 'id="recovery"' in page
    assert f"<td class=n>{len(faulted)}</td><td class=n>{passed}</td>" in page
    clean = run_summary_json(build_runner(RunSpec(domain="retail", agent="reference", user="rule", task_ids=[
        result.trials[0].task_id], preflight=False)).run())
    assert "recovery" not in analyze_run(clean).metrics and 'id="recovery"' not in render_html(analyze_run(clean))


def test_a_hunt_report_names_clusters_shares_examples_and_exported_cases():
    personas = load_personas("cooperative,impatient")
    spec = RunSpec(domain="retail", agent=f"reference:{KNOBS}", user="rule", personas=[p.name for p in personas],
                   persona_defs={p.name: p.model_dump(mode="json") for p in personas}, seed=2, preflight=False)
    runner = build_runner(spec)
    result = hunt(runner, 150, seed=2)
    clean = build_runner(spec.model_copy(update={"agent": spec.agent.model_copy(update={"name": "reference"})}))
    doc, notes = export_cases(runner, result, clean=clean, shrink_tries=6)
    exported = {t["id"] for t in doc["tasks"]}
    report = summary(result, exported=exported)
    rows = hunt_clusters(json.loads(json.dumps(report)))

    tasks = {t.id: t for t in runner.tasks}
    kinds = _kinds(runner)
    counts: Counter[tuple[str, ...]] = Counter()
    turns: Counter[tuple[str, ...]] = Counter()
    for t in result.trials:  # independent: signatures of the hunt's trials
        sig = signature(tasks[t.result.task_id], t.result, kinds)
        if sig is not None:
            counts[sig] += 1
            turns[sig] += t.fresh_agent_turns
    assert counts and {r.signature: r.count for r in rows} == dict(counts)
    for r, c in zip(rows, result.clusters, strict=True):
        assert r.turn_share == pytest.approx(turns[r.signature] / result.agent_turns, abs=1e-4)
        assert r.trial_share == pytest.approx(counts[r.signature] / len(result.trials))
        assert r.case_id == (c.case_id if c.case_id in exported else None)
        assert r.transcript and r.transcript[0][0] == "user"
    assert exported and len(exported) + len(notes) == len(result.clusters), notes
    page = render_hunt_html(report)
    assert page.count("<details class=cluster") == len(counts)
    for case_id in exported:
        assert f"<td>{case_id}</td>" in page
