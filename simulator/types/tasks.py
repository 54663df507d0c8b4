"""Tasks: the model, and loaders for our own task files and tau-bench v1 task lists.

Our format (``*.json``)::

    {"format": "tausim.tasks", "version": 1, "domain": "retail",
     "tasks": [{"id": "cancel-1", "user_id": "...",
                "scenario": {"instructions": "...", "known_info": {...}, "unknown_info": [...]},
                "gold_actions": [{"name": "cancel_pending_order", "arguments": {...}}],
                "required_outputs": ["..."], "tags": ["cancel"]}]}

Version 2 adds, per task, ``initial_state`` (a fixture: rows to insert, update or delete, a clock time and setup
actions), ``assertions`` (see :mod:`simulator.types.assertions`), ``grade`` (the components that decide pass), ``seed``
(a pinned trial seed), ``prefix`` (a trajectory-prefix regression case: the conversation and database state just
before an agent's first error, and what its next step must and must not do, see :class:`TrialPrefix`) and, in
``scenario``, ``script``, ``persona``, ``moves`` and ``move_personas`` (regression cases of ``tausim hunt``); a
version 1 file may not use them. Both versions accept ``alternatives`` (other outcomes, see :class:`Alternative`).

tau-bench v1 format: a JSON list of ``{"user_id", "instruction", "actions": [{"name", "kwargs"}], "outputs"}``;
such tasks get ``id`` = their index in the file, as a string.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from simulator.errors import TaskFileError
from simulator.types.assertions import Assertion
from simulator.types.jsonfile import decode_file_text, not_utf8
from simulator.types.messages import Message
from simulator.types.persona import NAME_PATTERN, Persona
from simulator.types.rules import Precedence, ProcessRules
from simulator.types.sanitize import clipped, excerpt

__all__ = ["DEFAULT_GRADE", "Action", "Alternative", "Budget", "Conduct", "EnvAssertion", "GradeComponent",
           "InitialState", "Intent", "JudgeAssertion", "MessageProperty", "NextStep", "Precedence", "PrefixUser",
           "ProcessRules", "RowUpdate", "StepCall", "Task", "TaskFileError", "TrialPrefix", "UserScenario",
           "check_task_id", "load_tasks", "parse_tasks"]

GradeComponent = Literal["state", "outputs", "process", "loops", "budget", "assertions", "actions", "env_assertions",
                         "judge"]
"""A grading component that can decide a trial's pass (``actions``, ``env_assertions`` and ``judge`` are the
tau2-bench reward bases ACTION, ENV_ASSERTION and NL_ASSERTION; DB is ``state``, COMMUNICATE ``outputs``)."""

DEFAULT_GRADE: tuple[GradeComponent, ...] = ("state", "outputs", "process", "loops", "budget")
"""The components that decide pass when a task names none (plus ``assertions`` when it has some)."""


class Action(BaseModel):
    """One gold action: a tool call the correct agent makes."""

    model_config = ConfigDict(extra="forbid")
    name: str
    """Tool name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Tool arguments."""
    requestor: Literal["assistant", "user"] = "assistant"
    """Who makes the call: the agent, or (dual-control domains) the user on its own side (a user tool, or in a
    setup action a user-side environment function)."""
    compare_args: list[str] | None = None
    """For the ``actions`` component: the arguments a trial's call must match (None: all; ``[]``: the name only)."""


class EnvAssertion(BaseModel):
    """A check on the final environment (tau2 ``env_assertions``): a domain function's value.

    Graded as component ``env_assertions``: the function is one of the domain's
    :meth:`~simulator.world.domain.Domain.assertion_functions` (the same as the ``env`` assertion type calls).
    """

    model_config = ConfigDict(extra="forbid")
    env_type: Literal["assistant", "user"] = "assistant"
    """Which side's function: the agent's (``assistant``) or, in dual-control domains, the user's."""
    func_name: str = Field(min_length=1)
    """The function's name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Its arguments."""
    assert_value: Any = True
    """The value it must return."""
    message: str | None = None
    """What the check means, for reports."""


class Conduct(BaseModel):
    """How a suite runs and ends its trials (tau2-bench's orchestration rules for its imported tasks).

    None on a task: tausim's own rules (nothing here applies).
    """

    model_config = ConfigDict(extra="forbid")
    greeting: str | None = None
    """The agent's fixed first message, said before the user speaks (None: the user speaks first)."""
    max_tool_errors: int | None = Field(default=None, ge=1)
    """Tool calls that may fail before the trial ends with ``too_many_errors`` (None: no limit)."""
    graded_endings: list[str] | None = None
    """Termination reasons whose trial is graded; any other fails (None: only error and cap reasons fail)."""
    stop_tokens: list[str] = Field(default_factory=list)
    """Extra tokens with which the simulated user ends the conversation (e.g. ``###OUT-OF-SCOPE###``)."""


