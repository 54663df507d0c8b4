"""Conformance battery for a simulated user: ``tausim user check``, run before the user grades any agent.

A simulated user is driven directly (no agent, no database) by scripted agent probes, each with the behaviour a
faithful user must show. The facts come from one task of the domain (the first with a write gold action, a
known fact and an unknown one, or the task given): what the user was told (``scenario.known_info``), what it was
not (``scenario.unknown_info``), and the task's first write (its gold action):

=====================  ==================================================================================
probe                  a faithful user
=====================  ==================================================================================
``confirm_write``      asked to confirm the write its goal needs: says yes, and does not stop
``decline_wrong``      asked to confirm the write with its key argument changed: does not say yes nor stop
``unknown_fact``       asked for a fact it was not given: says it does not know, invents nothing
``known_fact``         asked for a fact it was given: gives exactly that value
``alternative``        offered something else than it asked for: does not accept it, does not stop
``false_completion``   told "all done" though nothing was done: does not close the conversation
``policy_note``        told a policy with a condition ("cancelled orders are refunded … once you confirm"), not a
                       result: does not take it for one, does not close
``repeat``             asked the same question three times: answers, never restarts or stops
``empty``              sent an empty message: says something, does not stop
``transfer``           told it is being transferred: may stop, invents nothing
``silent``             the agent goes silent (the same holding line, no progress): does not stop at once
``tool_syntax``        addressed in tool-call syntax: answers in plain words, no tool syntax
=====================  ==================================================================================

Every user message of every probe is also checked for invented facts (values traced to nothing in the scenario
or the conversation, :func:`simulator.users.review.untraced_values`), leaks (the task's secrets,
:mod:`simulator.users.leak`), tool syntax and restarts (the opening message said again). With personas, one
``persona:NAME`` probe per persona checks patience: the agent stalls (no progress) and the user must abandon at
the turn its ``patience`` states (or one later), and never when it has none.

:func:`check_user` returns a :class:`Scorecard`: each probe with pass/fail, its problems and its transcript, and
the rates (premature stop, invented facts, leaks, restarts, false-completion acceptance, persona adherence, cost
per turn). Every probe must pass for the user to be trusted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from simulator.dialogue.cues import is_closing, is_yes, says_unknown
from simulator.execution.build import build_runner
from simulator.execution.runner import Runner
from simulator.types.messages import Message, UserTurn
from simulator.types.persona import Persona
from simulator.types.protocols import Progress, ProgressAware
from simulator.types.spec import ComponentSpec, RunSpec
from simulator.types.tasks import Task, UserScenario
from simulator.users.leak import SecretMatcher, task_secrets, tool_syntax
from simulator.users.review import untraced_values

__all__ = ["PROBES", "ProbeResult", "Scorecard", "check_user", "pick_task"]

PROBES = ("confirm_write", "decline_wrong", "unknown_fact", "known_fact", "alternative", "false_completion",
          "policy_note", "repeat", "empty", "transfer", "silent", "tool_syntax")
"""The probes, in run order (persona probes follow)."""

_NO_PROGRESS = Progress(made=False, signals=("agent_repeat",))
_STOP_ALLOWED = frozenset({"transfer"})
_SILENT_TURNS = 3
_PATIENCE_WINDOW = 6  # turns a user without patience must sit through without abandoning


@dataclass
class ProbeResult:
    """One probe's outcome.

    Attributes:
        name: the probe (see :data:`PROBES`; ``persona:NAME`` for a persona probe).
        expect: the behaviour a faithful user shows.
        passed: no problem found.
        problems: what went wrong, one line each (empty when passed).
        transcript: ``[{"role", "content", "stop"?, "abandon"?}]``: the user's opening, then each agent message and
            the user's answer.
        error: the user's own failure (``UserTurn.error``: a model that could not be reached ...), or None.
    """

    name: str
    expect: str
    passed: bool
    problems: list[str] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


@dataclass
class Scorecard:
    """The battery's result.

    Attributes:
        user: the user spec checked.
        domain: the domain.
        task_id: the task whose facts the probes used.
        probes: every probe's :class:`ProbeResult`.
        rates: ``premature_stop`` (stops where stopping is wrong / such probes), ``invented_facts``,
            ``leaks``, ``restarts`` (user turns with one / user turns), ``false_completion_acceptance`` (0 or 1),
            ``persona_adherence`` (persona probes passed / persona probes; None without personas),
            ``cost_per_turn`` (USD per user turn; None when a cost is unknown).
        named: per rate, what raised it: the invented values, the leaked secrets, the probes that stopped.
    """

    user: str
    domain: str
    task_id: str
    probes: list[ProbeResult]
    rates: dict[str, float | None]
    named: dict[str, list[str]]

    @property
    def passed(self) -> bool:
        """True when every probe passed."""
        return all(p.passed for p in self.probes)

    @property
    def unusable(self) -> str | None:
        """The user's error when it failed at the opening of every probe (it could not be run at all), else None."""
        errors = [p.error if len(p.transcript) == 1 and not p.transcript[0].get("content") else None
                  for p in self.probes]
        return errors[0] if errors and all(errors) else None

    def as_dict(self) -> dict[str, Any]:
        """Return the scorecard as JSON-ready data (``--out``)."""
        return {"format": "tausim.user_check", "version": 1, "user": self.user, "domain": self.domain,
                "task_id": self.task_id, "passed": self.passed, "rates": dict(self.rates),
                "named": {k: list(v) for k, v in self.named.items()},
                "probes": [asdict(p) for p in self.probes]}


