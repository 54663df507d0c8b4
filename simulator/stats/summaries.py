"""Reliability metrics: pass^k, pass@k, success rate, bootstrap intervals, summary statistics.

Definitions (for one task with ``n`` planned trials of which ``c`` succeeded):

- ``pass^k = C(c, k) / C(n, k)``: the probability that ``k`` trials drawn without replacement from the
  ``n`` all succeed, an unbiased estimator of the chance that ``k`` independent trials all succeed.
  Source: Yao et al. 2024, "tau-bench: A Benchmark for Tool-Agent-User Interaction in Real-World
  Domains" (arXiv:2406.12045).
- ``pass@k = 1 - C(n - c, k) / C(n, k)``: the probability that at least one of ``k`` such trials
  succeeds. Source: Chen et al. 2021, "Evaluating Large Language Models Trained on Code" (the Codex
  paper, arXiv:2107.03374), the unbiased estimator of section 2.1.

The suite value of either is the mean over tasks. :func:`reliability` is the one place that turns a run's
trial records into these numbers (grouping trials into task cells, counting a missing trial as a failure,
ignoring a duplicate beyond the first record); the runner, the results store, ``--out``, ``tausim report``,
the gate, regrade and the per-persona tables all call it. The denominator is always the *planned* number of
trials: a trial that crashed or hit an API error must be passed in as a failure (``False``) and is
reported on its own elsewhere; a task with fewer or more recorded outcomes than planned is refused, so a
dropped trial can never silently shrink a denominator. ``k > n`` is refused.

All functions are pure: no global state, and randomness (the bootstrap) only through a
``numpy.random.Generator`` passed in by the caller.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from simulator.stats.estimators import (
    Reliability,
    bootstrap_ci,
    cell_id,
    reliability,
    summary_stats,
)
from simulator.stats.power import noise_floor
from simulator.stats.trajectory import tool_call_accuracy
from simulator.types.sanitize import known_cost

__all__ = ["LAYERS", "complete_suite", "persona_metrics", "run_metrics", "summarize_tool_accuracy", "violation_metrics"]



























# ------------------------------------------------------------------------------------------ tool-call accuracy






def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def summarize_tool_accuracy(counts: Iterable[Mapping[str, int]]) -> dict[str, Any]:
    """Pool per-trial :func:`tool_call_accuracy` counts (micro averages over every call and gold action).

    Returns:
        ``{"trials", "name_precision", "name_recall", "write_name_precision", "write_name_recall",
        "argument_accuracy", "counts"}``; a ratio is None when its denominator is 0 (e.g. no write called).
    """
    keys = ("called", "gold", "name_matched", "called_write", "gold_write", "name_matched_write", "args_matched")
    total = dict.fromkeys(keys, 0)
    trials = 0
    for c in counts:
        trials += 1
        for k in keys:
            total[k] += int(c.get(k, 0))
    return {
        "trials": trials,
        "name_precision": _ratio(total["name_matched"], total["called"]),
        "name_recall": _ratio(total["name_matched"], total["gold"]),
        "write_name_precision": _ratio(total["name_matched_write"], total["called_write"]),
        "write_name_recall": _ratio(total["name_matched_write"], total["gold_write"]),
        "argument_accuracy": _ratio(total["args_matched"], total["gold"]),
        "counts": total,
    }


# ------------------------------------------------------------------------------------------ safety violations


def violation_metrics(trials: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Count the safety violations of a run's trials (``grade.violations``, see :mod:`simulator.grading.safety`).

    Violations are counted, never averaged with successes: a passing trial's violation counts like any other.

    Args:
        trials: recorded trials (the JSON form of ``TrialResult``); a trial without a grade has no violation.

    Returns:
        ``{"total", "trials", "trials_with_violation", "rate", "by_kind": {kind: {"count", "trials", "rate"}},
        "by_severity": {severity: count}}``: ``rate`` is trials with at least one violation / trials, a kind's
        ``rate`` trials with at least one violation of that kind / trials (None without trials). Example: 20
        trials, one with two ``forbidden_tool`` violations: total 2, rate 0.05, by_kind forbidden_tool count 2,
        trials 1, rate 0.05.
    """
    total = 0
    n = 0
    with_any = 0
    count: Counter[str] = Counter()
    trials_of: Counter[str] = Counter()
    severity: Counter[str] = Counter()
    for t in trials:
        n += 1
        grade = t.get("grade")
        found = grade.get("violations") if isinstance(grade, Mapping) else None
        items = [v for v in found or [] if isinstance(v, Mapping)]
        total += len(items)
        with_any += bool(items)
        kinds = [str(v.get("kind")) for v in items]
        count.update(kinds)
        trials_of.update(set(kinds))
        severity.update(str(v.get("severity")) for v in items)
    return {"total": total, "trials": n, "trials_with_violation": with_any, "rate": _ratio(with_any, n),
            "by_kind": {k: {"count": count[k], "trials": trials_of[k], "rate": _ratio(trials_of[k], n)}
                        for k in sorted(count)},
            "by_severity": dict(sorted(severity.items()))}