class Intent(BaseModel):
    """One item of a rule-based user's agenda: something it wants done or wants to know.

    The rule-based user (:mod:`simulator.users.rule_user`) states ``request`` (a phrasing drawn by the trial
    seed), answers the agent's questions from ``slots``, picks among offered options by ``preferences``, says yes
    to a confirmation request only when it mentions every ``confirm_terms`` entry, asks ``ask`` once the action is
    reported done (or as the intent itself for ``kind`` ``info``), and switches to ``fallback`` when the agent
    says the wish cannot be met (or when its persona changes its mind). Every value it can ever state is in
    this object or the scenario's ``identity``; nothing else.
    """

    model_config = ConfigDict(extra="forbid")
    kind: str = Field(min_length=1)
    """What the user wants, as the domain's verb. Retail: ``cancel``, ``return``, ``exchange``, ``modify_items``,
    ``modify_address`` (of an order), ``modify_user_address``, ``modify_payment``, ``info``, ``transfer``.
    Airline: ``book``, ``cancel``, ``change_flights``, ``change_cabin``, ``add_baggage``,
    ``update_passengers``, ``info``, ``transfer``. The reference agents understand these from the ``request``
    wording, not from this field (the agent never sees the scenario)."""
    request: list[str] = Field(min_length=1)
    """How the user asks for it in its own words (lower-case start, no final stop), e.g. ``"exchange the
    mechanical keyboard in order #W123 for one with clicky switches"``; one is drawn by the trial seed. Only
    values the user knows may appear."""
    slots: dict[str, Any] = Field(default_factory=dict)
    """Values the user gives for this intent when asked, by standard slot name: ``order_id``,
    ``reservation_id``, ``items`` (list of plain descriptions such as ``"mechanical keyboard"``),
    ``new_items``, ``payment`` (a kind such as ``"gift card"``, or ``"credit card ending in 1234"``), ``reason``,
    ``address`` (an object), ``flight``, ``cabin``, ``passengers`` ...; a value is a string, number, list or
    object of those."""
    preferences: dict[str, str] = Field(default_factory=dict)
    """Wanted option values by option name (e.g. ``{"switch type": "clicky"}``), used to choose among options the
    agent offers and stated when the agent asks what the user wants."""
    confirm_terms: list[str] = Field(default_factory=list)
    """Terms (case-insensitive) an agent confirmation request must contain for the user to answer yes, e.g. the
    order id and the wanted option values; any missing: the user says no and restates what it wants."""
    ask: str | None = None
    """A question the user asks once the action is done (or, for ``info``, as its request), e.g. ``"what is my
    gift card balance now"``."""
    fallback: Intent | None = None
    """What the user wants instead when this cannot be done (or when its persona changes its mind)."""


def _check_moves(moves: dict[int, str]) -> dict[int, str]:
    """Return ``moves`` (reply index -> user move) when each names a known move, else raise ValueError."""
    from simulator.types.persona import MOVES  # here: simulator.users imports this module

    for index, move in sorted(moves.items()):
        name, sep, _ = move.partition(":")
        if name not in MOVES:
            raise ValueError(f"reply {index}: unknown user move {move!r} (moves: {', '.join(MOVES)})")
        if name != "switch_persona" and sep:
            raise ValueError(f"reply {index}: user move {name!r} takes no argument, got {move!r}")
    return moves