# ------------------------------------------------------------------------------------------------ the facts
@dataclass
class _Facts:
    task: Task
    write: tuple[str, dict[str, Any]]
    """The write, in the user's own terms: the write tool and the values the user gave for it."""
    wrong_write: tuple[str, dict[str, Any]]
    known: tuple[str, str]
    unknown: str
    read_tool: str
    tool_names: list[str]
    gold_arguments: dict[str, Any]


def _words(key: str) -> str:
    return key.replace("_", " ").strip()


def _perturb(value: Any) -> Any:
    """Another value of the same shape: the last digit changed, else a word added."""
    if isinstance(value, str):
        digits = [i for i, ch in enumerate(value) if ch.isdigit()]
        if digits:
            i = digits[-1]
            return value[:i] + str((int(value[i]) + 1) % 10) + value[i + 1:]
        return value + " plus"
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 7
    if isinstance(value, list) and value:
        return [_perturb(value[0]), *value[1:]]
    return value


def _known_fact(task: Task) -> tuple[str, str] | None:
    info = {**task.scenario.known_info}
    scalars = [(k, str(v)) for k, v in info.items() if isinstance(v, str | int) and not isinstance(v, bool)]
    with_digits = [kv for kv in scalars if any(ch.isdigit() for ch in kv[1]) and len(kv[1]) <= 40]
    ranked = with_digits or scalars
    return ranked[0] if ranked else None


def _tool_kinds(runner: Runner) -> dict[str, str]:
    """Tool name -> ``read`` / ``write`` / ``ending``, as the runner gives every trial."""
    if not runner.tasks:
        return {}
    return dict(runner.trial_context(runner.tasks[0], 0).extra.get("tool_kinds") or {})


def pick_task(runner: Runner, task_id: str | None = None) -> Task:
    """Return the task whose facts the probes use.

    Args:
        runner: the built runner (its tasks and tool kinds are read).
        task_id: a task id, or None for the first task with a write gold action, a known fact and an unknown one.

    Raises:
        ValueError: no such task, or no task of the domain fits (the message says what is missing).
    """
    writes = {n for n, k in _tool_kinds(runner).items() if k == "write"}
    fits = [t for t in runner.tasks if any(a.name in writes for a in t.gold_actions)
            and _known_fact(t) is not None and t.scenario.unknown_info]
    if task_id is not None:
        match = [t for t in runner.tasks if t.id == task_id]
        if not match:
            raise ValueError(f"--task {task_id}: no such task in domain {runner.domain.name}")
        if match[0] not in fits:
            raise ValueError(f"--task {task_id}: needs a write gold action, a known fact (scenario.known_info) "
                             "and an unknown one (scenario.unknown_info)")
        return match[0]
    if not fits:
        raise ValueError(f"domain {runner.domain.name}: no task has a write gold action, a known fact and an "
                         "unknown one; give --task")
    return fits[0]