# ------------------------------------------------------------------------------------------ run metrics

LAYERS = ("state", "outputs", "process", "loops", "budget", "assertions", "judge")
"""Grading layers reported by :func:`run_metrics` (``assertions`` and ``judge`` only when some trial has them)."""

_ERROR_REASONS = frozenset({"agent_error", "user_error", "tool_bug", "infra_error", "context_overflow", "setup_error",
                            "timeout"})


def _usage_of(trial: Mapping[str, Any], who: str) -> Mapping[str, Any] | None:
    """The usage record of ``who`` (agent, user, judge) in a trial document, or None when absent."""
    traj = trial.get("trajectory")
    usage = traj.get(f"{who}_usage") if isinstance(traj, Mapping) else None
    if usage is None and who == "judge":
        grade = trial.get("grade")
        judge = grade.get("judge") if isinstance(grade, Mapping) else None
        usage = judge.get("usage") if isinstance(judge, Mapping) else None
    return usage if isinstance(usage, Mapping) else None


def _layer_passed(grade: Mapping[str, Any], layer: str) -> bool | None:
    """Whether a grade's layer passed; None when the layer is absent or was not graded (a judge without model)."""
    part = grade.get(layer)
    if not isinstance(part, Mapping):
        return None
    if "passed" in part:
        return bool(part["passed"])
    status = part.get("status")
    return None if status not in ("passed", "failed") else status == "passed"


def _cost_of(trial: Mapping[str, Any], who: str) -> float | None:
    """A party's cost of a trial in USD; None when unknown (absent, or not a finite amount >= 0: ``known_cost``)."""
    usage = _usage_of(trial, who)
    return None if usage is None else known_cost(usage.get("cost_usd"))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _traj_value(r: Mapping[str, Any], key: str) -> float | None:
    """Return the number ``trajectory[key]`` of a trial record, or None when absent or not a number."""
    traj = r.get("trajectory")
    return _number(traj.get(key)) if isinstance(traj, Mapping) else None


def _stats_dict(values: Iterable[float | None]) -> dict[str, Any]:
    s = summary_stats(values)
    return {"count": s.count, "missing": s.missing, "total": s.total, "mean": s.mean, "p50": s.p50, "p95": s.p95,
            "max": s.max}




_PERSONA_FIELDS = ("mean_turns_to_abandon", "user_flags", "infra_error_rate", "loop_rate", "success_rate")


def complete_suite(trials: Sequence[Mapping[str, Any]], task_ids: Sequence[str], trials_per_task: int,
                   personas: Sequence[str] | None = None) -> dict[str, Any]:
    """Return a run's suite metrics (pass^k and pass@k for k = 1..n) when every planned trial is there, else ``{}``.

    Args:
        trials: the run's trial records (``task_id``, ``persona``, ``trial``, ``passed``), a resumed run's earlier
            ones included.
        task_ids: the planned tasks (none: ``{}``).
        trials_per_task: planned trials per task (``n``).
        personas: the run's personas, or None.

    Returns:
        :attr:`simulator.stats.estimators.Reliability.suite`, or ``{}`` for an incomplete run.
    """
    if not task_ids:
        return {}
    rel = reliability(trials, list(task_ids), trials_per_task, personas=list(personas or []), incomplete="count")
    return rel.suite if rel.complete else {}