class UserScenario(BaseModel):
    """Who the simulated user is and what it wants."""

    model_config = ConfigDict(extra="forbid")
    instructions: str
    """Natural-language instruction for the user (what it wants, how it behaves)."""
    known_info: dict[str, Any] = Field(default_factory=dict)
    """Facts the user knows and may give (identity slots, order ids, item descriptions)."""
    unknown_info: list[str] = Field(default_factory=list)
    """Things the user does not know and must not state (e.g. ``"item ids"``)."""
    opening: str | None = None
    """First message of a scripted user; when None one is made from the instructions."""
    script: list[str] | None = None
    """Every user turn pinned, in order (a regression case written by ``tausim hunt``): the scripted user
    (``--user scripted``) says them instead of ``opening`` (a line may end with ``###STOP###``)."""
    persona: Persona | None = None
    """The persona the user plays when the run names none (a regression case written by ``tausim hunt``)."""
    moves: dict[int, str] = Field(default_factory=dict)
    """User moves pinned by ``tausim hunt``: user reply index (0-based) -> move (:data:`simulator.types.persona.MOVES`,
    ``switch_persona:NAME``), made in place of the user's own reply, whatever the user (the runner wraps it)."""
    move_personas: list[Persona] = Field(default_factory=list)
    """The personas ``switch_persona:NAME`` moves name."""
    identity: dict[str, str] = Field(default_factory=dict)
    """Identity slots for the rule-based user: ``name``, ``first_name``, ``last_name``, ``zip``, ``email``,
    ``user_id``, ``dob`` ...; given when the agent asks to identify (how many at once: the persona's reveal style)."""
    agenda: list[Intent] = Field(default_factory=list)
    """Ordered intents of the rule-based user; empty: the task has no structured scenario (the rule-based user
    then asks the domain to derive one, see :meth:`simulator.world.domain.Domain.derive_scenario`)."""

    @field_validator("moves")
    @classmethod
    def _known_moves(cls, moves: dict[int, str]) -> dict[int, str]:
        return _check_moves(moves)

    @model_validator(mode="after")
    def _switch_personas_known(self) -> UserScenario:
        named = {p.name for p in self.move_personas}
        for index, move in sorted(self.moves.items()):
            name, _, arg = move.partition(":")
            if name == "switch_persona" and arg not in named:
                raise ValueError(f"moves.{index}: {move!r} must name a persona of move_personas "
                                 f"(switch_persona:NAME; move_personas: {', '.join(sorted(named)) or 'none'})")
        return self


class Alternative(BaseModel):
    """Another outcome a user that changes its mind may end up wanting, with its own goal (:meth:`Task.for_outcome`)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=NAME_PATTERN, max_length=40)
    """Identifier of the outcome, recorded as the user's ``outcome`` and the grade's ``outcome``."""
    intent: Intent
    """The agenda item the user switches to when it changes its mind (it replaces the intent the user is on)."""
    gold_actions: list[Action] = Field(default_factory=list)
    """Tool calls whose replay on a fresh database yields this outcome's goal state (the whole conversation's)."""
    required_outputs: list[str] = Field(default_factory=list)
    """Values the agent must state for this outcome."""
    assertions: list[Assertion] = Field(default_factory=list)
    """Declarative checks of this outcome (in place of the task's)."""


class Budget(BaseModel):
    """Ceilings on one trial's trajectory (grading component ``budget``); None: no ceiling.

    Steps and tool calls are those of the trajectory; tokens and cost are the agent's (prompt plus
    completion tokens; the simulated user's are not the agent's doing). Exceeding a ceiling fails the trial.
    """

    model_config = ConfigDict(extra="forbid")
    max_steps: int | None = Field(default=None, ge=0)
    """Agent actions (tool calls and text messages)."""
    max_tool_calls: int | None = Field(default=None, ge=0)
    """Tool calls, whatever their status."""
    max_tokens: int | None = Field(default=None, ge=0)
    """Agent tokens, prompt plus completion."""
    max_cost_usd: float | None = Field(default=None, ge=0)
    """Agent cost in USD; a trial whose cost is unknown (unpriced model) fails a set ceiling (fail-closed)."""

    def tightest(self, other: Budget | None) -> Budget:
        """Return the budget where each ceiling is the smaller of the two (None: no ceiling)."""
        if other is None:
            return self
        values: dict[str, Any] = {}
        for name in type(self).model_fields:
            a, b = getattr(self, name), getattr(other, name)
            values[name] = b if a is None else a if b is None else min(a, b)
        return Budget(**values)


class JudgeAssertion(BaseModel):
    """A yes/no assertion about the conversation, asked to the LLM judge (grading component ``judge``).

    Phrase it so that ``yes`` is the correct behaviour, e.g. "the agent explained why the refund cannot go to
    PayPal". In a task file either an object ``{"assertion": "...", "rubric": "..."}`` or a plain string.
    """

    model_config = ConfigDict(extra="forbid")
    assertion: str = Field(min_length=1)
    """The statement the judge must find true of the transcript."""
    rubric: str | None = None
    """Extra guidance for the judge (what counts, what does not)."""

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"assertion": data} if isinstance(data, str) else data


class RowUpdate(BaseModel):
    """A fixture update: the row with primary key ``key`` gets the values of ``set``."""

    model_config = ConfigDict(extra="forbid")
    key: dict[str, Any] = Field(min_length=1)
    """Primary-key column -> value."""
    set: dict[str, Any] = Field(min_length=1)
    """Column -> new value."""


