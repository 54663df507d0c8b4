"""Every site that reports pass^k agrees with the one aggregation, on a run with missing and duplicated trials."""

from __future__ import annotations

import pytest

from simulator.analysis.gate import GateError, evaluate_gate, run_reliability
from simulator.execution.runner import RunResult, TrialResult, run_summary_json
from simulator.report import analyze_run
from simulator.stats.estimators import reliability
from simulator.stats.summaries import run_metrics
from simulator.storage.store import ResultsStore
from simulator.types.spec import RunSpec
from tests._support.report_docs import trial

# Worked by hand for tasks a, b and n = 3 planned trials (a/0 passed, a/1 failed, a/0 again failed: a duplicate,
# ignored; a/2 missing: a failure; b passed 3 of 3), so c_a = 1, c_b = 3:
#   pass^1 = (1/3 + 3/3) / 2 = 2/3     pass@1 = 2/3
#   pass^2 = (C(1,2)/C(3,2) + 1) / 2 = (0 + 1) / 2 = 1/2
#   pass@2 = ((1 - C(2,2)/C(3,2)) + 1) / 2 = (2/3 + 1) / 2 = 5/6
#   pass^3 = (0 + 1) / 2 = 1/2         pass@3 = (1 + 1) / 2 = 1
EXPECTED = {"pass^1": 2 / 3, "pass@1": 2 / 3, "pass^2": 1 / 2, "pass@2": 5 / 6, "pass^3": 1 / 2, "pass@3": 1.0,
            "success_rate": 4 / 6}


def _trials(persona: str | None) -> list[dict]:
    return [trial("a", 0, True, persona=persona), trial("a", 1, False, failure="state", persona=persona),
            trial("a", 0, False, failure="state", persona=persona),  # duplicate of a/0: ignored
            *(trial("b", i, True, persona=persona) for i in range(3))]


def _doc(personas: list[str] | None) -> dict:
    config = {"domain": "retail", "agent": "null", "user": "scripted", "trials": 3, "seed": 0,
              "task_ids": ["a", "b"], "personas": personas}
    return {"format": "tausim.run", "version": 1, "config": config,
            "trials": _trials(personas[0] if personas else None)}


def _suite(metrics: dict) -> dict:
    return {k: metrics[k] for k in EXPECTED}


@pytest.mark.parametrize("personas", [None, ["patient"]])
def test_every_site_agrees_on_an_incomplete_run_with_a_duplicate(tmp_path, personas):
    doc = _doc(personas)
    rel = reliability(doc["trials"], ["a", "b"], 3, personas=personas, incomplete="count")
    assert _suite(rel.suite) == pytest.approx(EXPECTED)
    assert (rel.missing, rel.duplicates, rel.unplanned, rel.complete) == (1, 1, 0, False)
    cell_a = "a@patient" if personas else "a"
    assert rel.outcomes[cell_a] == [True, False, False]  # the first a/0 counts, a/2 is missing

    # run_metrics (--out and report), the run document of a partial run, and tausim report's analysis
    m = run_metrics(doc["trials"], ["a", "b"], 3, personas=personas, incomplete="count")
    assert _suite(m) == pytest.approx(EXPECTED)
    assert (m["missing_trials"], m["duplicate_records"]) == (1, 1)
    result = RunResult(config=RunSpec(**{k: v for k, v in doc["config"].items()}),
                       trials=[TrialResult.model_validate(t) for t in doc["trials"]], planned=6)
    out_doc = run_summary_json(result)
    assert _suite(out_doc["metrics"]) == pytest.approx(EXPECTED)
    report = analyze_run(doc)
    assert _suite(report.metrics) == pytest.approx(EXPECTED)
    assert (report.planned, report.recorded, report.duplicates, report.metrics["missing_trials"]) == (6, 5, 1, 1)
    if personas:  # the per-persona table: the one persona played every cell
        assert _suite(m["by_persona"]["patient"]) == pytest.approx({k: v for k, v in EXPECTED.items()})

    # the results store (keeps the first record of a trial) and regrade's before/after (the store's metrics)
    store = ResultsStore(f"sqlite:///{tmp_path / 'runs.db'}")
    store.create_run(result.config, ["a", "b"], run_id="r")
    for t in result.trials:
        store.record("r", t)
    assert _suite(store.load_run_result("r").metrics) == pytest.approx(EXPECTED)
    assert _suite(store.load_run_document("r")["metrics"]) == pytest.approx(EXPECTED)

    # the gate refuses the run, naming the duplicated trial, then (without it) the missing one
    with pytest.raises(GateError, match=rf"baseline: task '{cell_a}': trial 0 recorded more than once"):
        evaluate_gate(doc, doc)
    del doc["trials"][2]
    with pytest.raises(GateError, match=rf"baseline: task '{cell_a}': trial 2 is missing \(2 of 3"):
        evaluate_gate(doc, doc)


def test_sites_agree_once_the_run_is_complete():
    doc = _doc(None)
    doc["trials"] = [t for i, t in enumerate(doc["trials"]) if i != 2] + [trial("a", 2, False, failure="state")]
    rel = run_reliability(doc, "run")
    assert rel.complete and _suite(rel.suite) == pytest.approx(EXPECTED)
    assert rel.per_cell["a"] == pytest.approx({"successes": 1, "pass^1": 1 / 3, "pass@1": 1 / 3, "pass^2": 0.0,
                                               "pass@2": 2 / 3, "pass^3": 0.0, "pass@3": 1.0})
    gate = evaluate_gate(doc, doc, k=2)
    assert [r.metric for r in gate.rows] == ["pass^1", "pass^2"]
    assert [r.candidate for r in gate.rows] == pytest.approx([2 / 3, 1 / 2])
    result = RunResult(config=RunSpec(domain="retail", trials=3, task_ids=["a", "b"]),
                       trials=[TrialResult.model_validate(t) for t in doc["trials"]], planned=6)
    m = run_summary_json(result)["metrics"]  # a complete run is checked strictly
    assert _suite(m) == pytest.approx(EXPECTED) == _suite(analyze_run(doc).metrics)


def test_refuse_names_the_first_problem():
    trials = _trials(None)
    with pytest.raises(ValueError, match="task 'a': trial 0 recorded more than once"):
        reliability(trials, ["a", "b"], 3)
    with pytest.raises(ValueError, match="task 'c': trial 0 is not planned"):
        reliability([trial("c", 0, True)], ["a"], 1)
    with pytest.raises(ValueError, match="no tasks"):
        reliability([], [], 1)
    rel = reliability([trial("c", 0, True), trial("c", 0, True), trial("a", 0, True)], ["a"], 1, incomplete="count")
    assert (rel.unplanned, rel.duplicates, rel.complete, rel.suite["pass^1"]) == (1, 1, False, 1.0)
