"""Process grading: rules on how the agent reached its end state, checked on the trajectory.

Confirmation before writes (``confirm_writes``): every successful call of a write tool (tools that end the
conversation excepted) must be preceded, in the conversation, by

1. a user message that is an explicit yes (:func:`simulator.dialogue.cues.is_yes`: it starts with "yes", "yeah", "yep",
   "sure", "confirm", "correct", "absolutely", "of course", "go ahead", "proceed", "please do", "do it", or
   "ok"/"okay" followed by "go ahead"/"proceed"/"do it"/"please do"), and that user message is the last user
   message before the call;
2. an agent text message before that user message (the last one) that names the action: it contains the
   tool's action verb (the first word of the tool name, e.g. ``cancel`` of ``cancel_pending_order``, matched
   as a word prefix without a final "e"/"y", so "cancellation" and "modification" count) or one of the call's
   string or number argument values of three characters or more (e.g. the order id ``#W0000001``, with or
   without its ``#``), case-insensitively.

Necessary precedence (``precedence``, :class:`~simulator.types.tasks.Precedence`): before a call of an ``after``
tool, one of the ``before`` tools returned ``ok`` (:func:`precedence_violations`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

from simulator.dialogue.cues import is_yes
from simulator.types.grade import ProcessResult
from simulator.types.rules import PRECEDENCE_END, PRECEDENCE_WRITE, Precedence, ProcessRules
from simulator.types.trajectory import ToolCallRecord, Trajectory
from simulator.world.tools import Toolbox

__all__ = ["check_process", "mentions_action", "precedence_violations", "unconfirmed_writes"]




def _verb_stem(tool: str) -> str:
    verb = tool.split("_")[0].lower()
    return verb[:-1] if len(verb) > 3 and verb[-1] in "ey" else verb


def _argument_values(arguments: dict[str, Any] | None) -> list[str]:
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, bool) or v is None:
            return
        if isinstance(v, str | int | float):
            text = str(v).strip().lstrip("#")
            if len(text) >= 3:
                out.append(text.lower())
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(arguments or {})
    return out


def mentions_action(text: str, call: ToolCallRecord) -> bool:
    """Return True when an agent message names a tool call's action (its verb or a key argument value).

    Args:
        text: the agent's message.
        call: the tool call.
    """
    low = text.lower()
    if re.search(r"\b" + re.escape(_verb_stem(call.name)), low):
        return True
    return any(v in low for v in _argument_values(call.arguments))


def _confirmation_violations(trajectory: Trajectory, toolbox: Toolbox) -> list[str]:
    return [line for _, line in unconfirmed_writes(trajectory, toolbox)]


def unconfirmed_writes(trajectory: Trajectory, toolbox: Toolbox) -> list[tuple[ToolCallRecord, str]]:
    """Return the successful write calls made without the confirmation the module docstring describes.

    Args:
        trajectory: the trial's trajectory.
        toolbox: the domain's tools (which end the conversation: never checked).

    Returns:
        ``(call, readable line)`` per unconfirmed write, in call order.
    """
    ending = {name for name, spec in toolbox.specs.items() if spec.ends_conversation}
    position: dict[str, int] = {}
    for i, m in enumerate(trajectory.messages):
        for c in m.tool_calls:
            position.setdefault(c.id, i)
    out: list[tuple[ToolCallRecord, str]] = []
    for call in trajectory.tool_calls:
        if call.kind != "write" or call.status != "ok" or call.name in ending:
            continue
        where = f"{call.name} (step {call.step})"
        i = position.get(call.call_id, len(trajectory.messages))
        u = next((j for j in range(i - 1, -1, -1) if trajectory.messages[j].role == "user"), None)
        if u is None or not is_yes(trajectory.messages[u].content):
            out.append((call, f"write without an explicit user yes in the preceding user message: {where}"))
            continue
        a = next((j for j in range(u - 1, -1, -1)
                  if trajectory.messages[j].role == "assistant" and trajectory.messages[j].content), None)
        if a is None or not mentions_action(trajectory.messages[a].content or "", call):
            out.append((call, f"write confirmed without the agent naming the action before the user's yes: {where}"))
    return out


def precedence_violations(rule: Precedence, calls: Sequence[ToolCallRecord], ending: Collection[str] = ()
                          ) -> list[tuple[ToolCallRecord | None, str]]:
    """Check one necessary precedence against a trial's tool calls.

    A call is covered by the rule when its tool is named in ``after``, or ``after`` holds ``@write`` and the call
    is of a write tool (``kind == "write"``) not in ``ending``; calls of a ``before`` tool are never covered.
    Without ``same``, the first covered call needs an earlier ``ok`` call of any ``before`` tool. With ``same``,
    every covered call that carries all those arguments needs an earlier ``ok`` ``before`` call whose arguments
    have equal values for them. With ``@end`` in ``after``, some ``before`` call must have returned ``ok`` at all.

    Args:
        rule: the rule.
        calls: the trial's tool calls in order.
        ending: names of the tools that end the conversation (not writes for ``@write``).

    Returns:
        ``[(offending call, or None for @end, finding)]``; a finding reads ``precedence[ (NAME)]: TOOL (step N)
        called before any successful BEFORE`` and names the rule when it has a name.
    """
    before = rule.before_tools()
    after = rule.after_items()
    label = f"precedence ({rule.name})" if rule.name else "precedence"
    wanted = " or ".join(before)

    def covered(c: ToolCallRecord) -> bool:
        if c.name in before:
            return False
        return c.name in after or (PRECEDENCE_WRITE in after and c.kind == "write" and c.name not in ending)

    def key(c: ToolCallRecord) -> tuple[Any, ...] | None:
        args = c.arguments or {}
        return tuple(args[k] for k in rule.same) if all(k in args for k in rule.same) else None

    out: list[tuple[ToolCallRecord | None, str]] = []
    for i, c in enumerate(calls):
        if not covered(c) or (rule.same and key(c) is None):
            continue
        earlier = [d for d in calls[:i] if d.name in before and d.status == "ok"]
        if rule.same:
            k = key(c)
            if not any(key(d) == k for d in earlier):
                shown = ", ".join(f"{n}={v!r}" for n, v in zip(rule.same, k or (), strict=True))
                out.append((c, f"{label}: {c.name} (step {c.step}) on {shown} called before any successful "
                               f"{wanted} on it"))
            continue
        if not earlier:
            out.append((c, f"{label}: {c.name} (step {c.step}) called before any successful {wanted}"))
        break  # without ``same``: the first covered call only
    if PRECEDENCE_END in after and not any(d.name in before and d.status == "ok" for d in calls):
        out.append((None, f"{label}: the trial ended without any successful {wanted}"))
    return out


def check_process(rules: ProcessRules, trajectory: Trajectory, toolbox: Toolbox) -> ProcessResult:
    """Check a task's process rules against a finished trajectory.

    Args:
        rules: the task's rules (already merged over the domain's defaults).
        trajectory: the trial's trajectory (tool calls with statuses, termination reason).
        toolbox: the domain's tools (to know which are write tools and which end the conversation).

    Returns:
        :class:`ProcessResult`; ``passed`` when no rule is broken.
    """
    violations: list[str] = []
    called = [c.name for c in trajectory.tool_calls]
    succeeded = {c.name for c in trajectory.tool_calls if c.status == "ok"}
    for name in rules.forbidden_tools:
        if name in called:
            violations.append(f"forbidden tool called: {name}")
    for name in rules.required_tools:
        if name not in succeeded:
            violations.append(f"required tool never called successfully: {name}")
    if rules.no_writes:
        ending = {name for name, spec in toolbox.specs.items() if spec.ends_conversation}
        writes = sorted({c.name for c in trajectory.tool_calls if c.kind == "write" and c.name not in ending})
        if writes:
            violations.append(f"write tool(s) called where none is allowed: {', '.join(writes)}")
    if rules.expected_termination is not None:
        reason = str(trajectory.termination_reason)
        if reason not in rules.expected_termination:
            violations.append(f"termination {reason}, expected {' or '.join(rules.expected_termination)}")
    ending = {name for name, spec in toolbox.specs.items() if spec.ends_conversation}
    for rule in rules.precedence:
        violations.extend(line for _, line in precedence_violations(rule, trajectory.tool_calls, ending))
    if rules.confirm_writes:
        violations.extend(_confirmation_violations(trajectory, toolbox))
    return ProcessResult(passed=not violations, violations=violations)