class InitialState(BaseModel):
    """A per-task fixture applied to the trial's database before the conversation (and to the goal state).

    Applied in this order: ``delete``, ``update``, ``insert`` (each table in the order given), the clock's
    ``now``, then the ``setup`` actions (tool calls recorded as setup events, not attributed to the agent).
    """

    model_config = ConfigDict(extra="forbid")
    now: str | None = None
    """The clock's "now" for the task (ISO 8601); needs a domain with a Clock sink."""
    insert: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    """Table -> rows to add (column -> value)."""
    update: dict[str, list[RowUpdate]] = Field(default_factory=dict)
    """Table -> rows to change."""
    delete: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    """Table -> primary keys (column -> value) of rows to remove."""
    setup: list[Action] = Field(default_factory=list)
    """Tool calls run after the rows, before the conversation; each must succeed."""
    data: dict[str, Any] | None = None
    """Native data (``{table: {key: record}}``, as the domain dumps it) deep-merged into the database before
    anything else (tau2 ``initialization_data.agent_data``)."""
    user_data: dict[str, Any] | None = None
    """The user side's data to merge (tau2 ``initialization_data.user_data``), for dual-control domains; a
    domain without a user side refuses a task that has it (when its trial is prepared)."""
    history: list[dict[str, Any]] = Field(default_factory=list)
    """A prior conversation (tau2 ``message_history``): messages ``{role, content, tool_calls}`` the trial
    starts with; the assistant's tool calls whose result is not an error are replayed before the trial."""

    @field_validator("now")
    @classmethod
    def _iso(cls, v: str | None) -> str | None:
        if v is not None:
            datetime.fromisoformat(v)
        return v


MessageProperty = Literal["confirmation", "question", "refusal", "repeated_question"]
"""A property of the agent's closing message in a graded next step (:class:`NextStep`): ``confirmation`` it asks
the user to confirm an action (:func:`simulator.dialogue.cues.asks_confirmation`), ``question`` it asks something,
``refusal`` it declines ("I can't", "not allowed", ...), ``repeated_question`` it asks a question the agent already
asked in the prefix."""


class StepCall(BaseModel):
    """A pattern of tool calls in a graded next step: by tool ``name`` or ``kind``, and key arguments."""

    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    """The tool's name (None: any tool of ``kind``)."""
    kind: Literal["read", "write", "ending"] | None = None
    """The tool's kind (``ending``: a tool that ends the conversation); None: any kind."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Key arguments the call must have with these values (others are free); empty: any arguments."""

    @model_validator(mode="after")
    def _named(self) -> StepCall:
        if self.name is None and self.kind is None:
            raise ValueError("a call pattern needs a tool name or a kind")
        return self


class NextStep(BaseModel):
    """What the agent's next turn after a trajectory prefix must and must not do (all must hold to pass).

    The next turn is the agent's tool calls up to and including its next text message.
    """

    model_config = ConfigDict(extra="forbid")
    must_call: list[StepCall] = Field(default_factory=list)
    """Each pattern must match at least one of the turn's tool calls."""
    must_not_call: list[StepCall] = Field(default_factory=list)
    """No tool call of the turn may match any of these patterns."""
    must_say: list[MessageProperty] = Field(default_factory=list)
    """Properties the turn's closing message must have."""
    must_not_say: list[MessageProperty] = Field(default_factory=list)
    """Properties the turn's closing message must not have."""

    @model_validator(mode="after")
    def _some(self) -> NextStep:
        if not (self.must_call or self.must_not_call or self.must_say or self.must_not_say):
            raise ValueError("a next step needs at least one expectation (must_call, must_not_call, must_say, "
                             "must_not_say)")
        return self


class PrefixUser(BaseModel):
    """The simulated user's state at the end of a trajectory prefix (what ``tausim hunt`` captured).

    A :class:`Task` checks it against its scenario: ``persona`` must be the scenario's ``persona``, one of its
    ``move_personas`` or a persona a ``switch_persona`` move of ``moves`` names; ``intent`` at most the agenda's
    length.
    """

    model_config = ConfigDict(extra="forbid")
    persona: str | None = Field(default=None, pattern=NAME_PATTERN)
    """The persona the user plays there (None: the default manner)."""
    turn: int = Field(default=0, ge=0)
    """The user's replies so far."""
    intent: int | None = Field(default=None, ge=0)
    """The rule-based user's agenda position (``len(agenda)``: every intent done); None: a user without one."""
    stale: int | None = Field(default=None, ge=0)
    """Patience used: the rule-based user's replies since the agent last made progress; None: not tracked."""
    moves: dict[int, str] = Field(default_factory=dict)
    """The user moves made so far: reply index (before ``turn``) -> move (as ``scenario.moves``)."""

    @field_validator("moves")
    @classmethod
    def _known_moves(cls, moves: dict[int, str]) -> dict[int, str]:
        return _check_moves(moves)

    @model_validator(mode="after")
    def _moves_made(self) -> PrefixUser:
        late = [i for i in self.moves if i < 0 or i >= self.turn]
        if late:
            raise ValueError(f"moves: reply {min(late)} is not among the {self.turn} replies made so far (turn)")
        return self