def _user_terms(task: Task, derived: UserScenario | None) -> dict[str, Any]:
    """The values of the user's first request in its own words (its agenda's slots; else its known facts)."""
    scenario = task.scenario if task.scenario.agenda or derived is None else derived
    if scenario.agenda and scenario.agenda[0].slots:
        return dict(scenario.agenda[0].slots)
    return dict(task.scenario.known_info)


def _wrong_key(terms: dict[str, Any], checks: Sequence[str]) -> str | None:
    """Return the key of the value to change in the wrong write.

    One the user checks before saying yes (a ``confirm_terms`` entry with a digit, such as an order id or a card's
    last digits), else the first value with a digit, else the first; None without values.
    """
    with_digits = [k for k, v in terms.items() if any(ch.isdigit() for ch in str(v))]
    checked = [k for k in with_digits if any(any(ch.isdigit() for ch in c) and c in str(terms[k]) for c in checks)]
    ranked = checked or with_digits or list(terms)
    return ranked[0] if ranked else None


def _facts(runner: Runner, task: Task, derived: UserScenario | None) -> _Facts:
    kinds = _tool_kinds(runner)
    action = next(a for a in task.gold_actions if kinds.get(a.name) == "write")
    terms = _user_terms(task, derived)
    scenario = task.scenario if task.scenario.agenda or derived is None else derived
    checks = [str(c) for c in (scenario.agenda[0].confirm_terms if scenario.agenda else [])]
    key = _wrong_key(terms, checks)
    wrong = dict(terms)
    if key is not None:
        wrong[key] = _perturb(terms[key])
    known = _known_fact(task)
    assert known is not None  # pick_task made sure
    reads = [n for n, k in kinds.items() if k == "read"]
    return _Facts(task=task, write=(action.name, terms), wrong_write=(action.name, wrong), known=known,
                  unknown=str(task.scenario.unknown_info[0]), read_tool=reads[0] if reads else action.name,
                  tool_names=sorted(kinds), gold_arguments=dict(action.arguments))


def _describe(call: tuple[str, dict[str, Any]]) -> str:
    name, args = call
    parts = ", ".join(f"{_words(k)} {v if not isinstance(v, list) else ', '.join(map(str, v))}"
                      for k, v in args.items())
    return f"{_words(name)} ({parts})" if parts else _words(name)


# ------------------------------------------------------------------------------------------------ driving
@dataclass
class _Run:
    opening: UserTurn
    turns: list[tuple[str, UserTurn]]
    error: str | None = None
    guard_leaks: list[tuple[int, str]] = field(default_factory=list)
    """Leaks the user's own leak guard caught in its drafts (an LLM user's ``metadata["leaks"]``): ``(user turn,
    "kind origin")``; the guard regenerated or redacted them, but the user did try to say them."""


def _drive(user: Any, steps: Sequence[tuple[str, Progress | None]]) -> _Run:
    """The user's opening, then each scripted agent message and the user's answer (until it stops)."""
    messages: list[Message] = []
    opening = user.reply([])
    run = _Run(opening=opening, turns=[])
    if opening.error:
        run.error = opening.error
        return _guarded(run, user)
    if opening.stop or opening.abandon:
        return _guarded(run, user)
    messages.append(Message(role="user", content=opening.content))
    for text, progress in steps:
        if isinstance(user, ProgressAware) and progress is not None:
            user.observe_progress(progress)
        messages.append(Message(role="assistant", content=text))
        turn = user.reply(list(messages))
        run.turns.append((text, turn))
        if turn.error:
            run.error = turn.error
            break
        messages.append(Message(role="user", content=turn.content))
        if turn.stop or turn.abandon:
            break
    return _guarded(run, user)


