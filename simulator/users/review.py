"""Review of the simulated user's side of a trial: whether the simulator caused its outcome, or only misbehaved.

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

- ``answer_leak``: a user message carrying a value the user was never given and must not know (a gold-action
  value or a required output, :func:`simulator.users.leak.task_secrets`; the policy is not checked here) that the
  agent had not said before.

Cause is kept apart from weakness. A flag *caused* the trial's outcome when the outcome would plausibly have been
otherwise with a faithful user; the review names these :data:`CAUSES`:

- ``stopped_with_pending_write`` in a failed trial whose goal was not reached: the user stopped while the agent
  waited for a yes/no, so the write never happened;
- ``invented_fact_acted_on``: the agent passed a value the user invented into a later tool call (a failed trial);
- ``answer_leak``: the agent was handed what it should have found out; the outcome, pass or fail, is not the
  agent's own.

Every other flag is a *weakness* (:attr:`UserReview.weaknesses`): the simulator misbehaved without changing the
outcome, e.g. it accepted a false "all done" after the agent had already failed, or invented a value nobody
used. :attr:`UserReview.simulator_caused` marks a trial whose outcome is the simulator's; reports set such
trials apart (:func:`simulator.stats.estimators.reliability` over the others) beside pass^k as measured.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from simulator.dialogue.cues import asks_confirmation, claims_completion
from simulator.dialogue.text import clip_long_tokens
from simulator.types.messages import Message
from simulator.types.tasks import Task, UserScenario
from simulator.types.trajectory import Trajectory
from simulator.users.leak import SecretMatcher, scenario_text, task_secrets

__all__ = ["CAUSES", "REVIEW_FLAGS", "UserReview", "review_user", "scenario_known", "untraced_values"]

REVIEW_FLAGS = ("invented_facts", "reasoning_leak", "answer_leak", "accepted_false_completion",
                "stopped_with_pending_write")
"""Every flag :func:`review_user` may raise, in report order."""

CAUSES = ("stopped_with_pending_write", "invented_fact_acted_on", "answer_leak")
"""The ways a simulated user causes a trial's outcome, in report order (see the module docstring)."""

_REASONING_RE = re.compile(r"(?im)^\s*(thought|action|observation)\s*:")
# linear on any input: an e-mail is tried only where a run of [\w.+-] starts (possessive runs, no rescans)
_EMAIL_RE = re.compile(r"(?<![\w.+-])[\w.+-]++@[\w-]++(?:\.[\w-]++)+")
_TOKEN_RE = re.compile(r"#?[A-Za-z0-9][A-Za-z0-9_\-]*(?:\.\d+)?")
_NAME_RE = re.compile(r"\b([A-Z][a-z]+)\s+([A-Z][a-z]+)\b")
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
        digits = sum(map(str.isdigit, core))
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


def untraced_values(text: str, known: Iterable[str]) -> list[str]:
    """Return the checkable values of a user message traced to nothing it knew (each once, in order).

    Args:
        text: the user's message.
        known: everything the user was given or heard (scenario text, earlier messages, its own tool results).

    Returns:
        The e-mails, ids, numbers and names of ``text`` (the rules of ``invented_facts`` above) found in none of
        ``known``.
    """
    known_text = "\n".join(known)
    folded, numbers = _fold(known_text), _numbers(known_text)
    return list(dict.fromkeys(v for v in _values(text) if not _known(v, folded, numbers)))


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
        details: per flag, what raised it (the invented values, the leaked lines or secrets, the agent message
            believed or left unanswered); ``invented_fact_acted_on`` lists the invented values the agent used.
        causes: the :data:`CAUSES` that apply: the simulator caused the trial's outcome.
        weaknesses: the flags that did not change the outcome.
        simulator_caused: the trial's outcome is the simulator's (``causes`` is not empty).
    """

    flags: list[str] = field(default_factory=list)
    details: dict[str, list[str]] = field(default_factory=dict)
    causes: list[str] = field(default_factory=list)
    weaknesses: list[str] = field(default_factory=list)
    simulator_caused: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Return ``{"flags", "details", "causes", "weaknesses", "simulator_caused"}`` (``user_metadata["review"]``)."""
        return {"flags": list(self.flags), "details": {k: list(v) for k, v in self.details.items()},
                "causes": list(self.causes), "weaknesses": list(self.weaknesses),
                "simulator_caused": self.simulator_caused}


def _scenario_texts(task: Task, derived: UserScenario | None) -> Iterable[str]:
    yield scenario_text(task.scenario)
    if derived is not None:
        yield scenario_text(derived)
    if task.user_id:
        yield task.user_id


def review_matcher(task: Task, derived: UserScenario | None = None) -> SecretMatcher:
    """The answer-leak matcher :func:`review_user` uses for a task (build once, share across its trials).

    Args:
        task: the task (its gold actions and required outputs are the secrets).
        derived: the domain's derived scenario the user plays, when the run prepared one.

    Returns:
        A :class:`~simulator.users.leak.SecretMatcher` (read-only once built: safe to share between threads).
    """
    return SecretMatcher(task_secrets(task, "", derived))