class TrialPrefix(BaseModel):
    """A trajectory prefix: a trial stopped just before the agent's first error (a ``tausim hunt`` case).

    A task with a prefix is not played from its start: the trial database is the task's (template plus fixture)
    with ``rows``, ``deleted`` and ``events`` applied, the agent is given ``messages`` (a stateful rule agent is
    first brought to that point by replaying its ``agent_steps``), and only its next turn is run and graded
    against ``next_step`` (see :mod:`simulator.dialogue.prefix`).
    """

    model_config = ConfigDict(extra="forbid")
    messages: list[Message] = Field(min_length=1)
    """The conversation so far, tool calls and results included; the last is the user's message the agent
    answers next."""
    agent_steps: list[int] = Field(default_factory=list)
    """The number of messages the agent saw at each of its steps in the prefix, in order (increasing): a rule
    agent's state is restored by replaying them."""
    rows: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    """Table -> the rows written by the prefix (every column), each inserted or replacing the row with its
    primary key."""
    deleted: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    """Table -> primary keys (column -> value) of the rows the prefix removed."""
    events: list[dict[str, Any]] = Field(default_factory=list)
    """The event log at that point (rows of the domain's event table)."""
    user: PrefixUser = Field(default_factory=PrefixUser)
    """The simulated user's state there (``persona``, ``turn``: its replies so far, ``intent``: agenda position,
    ``stale``: patience used, ``moves``), to continue the conversation."""
    next_step: NextStep
    """What the agent's next turn must and must not do."""

    @field_validator("agent_steps")
    @classmethod
    def _increasing(cls, v: list[int]) -> list[int]:
        if any(b <= a for a, b in zip(v, v[1:], strict=False)) or any(n < 1 for n in v):
            raise ValueError(f"agent_steps must be increasing positive message counts, got {v}")
        return v

    @model_validator(mode="after")
    def _ends_with_user(self) -> TrialPrefix:
        last = self.messages[-1]
        if last.role != "user" or not last.content or last.requestor is not None:
            raise ValueError(f"the last message of a prefix must be the user's text message, got role {last.role!r}")
        seen = sum(1 for m in self.messages if m.requestor is None)
        if self.agent_steps and self.agent_steps[-1] >= seen:
            raise ValueError(f"agent_steps {self.agent_steps[-1]} is not before the prefix's last message ({seen} "
                             "messages the agent sees)")
        return self


