"""Review of the simulated user's side of a trial: where a failure may be the simulator's rather than the agent's.

Simulated users bias scores: an LLM user invents facts, leaks its reasoning, believes a false "all done", or
stops while the agent waits for a confirmation. :func:`review_user` looks for four such flags in a finished
trial:

- ``invented_facts``: values in a user message that are in neither the user's scenario nor anything the agent
  said before it: ids (a token with a digit, such as ``#W1234567`` or ``HAT123``), numbers of three digits or
  more or with decimals, e-mail addresses, and names (two capitalised words, such as a second passenger's
  ``Mia Brown``; common sentence openers are not names). A value counts as known when its letters and digits
  occur in the scenario's text (:func:`simulator.users.leak.scenario_text`, of the task's scenario and of the
  derived one when the run prepared it), in the agent's earlier messages or in the results of the user's own
  tool calls (dual control: what it read on its device).
- ``reasoning_leak``: a user message with a ``Thought:``, ``Action:`` or ``Observation:`` line (a ReAct-style
  simulator's reasoning reaching the agent).
- ``accepted_false_completion``: the user stopped right after the agent claimed the work was done, while the
  goal state was not reached.
- ``stopped_with_pending_write``: the user stopped right after the agent asked it to confirm an action.

A failed trial with any flag is marked ``failure_may_be_simulator``: its failure may be the simulator's.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from simulator.dialogue.cues import asks_confirmation
from simulator.dialogue.text import clip_long_tokens
from simulator.types.messages import Message
from simulator.types.tasks import Task, UserScenario
from simulator.types.trajectory import Trajectory
from simulator.users.leak import scenario_text

__all__ = ["REVIEW_FLAGS", "UserReview", "review_user"]

REVIEW_FLAGS = ("invented_facts", "reasoning_leak", "accepted_false_completion", "stopped_with_pending_write")
"""Every flag :func:`review_user` may raise, in report order."""

_REASONING_RE = re.compile(r"(?im)^\s*(thought|action|observation)\s*:")
# linear on any input: an e-mail is tried only where a run of [\w.+-] starts (possessive runs, no rescans)
_EMAIL_RE = re.compile(r"(?<![\w.+-])[\w.+-]++@[\w-]++(?:\.[\w-]++)+")
_TOKEN_RE = re.compile(r"#?[A-Za-z0-9][A-Za-z0-9_\-]*(?:\.\d+)?")
_NAME_RE = re.compile(r"\b([A-Z][a-z]+)\s+([A-Z][a-z]+)\b")
_DONE_RE = re.compile(
    r"\b(all set|all done|is done|has been (?:\w+ed|done|made|processed|completed)|have been \w+ed|"
    r"successfully|completed|is now (?:\w+ed|updated|complete)|went through)\b", re.IGNORECASE)
_NOT_NAMES = frozenset("""
    i hi hello hey dear thanks thank yes no yeah sure please okay ok great good fine perfect sorry could can would
    will may might should shall do does did is are was were have has had my our your the a an this that these those
    there here what when where which who why how and but or so if then also just actually however well oh let
    monday tuesday wednesday thursday friday saturday sunday january february march april june july august
    september october november december mr mrs ms dr street avenue road lane drive suite apt
