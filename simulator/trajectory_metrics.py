"""Trajectory metrics: how a trial's tool calls compare with the task's reference trajectory.

Reported apart from the outcome (never folded into pass). The reference trajectory is the task's explicit
``reference`` list when it has one, else its gold actions. Notation for one trial: ``A`` the agent's tool calls
in order (every status), ``R`` the reference calls in order; two calls are equal when they have the same tool
name and the same arguments (dict keys in any order, numbers at cent precision, as
:func:`simulator.metrics.tool_call_accuracy`); ``|X ∩ Y|`` is the multiset intersection.

Per trial (:func:`trial_trajectory_metrics`):

- ``exact``: ``A == R`` (same calls, same order, nothing else).
- ``in_order``: ``R`` is a subsequence of ``A`` (every reference call, in order; other calls may come between).
- ``set``: ``set(A) == set(R)`` (the same distinct calls, order and repeats ignored).
- ``prefix``: ``p / |R|`` where ``p`` is the length of the longest common prefix of ``A`` and ``R`` (1 when
  ``R`` is empty).
- ``decision``: ``(|A| > 0) == (|R| > 0)`` (the agent called tools exactly when the reference does).
- abstention applies when ``R`` has no write call (nothing to act on): the agent abstained when ``A`` has no
  write call and no call of an unknown tool (it invented no action).
- a call is ``redundant`` when an earlier call equal to it returned ``ok`` and no successful write came between.
- a failed call (status not ``ok``) is ``recovered`` when a later call of the same tool returns ``ok``.

Over a set of trials (:func:`summarize_trajectory_metrics`), boolean figures are the share of trials, ``prefix``
the mean, and the count ratios are pooled over trials (micro averages):

- selection accuracy ``= Σ|names(A) ∩ names(R)| / Σ max(|A|, |R|)``;
- parameter accuracy ``= Σ|A ∩ R| / Σ|names(A) ∩ names(R)|`` (right arguments among the right tools);
- utilisation accuracy ``= Σ|A ∩ R| / Σ|A|`` (the share of the calls made that were reference calls);
- abstention rate ``= abstained / applicable trials``; redundant-call rate ``= Σ redundant / Σ|A|``;
  recovery rate ``= Σ recovered / Σ failed``; per-tool error rate ``= failed calls of the tool / its calls``;
- mean steps (agent actions, tool calls and messages) and the timeout rate (trials ending ``timeout``) come from
  the trial records (:func:`simulator.metrics.run_metrics`).

A ratio whose denominator is 0 is None (e.g. no failed call: no recovery rate).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from simulator.metrics import _canonical

__all__ = ["summarize_trajectory_metrics", "trial_trajectory_metrics"]


def _key(call: Mapping[str, Any]) -> tuple[str, Any]:
    args = call.get("arguments")
    if isinstance(args, Mapping):
        return str(call.get("name")), _canonical(args)
    return str(call.get("name")), ("raw", call.get("raw_arguments"))


def _is_subsequence(needle: Sequence[Any], hay: Sequence[Any]) -> bool:
    it = iter(hay)
    return all(any(x == y for y in it) for x in needle)


def trial_trajectory_metrics(calls: Sequence[Mapping[str, Any]], reference: Sequence[Mapping[str, Any]],
                             write_tools: Iterable[str] = ()) -> dict[str, Any]:
    """Compare one trial's tool calls with the reference trajectory (formulas: the module docstring).

    Args:
        calls: the agent's tool calls in order, each ``{"name", "arguments", "status", "kind"}`` (``kind`` read/
            write/None for an unknown tool; ``status`` ``ok`` or an error status).
        reference: the reference calls in order, each ``{"name", "arguments"}``.
        write_tools: the domain's write tool names (a call with ``kind == "write"`` is a write as well).

    Returns:
        ``{"calls", "reference_calls", "exact", "in_order", "set", "prefix", "decision", "name_matched",
        "exact_calls", "selection_den", "abstention_applies", "abstained", "redundant", "failed", "recovered",
        "tool_calls": {tool: [calls, failed]}}``; ``abstained`` is None when abstention does not apply. Example:
        ``A = get(1), get(1), cancel(1)`` (all ok), ``R = get(1), cancel(1)``: exact False, in_order True, set
        True, prefix 0.5, name_matched 2, exact_calls 2, selection_den 3, redundant 1.
    """
    writes = set(write_tools)
    a = [_key(c) for c in calls]
    r = [_key(c) for c in reference]
    p = 0
    while p < min(len(a), len(r)) and a[p] == r[p]:
        p += 1
    names = Counter(k[0] for k in a) & Counter(k[0] for k in r)
    exact_calls = sum((Counter(a) & Counter(r)).values())

    def is_write(c: Mapping[str, Any]) -> bool:
        return c.get("kind") == "write" or str(c.get("name")) in writes

    applies = not any(str(c.get("name")) in writes for c in reference) and not any(
        c.get("kind") == "write" for c in reference)
    abstained = (not any(is_write(c) or c.get("status") == "unknown_tool" for c in calls)) if applies else None
    redundant = 0
    seen_ok: set[tuple[str, Any]] = set()
    for c, k in zip(calls, a, strict=True):
        if k in seen_ok:
            redundant += 1
        if c.get("status") == "ok":
            if is_write(c):
                seen_ok.clear()
            else:
                seen_ok.add(k)
    failed = recovered = 0
    per_tool: dict[str, list[int]] = {}
    for i, c in enumerate(calls):
        name = str(c.get("name"))
        entry = per_tool.setdefault(name, [0, 0])
        entry[0] += 1
        if c.get("status") != "ok":
            entry[1] += 1
            failed += 1
            recovered += any(str(d.get("name")) == name and d.get("status") == "ok" for d in calls[i + 1:])
    return {
        "calls": len(a), "reference_calls": len(r), "exact": a == r, "in_order": _is_subsequence(r, a),
        "set": set(a) == set(r), "prefix": p / len(r) if r else 1.0, "decision": bool(a) == bool(r),
        "name_matched": sum(names.values()), "exact_calls": exact_calls, "selection_den": max(len(a), len(r)),
        "abstention_applies": applies, "abstained": abstained, "redundant": redundant, "failed": failed,
        "recovered": recovered, "tool_calls": per_tool,
    }


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


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