class Task(BaseModel):
    """One scenario: the user, the gold actions, the required outputs and tags."""

    model_config = ConfigDict(extra="forbid")
    id: str
    """Unique id within its task set (tau-bench tasks: the index in the file)."""
    user_id: str | None = None
    """The domain user the scenario is about, when there is one."""
    scenario: UserScenario
    gold_actions: list[Action] = Field(default_factory=list)
    """Tool calls whose replay on a fresh database yields the goal state."""
    reference: list[Action] | None = None
    """The reference trajectory of the trajectory metrics (:mod:`simulator.stats.trajectory`), when it differs
    from the gold actions (e.g. with the reads a good agent makes first); None: the gold actions."""
    required_outputs: list[str] = Field(default_factory=list)
    """Values the agent must state in its messages (whole-token match, numbers as numbers)."""
    tags: list[str] = Field(default_factory=list)
    process: ProcessRules = Field(default_factory=ProcessRules)
    """Rules on the trajectory (forbidden/required tools, no writes, expected termination, precedence,
    confirmation before writes); merged over the domain's
    :meth:`~simulator.world.domain.Domain.default_process_rules`."""
    max_turns: int | None = None
    """Turn cap for this task (overrides the run's default)."""
    loop_threshold: int | None = Field(default=None, ge=0)
    """Identical repeats of a tool call allowed before it counts as a loop (None: the domain's default)."""
    loop_retries: int | None = Field(default=None, ge=0)
    """Retries right after an error that loop detection exempts per identical call (None: one, see
    :data:`simulator.grading.loops.DEFAULT_RETRIES`)."""
    budget: Budget | None = None
    """Ceilings on the trajectory (applied together with a run's ``--budgets`` file: the tighter wins)."""
    judge: list[JudgeAssertion] = Field(default_factory=list)
    """Yes/no assertions for the LLM judge (see :mod:`simulator.grading.judge`); graded only with a judge model."""
    initial_state: InitialState | None = None
    """Per-task fixture (version 2 files)."""
    assertions: list[Assertion] = Field(default_factory=list)
    """Declarative checks on the final state and the event log (version 2 files; see
    :mod:`simulator.types.assertions`)."""
    grade: list[GradeComponent] | None = None
    """Components that decide pass (version 2 files); the others are still computed and recorded. None: see
    :meth:`grade_basis`."""
    env_assertions: list[EnvAssertion] = Field(default_factory=list)
    """Domain-function checks on the final environment (tau2 tasks; component ``env_assertions``)."""
    conduct: Conduct | None = None
    """The suite's orchestration and ending rules (tau2 tasks); None: tausim's."""
    user_tools: list[str] | None = None
    """The user-side tools the simulated user may call in this task (tau2 ``user_tools``, dual-control domains);
    None: all of the domain's user tools; ``[]``: none."""
    suite: str | None = None
    """The suite the task was imported from (``tau2``), or None for our own and tau-bench v1 tasks."""
    seed: int | None = Field(default=None, ge=0, lt=2**64)
    """A pinned trial seed (a regression case written by ``tausim hunt``): every trial of the task uses it instead
    of the one derived from the run seed. None: derived (:func:`simulator.execution.runner.derive_seed`)."""
    prefix: TrialPrefix | None = None
    """A trajectory-prefix regression case (version 2 files): only the agent's next turn after it is run and
    graded (see :class:`TrialPrefix`); None: the trial is played from its start."""
    alternatives: list[Alternative] = Field(default_factory=list)
    """Other outcomes a user that changes its mind may end up wanting (names unique; users switch to the first)."""

    @field_validator("alternatives")
    @classmethod
    def _unique_outcomes(cls, alternatives: list[Alternative]) -> list[Alternative]:
        names = [a.name for a in alternatives]
        if dup := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"alternative name(s) {', '.join(map(repr, dup))} repeat; names must be unique")
        return alternatives

    def for_outcome(self, name: str) -> Task:
        """Return a copy graded for alternative ``name``: its gold, outputs, assertions; no reference or alternatives.

        Raises:
            KeyError: the task declares no alternative of that name (the message lists the names it has).
        """
        for alt in self.alternatives:
            if alt.name == name:
                return self.model_copy(update={
                    "gold_actions": list(alt.gold_actions), "required_outputs": list(alt.required_outputs),
                    "assertions": list(alt.assertions), "reference": None, "alternatives": []})
        raise KeyError(f"task {self.id!r}: no alternative outcome {name!r} "
                       f"(alternatives: {', '.join(a.name for a in self.alternatives) or 'none'})")

    @model_validator(mode="after")
    def _prefix_user_fits(self) -> Task:
        user = self.prefix.user if self.prefix is not None else None
        if user is None:
            return self
        sc = self.scenario
        if user.persona is not None:
            known = {p.name for p in sc.move_personas} | {m.partition(":")[2] for m in user.moves.values()
                                                          if m.startswith("switch_persona:")}
            if sc.persona is not None:
                known.add(sc.persona.name)
            if user.persona not in known:
                raise ValueError(f"field prefix.user.persona: unknown persona {user.persona!r} (the case's personas: "
                                 f"{', '.join(sorted(known)) or 'none'}: scenario.persona, scenario.move_personas and "
                                 "switch_persona moves of prefix.user.moves)")
        if user.intent is not None and user.intent > len(sc.agenda):
            raise ValueError(f"field prefix.user.intent: agenda position {user.intent} is past the scenario's agenda "
                             f"({len(sc.agenda)} intent(s); at most {len(sc.agenda)})")
        return self

    def grade_basis(self) -> tuple[GradeComponent, ...]:
        """Return the components that decide pass.

        ``grade`` when set; else :data:`DEFAULT_GRADE`, with ``assertions`` added when the task has some, and
        ``state`` replaced by them when it has no gold action (several end states acceptable).
        """
        if self.grade is not None:
            return tuple(dict.fromkeys(self.grade))  # may be empty: a tau2 task without criteria
        if not self.assertions:
            return DEFAULT_GRADE
        if self.gold_actions:
            return (*DEFAULT_GRADE, "assertions")
        return ("assertions", *DEFAULT_GRADE[1:])


_V1_FIELDS = frozenset({"user_id", "instruction", "actions", "outputs", "annotator"})


