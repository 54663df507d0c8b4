"""Failure signatures: a failed trial condensed into the layer, termination, first difference, rule and divergence."""

from __future__ import annotations

import re
from collections.abc import Mapping

from simulator.types.results import TrialResult
from simulator.types.tasks import Task


def _gold_divergence(task: Task, result: TrialResult, kinds: Mapping[str, str | None]) -> str:
    """The agent's last tool call before its first write that differs from the gold writes (``start``: none)."""
    gold = [(a.name, a.arguments) for a in task.gold_actions
            if a.requestor == "assistant" and kinds.get(a.name) in ("write", "ending")]
    calls = [c for c in result.trajectory.tool_calls if c.requestor == "agent"]
    w = 0
    for i, c in enumerate(calls):
        if kinds.get(c.name) not in ("write", "ending") or c.status != "ok":
            continue
        if w >= len(gold) or (c.name, c.arguments) != gold[w]:
            return calls[i - 1].name if i > 0 else "start"
        w += 1
    if w < len(gold):
        return (calls[-1].name if calls else "start") + "+missing"
    return "none"


def signature(task: Task, result: TrialResult, kinds: Mapping[str, str | None]) -> tuple[str, ...] | None:
    """Condense a failed trial into its failure signature.

    Args:
        task: the trial's task.
        result: the graded trial.
        kinds: tool name -> kind (``read``, ``write``, ``ending``).

    Returns:
        ``(layer, termination reason, first state difference or failing assertion, violated rule, last tool call
        before the first divergence from gold, user flags)``, or None for a passed trial.
    """
    if result.passed:
        return None
    g = result.grade
    if g is None:
        return ("not_graded", result.termination_reason, "-", "-", "-", "-")
    diff = "-"
    if g.state.differences:
        d = g.state.differences[0]
        diff = f"{d.get('table')}.{d.get('field')}"
    elif g.state.added:
        diff = f"{g.state.added[0].get('table')}+row"
    elif g.state.removed:
        diff = f"{g.state.removed[0].get('table')}-row"
    elif g.assertions is not None and g.assertions.failed():
        diff = "assert:" + str(g.assertions.failed()[0].model_dump().get("kind", "?"))
    if g.next_step is not None and not g.next_step.passed:
        diff = "next_step:" + g.next_step.failures[0].split(":")[0]
    rule = "-"
    if g.violations:
        rule = str(g.violations[0].kind)
    elif g.process.violations:
        rule = re.sub(r"(?s)[\d#'\"].*", "", g.process.violations[0]).strip()[:60]
    elif not g.loops.passed:
        rule = "loop"
    flags = ",".join(sorted(result.trajectory.user_metadata.get("flags") or [])) or "-"
    return (str(g.failure or "?"), result.termination_reason, diff, rule, _gold_divergence(task, result, kinds), flags)


def core(sig: tuple[str, ...]) -> tuple[str, ...]:
    """The part of a signature a shrunk or replayed case must keep: layer, state difference, rule, divergence."""
    return (sig[0], sig[2], sig[3], sig[4])