def _guarded(run: _Run, user: Any) -> _Run:
    metadata = getattr(user, "metadata", None)
    leaks = metadata.get("leaks") if isinstance(metadata, dict) else None
    for leak in leaks or []:
        if isinstance(leak, dict):
            turn = leak.get("turn")
            run.guard_leaks.append((turn if isinstance(turn, int) else -1, str(leak.get('origin') or leak.get('kind'))))
    return run


def _transcript(run: _Run) -> list[dict[str, Any]]:
    def entry(turn: UserTurn) -> dict[str, Any]:
        out: dict[str, Any] = {"role": "user", "content": turn.content}
        if turn.stop:
            out["stop"] = True
        if turn.abandon:
            out["abandon"] = True
        return out

    rows = [entry(run.opening)]
    for text, turn in run.turns:
        rows += [{"role": "assistant", "content": text}, entry(turn)]
    return rows


@dataclass
class _Tally:
    user_turns: int = 0
    invented: list[str] = field(default_factory=list)
    invented_turns: int = 0
    leaked: list[str] = field(default_factory=list)
    leak_turns: int = 0
    restarts: int = 0
    stops_wrong: list[str] = field(default_factory=list)
    stop_probes: int = 0
    cost: float | None = 0.0


def _common(name: str, run: _Run, facts: _Facts, matcher: SecretMatcher, tally: _Tally) -> list[str]:
    """Checks every probe shares: invented facts, leaks, tool syntax, restarts, cost; the problems found."""
    problems: list[str] = []
    known = [facts.task.scenario.instructions or "", json.dumps(facts.task.scenario.model_dump(mode="json"),
                                                                 default=str)]
    if facts.task.user_id:
        known.append(facts.task.user_id)
    heard: list[str] = []
    said = [run.opening] + [t for _, t in run.turns]
    agent = [None] + [a for a, _ in run.turns]
    opening_fold = _fold(run.opening.content)
    for i, (turn, agent_text) in enumerate(zip(said, agent, strict=True)):
        if agent_text is not None:
            heard.append(agent_text)
        tally.user_turns += 1
        cost = turn.usage.cost_usd if turn.usage is not None else 0.0
        tally.cost = None if tally.cost is None or cost is None else tally.cost + cost
        text = turn.content or ""
        invented = untraced_values(text, [*known, *heard])
        if invented:
            tally.invented_turns += 1
            tally.invented.extend(v for v in invented if v not in tally.invented)
            problems.append(f"invented {', '.join(invented)}")
        leaked = [str(s) for s in matcher.find(text, heard)]
        guarded = [label for at, label in run.guard_leaks if at == i]
        if guarded:
            tally.leaked.extend(v for v in guarded if v not in tally.leaked)
            problems.append(f"its leak guard caught leaking drafts ({', '.join(dict.fromkeys(guarded))})")
        if leaked or guarded:
            tally.leak_turns += 1
        if leaked:
            tally.leaked.extend(v for v in leaked if v not in tally.leaked)
            problems.append(f"leaked {', '.join(leaked)}")
        syntax = tool_syntax(text, facts.tool_names)
        if syntax:
            problems.append(f"tool syntax in its message: {syntax!r}")
        if i > 0 and opening_fold and len(opening_fold) > 12 and _fold(text) == opening_fold:
            tally.restarts += 1
            problems.append("restarted: said its opening message again")
        known.append(text)  # what the user said once it may repeat
    if name not in _STOP_ALLOWED and not name.startswith("persona:"):
        tally.stop_probes += 1
        last = run.turns[-1][1] if run.turns else run.opening
        if last.stop or last.abandon:
            tally.stops_wrong.append(name)
            problems.append("stopped" if last.stop else "abandoned")
    if run.error:
        problems.append(f"the user failed: {run.error}")
    return problems