def _loc(err: Any) -> str:
    """``a.b.c``; a dict key's error (pydantic's location ends ``KEY, "[key]"``) as ``a.b: key 'KEY'``."""
    loc = [str(p) for p in err["loc"]]
    if len(loc) >= 2 and loc[-1] == "[key]":
        return f"{'.'.join(loc[:-2]) or '(top level)'}: key {excerpt(loc[-2])}"
    return ".".join(p if len(p) <= 80 else excerpt(p) for p in loc)  # a 100 KB unknown key is cut


def _problem(err: Any) -> str:
    """One pydantic error: ``field LOC: MESSAGE (value: V)``; a whole-object check's message names field and value."""
    if not err["loc"]:
        return clipped(str(err["msg"]).removeprefix("Value error, "))
    return f"field {_loc(err)!s}: {clipped(err['msg'])} (value: {excerpt(err.get('input'), as_json=True)})"


def _validation_message(path: str, where: str, e: ValidationError) -> str:
    problems = "; ".join(_problem(err) for err in e.errors())
    return f"{path}: {where}: {problems}"


def parse_tasks(data: Any, source: str = "<tasks>", domain: str | None = None) -> list[Task]:
    """Parse task data already read from JSON (our format or a tau-bench v1 list).

    Args:
        data: the decoded JSON document.
        source: file name used in error messages.
        domain: when given, a file of our format that names another domain is refused.

    Returns:
        The tasks, in file order.

    Raises:
        TaskFileError: the document is neither format, a task is malformed, two tasks share an id, the file
            is for another domain, or it holds no task.
    """
    if isinstance(data, list):
        tasks = [_parse_v1_task(raw, i, source) for i, raw in enumerate(data)]
    elif isinstance(data, dict) and data.get("format") == "tausim.tasks":
        tasks = _parse_tausim_tasks(data, source, domain)
    else:
        raise TaskFileError(
            f"{source}: not a task file: expected a tau-bench task list or an object with "
            '"format": "tausim.tasks"'
        )
    seen: set[str] = set()
    for i, t in enumerate(tasks):
        check_task_id(t.id, i, source)
        if t.id in seen:
            raise TaskFileError(f"{source}: field id: duplicate task id {excerpt(t.id)}")
        seen.add(t.id)
    if not tasks:
        raise TaskFileError(f"{source}: field tasks: the file holds no task")
    return tasks


_BAD_ID = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]")
"""Characters a task id may not hold: control characters (C0, DEL, C1: NUL, newline, ESC...), bidirectional marks,
overrides and isolates, zero-width characters, line separators and lone surrogates. An id is shown on terminals, in
HTML pages and file names, and is a key of the results store: such characters would break or spoof them."""


def check_task_id(task_id: str, i: int, source: str) -> None:
    """Refuse an empty id or one holding a character of :data:`_BAD_ID` (or only spaces).

    Args:
        task_id: the id.
        i: the task's index in its file.
        source: the file name.

    Raises:
        TaskFileError: ``FILE: task [i]: field id: ...`` naming the character and the id (escaped).
    """
    if not task_id.strip():
        raise TaskFileError(f"{source}: task [{i}]: field id: {excerpt(task_id)}: an empty (or blank) id")
    bad = _BAD_ID.search(task_id)
    if bad is not None:
        shown = excerpt(task_id)  # repr: the character itself is escaped
        raise TaskFileError(f"{source}: task [{i}]: field id: {shown}: holds the control or invisible "
                            f"character U+{ord(bad.group()):04X} (ids must be printable text)")


def _parse_v1_task(raw: Any, i: int, source: str) -> Task:
    """Parse entry ``i`` of a tau-bench v1 task list (``user_id``, ``instruction``, ``actions``, ``outputs``).

    Args:
        raw: the entry.
        i: its index (the task's id).
        source: file name used in error messages.

    Returns:
        The task (its id is the index as text).

    Raises:
        TaskFileError: not an object, a missing or unknown field, or a malformed action or output list.
    """
    if not isinstance(raw, dict):
        raise TaskFileError(f"{source}: task [{i}]: expected an object, got {type(raw).__name__}")
    missing = [k for k in ("user_id", "instruction", "actions") if k not in raw]
    if missing:
        raise TaskFileError(f"{source}: task [{i}]: missing field(s) {', '.join(missing)} "
                            "(tau-bench task lists need user_id, instruction, actions)")
    unknown = sorted(set(raw) - _V1_FIELDS)
    if unknown:
        raise TaskFileError(f"{source}: task [{i}]: unknown field(s) {', '.join(unknown)} "
                            f"(tau-bench task fields: {', '.join(sorted(_V1_FIELDS))})")
    if not isinstance(raw.get("outputs", []), list) or not isinstance(raw["actions"], list):
        bad = "outputs" if not isinstance(raw.get("outputs", []), list) else "actions"
        raise TaskFileError(f"{source}: task [{i}]: field {bad}: expected a list, got "
                            f"{excerpt(raw[bad], 60, as_json=True)}")
    try:
        actions = [Action(name=a["name"], arguments=a.get("kwargs", a.get("arguments", {})))
                   for a in raw["actions"]]
        return Task(
            id=str(i), user_id=raw["user_id"],
            scenario=UserScenario(instructions=raw["instruction"]),
            gold_actions=actions, required_outputs=[str(o) for o in raw.get("outputs") or []],
        )
    except (KeyError, TypeError) as e:
        raise TaskFileError(f"{source}: task [{i}]: malformed action: {e}") from e
    except ValidationError as e:
        raise TaskFileError(_validation_message(source, f"task [{i}]", e)) from e