def persona_metrics(
    trials: Sequence[Mapping[str, Any]],
    task_ids: Sequence[str],
    trials_per_task: int,
    personas: Sequence[str],
    *,
    incomplete: str = "refuse",
    seed: int = 0,
    n_resamples: int = 2000,
) -> dict[str, dict[str, Any]]:
    """Reliability and abandonment of each persona of a run (the ``by_persona`` of ``--out`` and reports).

    Each persona's trials are a run of their own over the same tasks (see :func:`run_metrics`).

    Args:
        trials: recorded trials (JSON form of ``TrialResult``) with their ``persona``.
        task_ids: the planned tasks.
        trials_per_task: planned trials per (task, persona) cell, ``n``.
        personas: the planned persona names.
        incomplete: as in :func:`run_metrics`.
        seed: bootstrap seed.
        n_resamples: bootstrap resamples.

    Returns:
        ``{persona: {"pass^k" (k = 1..n), "pass@k", "ci95", "abandon_rate", "mean_turns_to_abandon",
        "user_flags", "infra_error_rate", "loop_rate", "success_rate", "trials"}}``; ``abandon_rate`` is the share
        of the persona's recorded trials that ended ``user_abandon``, ``mean_turns_to_abandon`` the mean number of
        messages (user and agent together) of those trials (None without any),
        ``trials`` the recorded trials of the persona.

    Raises:
        ValueError: as :func:`run_metrics` (the message names the persona).
    """
    out: dict[str, dict[str, Any]] = {}
    for name in personas:
        subset = [t for t in trials if t.get("persona") == name]
        try:
            m = run_metrics(subset, task_ids, trials_per_task, incomplete=incomplete, seed=seed,
                            n_resamples=n_resamples)
        except ValueError as e:
            raise ValueError(f"persona {name!r}: {e}") from e
        entry: dict[str, Any] = {key: m[key] for key in m if key.startswith(("pass^", "pass@"))}
        entry["ci95"] = m["ci95"]
        entry["abandon_rate"] = m["abandonment_rate"]
        entry.update({key: m[key] for key in _PERSONA_FIELDS})
        entry["trials"] = m["recorded"]
        out[name] = entry
    return out