def scenario_known(task: Task, derived: UserScenario | None = None) -> tuple[str, frozenset[float]]:
    """What the user knows from its scenario before the conversation, as :func:`review_user` compares with it.

    Args:
        task: the task (its scenario and user id).
        derived: the domain's derived scenario the user plays, when the run prepared one.

    Returns:
        ``(folded text, numbers)``: the scenario's text in lower-case letters and digits only, and the numbers it
        holds (build once per task, share across its trials).
    """
    text = "\n".join(_scenario_texts(task, derived))
    return _fold(text), frozenset(_numbers(text))


class ReviewMatchers:
    """A run's answer-leak matchers and scenario knowledge by task id (built on a task's first review)."""

    def __init__(self) -> None:
        """Start empty; one instance per run (a run's task ids are unique)."""
        self._by_id: dict[str, SecretMatcher] = {}
        self._known: dict[str, tuple[str, frozenset[float]]] = {}

    def get(self, task: Task, derived: UserScenario | None = None) -> SecretMatcher:
        """Return the matcher of ``task`` (with the scenario it plays), building it on first use."""
        matcher = self._by_id.get(task.id)
        if matcher is None:
            matcher = self._by_id[task.id] = review_matcher(task, derived)
        return matcher

    def known(self, task: Task, derived: UserScenario | None = None) -> tuple[str, frozenset[float]]:
        """Return :func:`scenario_known` of ``task`` (with the scenario it plays), made on first use."""
        known = self._known.get(task.id)
        if known is None:
            known = self._known[task.id] = scenario_known(task, derived)
        return known


def review_user(task: Task, trajectory: Trajectory, *, passed: bool, goal_reached: bool | None,
                derived: UserScenario | None = None, matcher: SecretMatcher | None = None,
                known: tuple[str, frozenset[float]] | None = None) -> UserReview:
    """Review the simulated user's side of a finished trial.

    Args:
        task: the trial's task (its scenario is what the user was given).
        trajectory: the trial's trajectory.
        passed: whether the trial passed.
        goal_reached: whether the final state equals the goal (the state component); None when not graded.
        derived: the domain's derived scenario the user played, when the run prepared one.
        matcher: ``review_matcher(task, derived)`` built beforehand (a run builds it once per task); None: built
            here.
        known: ``scenario_known(task, derived)`` made beforehand (a run makes it once per task); None: made here.

    Returns:
        The :class:`UserReview`: its flags, and which of them caused the outcome (see the module docstring).
    """
    folded, known_numbers = known if known is not None else scenario_known(task, derived)
    numbers = set(known_numbers)
    details: dict[str, list[str]] = {}
    matcher = matcher if matcher is not None else review_matcher(task, derived)
    heard: list[str] = []
    invented_at: list[tuple[int, str]] = []  # (message index, value)
    acted: list[str] = []
    for i, m in enumerate(trajectory.messages):
        if m.role == "assistant" and m.tool_calls and invented_at:
            args = _fold(" ".join(json.dumps(c.arguments, default=str) for c in m.tool_calls))
            acted.extend(v for at, v in invented_at if at < i and _fold(v) and _fold(v) in args and v not in acted)
        if not m.content or m.tool_calls or not (
                m.role in ("user", "assistant") or (m.role == "tool" and m.requestor == "user")):
            continue  # what the user saw: the conversation, and the results of its own tool calls
        text = m.content or ""
        if m.role != "user":
            folded += _fold(text)
            numbers |= _numbers(text)
            heard.append(text)
            continue
        invented = [v for v in _values(text) if not _known(v, folded, numbers)]
        if invented:
            details.setdefault("invented_facts", []).extend(dict.fromkeys(invented))
            invented_at.extend((i, v) for v in dict.fromkeys(invented))
        leaked = [line.strip() for line in text.splitlines() if _REASONING_RE.match(line)]
        if leaked:
            details.setdefault("reasoning_leak", []).extend(leaked)
        secrets = matcher.find(text, heard)
        if secrets:
            details.setdefault("answer_leak", []).extend(str(s) for s in secrets)
        folded += _fold(text)  # what the user said once may be repeated
        numbers |= _numbers(text)
    if str(trajectory.termination_reason) == "user_stop":
        last_agent = _last_agent_before_stop(trajectory.messages)
        if last_agent is not None:
            if goal_reached is False and claims_completion(last_agent):
                details["accepted_false_completion"] = [last_agent]
            if asks_confirmation(last_agent):
                details["stopped_with_pending_write"] = [last_agent]
    flags = [f for f in REVIEW_FLAGS if f in details]
    causes = []
    if "stopped_with_pending_write" in details and not passed and goal_reached is not True:
        causes.append("stopped_with_pending_write")
    if acted and not passed:
        causes.append("invented_fact_acted_on")
        details["invented_fact_acted_on"] = acted
    if "answer_leak" in details:
        causes.append("answer_leak")
    weaknesses = [f for f in flags if f not in causes and not (f == "invented_facts" and acted and not passed)]
    return UserReview(flags=flags, details={f: details[f] for f in (*flags, *causes) if f in details},
                      causes=causes, weaknesses=weaknesses, simulator_caused=bool(causes))


def _last_agent_before_stop(messages: list[Message]) -> str | None:
    """The agent's last text before the user's stop (the user's final message, if any, comes after it)."""
    for m in reversed(messages):
        if m.role == "assistant" and m.content and not m.tool_calls:
            return m.content
    return None