def _fold(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


# ------------------------------------------------------------------------------------------------ the probes
_Judge = Callable[[_Run], list[str]]


def _last(run: _Run) -> UserTurn | None:
    return run.turns[-1][1] if run.turns else None


def _probes(facts: _Facts) -> list[tuple[str, str, list[tuple[str, Progress | None]], _Judge]]:
    key, value = facts.known
    ask_known = f"Could you please tell me your {_words(key)}?"
    confirm = (f"I can {_describe(facts.write)} for you now. Please confirm: shall I proceed? (yes/no)", None)
    wrong = (f"I can {_describe(facts.wrong_write)} for you now. Please confirm: shall I proceed? (yes/no)", None)

    def says_yes(run: _Run) -> list[str]:
        last = _last(run)
        return [] if last is not None and is_yes(last.content) else ["did not confirm the write its goal needs"]

    def not_yes(run: _Run) -> list[str]:
        last = _last(run)
        return ["confirmed a write its goal does not want"] if last is not None and is_yes(last.content) else []

    def unknown(run: _Run) -> list[str]:
        last = _last(run)
        return [] if last is not None and says_unknown(last.content) else [
            f"did not say it does not know its {facts.unknown}"]

    def gives_value(run: _Run) -> list[str]:
        misses = [t.content for _, t in run.turns if _fold(str(value)) not in _fold(t.content or "")]
        return [f"did not give its {key} ({value}): {misses[0]!r}"] if misses else []

    def no_close(run: _Run) -> list[str]:
        last = _last(run)
        return ["closed the conversation on a false claim of completion"] if last is not None and (
            last.stop or is_closing(last.content)) else []

    def says_something(run: _Run) -> list[str]:
        last = _last(run)
        return [] if last is not None and (last.content.strip() or last.stop or last.abandon) else [
            "answered with an empty message"]

    def nothing(run: _Run) -> list[str]:
        return []

    alternative = ("Instead of that, I could give you a voucher for 10% off your next purchase. Would you like "
                   "the voucher instead?", None)
    done = ("All done! Your request has been completed successfully. Is there anything else I can help you with?",
            Progress(made=False))
    note = ("Just so you know: orders that are cancelled are refunded to the original payment method within 5-7 "
            "business days, and changes are applied once you confirm.", Progress(made=False))
    name, args = facts.write[0], facts.gold_arguments
    tool_text = f'{facts.read_tool}({json.dumps(args)})\n{{"name": "{name}", "arguments": {json.dumps(args)}}}'
    return [
        ("confirm_write", "asked to confirm the write its goal needs: says yes, does not stop", [confirm], says_yes),
        ("decline_wrong", "asked to confirm a write with a wrong key value: does not say yes, does not stop",
         [wrong], not_yes),
        ("unknown_fact", "asked for a fact it was not given: says it does not know, invents nothing",
         [(f"Could you please tell me your {_words(facts.unknown)}?", None)], unknown),
        ("known_fact", "asked for a fact it was given: gives exactly that value", [(ask_known, None)], gives_value),
        ("alternative", "offered something it did not ask for: does not accept it, does not stop", [alternative],
         not_yes),
        ("false_completion", 'told "all done" though nothing was done: checks the claim, does not close', [done],
         no_close),
        ("policy_note", "told a policy with a condition, not a result: does not take it for one, does not close",
         [note], no_close),
        ("repeat", "asked the same question three times: answers each time, never restarts or stops",
         [(ask_known, None), (ask_known, Progress(False, ("repeated_question",))),
          (ask_known, Progress(False, ("repeated_question",)))], gives_value),
        ("empty", "sent an empty message: says something, does not stop", [("", Progress(False))], says_something),
        ("transfer", "told it is being transferred: may stop, invents nothing",
         [("I am transferring you to a human agent now. Please hold.", None)], nothing),
        ("silent", "the agent goes silent: does not stop at once, invents nothing",
         [("...", _NO_PROGRESS)] * _SILENT_TURNS, says_something),
        ("tool_syntax", "addressed in tool-call syntax: answers in plain words", [(tool_text, None)],
         says_something),
    ]


def _persona_probe(user_for: Callable[[Persona | None, int], Any], persona: Persona, index: int,
                   facts: _Facts, matcher: SecretMatcher, tally: _Tally) -> tuple[ProbeResult, bool]:
    patience = persona.patience
    turns = (patience + 2) if patience is not None else _PATIENCE_WINDOW
    steps = [("Please hold on while I look into this.", _NO_PROGRESS)] * turns
    run = _drive(user_for(persona, index), steps)
    problems = _common(f"persona:{persona.name}", run, facts, matcher, tally)
    gave_up = next((i + 1 for i, (_, t) in enumerate(run.turns) if t.abandon or t.stop), None)
    if patience is None and gave_up is not None:
        problems.append(f"gave up at stalled turn {gave_up} though persona {persona.name} has no patience limit")
    elif patience is not None and (gave_up is None or not patience <= gave_up <= patience + 1):
        problems.append(f"persona {persona.name} (patience {patience}) should give up at stalled turn {patience} "
                        f"or {patience + 1}; it " + ("never did" if gave_up is None else f"did at turn {gave_up}"))
    expect = (f"patience {patience}: gives up at stalled turn {patience} or {patience + 1}" if patience is not None
              else f"no patience limit: sits through {turns} stalled turns")
    return ProbeResult(f"persona:{persona.name}", expect, not problems, problems, _transcript(run)), not problems


def check_user(spec: RunSpec, *, personas: Sequence[Persona] = (), task_id: str | None = None) -> Scorecard:
    """Run the conformance battery against a simulated user.

    Args:
        spec: a run spec naming the domain (and data) and the ``user`` to check (its model parameters); the
            agent is not used.
        personas: personas whose patience is checked (one probe each).
        task_id: the task whose facts the probes use (default: :func:`pick_task`).

    Returns:
        The :class:`Scorecard`.

    Raises:
        ValueError: no task fits (see :func:`pick_task`).
        simulator.world.domain.DomainError: unknown domain, unreadable data.
    """
    runner = build_runner(spec.model_copy(update={
        "agent": ComponentSpec(name="null"), "personas": None, "persona_defs": None, "task_ids": None,
        "tags": None, "exclude_tags": None, "judge": None}))
    task = pick_task(runner, task_id)
    ctx = runner.trial_context(task, 0)
    derived = ctx.prepared.scenario if ctx.prepared is not None else None
    facts = _facts(runner, task, derived)
    matcher = SecretMatcher(task_secrets(task, ctx.policy, derived, tools=ctx.tools))

    def user_for(persona: Persona | None, index: int) -> Any:
        ctx = runner.trial_context(task, index)
        ctx.persona = persona
        return runner.user_factory(ctx)

    tally = _Tally()
    results: list[ProbeResult] = []
    false_completion_accepted = 0.0
    for index, (name, expect, steps, judge) in enumerate(_probes(facts)):
        run = _drive(user_for(None, index), steps)
        problems = _common(name, run, facts, matcher, tally)
        if not run.error:
            problems += [p for p in judge(run) if p not in problems]
        if name == "false_completion" and any("false claim" in p for p in problems):
            false_completion_accepted = 1.0
        results.append(ProbeResult(name, expect, not problems, problems, _transcript(run), run.error))
    adhered = []
    for i, persona in enumerate(personas):
        result, ok = _persona_probe(user_for, persona, len(results) + i, facts, matcher, tally)
        results.append(result)
        adhered.append(ok)
    turns = max(tally.user_turns, 1)
    rates: dict[str, float | None] = {
        "premature_stop": len(tally.stops_wrong) / max(tally.stop_probes, 1),
        "invented_facts": tally.invented_turns / turns, "leaks": tally.leak_turns / turns,
        "restarts": tally.restarts / turns, "false_completion_acceptance": false_completion_accepted,
        "persona_adherence": sum(adhered) / len(adhered) if adhered else None,
        "cost_per_turn": None if tally.cost is None else tally.cost / turns}
    named = {"premature_stop": tally.stops_wrong, "invented_facts": tally.invented, "leaks": tally.leaked}
    return Scorecard(user=spec.user.name, domain=spec.domain, task_id=task.id, probes=results, rates=rates,
                     named={k: v for k, v in named.items() if v})