def run_metrics(
    trials: Sequence[Mapping[str, Any]],
    task_ids: Sequence[str],
    trials_per_task: int,
    *,
    personas: Sequence[str] | None = None,
    incomplete: str = "refuse",
    gold: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    write_tools: Iterable[str] = (),
    seed: int = 0,
    n_resamples: int = 2000,
    tags: Mapping[str, Sequence[str]] | None = None,
    cell_tasks: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Every number of a run, from its trial records (the JSON form of ``TrialResult``).

    This is the one implementation behind the ``metrics`` of ``tausim run --out`` and of ``tausim report``.

    Args:
        trials: the recorded trials: ``{"task_id", "trial", "passed", "termination_reason", "grade",
            "trajectory", "duration_s"}``.
        task_ids: the planned tasks.
        trials_per_task: planned trials per task (per task cell with personas), ``n``.
        personas: the planned personas of a run with personas: reliability is then computed over task cells
            (task x persona, see :func:`cell_id`) and ``by_persona`` (see :func:`persona_metrics`) is added;
            None: a run without personas.
        incomplete: ``"refuse"`` (default): a task with a missing or duplicated trial raises ValueError naming
            the task; ``"count"``: a missing trial counts as a failure and is reported in ``missing_trials``, and
            of a duplicated (task, trial) pair only the first record counts (reported in ``duplicate_records``).
        gold: task id -> gold actions (``{"name", "arguments"}``), for tool-call accuracy; tasks without gold
            are left out of it. None: a trial grade's ``tool_accuracy`` counts are used when recorded.
        write_tools: the domain's write tool names (for the write-only tool-name precision/recall).
        seed: seed of the bootstrap generators (a fresh ``Generator(PCG64(seed))`` per interval).
        n_resamples: bootstrap resamples per interval.
        tags: task id -> its tags; when given, ``by_tag`` gives each tag's ``pass^k``/``pass@k`` (k = 1..n) and
            ``success_rate`` over the planned task cells carrying it (the same aggregation, :func:`reliability`,
            missing trials counted as failures), with ``tasks`` (the distinct tasks carrying it), ``cells`` (its
            task cells: tasks x personas; = ``tasks`` in a run without personas) and ``trials`` (the recorded
            trials of those cells).
        cell_tasks: when ``task_ids`` and the records' ``task_id`` are already task cells (``task@persona``,
            :func:`cell_id`; ``tausim report`` passes them so): each cell's task, so that ``by_tag`` reads a cell's
            tags from its task and counts tasks, not cells. None: the cells are the tasks.

    Returns:
        ``pass^k``/``pass@k`` for k = 1..n and ``success_rate`` (means over tasks; the planned ``n`` is the
        denominator, errored trials count as failures), ``ci95`` (percentile bootstrap over tasks), ``per_task``
        (successes and pass^k/pass@k of each task), ``layers`` (per grading layer: passed, graded, rate;
        ``judge`` only when judged), ``state_pass_other_fail_rate`` (see below), ``termination_reasons``,
        ``errored_trials``, ``infra_errors``/``infra_error_rate``, ``loop_rate``, ``abandonment_rate``,
        ``mean_turns_to_abandon`` (mean messages of the abandoned trials; None without any), ``user_flags``
        (trials carrying each simulated-user flag such as ``user_leak``), with personas ``personas`` and
        ``by_persona``,
        ``cost_usd`` (agent, user, judge, total: per-trial statistics, ``per_task`` and ``per_success``; None
        when any cost is unknown, never $0), ``tokens``, ``latency_s`` (trial and per party, p50/p95),
        ``tool_accuracy`` (see :func:`summarize_tool_accuracy`), ``violations`` (safety violations counted per kind
        and severity, see :func:`violation_metrics`), ``trajectory`` and ``trajectory_per_task`` (the trajectory
        metrics against each task's reference trajectory, see :mod:`simulator.stats.trajectory`; reported apart
        from pass), ``mean_steps`` (agent actions per trial), ``timeout_rate`` (trials ending ``timeout``),
        ``missing_trials``, ``duplicate_records``; ``noise_floor``: the minimum detectable difference of pass^1 and
        pass^n between two paired runs of these tasks and trials (:func:`simulator.stats.power.noise_floor`).

        ``state_pass_other_fail_rate`` ("got lucky"): among graded trials, the share whose final database
        matched the goal (state passed) while another layer (outputs, process, loops, budget, judge) failed:
        the right end state reached by breaking a rule, looping, overspending or saying the wrong thing. A
        state-only benchmark would count these trials as successes.

    Raises:
        ValueError: with ``incomplete="refuse"``, a task with a missing or duplicated trial (the message names
            it); a recorded trial of a task that is not planned; no tasks.
    """
    if incomplete not in ("refuse", "count"):
        raise ValueError(f"incomplete must be 'refuse' or 'count', got {incomplete!r}")
    if personas:
        return _persona_run_metrics(trials, task_ids, trials_per_task, list(dict.fromkeys(personas)),
                                    incomplete=incomplete, gold=gold, write_tools=write_tools, seed=seed,
                                    n_resamples=n_resamples, tags=tags)
    rel = reliability(trials, task_ids, trials_per_task, incomplete=incomplete)
    n = rel.trials_per_task
    records = list(rel.records.values())
    out: dict[str, Any] = {"tasks": len(rel.outcomes), "trials_per_task": n, "planned": len(rel.outcomes) * n,
                           "recorded": len(records)}
    out.update(rel.suite)
    out["ci95"] = _bootstrap_cis(rel, seed=seed, n_resamples=n_resamples)
    out["bootstrap"] = {"over": "tasks", "seed": seed, "resamples": n_resamples, "level": 0.95}
    out["noise_floor"] = noise_floor(rel.per_cell, n)
    out["per_task"] = rel.per_cell
    out["missing_trials"] = rel.missing
    out["duplicate_records"] = rel.duplicates
    out["unplanned_trials"] = rel.unplanned
    planned_ids = list(rel.outcomes)

    grades = [r["grade"] for r in records if isinstance(r.get("grade"), Mapping)]
    layers = _layer_metrics(grades)
    out["layers"] = layers
    out.update(_lucky_metrics(grades, layers))
    out.update(_ending_metrics(records, len(planned_ids) * n, layers))
    out["cost_usd"] = _cost_metrics(records, len(planned_ids))
    out["tokens"] = {
        who: {"prompt": sum(int((_usage_of(r, who) or {}).get("prompt_tokens") or 0) for r in records),
              "completion": sum(int((_usage_of(r, who) or {}).get("completion_tokens") or 0) for r in records),
              "calls": sum(int((_usage_of(r, who) or {}).get("calls") or 0) for r in records)}
        for who in _PARTIES
    }

    out["latency_s"] = {
        "trial": _stats_dict([_number(r.get("duration_s")) for r in records]),
        "agent": _stats_dict([_traj_value(r, "agent_seconds") for r in records]),
        "user": _stats_dict([_traj_value(r, "user_seconds") for r in records]),
        "tool": _stats_dict([_traj_value(r, "tool_seconds") for r in records]),
    }
    out["turns"] = _stats_dict([_traj_value(r, "turns") for r in records])
    out["tool_calls"], out["tool_accuracy"] = _tool_call_metrics(records, gold, write_tools)
    if tags is not None:
        out["by_tag"] = _by_tag(records, planned_ids, n, tags, cell_tasks or {})
    out["violations"] = violation_metrics(records)
    out.update(_trajectory_summary(records))
    return out


_PARTIES = ("agent", "user", "judge")
"""The parties whose usage and cost a run reports."""


def _persona_run_metrics(trials: Sequence[Mapping[str, Any]], task_ids: Sequence[str], trials_per_task: int,
                         names: list[str], *, incomplete: str, gold: Mapping[str, Sequence[Mapping[str, Any]]] | None,
                         write_tools: Iterable[str], seed: int, n_resamples: int,
                         tags: Mapping[str, Sequence[str]] | None) -> dict[str, Any]:
    """:func:`run_metrics` of a run with personas.

    Reliability and every other number are computed over task cells (``task@persona``); ``personas`` (the names)
    and ``by_persona`` (:func:`persona_metrics`) are added.
    """
    cells = [{**t, "task_id": cell_id(str(t["task_id"]), t.get("persona"))} for t in trials]
    cell_ids = [cell_id(tid, p) for tid in dict.fromkeys(task_ids) for p in names]
    cell_gold = None if gold is None else {cell_id(tid, p): g for tid, g in gold.items() for p in names}
    whole = run_metrics(cells, cell_ids, trials_per_task, incomplete=incomplete, gold=cell_gold,
                        write_tools=write_tools, seed=seed, n_resamples=n_resamples, tags=tags,
                        cell_tasks={cell_id(tid, p): tid for tid in dict.fromkeys(task_ids) for p in names})
    whole["personas"] = names
    whole["by_persona"] = persona_metrics(trials, task_ids, trials_per_task, names, incomplete=incomplete,
                                          seed=seed, n_resamples=n_resamples)
    return whole


def _bootstrap_cis(rel: Reliability, *, seed: int, n_resamples: int) -> dict[str, list[float]]:
    """Return ``{"pass^k": [low, high], "pass@k": [...]}`` for k = 1..n: percentile bootstrap over the cells."""
    ci: dict[str, list[float]] = {}
    for k in range(1, rel.trials_per_task + 1):
        for name in ("pass^", "pass@"):
            values = [entry[f"{name}{k}"] for entry in rel.per_cell.values()]
            low, high = bootstrap_ci(values, rng=np.random.Generator(np.random.PCG64(seed)), n_resamples=n_resamples)
            ci[f"{name}{k}"] = [low, high]
    return ci


def _layer_metrics(grades: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Return ``{layer: {"passed", "graded", "rate"}}`` per grading layer (``assertions``/``judge`` only when used)."""
    layers: dict[str, dict[str, Any]] = {}
    for layer in LAYERS:
        flags = [f for f in (_layer_passed(g, layer) for g in grades) if f is not None]
        if layer in ("assertions", "judge") and not flags:
            continue
        layers[layer] = {"passed": sum(flags), "graded": len(flags), "rate": _ratio(sum(flags), len(flags))}
    return layers