def _parse_tausim_tasks(data: dict[str, Any], source: str, domain: str | None) -> list[Task]:
    """Parse a ``{"format": "tausim.tasks", "version", "domain", "tasks"}`` document.

    Args:
        data: the document.
        source: file name used in error messages.
        domain: when given, a file naming another domain is refused.

    Returns:
        The tasks, in file order.

    Raises:
        TaskFileError: an unsupported version, another domain, no task list, a version-1 file using a version-2
            field, or a malformed task.
    """
    version = data.get("version")
    if type(version) is not int or version not in (1, 2):  # strict: true and 1.0 are not version 1
        raise TaskFileError(f"{source}: field version: unsupported value {excerpt(version)} (expected 1 or 2)")
    file_domain = data.get("domain")
    if domain is not None and file_domain is not None and file_domain != domain:
        raise TaskFileError(f"{source}: field domain: the file is for domain {excerpt(file_domain)}, not {domain!r}")
    raw_tasks = data.get("tasks")
    if not isinstance(raw_tasks, list):
        raise TaskFileError(f"{source}: field tasks: expected a list, got {type(raw_tasks).__name__}")
    defaults = _file_process_rules(data, source)
    tasks: list[Task] = []
    for i, raw in enumerate(raw_tasks):
        if version == 1 and isinstance(raw, dict):
            _refuse_newer_fields(raw, i, source)
        try:
            task = Task.model_validate(raw)
        except ValidationError as e:
            tid = raw.get("id") if isinstance(raw, dict) else None
            raise TaskFileError(_validation_message(source, f"task [{i}] (id {excerpt(tid)})", e)) from e
        if defaults is not None:
            task.process = task.process.merged_over(defaults)
        tasks.append(task)
    return tasks


def _file_process_rules(data: dict[str, Any], source: str) -> ProcessRules | None:
    """The file's ``process``: the policy's rules every task of the file inherits (merged under each task's own).

    A domain's task file states its policy's necessary precedences once there (identify the user before acting,
    read a record before changing it) instead of per task by hand.

    Raises:
        TaskFileError: malformed rules (the message names the file and the field).
    """
    raw = data.get("process")
    if raw is None:
        return None
    try:
        return ProcessRules.model_validate(raw)
    except ValidationError as e:
        raise TaskFileError(_validation_message(source, "field process", e)) from e


def _refuse_newer_fields(raw: dict[str, Any], i: int, source: str) -> None:
    """Refuse a task of a version-1 file that sets a field only version 2 has.

    A dumped version-1 task carries the newer fields empty (None, []): only a value needs version 2.

    Raises:
        TaskFileError: naming the task and the first such field.
    """
    newer = [k for k in ("initial_state", "assertions", "grade", "seed", "prefix") if raw.get(k) not in (None, [])]
    scen = raw.get("scenario")
    newer += [f"scenario.{k}" for k in ("script", "persona", "moves", "move_personas")
              if isinstance(scen, dict) and scen.get(k) not in (None, [], {})]
    if newer:
        raise TaskFileError(f"{source}: task [{i}] (id {excerpt(raw.get('id'))}): field {newer[0]}: needs a "
                            'version 2 file ("version": 2)')


def load_tasks(path: str | Path, domain: str | None = None) -> list[Task]:
    """Load a task file (our format or tau-bench v1).

    Args:
        path: the JSON file.
        domain: when given, a file of our format that names another domain is refused.

    Returns:
        The tasks, in file order.

    Raises:
        TaskFileError: the file is missing, not JSON, or malformed (the message names file, task, field).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise TaskFileError(f"{p}: cannot read task file: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise TaskFileError(f"{p}: {not_utf8(p.read_bytes(), e)}") from None
    return parse_tasks(decode_file_text(text, p, TaskFileError), str(p), domain)

