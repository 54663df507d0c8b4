"""The recorded numbers of a run document, checked before anything is computed from them.

A run document is data: an older version, another tool or a hand edit may hold NaN, an infinity, a negative
duration or a string where a number belongs. :func:`scrub_measurements` replaces each such value by ``None``
(not available: summaries count it in ``missing``, never as a number) and returns one note per field naming it,
so that a report renders and says what it could not use instead of stopping on the first bad value.

Checked fields (each a finite number >= 0, or absent/null):

- a trial's ``duration_s``; its trajectory's ``agent_seconds``, ``user_seconds``, ``tool_seconds``, ``turns``,
  ``steps``; each tool call's ``duration_s``;
- the usage records (``trajectory.agent_usage``, ``trajectory.user_usage``, ``grade.judge.usage``):
  ``prompt_tokens``, ``completion_tokens``, ``calls``, ``cost_usd``;
- ``grade.budget.used``: ``steps``, ``tool_calls``, ``tokens``, ``cost_usd``;
- the document's ``wall_seconds`` (checked by :func:`simulator.storage.documents.check_run_document`);
- the count tables ``grade.tool_accuracy`` and ``grade.trajectory`` (tool-call accuracy and trajectory metrics):
  one bad value in them makes the whole table not available (its ratios would mix known and unknown counts).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["bad_measure", "scrub_measurements"]

_TRIAL_FIELDS = ("duration_s",)
_TRAJECTORY_FIELDS = ("agent_seconds", "user_seconds", "tool_seconds", "turns", "steps")
_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "calls", "cost_usd")
_BUDGET_FIELDS = ("steps", "tool_calls", "tokens", "cost_usd")
_ACCURACY_FIELDS = ("called", "gold", "name_matched", "called_write", "gold_write", "name_matched_write",
                    "args_matched")
_TRAJ_METRIC_COUNTS = ("calls", "reference_calls", "name_matched", "exact_calls", "selection_den", "redundant",
                       "failed", "recovered")
_TRAJ_METRIC_FLAGS = ("exact", "in_order", "set", "decision")


def bad_measure(value: Any) -> bool:
    """Whether a recorded measure (seconds, tokens, USD, a count) is present but not a finite number >= 0.

    Args:
        value: the recorded value; None (unknown) is not bad.

    Returns:
        True for NaN, an infinity, a negative number, a bool, a string or any other non-number.
    """
    if value is None:
        return False
    if isinstance(value, bool) or not isinstance(value, int | float):
        return True
    return not math.isfinite(value) or value < 0


def _shown(value: Any) -> str:
    """A short, printable description of a bad value (never the raw text of a string)."""
    if isinstance(value, float):
        return repr(value)  # nan, inf, -inf, -1.0
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    return f"a {type(value).__name__}"


class _Notes:
    """Bad values found, per field: how many trials and the first value seen."""

    def __init__(self) -> None:
        self.fields: dict[str, tuple[int, str]] = {}

    def add(self, field: str, value: Any, table: bool = False) -> None:
        count, first = self.fields.get(field, (0, "" if table else _shown(value)))
        self.fields[field] = (count + 1, first)

    def lines(self) -> list[str]:
        out = []
        for field, (count, first) in self.fields.items():
            trials = "1 trial" if count == 1 else f"{count} trials"
            if first:
                out.append(f"{field}: {trials} recorded a value that is not a finite number >= 0 (e.g. {first}); "
                           "shown as not available")
            else:
                out.append(f"{field}: {trials} recorded a table with a missing or bad count (not a finite "
                           "number >= 0); the table is shown as not available")
        return out


def _scrub_fields(part: Any, fields: Sequence[str], where: str, notes: _Notes) -> Any:
    """Return ``part`` with its bad ``fields`` set to None (a copy when any is), noting each."""
    if not isinstance(part, Mapping) or not any(bad_measure(part.get(f)) for f in fields):
        return part
    clean = dict(part)
    for f in fields:
        if bad_measure(clean.get(f)):
            notes.add(f"{where}.{f}" if where else f, clean[f])
            clean[f] = None
    return clean


def _table_ok(table: Any, counts: Sequence[str], flags: Sequence[str] = ()) -> bool:
    """Whether a count table holds numbers (and, for trajectory metrics, the fields its summary reads)."""
    if not isinstance(table, Mapping):
        return False
    if any(k in table and (table[k] is None or bad_measure(table[k])) for k in counts):
        return False
    if not flags:
        return True
    if any(k not in table for k in flags) or table.get("prefix") is None or bad_measure(table.get("prefix")):
        return False
    per_tool = table.get("tool_calls") or {}
    return isinstance(per_tool, Mapping) and all(
        isinstance(pair, list | tuple) and len(pair) == 2 and all(x is not None and not bad_measure(x) for x in pair)
        for pair in per_tool.values())


def _scrub_grade(grade: Any, notes: _Notes) -> Any:
    if not isinstance(grade, Mapping):
        return grade
    clean = dict(grade)
    budget = clean.get("budget")
    if isinstance(budget, Mapping):
        used = _scrub_fields(budget.get("used"), _BUDGET_FIELDS, "grade.budget.used", notes)
        if used is not budget.get("used"):
            clean["budget"] = {**budget, "used": used}
    judge = clean.get("judge")
    if isinstance(judge, Mapping):
        usage = _scrub_fields(judge.get("usage"), _USAGE_FIELDS, "grade.judge.usage", notes)
        if usage is not judge.get("usage"):
            clean["judge"] = {**judge, "usage": usage}
    for key, counts, flags in (("tool_accuracy", _ACCURACY_FIELDS, ()),
                               ("trajectory", _TRAJ_METRIC_COUNTS, _TRAJ_METRIC_FLAGS)):
        table = clean.get(key)
        if table is not None and not _table_ok(table, counts, flags):
            notes.add(f"grade.{key}", "a count that is not", table=True)
            clean[key] = None
    return clean if any(clean[k] is not grade.get(k) for k in clean) else grade


def _scrub_trajectory(traj: Any, notes: _Notes) -> Any:
    if not isinstance(traj, Mapping):
        return traj
    clean = dict(_scrub_fields(traj, _TRAJECTORY_FIELDS, "trajectory", notes))  # a copy: compared below
    for key in ("agent_usage", "user_usage"):
        if key in clean:
            clean[key] = _scrub_fields(clean[key], _USAGE_FIELDS, f"trajectory.{key}", notes)
    calls = clean.get("tool_calls")
    if isinstance(calls, list) and any(isinstance(c, Mapping) and bad_measure(c.get("duration_s")) for c in calls):
        clean["tool_calls"] = [_scrub_fields(c, ("duration_s",), "trajectory.tool_calls[]", notes) for c in calls]
    return clean if any(clean[k] is not traj.get(k) for k in clean) else traj


def scrub_measurements(trials: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """Replace the recorded numbers of ``trials`` that are not finite numbers >= 0 by None.

    Args:
        trials: a run document's ``trials`` (objects; anything else is passed through unchanged).

    Returns:
        ``(trials, notes)``: the trials, where a trial with a bad value is a new object (the input is never
        changed) and the others are the same objects; one note per field with bad values, e.g.
        ``"duration_s: 1 trial recorded a value that is not a finite number >= 0 (e.g. nan); shown as not
        available"``. Checked fields: the module docstring.
    """
    notes = _Notes()
    out: list[Any] = []
    for trial in trials:
        if not isinstance(trial, Mapping):
            out.append(trial)
            continue
        clean = dict(_scrub_fields(trial, _TRIAL_FIELDS, "", notes))
        for key, scrub in (("trajectory", _scrub_trajectory), ("grade", _scrub_grade)):
            if key in trial:
                clean[key] = scrub(trial[key], notes)
        out.append(clean if any(clean[k] is not trial[k] for k in clean) else trial)
    return out, notes.lines()
