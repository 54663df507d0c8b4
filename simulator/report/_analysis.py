"""From a run document to the numbers of a report: counts, pass^k with bootstrap intervals, rates, costs."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simulator.stats.estimators import reliability
from simulator.stats.faults import recovery_rates
from simulator.stats.summaries import cell_id, persona_metrics, run_metrics
from simulator.stats.user_review import review_summary
from simulator.stats.variance import held_side_note
from simulator.types.trajectory import CAP_REASONS, ERROR_REASONS

from ._load import load_run_document

__all__ = ["OUTCOMES", "RunReport", "TrialCell", "analyze_run", "assertion_label", "assertion_rates", "trial_outcome"]

OUTCOMES = ("passed", "state", "outputs", "process", "loops", "budget", "assertions", "cutoff", "error", "missing")
"""Outcome of a cell of the task x trial matrix: passed, failed by component (the first failed one), cutoff
(cut off by ``max_turns`` or ``max_steps``: a failure, not an error), error (the trial ended on an error reason
or could not be graded) or missing (planned but not recorded)."""

_COMPONENTS = ("state", "outputs", "process", "loops", "budget", "assertions")
_ERROR_REASONS = frozenset(str(r) for r in ERROR_REASONS)
_CAP_REASONS = frozenset(str(r) for r in CAP_REASONS)


@dataclass(frozen=True)
class TrialCell:
    """One planned (task, trial) pair of the run.

    Attributes:
        task_id: the task.
        trial: 0-based trial index.
        outcome: one of :data:`OUTCOMES`.
        failures: every failure of the trial (components and error reason), e.g. ``["state", "outputs"]``.
        record: the recorded trial (first record when duplicated), or None when missing.
    """

    task_id: str
    trial: int
    outcome: str
    failures: tuple[str, ...]
    record: Mapping[str, Any] | None


@dataclass(frozen=True)
class RunReport:
    """A run document analysed for reporting.

    Attributes:
        run_id: the run's id, when the document has one.
        config: the run configuration.
        document: the whole run document.
        task_ids: the planned tasks, in plan order.
        trials_per_task: planned trials per task (``n``).
        planned: planned (task, trial) pairs: tasks x trials.
        recorded: unique (task, trial) pairs present in the document.
        duplicates: records beyond the first of their (task, trial) pair.
        unplanned: unique pairs present that the plan does not have (unknown task or trial index >= n).
        cells: every planned pair, in task then trial order.
        metrics: the numbers (see :func:`analyze_run`).
    """

    run_id: str | None
    config: Mapping[str, Any]
    document: Mapping[str, Any]
    task_ids: list[str]
    trials_per_task: int
    planned: int
    recorded: int
    duplicates: int
    unplanned: int
    cells: list[TrialCell]
    metrics: dict[str, Any]

    def summary_json(self) -> dict[str, Any]:
        """Return the ``--format json`` document: ``{"run_id", "planned", "recorded", "duplicates", "metrics"}``.

        With ``data_notes`` too (recorded values shown as not available, one line per field) when there are any.
        """
        out = {"run_id": self.run_id, "planned": self.planned, "recorded": self.recorded,
               "duplicates": self.duplicates, "metrics": self.metrics}
        notes = self.document.get("data_notes")
        if notes:
            out["data_notes"] = notes
        return out

    def failed_cells(self) -> list[TrialCell]:
        """Return the recorded trials that failed, in task then trial order."""
        return [c for c in self.cells if c.record is not None and c.outcome != "passed"]


def trial_outcome(trial: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """Classify a recorded trial for the matrix.

    Args:
        trial: one trial of a run document.

    Returns:
        ``(outcome, failures)``: outcome is ``passed``, ``error`` (error termination reason or no grade), the
        first failed component (``state``, ``outputs``, ``process``, ``loops``, ``budget``, ``assertions``), or
        ``cutoff`` (a trial cut off by ``max_turns``/``max_steps`` with no component failed); failures lists
        every failure.
    """
    grade = trial.get("grade")
    reason = str(trial.get("termination_reason") or "")
    failures: list[str] = []
    if isinstance(grade, Mapping) and grade.get("failure"):
        failures = [f.strip() for f in str(grade["failure"]).split(",") if f.strip()]
    if trial.get("passed"):
        return "passed", ()
    if reason in _ERROR_REASONS and reason not in failures:
        failures.insert(0, reason)
    if grade is None:
        if not failures:
            failures.append(reason or "not graded")
        return "error", tuple(failures)
    if reason in _ERROR_REASONS:
        return "error", tuple(failures)
    for f in failures:
        if f in _COMPONENTS:
            return f, tuple(failures)
    if reason in _CAP_REASONS or any(f in _CAP_REASONS for f in failures):
        return "cutoff", tuple(failures or [reason])
    return "error", tuple(failures or ["failed"])


_WHAT_END = re.compile(r": | = | called (?=\d|successfully)")


def assertion_label(result: Mapping[str, Any]) -> str:
    """Return what an assertion checks, in one line that is the same in every trial of a task.

    The part of the result's ``summary`` before what was found (``refunds rows where order_id='4812'``,
    ``orders[order_id='4812'].status``, ``receive_return()``), followed by the task's note in parentheses.

    Args:
        result: one assertion result (the JSON form of :class:`simulator.grading.AssertionResult`).

    Returns:
        E.g. ``"refunds[refund_id='RF4812-1'].amount (the approved amount)"``.
    """
    what = _WHAT_END.split(str(result.get("summary") or result.get("type") or "?"), maxsplit=1)[0]
    note = result.get("note")
    return f"{what} ({note})" if note else what


def assertion_rates(cells: Iterable[TrialCell]) -> list[dict[str, Any]]:
    """Count, per task and assertion, the trials in which the assertion passed.

    Args:
        cells: the run's planned cells (those without a record, or whose grade has no assertions, are skipped).

    Returns:
        One entry per (task, assertion index), in task order then index: ``{"task_id", "index", "type",
        "label"`` (:func:`assertion_label`) ``, "passed", "skipped", "trials", "rate"}``; a skipped assertion (an
        ``event_order`` whose later event never happened) counts as passed and in ``skipped``.
    """
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    order: dict[str, int] = {}
    for c in cells:
        grade = c.record.get("grade") if c.record is not None else None
        part = grade.get("assertions") if isinstance(grade, Mapping) else None
        if not isinstance(part, Mapping):
            continue
        order.setdefault(c.task_id, len(order))
        for r in part.get("results") or []:
            if not isinstance(r, Mapping):
                continue
            index = int(r.get("index", 0))
            row = rows.setdefault((c.task_id, index), {
                "task_id": c.task_id, "index": index, "type": str(r.get("type")), "label": assertion_label(r),
                "passed": 0, "skipped": 0, "trials": 0})
            row["trials"] += 1
            row["passed"] += bool(r.get("passed"))
            row["skipped"] += bool(r.get("skipped"))
    out = [rows[k] for k in sorted(rows, key=lambda k: (order[k[0]], k[1]))]
    for row in out:
        row["rate"] = row["passed"] / row["trials"]
    return out


def _user_review(cells: Sequence[TrialCell], n: int) -> dict[str, Any]:
    """The user-simulator review over the planned trials (``user_metadata["review"]``).

    See :mod:`simulator.users.review` and :func:`simulator.stats.user_review.review_summary` (flags, causes and
    weaknesses, pass^k as measured and with simulator-caused trials set apart).
    """
    records = [{**c.record, "task_id": c.task_id, "persona": None, "trial": c.trial} for c in cells
               if c.record is not None]
    return review_summary(records, list(dict.fromkeys(c.task_id for c in cells)), n)


def _persona_name(trial: Mapping[str, Any]) -> str | None:
    persona = trial.get("persona")
    if persona is None:
        return None
    if isinstance(persona, Mapping):
        return str(persona.get("name") or persona.get("id") or "?")
    return str(persona)


def _planned_tasks(doc: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]) -> list[str]:
    planned = doc.get("planned_task_ids")
    if planned is None and isinstance(doc.get("task_ids"), list) and doc["task_ids"]:
        planned = [str(t) for t in doc["task_ids"]]
    if planned is None:
        raw = doc["config"].get("task_ids")
        if isinstance(raw, list) and raw:
            planned = [str(t).strip() for t in raw if str(t).strip()]
    if planned is None:
        seen: dict[str, None] = {}
        for t in trials:
            seen.setdefault(t["task_id"], None)
        planned = list(seen)
    return list(dict.fromkeys(planned))


def analyze_run(
    doc_or_path: Mapping[str, Any] | str,
    *,
    seed: int = 0,
    n_resamples: int = 2000,
) -> RunReport:
    """Analyse a run document.

    The planned tasks are the document's ``planned_task_ids`` or ``task_ids`` (a results-store document), else
    ``config.task_ids``, else the tasks that have a recorded trial. Duplicates are the records beyond the first of
    their (task, trial) pair, or the document's ``duplicates`` count when that is larger (the store returns each
    trial once and counts its duplicates). Each (task, trial) pair counts once (the first record); a planned pair
    that is missing counts as a failed trial in pass^k (the denominator is always the planned ``n``) and is
    reported on its own.

    Args:
        doc_or_path: a run document, or the path of one.
        seed: seed of the ``numpy.random.Generator(PCG64(seed))`` that draws the bootstrap resamples (a fresh
            generator per metric, so every interval is reproducible on its own).
        n_resamples: bootstrap resamples per interval.

    Returns:
        The :class:`RunReport`. Its ``metrics`` are :func:`simulator.stats.summaries.run_metrics` (the same
        implementation
        as ``tausim run --out``; missing trials counted as failures, duplicates beyond the first ignored, both
        reported) plus the report's own ``components``, ``outcomes``, ``failure_kinds`` and ``personas``. Among
        them: ``tasks``, ``trials_per_task``, ``pass^k`` and ``pass@k`` for
        k = 1..n, ``success_rate``, ``ci95`` (``{"pass^k": [low, high], ...}``, percentile bootstrap over tasks),
        ``bootstrap``, ``missing_trials``, ``unplanned_trials``, ``errored_trials``, ``components`` (state,
        outputs, process: passed/graded/rate), ``termination_reasons``, ``failure_kinds``, ``outcomes`` (matrix
        cells per outcome), ``abandonment_rate``, ``personas``, ``user_review`` (the user-simulator review's flag
        counts, failures the simulator caused apart from its weaknesses, pass^k both ways:
        :func:`simulator.stats.user_review.review_summary`), ``cost_usd`` (agent, user, total per trial statistics;
        unknown costs are counted in ``missing``, never as 0), ``tokens``, ``latency_s``, ``turns``,
        ``tool_calls``, ``assertions`` (per-assertion pass counts: :func:`assertion_rates`; empty when no task
        has assertions), and, for a run with environment faults, ``recovery`` (of the trials where a fault was
        injected, the share that passed, overall and per kind: :func:`simulator.stats.faults.recovery_rates`).

    Raises:
        RunDocumentError: the document is malformed.
    """
    doc = load_run_document(doc_or_path)
    config = doc["config"]
    n = int(config.get("trials", 1))
    trials: list[Mapping[str, Any]] = doc["trials"]
    task_ids = _planned_tasks(doc, trials)
    run_personas = [str(p) for p in config.get("personas") or []]
    cell_tasks: dict[str, str] = {}
    if run_personas:  # a run with personas: the unit of reliability is the task cell (task@persona)
        trials = [{**t, "task_id": cell_id(str(t["task_id"]), _persona_name(t))} for t in trials]
        cell_tasks = {cell_id(tid, p): tid for tid in task_ids if "@" not in tid for p in run_personas}
        task_ids = list(cell_tasks) or task_ids
    # the planned pairs' first records, duplicates and unplanned pairs: the same aggregation as pass^k's
    rel = reliability(trials, task_ids, n, incomplete="count") if task_ids else None
    first = rel.records if rel is not None else {}
    duplicates = rel.duplicates if rel is not None else 0
    unplanned = rel.unplanned if rel is not None else 0
    # A store document holds each trial once and counts the duplicate records it holds beside them.
    stored_duplicates = doc.get("duplicates")
    if isinstance(stored_duplicates, int) and not isinstance(stored_duplicates, bool):
        duplicates = max(duplicates, stored_duplicates)

    cells: list[TrialCell] = []
    for tid in task_ids:
        for i in range(n):
            rec = first.get((tid, i))
            if rec is None:
                cells.append(TrialCell(tid, i, "missing", ("missing",), None))
            else:
                outcome, failures = trial_outcome(rec)
                cells.append(TrialCell(tid, i, outcome, failures, rec))

    gold = doc.get("gold_actions")
    metrics: dict[str, Any] = {"tasks": len(task_ids), "trials_per_task": n}
    if task_ids:
        metrics.update(run_metrics(
            trials, task_ids, n, incomplete="count", seed=seed, n_resamples=n_resamples,
            gold=gold if isinstance(gold, Mapping) else None, write_tools=doc.get("write_tools") or (),
            tags=doc.get("task_tags") if isinstance(doc.get("task_tags"), Mapping) else None, cell_tasks=cell_tasks))
    else:
        metrics["bootstrap"] = {"over": "tasks", "seed": seed, "resamples": n_resamples, "level": 0.95}
    in_plan = [c.record for c in cells if c.record is not None]
    metrics["missing_trials"] = sum(1 for c in cells if c.record is None)
    metrics["unplanned_trials"] = unplanned
    metrics["duplicate_records"] = duplicates
    metrics["errored_trials"] = sum(1 for c in cells if c.outcome == "error")
    metrics["outcomes"] = {o: sum(1 for c in cells if c.outcome == o) for o in OUTCOMES}
    layers = metrics.get("layers") or {}
    metrics["components"] = {comp: layers.get(comp, {"passed": 0, "graded": 0, "rate": None})
                             for comp in _COMPONENTS if comp != "assertions" or comp in layers}
    kinds: Counter[str] = Counter()
    for c in cells:
        if c.outcome != "passed":
            kinds.update(c.failures)
    metrics["failure_kinds"] = dict(kinds.most_common())
    metrics["assertions"] = assertion_rates(cells)
    metrics["user_review"] = _user_review(cells, n)
    faults = config.get("faults")
    if doc.get("recovery") is not None or (isinstance(faults, Mapping) and any(faults.values())) or any(
            r.get("faults") for r in in_plan):
        metrics["recovery"] = recovery_rates(in_plan)

    personas: dict[str, dict[str, Any]] = {}
    for r in in_plan:
        persona = _persona_name(r)
        if persona is None:
            continue
        p = personas.setdefault(persona, {"trials": 0, "passed": 0, "abandoned": 0, "turns": []})
        p["trials"] += 1
        p["passed"] += bool(r["passed"])
        p["abandoned"] += r.get("termination_reason") == "user_abandon"
        p["turns"].append((r.get("trajectory") or {}).get("turns"))
    for p in personas.values():
        turns = [t for t in p.pop("turns") if isinstance(t, int | float)]
        p["success_rate"] = p["passed"] / p["trials"]
        p["abandonment_rate"] = p["abandoned"] / p["trials"]
        p["mean_turns"] = float(np.mean(turns)) if turns else None
    if run_personas and task_ids:
        plain_tasks = [t for t in _planned_tasks(doc, doc["trials"]) if "@" not in t]
        by = persona_metrics([t for t in doc["trials"] if _persona_name(t) in run_personas], plain_tasks, n,
                             run_personas, incomplete="count", seed=seed, n_resamples=n_resamples)
        for name, pm in by.items():
            entry = personas.setdefault(name, {"trials": 0, "passed": 0, "abandoned": 0, "success_rate": None,
                                               "abandonment_rate": None, "mean_turns": None})
            entry.update({key: value for key, value in pm.items() if key.startswith("pass^")})
            entry["mean_turns_to_abandon"] = pm["mean_turns_to_abandon"]
            entry["user_flags"] = pm["user_flags"]
        metrics["by_persona"] = by
    metrics["personas"] = dict(sorted(personas.items()))
    metrics["vary"] = config.get("vary") or "both"
    metrics["vary_note"] = held_side_note(metrics["vary"])
    return RunReport(
        run_id=doc.get("run_id"), config=config, document=doc, task_ids=task_ids, trials_per_task=n,
        planned=len(task_ids) * n, recorded=len(first) + unplanned, duplicates=duplicates, unplanned=unplanned,
        cells=cells, metrics=metrics,
    )
