"""Trajectory metrics: how a trial's tool calls compare with the task's reference trajectory.

Reported apart from the outcome (never folded into pass). The reference trajectory is the task's explicit
``reference`` list when it has one, else its gold actions. Notation for one trial: ``A`` the agent's tool calls
in order (every status), ``R`` the reference calls in order; two calls are equal when they have the same tool
name and the same arguments (dict keys in any order, numbers at cent precision, as
:func:`simulator.stats.trajectory.tool_call_accuracy`); ``|X ∩ Y|`` is the multiset intersection.

Per trial (:func:`trial_trajectory_metrics`):

- ``exact``: ``A == R`` (same calls, same order, nothing else).
- ``in_order``: ``R`` is a subsequence of ``A`` (every reference call, in order; other calls may come between).
- ``set``: ``set(A) == set(R)`` (the same distinct calls, order and repeats ignored).
- ``prefix``: ``p / |R|`` where ``p`` is the length of the longest common prefix of ``A`` and ``R`` (1 when
  ``R`` is empty).
- ``decision``: ``(|A| > 0) == (|R| > 0)`` (the agent called tools exactly when the reference does).
- abstention applies when ``R`` has no write call (nothing to act on): the agent abstained when ``A`` has no
  write call and no call of an unknown tool (it invented no action).
- a read is ``redundant`` when an earlier call equal to it returned ``ok`` and no successful write came between; a
  write is ``redundant`` when the last successful write before it is equal to it (the same write applied again, e.g.
  a duplicate cancellation or a double charge; a retry after a failed write is not redundant).
- a failed call (status not ``ok``) is ``recovered`` when a later call of the same tool returns ``ok``.

Over a set of trials (:func:`summarize_trajectory_metrics`), boolean figures are the share of trials, ``prefix``
the mean, and the count ratios are pooled over trials (micro averages):

- selection accuracy ``= Σ|names(A) ∩ names(R)| / Σ max(|A|, |R|)``;
- parameter accuracy ``= Σ|A ∩ R| / Σ|names(A) ∩ names(R)|`` (right arguments among the right tools);
- utilisation accuracy ``= Σ|A ∩ R| / Σ|A|`` (the share of the calls made that were reference calls);
- abstention rate ``= abstained / applicable trials``; redundant-call rate ``= Σ redundant / Σ|A|``;
  recovery rate ``= Σ recovered / Σ failed``; per-tool error rate ``= failed calls of the tool / its calls``;
- mean steps (agent actions, tool calls and messages) and the timeout rate (trials ending ``timeout``) come from
  the trial records (:func:`simulator.stats.summaries.run_metrics`).

A ratio whose denominator is 0 is None (e.g. no failed call: no recovery rate).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["call_keys", "gold_keys", "tool_call_accuracy", "trial_trajectory_metrics"]


def _key(call: Mapping[str, Any]) -> tuple[str, Any]:
    args = call.get("arguments")
    if isinstance(args, Mapping):
        return str(call.get("name")), _canonical(args)
    return str(call.get("name")), ("raw", call.get("raw_arguments"))


def call_keys(calls: Sequence[Mapping[str, Any]]) -> list[tuple[str, Any]]:
    """Return the comparison key of each call (``reference_keys`` of :func:`trial_trajectory_metrics`).

    Args:
        calls: calls in order, each ``{"name", "arguments"}`` (``raw_arguments`` read when ``arguments`` is not a
            mapping).

    Returns:
        ``(name, canonical arguments)`` per call, in order (numbers at cent precision, dict keys sorted).
    """
    return [_key(c) for c in calls]


def gold_keys(gold: Sequence[Mapping[str, Any]]) -> list[tuple[str, Any]]:
    """Return the argument-matching key of each gold action (``gold_keys`` of :func:`tool_call_accuracy`).

    Args:
        gold: the task's gold actions, each ``{"name", "arguments"}`` (``arguments`` None or missing: ``{}``).

    Returns:
        ``(name, canonical arguments)`` per action, in order.
    """
    return [(str(a.get("name")), _canonical(a.get("arguments") or {})) for a in gold]


def _is_subsequence(needle: Sequence[Any], hay: Sequence[Any]) -> bool:
    it = iter(hay)
    return all(any(x == y for y in it) for x in needle)


def trial_trajectory_metrics(calls: Sequence[Mapping[str, Any]], reference: Sequence[Mapping[str, Any]],
                             write_tools: Iterable[str] = (), *,
                             reference_keys: Sequence[tuple[str, Any]] | None = None) -> dict[str, Any]:
    """Compare one trial's tool calls with the reference trajectory (formulas: the module docstring).

    Args:
        calls: the agent's tool calls in order, each ``{"name", "arguments", "status", "kind"}`` (``kind`` read/
            write/None for an unknown tool; ``status`` ``ok`` or an error status).
        reference: the reference calls in order, each ``{"name", "arguments"}``.
        write_tools: the domain's write tool names (a call with ``kind == "write"`` is a write as well).
        reference_keys: :func:`call_keys` of ``reference``, made once per task by a caller grading many trials
            of it; None: made here.

    Returns:
        ``{"calls", "reference_calls", "exact", "in_order", "set", "prefix", "decision", "name_matched",
        "exact_calls", "selection_den", "abstention_applies", "abstained", "redundant", "failed", "recovered",
        "tool_calls": {tool: [calls, failed]}}``; ``abstained`` is None when abstention does not apply. Example:
        ``A = get(1), get(1), cancel(1)`` (all ok), ``R = get(1), cancel(1)``: exact False, in_order True, set
        True, prefix 0.5, name_matched 2, exact_calls 2, selection_den 3, redundant 1; with a second ok
        ``cancel(1)`` at the end, redundant 2.
    """
    writes = write_tools if isinstance(write_tools, frozenset | set) else set(write_tools)
    a = [_key(c) for c in calls]
    r = list(reference_keys) if reference_keys is not None else [_key(c) for c in reference]
    p = 0
    while p < min(len(a), len(r)) and a[p] == r[p]:
        p += 1
    names = Counter(k[0] for k in a) & Counter(k[0] for k in r) if a else Counter()  # no call: nothing in common
    exact_calls = sum((Counter(a) & Counter(r)).values()) if a else 0

    def is_write(c: Mapping[str, Any]) -> bool:
        return c.get("kind") == "write" or str(c.get("name")) in writes

    applies = not any(str(c.get("name")) in writes for c in reference) and not any(
        c.get("kind") == "write" for c in reference)
    abstained = (not any(is_write(c) or c.get("status") == "unknown_tool" for c in calls)) if applies else None
    redundant = 0
    seen_ok: set[tuple[str, Any]] = set()
    last_write: tuple[str, Any] | None = None  # the last write that returned ok
    for c, k in zip(calls, a, strict=True):
        write = is_write(c)
        if (k == last_write) if write else (k in seen_ok):
            redundant += 1
        if c.get("status") == "ok":
            if write:
                seen_ok.clear()
                last_write = k
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




def _canonical(value: Any) -> Any:
    """Canonical form of an argument value for comparison: numbers at cent precision, dict keys sorted."""
    kind = type(value)  # the common exact types first (no ABC checks); subclasses take the general path below
    if kind is str or value is None or kind is bool:
        return value
    if kind is dict:
        return tuple(sorted((str(k), _canonical(v)) for k, v in value.items()))
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return ("num", value * 100)  # exact, however large (float() of a 400-digit integer overflows)
    if isinstance(value, float):
        cents = value * 100  # NaN, infinities and floats near the largest overflow here: compared as text
        return ("num", round(cents) if math.isfinite(cents) else repr(value))
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _canonical(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("list", tuple(_canonical(v) for v in value))
    return repr(value)


def tool_call_accuracy(
    calls: Sequence[Mapping[str, Any]],
    gold: Sequence[Mapping[str, Any]],
    write_tools: Iterable[str] = (),
    *,
    gold_keys: Sequence[tuple[str, Any]] | None = None,
) -> dict[str, int]:
    """Count how the tool calls of one trial match the task's gold actions.

    Tool names compare as multisets: ``name_matched = |called ∩ gold|`` (multiset intersection), so a tool
    called twice where the gold calls it once counts one match and one extra call. Arguments compare one to
    one: a gold action is matched when a distinct call has the same name and identical arguments (dict keys in
    any order, numbers equal at cent precision: ``10``, ``10.0`` and ``10.001`` are the same amount).

    Args:
        calls: the trial's tool calls in order, each ``{"name", "arguments"}`` (``arguments`` None when
            unparsable; any status counts).
        gold: the task's gold actions, each ``{"name", "arguments"}``.
        write_tools: names of the domain's write tools, for the write-only counts.
        gold_keys: :func:`gold_keys` of ``gold``, made once per task by a caller grading many trials of it; None:
            made here, and only for the gold actions of a tool that was called with arguments (no other can match).

    Returns:
        ``{"called", "gold", "name_matched", "called_write", "gold_write", "name_matched_write",
        "args_matched"}``. Example: calls ``get(a), transfer(10), transfer(10)`` against gold ``get(a),
        transfer(10)`` with write tool ``transfer``: called 3, gold 2, name_matched 2, called_write 2,
        gold_write 1, name_matched_write 1, args_matched 2.
    """
    writes = write_tools if isinstance(write_tools, frozenset | set) else set(write_tools)
    called_names = Counter(str(c.get("name")) for c in calls)
    gold_names = Counter(str(a.get("name")) for a in gold)
    matched = called_names & gold_names if calls else Counter()  # no call: nothing matched
    unused = [(str(c.get("name")), _canonical(c.get("arguments"))) for c in calls
              if isinstance(c.get("arguments"), Mapping)]
    args_matched = 0
    unused_names = {name for name, _ in unused}
    keys = gold_keys if gold_keys is not None else [
        (name, _canonical(a.get("arguments") or {})) if name in unused_names else (name, None)
        for a in gold for name in (str(a.get("name")),)]  # a key whose name no call has never matches: not made
    for key in keys:
        if key[0] in unused_names and key in unused:
            unused.remove(key)
            args_matched += 1
    return {
        "called": sum(called_names.values()), "gold": sum(gold_names.values()), "name_matched": sum(matched.values()),
        "called_write": sum(n for t, n in called_names.items() if t in writes),
        "gold_write": sum(n for t, n in gold_names.items() if t in writes),
        "name_matched_write": sum(n for t, n in matched.items() if t in writes),
        "args_matched": args_matched,
    }