""".split())


_NOT_ALNUM_RE = re.compile(r"[\W_]+")


def _fold(text: str) -> str:
    """Lower-case letters and digits only (accents removed), for containment tests."""
    plain = unicodedata.normalize("NFKD", text)
    return _NOT_ALNUM_RE.sub("", plain.lower())  # \w is str.isalnum() or "_" (the same character classes)


def _number_value(token: str) -> float | None:
    try:
        return float(token.replace(",", "").lstrip("$"))
    except ValueError:
        return None


def _values(text: str) -> list[str]:
    """The checkable values of a user message: e-mails, ids, numbers and names, in order of appearance."""
    text = clip_long_tokens(text)  # a token of thousands of characters is no fact to check
    found: list[str] = list(_EMAIL_RE.findall(text))
    rest = _EMAIL_RE.sub(" ", text)
    for token in _TOKEN_RE.findall(rest):
        core = token.lstrip("#")
        digits = sum(ch.isdigit() for ch in core)
        if not digits:
            continue
        if any(ch.isalpha() for ch in core) or "_" in core:
            if len(core) >= 4 and not re.fullmatch(r"\d+(st|nd|rd|th|am|pm|s)", core, re.IGNORECASE):
                found.append(token)  # an id such as W1234567, gift_card_1234, HAT123
        elif "." in core or digits >= 3:
            found.append(token)  # a number: 3+ digits or with decimals (small counts are not facts to check)
    for first, last in _NAME_RE.findall(rest):
        if first.lower() not in _NOT_NAMES and last.lower() not in _NOT_NAMES:
            found.append(f"{first} {last}")
    return found


def _known(value: str, folded_known: str, numbers: set[float]) -> bool:
    if " " in value and not any(ch.isdigit() for ch in value):  # a name: each word known on its own is enough
        return all(_fold(part) in folded_known for part in value.split())
    number = _number_value(value) if re.fullmatch(r"\$?[\d,]+(\.\d+)?", value) else None
    if number is not None and number in numbers:
        return True
    return _fold(value) in folded_known


def _numbers(text: str) -> set[float]:
    out = set()
    for token in re.findall(r"\$?\d[\d,]*(?:\.\d+)?", text):
        value = _number_value(token)
        if value is not None:
            out.add(value)
    return out


@dataclass
class UserReview:
    """The review of one trial's simulated user.

    Attributes:
        flags: the flags raised, in :data:`REVIEW_FLAGS` order.
        details: per flag, what raised it (the invented values, the leaked lines, the agent message believed or
            left unanswered).
        failure_may_be_simulator: the trial failed and carries a flag.
    """

    flags: list[str] = field(default_factory=list)
    details: dict[str, list[str]] = field(default_factory=dict)
    failure_may_be_simulator: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Return ``{"flags", "details", "failure_may_be_simulator"}`` (kept in ``user_metadata["review"]``)."""
        return {"flags": list(self.flags), "details": {k: list(v) for k, v in self.details.items()},
                "failure_may_be_simulator": self.failure_may_be_simulator}


def _scenario_texts(task: Task, derived: UserScenario | None) -> Iterable[str]:
    yield scenario_text(task.scenario)
    if derived is not None:
        yield scenario_text(derived)
    if task.user_id:
        yield task.user_id


def review_user(task: Task, trajectory: Trajectory, *, passed: bool, goal_reached: bool | None,
                derived: UserScenario | None = None) -> UserReview:
    """Review the simulated user's side of a finished trial.

    Args:
        task: the trial's task (its scenario is what the user was given).
        trajectory: the trial's trajectory.
        passed: whether the trial passed.
        goal_reached: whether the final state equals the goal (the state component); None when not graded.
        derived: the domain's derived scenario the user played, when the run prepared one.

    Returns:
        The :class:`UserReview`.
    """
    known_text = "\n".join(_scenario_texts(task, derived))
    folded, numbers = _fold(known_text), _numbers(known_text)
    details: dict[str, list[str]] = {}
    # what the user saw: the conversation, and the results of its own tool calls (its device's readings)
    visible = [m for m in trajectory.messages if m.content and not m.tool_calls and (
        m.role in ("user", "assistant") or (m.role == "tool" and m.requestor == "user"))]
    for m in visible:
        text = m.content or ""
        if m.role != "user":
            folded += _fold(text)
            numbers |= _numbers(text)
            continue
        invented = [v for v in _values(text) if not _known(v, folded, numbers)]
        if invented:
            details.setdefault("invented_facts", []).extend(dict.fromkeys(invented))
        leaked = [line.strip() for line in text.splitlines() if _REASONING_RE.match(line)]
        if leaked:
            details.setdefault("reasoning_leak", []).extend(leaked)
        folded += _fold(text)  # what the user said once may be repeated
        numbers |= _numbers(text)
    if str(trajectory.termination_reason) == "user_stop":
        last_agent = _last_agent_before_stop(visible)
        if last_agent is not None:
            if goal_reached is False and _DONE_RE.search(last_agent) and not asks_confirmation(last_agent):
                details["accepted_false_completion"] = [last_agent]
            if asks_confirmation(last_agent):
                details["stopped_with_pending_write"] = [last_agent]
    flags = [f for f in REVIEW_FLAGS if f in details]
    return UserReview(flags=flags, details={f: details[f] for f in flags},
                      failure_may_be_simulator=bool(flags) and not passed)


def _last_agent_before_stop(visible: list[Message]) -> str | None:
    """The agent's last text before the user's stop (the user's final message, if any, comes after it)."""
    for m in reversed(visible):
        if m.role == "assistant":
            return m.content
    return None