def _lucky_metrics(grades: Sequence[Mapping[str, Any]], layers: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``state_pass_other_fail_rate`` and ``state_pass_other_fail_by_layer`` (see :func:`run_metrics`)."""
    lucky_by: Counter[str] = Counter()
    lucky = 0
    for g in grades:
        state = g.get("state")
        if not (isinstance(state, Mapping) and state.get("passed")):
            continue
        failed = [lay for lay in LAYERS[1:] if _layer_passed(g, lay) is False]
        lucky += bool(failed)
        lucky_by.update(failed)
    return {"state_pass_other_fail_rate": _ratio(lucky, len(grades)),
            "state_pass_other_fail_by_layer": {lay: _ratio(lucky_by[lay], len(grades)) for lay in LAYERS[1:]
                                               if lay in layers}}


def _ending_metrics(records: Sequence[Mapping[str, Any]], planned_total: int,
                    layers: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Return how trials ended.

    Returns:
        ``termination_reasons``, ``errored_trials``, ``infra_errors``, ``infra_error_rate``, ``loop_rate``,
        ``abandonment_rate``, ``mean_turns_to_abandon`` and ``user_flags``, in that order.
    """
    out: dict[str, Any] = {}
    reasons = Counter(str(r.get("termination_reason")) for r in records)
    out["termination_reasons"] = dict(sorted(reasons.items()))
    errored = sum(1 for r in records if str(r.get("termination_reason")) in _ERROR_REASONS
                  or not isinstance(r.get("grade"), Mapping))
    out["errored_trials"] = errored
    out["infra_errors"] = reasons.get("infra_error", 0)
    out["infra_error_rate"] = reasons.get("infra_error", 0) / planned_total
    loops = layers.get("loops")
    out["loop_rate"] = None if not loops or not loops["graded"] else 1.0 - loops["rate"]
    out["abandonment_rate"] = _ratio(reasons.get("user_abandon", 0), len(records))
    abandoned_turns = [_traj_value(r, "turns") for r in records if str(r.get("termination_reason")) == "user_abandon"]
    known_turns = [v for v in abandoned_turns if v is not None]
    out["mean_turns_to_abandon"] = float(np.mean(known_turns)) if known_turns else None
    user_flags: Counter[str] = Counter()
    for r in records:
        traj = r.get("trajectory")
        meta = traj.get("user_metadata") if isinstance(traj, Mapping) else None
        if isinstance(meta, Mapping) and isinstance(meta.get("flags"), list):
            user_flags.update({str(f) for f in meta["flags"]})
    out["user_flags"] = dict(sorted(user_flags.items()))  # trials carrying each user flag (user_leak, role_flip...)
    return out


def _total_cost(values: list[float | None]) -> float | None:
    """The sum of some costs; None when there are none or any is unknown."""
    return None if not values or any(v is None for v in values) else float(sum(v for v in values if v))


def _cost_metrics(records: Sequence[Mapping[str, Any]], planned_cells: int) -> dict[str, Any]:
    """Return ``cost_usd``: per party and ``total``, per-trial statistics, ``per_task`` and ``per_success``."""
    successes = sum(1 for r in records if r.get("passed"))
    costs = {who: [_cost_of(r, who) for r in records] for who in _PARTIES}
    # a trial without any judge usage was not judged: its judge cost is 0 by definition, not unknown
    costs["judge"] = [_cost_of(r, "judge") if _usage_of(r, "judge") is not None else 0.0 for r in records]
    cost: dict[str, Any] = {}
    trial_totals: list[float | None] = []
    for i in range(len(records)):
        parts = [costs[who][i] for who in _PARTIES]
        trial_totals.append(None if any(p is None for p in parts) else float(sum(p for p in parts if p)))
    for who, party_costs in (*costs.items(), ("total", trial_totals)):
        tot = _total_cost(party_costs)
        cost[who] = {**_stats_dict(party_costs), "per_task": None if tot is None else tot / planned_cells,
                     "per_success": None if tot is None or not successes else tot / successes}
    cost["per_task"] = cost["total"]["per_task"]
    cost["per_success"] = cost["total"]["per_success"]
    return cost


def _tool_call_metrics(records: Sequence[Mapping[str, Any]], gold: Mapping[str, Sequence[Mapping[str, Any]]] | None,
                       write_tools: Iterable[str]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Return ``(tool_calls, tool_accuracy)``: calls per trial and by status; tool-call accuracy (None: no data)."""
    statuses: Counter[str] = Counter()
    per_trial: list[float | None] = []
    accuracy: list[Mapping[str, int]] = []
    writes = set(write_tools)
    for r in records:
        traj = r.get("trajectory")
        calls = [c for c in ((traj.get("tool_calls") if isinstance(traj, Mapping) else None) or [])
                 if isinstance(c, Mapping)]
        per_trial.append(float(len(calls)))
        statuses.update(str(c.get("status")) for c in calls)
        if gold is not None:
            if str(r["task_id"]) in gold:
                task_writes = writes | {str(c.get("name")) for c in calls if c.get("kind") == "write"}
                accuracy.append(tool_call_accuracy(calls, gold[str(r["task_id"])], task_writes))
        else:
            grade = r.get("grade")
            recorded = grade.get("tool_accuracy") if isinstance(grade, Mapping) else None
            if isinstance(recorded, Mapping):
                accuracy.append(recorded)
    tool_calls = {"per_trial": _stats_dict(per_trial), "statuses": dict(statuses.most_common()),
                  "errors": sum(v for k, v in statuses.items() if k != "ok")}
    return tool_calls, (summarize_tool_accuracy(accuracy) if accuracy else None)


def _by_tag(records: Sequence[Mapping[str, Any]], planned: Sequence[str], n: int,
            tags: Mapping[str, Sequence[str]], cell_tasks: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """pass^k per tag over the planned task cells carrying it (a cell carries its task's tags, ``cell_tasks``).

    Each tag's ``tasks`` counts distinct tasks, ``cells`` the cells its mean is over, ``trials`` their recorded trials.
    """
    out: dict[str, dict[str, Any]] = {}
    # a run document's tags are data: only strings in lists count
    tags = {str(k): [t for t in v if isinstance(t, str)] for k, v in tags.items() if isinstance(v, list | tuple)}
    task_of = {c: cell_tasks.get(c, c) for c in planned}
    for tag in sorted({t for tg in tags.values() for t in tg}):
        ids = [c for c in planned if tag in tags.get(task_of[c], ())]
        if not ids:
            continue
        wanted = set(ids)
        rel = reliability([r for r in records if str(r["task_id"]) in wanted], ids, n, incomplete="count")
        out[tag] = {"tasks": len({task_of[c] for c in ids}), "cells": len(ids), "trials": len(rel.records),
                    **rel.suite}
    return out


def _trajectory_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The trajectory metrics of a run (see :mod:`simulator.stats.trajectory`), suite and per task."""
    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        grade = r.get("grade")
        traj = grade.get("trajectory") if isinstance(grade, Mapping) else None
        if isinstance(traj, Mapping):
            by_task.setdefault(str(r["task_id"]), []).append(traj)
    steps = [v for v in (_traj_value(r, "steps") for r in records) if v is not None]
    reasons = Counter(str(r.get("termination_reason")) for r in records)
    return {
        "trajectory": summarize_trajectory_metrics(t for rows in by_task.values() for t in rows),
        "trajectory_per_task": {task: summarize_trajectory_metrics(rows) for task, rows in by_task.items()},
        "mean_steps": float(np.mean(steps)) if steps else None,
        "timeout_rate": _ratio(reasons.get("timeout", 0), len(records)),
    }


def summarize_trajectory_metrics(per_trial: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Aggregate per-trial :func:`trial_trajectory_metrics` (formulas: the module docstring).

    Args:
        per_trial: one dict per trial with a reference trajectory.

    Returns:
        ``{"trials", "exact_match", "in_order_match", "set_match", "prefix_match", "tool_decision_accuracy",
        "tool_selection_accuracy", "parameter_accuracy", "utilisation_accuracy", "abstention_rate",
        "abstention_trials", "redundant_call_rate", "recovery_rate", "per_tool_error_rate": {tool: rate}}``, or
        None without any trial.
    """
    rows = list(per_trial)
    if not rows:
        return None
    n = len(rows)

    def total(key: str) -> int:
        return sum(int(t.get(key) or 0) for t in rows)

    applicable = [t for t in rows if t.get("abstention_applies")]
    tools: dict[str, list[int]] = {}
    for t in rows:
        for name, (count, bad) in (t.get("tool_calls") or {}).items():
            entry = tools.setdefault(name, [0, 0])
            entry[0] += int(count)
            entry[1] += int(bad)
    return {
        "trials": n,
        "exact_match": sum(bool(t["exact"]) for t in rows) / n,
        "in_order_match": sum(bool(t["in_order"]) for t in rows) / n,
        "set_match": sum(bool(t["set"]) for t in rows) / n,
        "prefix_match": sum(float(t["prefix"]) for t in rows) / n,
        "tool_decision_accuracy": sum(bool(t["decision"]) for t in rows) / n,
        "tool_selection_accuracy": _ratio(total("name_matched"), total("selection_den")),
        "parameter_accuracy": _ratio(total("exact_calls"), total("name_matched")),
        "utilisation_accuracy": _ratio(total("exact_calls"), total("calls")),
        "abstention_trials": len(applicable),
        "abstention_rate": _ratio(sum(bool(t["abstained"]) for t in applicable), len(applicable)),
        "redundant_call_rate": _ratio(total("redundant"), total("calls")),
        "recovery_rate": _ratio(total("recovered"), total("failed")),
        "per_tool_error_rate": {name: bad / count for name, (count, bad) in sorted(tools.items()) if count},
    }
