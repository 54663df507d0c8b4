"""Failure hunting: snapshot and fork trials, failure signatures and clusters, shrinking, regression cases.

**Snapshot and fork.** :class:`Harness` plays trials of a :class:`~simulator.execution.runner.Runner`'s tasks with a
:class:`Snapshots` observer on the orchestrator's loop (:class:`~simulator.dialogue.conversation.Conversation`); at
the start of any user turn it can take a :class:`Snapshot`: the conversation state (messages, trajectory, progress
judge), the trial database (``sqlite3.Connection.serialize()``, the event log included: it lives in the database),
the user's state (agenda position, patience used, persona), the generators' states (``bit_generator.state``) and the
agent's and user's state. The actors' state is a pickle of both when they can be pickled; the rule agents are
generator-based dialogues, which cannot be, so the snapshot keeps the log of calls made to them instead and
:meth:`Harness.fork` rebuilds them from the trial seed and replays those calls (checking that the replay says what
the original said; an LLM agent is resumed the same way, the response cache making the replayed prefix free).
``fork(snapshot, user_move=..., persona=...)`` continues the trial from there, optionally with the next user turn
replaced by a *user move* (:data:`MOVES`) or the persona switched. Forking an unchanged snapshot reproduces the
original continuation exactly.

**Signatures.** :func:`signature` condenses a failed trial: the failing layer (``grade.failure``), the termination
reason, the first state difference as ``table.field`` (or the first failing assertion), the first violated rule,
the last tool call before the first divergence from the gold writes, and the user's flags. Trials are clustered by
signature; :func:`shrink` drops and merges user turns of a cluster's shortest failing conversation (replayed by
a scripted user) while it still fails the same way (same :func:`core` signature).

**Search.** :func:`hunt` searches task x persona x seed x user move: it plays root trials, takes snapshots at
decision points (after an agent question, a confirmation request, a refusal, a tool error) and spends the budget
(agent turns) on forks chosen by a UCB bandit over branch points, rewarded by new signatures. Deterministic for
a seed. :func:`export_cases` writes each cluster as a runnable regression case in the task format (version 2).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import pickle
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.dialogue.conversation import Conversation
from simulator.dialogue.cues import asks_confirmation
from simulator.dialogue.observers import DualControlSync, Observer
from simulator.dialogue.prefix import capture_state
from simulator.dialogue.state import ConversationState
from simulator.errors import SetupError, SnapshotError
from simulator.execution.runner import Runner
from simulator.grading import check_assertions, grade_trial
from simulator.grading.process import unconfirmed_writes
from simulator.grading.safety import record_owners
from simulator.grading.signature import core, signature
from simulator.types.messages import Message
from simulator.types.persona import MOVES, Persona
from simulator.types.results import TrialResult
from simulator.types.tasks import NextStep, PrefixUser, StepCall, Task, TrialPrefix
from simulator.types.trajectory import Limits, TerminationReason, Trajectory
from simulator.users._moves import MovedUser
from simulator.users._scripted import STOP_TOKEN, ScriptedUser, scripted_user_factory
from simulator.world.database import diff_against
from simulator.world.dual import env_caller, syncer
from simulator.world.events import read_events
from simulator.world.replay import prepare_trial
from simulator.world.tools import Toolbox, ToolContext

__all__ = ["MOVES", "Cluster", "Harness", "HuntResult", "HuntTrial", "Snapshot", "cluster", "decision_kind",
    "export_cases", "first_error", "hunt", "prefix_at", "prefix_case", "run_case", "shrink"]

_REFUSAL_RE = re.compile(r"\b(?:can't|cannot|can not|unable to|not able to|not allowed|not possible|"
                         r"not eligible|against (?:our|the) policy|I'm sorry, but)\b", re.IGNORECASE)


def _kinds(toolbox: Toolbox) -> dict[str, str | None]:
    """Tool name -> kind (``read``, ``write``; ``ending`` for a tool that ends the conversation)."""
    return {name: ("ending" if spec.ends_conversation else spec.kind) for name, spec in toolbox.specs.items()}


def decision_kind(state: ConversationState) -> str | None:
    """Classify the point a user turn answers: ``tool_error``, ``confirmation``, ``refusal``, ``question`` or None.

    Args:
        state: the conversation state at the start of a user turn.

    Returns:
        The decision kind of the agent's last turn (a tool call that failed in it first, then its message's
        confirmation request, refusal, question), or None (the opening, or a plain statement).
    """
    traj = state.trajectory
    last = next((m for m in reversed(state.view) if m.role == "assistant"), None)
    if last is None:
        return None
    last_user = max((c.step for c in traj.tool_calls if c.requestor != "agent"), default=-1)
    turn_calls = traj.tool_calls[-8:]
    if any(c.status != "ok" and c.step > last_user for c in turn_calls) and traj.progress and \
            "tool_error" in traj.progress[-1].get("signals", []):
        return "tool_error"
    text = last.content or ""
    if asks_confirmation(text):
        return "confirmation"
    if _REFUSAL_RE.search(text):
        return "refusal"
    if "?" in text:
        return "question"
    return None


# ---------------------------------------------------------------------------------------------------- actors
class _AgentProxy:
    """The agent under test, its ``step`` calls logged (``("a", number of messages given)``)."""

    def __init__(self, inner: Any, log: list[tuple[str, Any]]):
        self.inner = inner
        self.log = log

    def step(self, messages: Sequence[Message]) -> Any:
        self.log.append(("a", len(messages)))
        return self.inner.step(messages)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def _generators(obj: Any, prefix: str) -> dict[str, Any]:
    """The ``bit_generator.state`` of each numpy Generator among ``obj``'s attributes (one level deep)."""
    out: dict[str, Any] = {}
    for name, value in sorted(getattr(obj, "__dict__", {}).items()):
        if isinstance(value, np.random.Generator):
            out[f"{prefix}.{name}"] = value.bit_generator.state
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            for sub, v in sorted(vars(value).items()):
                if isinstance(v, np.random.Generator):
                    out[f"{prefix}.{name}.{sub}"] = v.bit_generator.state
    return out


# ---------------------------------------------------------------------------------------------------- snapshots
@dataclass(frozen=True)
class Snapshot:
    """A trial captured at the start of a user turn (see the module docstring).

    Attributes:
        task_id: the task.
        persona: the persona the user plays at that point (None: the default manner).
        trial_index: the trial index (the seed dimension).
        seed: the trial seed.
        turn: user replies made so far (the index of the next one).
        agent_turns: finished agent turns so far.
        kind: the decision point (:func:`decision_kind`), or None.
        state: the pickled :class:`~simulator.dialogue.state.ConversationState`.
        database: the trial database, serialized (its event log included).
        calls: the calls made to agent and user so far (``("a"|"u"|"o", arg)``), for a replayed resume.
        actors: pickled ``(agent, user, trial rng)`` when they can be pickled, else None (resumed by replay).
        moves: the user moves made so far: reply index -> move.
        rng: the generators' ``bit_generator.state`` (the trial's, the agent's, the user's), by name.
        user_state: the user's agenda position (``intent``), patience used (``stale``) and ``persona``.
        reseeded: the trial was reseeded before this point (it cannot be replayed from its seed alone).
    """

    task_id: str
    persona: str | None
    trial_index: int
    seed: int
    turn: int
    agent_turns: int
    kind: str | None
    state: bytes
    database: bytes
    calls: tuple[tuple[str, Any], ...]
    actors: bytes | None
    moves: tuple[tuple[int, str], ...]
    rng: dict[str, Any] = field(default_factory=dict)
    user_state: dict[str, Any] = field(default_factory=dict)
    reseeded: bool = False

    def conversation(self) -> ConversationState:
        """Return a fresh copy of the captured conversation state."""
        state: ConversationState = pickle.loads(self.state)  # noqa: S301 - our own bytes, never from a file
        return state


@dataclass
class HuntTrial:
    """One played trial (a root or a fork).

    Attributes:
        result: the graded trial.
        snapshots: the snapshots taken while it ran (every user turn, or decision points only).
        moves: reply index -> user move, for the whole conversation.
        fresh_agent_turns: agent turns it ran itself (a fork's prefix excluded).
        parent: the snapshot it was forked from, or None for a root.
        reseeded: the agent's generators were redrawn at a fork on its way (not replayable from its seed alone).
    """

    result: TrialResult
    snapshots: list[Snapshot]
    moves: dict[int, str]
    fresh_agent_turns: int
    parent: Snapshot | None = None
    reseeded: bool = False

    def user_turns(self) -> list[str]:
        """The user's text turns in order."""
        return [m.content or "" for m in self.result.trajectory.messages if m.role == "user" and m.content
                and not m.tool_calls]


class Harness:
    """Plays, snapshots and forks trials of a runner's tasks.

    Args:
        runner: a runner (its agent and user factories, template, tasks, personas, seed and caps are used).
        personas: personas a ``switch_persona`` move may switch to (default: the runner's).
    """

    def __init__(self, runner: Runner, personas: Mapping[str, Persona] | None = None):
        self.runner = runner
        self.personas = dict(personas if personas is not None else runner.personas)
        self.tasks = {t.id: t for t in runner.tasks}

    def _task(self, task_id: str) -> Task:
        try:
            return self.tasks[task_id]
        except KeyError:
            raise SnapshotError(f"task {task_id!r} is not one of the runner's tasks") from None

    def play(self, task: Task, trial_index: int = 0, persona: str | None = None, *,
             moves: Mapping[int, str] | None = None, capture: Callable[[ConversationState], bool] | None = None
             ) -> HuntTrial:
        """Play one trial from its start.

        Args:
            task: one of the runner's tasks.
            trial_index: the trial index (its seed is the runner's for that index, or the task's pinned seed).
            persona: the persona the user plays (a key of the runner's personas, or of ``personas``), or None.
            moves: user reply index -> user move (:data:`MOVES`) made in place of that reply.
            capture: called at each user turn; a snapshot is taken when it returns True. None: no snapshot.

        Returns:
            The :class:`HuntTrial`.
        """
        return self._run(task, trial_index, persona, dict(moves or {}), None, capture)

    def fork(self, snapshot: Snapshot, user_move: str | None = None, persona: str | None = None, *,
             reseed: int | None = None, capture: Callable[[ConversationState], bool] | None = None) -> HuntTrial:
        """Resume a snapshot and play the trial to its end.

        Args:
            snapshot: where to resume.
            user_move: a move (:data:`MOVES`) made in place of the user's next reply; None: the user's own.
            persona: switch the user to this persona from the next reply on (same as the move
                ``switch_persona:NAME``); None: keep it.
            reseed: redraw the agent's numpy generators from ``(trial seed, reseed)`` at the fork (another draw of
                its faults or choices from there on); None: keep their state. A reseeded trial cannot be replayed
                from its seed alone (``HuntTrial.reseeded``).
            capture: as for :meth:`play` (snapshots of the continuation).

        Returns:
            The :class:`HuntTrial`; unchanged (no move, no persona) it is the original trial's continuation.

        Raises:
            SnapshotError: the agent or user does not replay to the snapshot as it first ran (not deterministic
                for its seed), or an unknown move or persona.
        """
        moves = dict(snapshot.moves)
        if persona is not None:
            if user_move is not None:
                raise SnapshotError("fork: give a user move or a persona switch, not both")
            user_move = f"switch_persona:{persona}"
        if user_move is not None:
            name = user_move.partition(":")[0]
            if name not in MOVES:
                raise SnapshotError(f"fork: unknown user move {user_move!r}; known: {', '.join(MOVES)}")
            if user_move == "switch_persona":
                user_move = f"switch_persona:{self._next_persona(snapshot.persona)}"
            target = user_move.partition(":")[2]
            if name == "switch_persona" and target not in self.personas:
                raise SnapshotError(f"user move {user_move!r}: unknown persona {target!r} (known: "
                                    f"{sorted(self.personas)})")
            moves[snapshot.turn] = user_move
        return self._run(self._task(snapshot.task_id), snapshot.trial_index, snapshot.persona, moves, snapshot,
                         capture, reseed)

    def _next_persona(self, current: str | None) -> str:
        names = sorted(self.personas)
        if not names:
            raise SnapshotError("switch_persona: the harness has no personas")
        if current in names:
            return names[(names.index(current) + 1) % len(names)]
        return names[0]

    # ------------------------------------------------------------------------------------------------ internals
    def _actors(self, task: Task, trial_index: int, persona: str | None, moves: Mapping[int, str]
                ) -> tuple[_AgentProxy, MovedUser, Any]:
        r = self.runner
        start = persona if persona is None or persona in r.personas else None
        ctx = r.trial_context(task, trial_index, start)
        if persona is not None and start is None:
            ctx.persona = self.personas[persona]
        log: list[tuple[str, Any]] = []
        agent = _AgentProxy(r.agent_factory(ctx), log)
        user = MovedUser(r.user_factory(ctx), log, moves, self.personas)
        return agent, user, ctx

    def _run(self, task: Task, trial_index: int, persona: str | None, moves: dict[int, str],
             snapshot: Snapshot | None, capture: Callable[[ConversationState], bool] | None,
             reseed: int | None = None) -> HuntTrial:
        r = self.runner
        prepared = r.prepare([task.id])[task.id]
        goal = prepared.gold.goal_state()
        initial = prepared.gold.initial
        seed = r.trial_seed(task, trial_index)
        agent, user, ctx = self._actors(task, trial_index, persona, moves)
        resume: ConversationState | None = None
        if snapshot is not None:
            resume = snapshot.conversation()
            if snapshot.actors is not None:
                inner_agent, inner_user, _rng = pickle.loads(snapshot.actors)  # noqa: S301 - our own bytes
                agent.inner, user.inner = inner_agent, inner_user
                agent.log[:] = list(snapshot.calls)
                user.replies = snapshot.turn
            else:
                _replay(agent, user, snapshot, resume)
            if reseed is not None:
                _reseed(agent.inner, [seed, reseed])
        limits = Limits(max_turns=task.max_turns or r.config.max_turns, max_steps=r.config.max_steps)
        snaps: list[Snapshot] = []
        start_turns = len(resume.trajectory.progress) if resume is not None else 0

        with r.template.trial() if snapshot is None else r.template.trial_of(snapshot.database) as db:
            if snapshot is None:
                prepare_trial(r.domain, db, task)
            tool_ctx = ToolContext(db.session, db.options)
            observers: list[Observer] = []
            if capture is not None:
                observers.append(Snapshots(capture, lambda state: snaps.append(self._snapshot(
                    task, trial_index, persona, seed, state, agent, user, ctx, db.raw.serialize(), moves))))
            user_toolbox = r.domain.user_toolbox()
            toolbox = r.agent_toolbox(task, trial_index, r.domain.toolbox())  # the run's environment faults
            user_ctx = None
            if user_toolbox is not None:
                user_ctx = ToolContext(db.session, db.options)
                user_ctx.source = "user"
                observers.append(DualControlSync(syncer(r.domain, tool_ctx)))
            traj = Conversation(agent, user, toolbox, tool_ctx, limits, observers=observers,
                                user_toolbox=user_toolbox, user_ctx=user_ctx, resume=resume).run()
            spec = r.domain.state_spec()
            diff = diff_against(db.raw, goal, spec)
            checks = check_assertions(task.assertions, db.raw, initial, read_events(db.raw), traj, spec,
                                      env=env_caller(r.domain, tool_ctx))
            owners = record_owners(r.domain, traj, db)
        grade = grade_trial(task, traj, diff, r.domain.toolbox(), judge=r.judge, trial_seed=seed, prepared=prepared,
                            assertions=checks, owners=owners)
        res = TrialResult(task_id=task.id, trial=trial_index, seed=seed, persona=persona, passed=grade.passed,
                          termination_reason=str(traj.termination_reason), grade=grade, trajectory=traj,
                          duration_s=traj.agent_seconds + traj.user_seconds + traj.tool_seconds, error=traj.error,
                          faults=r.record_faults(traj))
        reseeded = (snapshot is not None and snapshot.reseeded) or reseed is not None
        if reseeded:
            snaps = [dataclasses.replace(s, reseeded=True) for s in snaps]
        return HuntTrial(result=res, snapshots=snaps, moves=dict(moves),
                         fresh_agent_turns=len(traj.progress) - start_turns, parent=snapshot, reseeded=reseeded)

    def _snapshot(self, task: Task, trial_index: int, persona: str | None, seed: int, state: ConversationState,
                  agent: _AgentProxy, user: MovedUser, ctx: Any, database: bytes, moves: Mapping[int, str]
                  ) -> Snapshot:
        try:
            actors: bytes | None = pickle.dumps((agent.inner, user.inner, ctx.rng))
        except (TypeError, AttributeError, pickle.PicklingError):  # generator-based dialogues: resumed by replay
            actors = None
        inner = user.inner
        moved = getattr(inner, "persona", None)
        rng = {"trial": ctx.rng.bit_generator.state, **_generators(agent.inner, "agent"),
               **_generators(inner, "user")}
        return Snapshot(
            task_id=task.id, persona=moved.name if isinstance(moved, Persona) else persona, trial_index=trial_index,
            seed=seed, turn=user.replies, agent_turns=len(state.trajectory.progress), kind=decision_kind(state),
            state=pickle.dumps(state), database=database, calls=tuple(agent.log), actors=actors,
            moves=tuple(sorted((i, m) for i, m in moves.items() if i < user.replies)), rng=rng,
            user_state={"intent": getattr(inner, "_idx", None), "stale": getattr(inner, "_stale", None),
                        "persona": moved.name if isinstance(moved, Persona) else persona},
        )


def _replay(agent: _AgentProxy, user: MovedUser, snapshot: Snapshot, state: ConversationState) -> None:
    """Bring freshly built actors to the snapshot by replaying the logged calls; check they say the same."""
    recorded = [m for m in state.trajectory.messages if m.role == "assistant"]
    said: list[Message] = []
    for kind, arg in snapshot.calls:
        if kind == "a":
            said.append(agent.step(state.seen[:arg]).message)
        elif kind == "u":
            user.reply(state.view[:arg])
        else:
            user.observe_progress(arg)
    if [(m.content, [(c.name, c.arguments) for c in m.tool_calls]) for m in said] != \
            [(m.content, [(c.name, c.arguments) for c in m.tool_calls]) for m in recorded]:
        raise SnapshotError(f"snapshot of task {snapshot.task_id!r} at user turn {snapshot.turn}: the agent does "
                            "not replay to it as it first ran (it is not deterministic for its seed)")


def _reseed(agent: Any, entropy: list[int]) -> None:
    """Redraw every numpy Generator among the agent's attributes (one level deep) from ``entropy``."""
    seq = np.random.SeedSequence(entropy)
    for obj in [agent, *(v for v in vars(agent).values() if hasattr(v, "__dict__") and not isinstance(v, type))]:
        for _name, value in sorted(vars(obj).items()):
            if isinstance(value, np.random.Generator):
                value.bit_generator.state = np.random.PCG64(seq.spawn(1)[0]).state


class Snapshots:
    """The conversation observer that takes hunt snapshots: at each user turn the ``capture`` predicate allows.

    Args:
        capture: called with the live state at the start of each user turn (:func:`every_turn`,
            :func:`at_decisions`); a snapshot is taken when it returns True.
        take: takes the snapshot of that state (it must not change it).
    """

    def __init__(self, capture: Callable[[ConversationState], bool], take: Callable[[ConversationState], None]):
        self.capture = capture
        self.take = take

    def on_user_turn(self, state: ConversationState) -> None:
        """Take a snapshot when ``capture`` allows it."""
        if self.capture(state):
            self.take(state)


def every_turn(state: ConversationState) -> bool:
    """A ``capture`` predicate taking a snapshot at every user turn."""
    return True


def at_decisions(state: ConversationState) -> bool:
    """A ``capture`` predicate taking a snapshot at decision points only (:func:`decision_kind`)."""
    return decision_kind(state) is not None


# ---------------------------------------------------------------------------------------------------- signatures






@dataclass
class Cluster:
    """Failed trials sharing one signature.

    Attributes:
        signature: the shared signature.
        trials: the trials, in the order found.
        shortest: the failing trial with the fewest user turns.
        script: the shrunk user turns (:func:`shrink`), or None before shrinking.
    """

    signature: tuple[str, ...]
    trials: list[HuntTrial] = field(default_factory=list)
    script: list[str] | None = None

    @property
    def shortest(self) -> HuntTrial:
        """The member with the fewest user turns (the first found on ties)."""
        return min(self.trials, key=lambda t: len(t.user_turns()))

    @property
    def case_id(self) -> str:
        """A stable id of the cluster's regression case."""
        h = hashlib.sha256(json.dumps(self.signature).encode()).hexdigest()[:10]
        return f"hunt-{self.shortest.result.task_id}-{h}"


def cluster(trials: Sequence[HuntTrial], tasks: Mapping[str, Task], kinds: Mapping[str, str | None]
            ) -> list[Cluster]:
    """Group failed trials by signature, in the order each signature was first found."""
    out: dict[tuple[str, ...], Cluster] = {}
    for t in trials:
        sig = signature(tasks[t.result.task_id], t.result, kinds)
        if sig is not None:
            out.setdefault(sig, Cluster(sig)).trials.append(t)
    return list(out.values())


def _scripted(lines: Sequence[str]) -> Callable[[Any], ScriptedUser]:
    fixed = list(lines)

    def make(ctx: Any) -> ScriptedUser:
        return ScriptedUser(fixed, [a for a in ctx.task.gold_actions if a.requestor == "user"])

    return make


def replay_script(runner: Runner, task: Task, trial_index: int, lines: Sequence[str]) -> TrialResult:
    """Play a trial whose user says ``lines`` in order, then stops (the agent as the runner builds it).

    Args:
        runner: the runner (agent factory, template, seed).
        task: the task.
        trial_index: the trial index (the seed).
        lines: the user turns.

    Returns:
        The graded trial.
    """
    saved = runner.user_factory
    runner.user_factory = _scripted(list(lines) + [STOP_TOKEN])
    try:
        return runner.run_trial(task, trial_index)
    finally:
        runner.user_factory = saved


def run_case(runner: Runner, case: Task) -> TrialResult:
    """Run a regression case once (trial 0) with the runner's agent and user.

    A case with ``scenario.script`` needs a scripted user; one with pinned ``seed``, ``persona`` and ``moves`` is
    played by the user it was found with (the rule user), the runner applying the moves.
    """
    if case.scenario.script:
        saved = runner.user_factory
        runner.user_factory = scripted_user_factory()
        try:
            return runner.run_trial(case, 0)
        finally:
            runner.user_factory = saved
    return runner.run_trial(case, 0)


def shrink(runner: Runner, task: Task, trial_index: int, lines: Sequence[str], sig: tuple[str, ...],
           kinds: Mapping[str, str | None], max_tries: int = 40) -> list[str] | None:
    """Drop and merge user turns while the scripted replay still fails the same way (same :func:`core`).

    Args:
        runner: the runner (the agent that failed).
        task: the task.
        trial_index: the trial index (the seed).
        lines: the failing conversation's user turns.
        sig: its signature.
        kinds: tool name -> kind.
        max_tries: most replays.

    Returns:
        The shrunk turns, or None when even the full scripted replay does not fail the same way.
    """
    want = core(sig)

    def same(cand: list[str]) -> bool:
        s = signature(task, replay_script(runner, task, trial_index, cand), kinds)
        return s is not None and core(s) == want

    cur = list(lines)
    if not cur or not same(cur):
        return None
    tries = 1
    changed = True
    while changed and tries < max_tries:
        changed = False
        for i in range(len(cur) - 1, 0, -1):  # the opening is kept
            for cand in (cur[:i] + cur[i + 1:], cur[:i - 1] + [cur[i - 1] + " " + cur[i]] + cur[i + 1:]):
                if tries >= max_tries:
                    break
                tries += 1
                if same(cand):
                    cur = cand
                    changed = True
                    break
            if changed:
                break
    return cur


# ---------------------------------------------------------------------------------------------------- search
_KIND_RANK = {"confirmation": 0, "tool_error": 1, "question": 2, "refusal": 3}
@dataclass
class _Arm:
    """A task of the search: its root trials played, its branch points, and its bandit statistics."""

    task: Task
    roots: list[tuple[str | None, int]]
    """(persona, trial index) of the roots not played yet, in a seeded order."""
    branches: list[tuple[Snapshot, list[str], list[int]]] = field(default_factory=list)
    """Snapshots at decision points with the moves not tried there yet and ``[forks made there]``."""
    pulls: int = 0
    reward: float = 0.0
    forks_since_root: int = 0


@dataclass
class HuntResult:
    """What a hunt found.

    Attributes:
        clusters: failure clusters, in the order found.
        trials: every trial played.
        agent_turns: agent turns spent (fresh turns only: forks do not pay for their prefix).
        saved_turns: agent turns a fork saved by resuming instead of replaying its prefix.
        signatures_at: the count of distinct signatures after each trial (for curves).
    """

    clusters: list[Cluster]
    trials: list[HuntTrial]
    agent_turns: int
    saved_turns: int
    signatures_at: list[tuple[int, int]]


def hunt(runner: Runner, budget: int, *, seed: int = 0, personas: Sequence[str | None] | None = None,
         explore: float = 0.5, prior: float = 0.5, reseeds: int = 6, forks_per_root: int = 12,
         on_trial: Callable[[HuntTrial], None] | None = None) -> HuntResult:
    """Search for failures within a budget of agent turns (see the module docstring).

    The arms of a UCB bandit are the tasks: pulling one plays a fork of one of its branch points (a snapshot at a
    decision point of one of its root trials, with a user move or a reseed of the agent not tried there yet, in a
    seeded order; the branch point forked least so far, on ties a confirmation request before a tool error, a
    question and a refusal, then the latest: spreading the forks over the decision points, the late ones cheap,
    finds more of the agent's own faults than forking the opening again and again) or, when it has none left or
    ``forks_per_root`` forks were played since its last root, a new root trial (its next persona x trial index,
    in a seeded order). An arm's score is
    ``(reward + prior) / (pulls + 1) + explore * sqrt(ln(total pulls + 2) / (pulls + 1))``, reward 1 per trial
    with a new signature, 0.25 per fork failing with a known one; ties go to the task first in a seeded order.

    Args:
        runner: the runner (agent, user, tasks, seed, caps).
        budget: agent turns to spend (fresh turns: a fork does not pay for its prefix).
        seed: the hunt's seed (the order of tasks, roots and moves); the same seed gives the same hunt.
        personas: personas of the root trials (None in the list: the default manner); default the runner's, or
            ``[None]``.
        explore: the UCB exploration constant.
        prior: the optimistic reward an arm starts with.
        reseeds: forks per branch point that redraw the agent's generators (``fork(reseed=...)``, the seed
            dimension of the search) besides one fork per user move.
        forks_per_root: most forks of a task between two of its roots.
        on_trial: called with each trial played.

    Returns:
        The :class:`HuntResult`.

    Raises:
        SetupError: a trial ended ``setup_error`` (a missing API key, an unknown model, ...): no trial of this
            set-up can work, so the hunt stops (``kind="trial"``, the trial's error in the message).
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    harness = Harness(runner)
    kinds = {name: ("ending" if spec.ends_conversation else spec.kind)
             for name, spec in runner.domain.toolbox().specs.items()}
    tasks = {t.id: t for t in runner.tasks}
    pers: list[str | None] = list(personas) if personas is not None else (list(runner.personas) or [None])
    arms: list[_Arm] = []
    for i in rng.permutation(len(runner.tasks)):
        roots = [(p, k) for k in range(64) for p in pers]
        arms.append(_Arm(runner.tasks[int(i)], [roots[j] for j in rng.permutation(len(pers))] + roots[len(pers):]))
    moves = [m for m in MOVES if m != "switch_persona" or len(harness.personas) > 1]
    trials: list[HuntTrial] = []
    seen: set[tuple[str, ...]] = set()
    spent = saved = 0
    curve: list[tuple[int, int]] = []

    def record(t: HuntTrial) -> float:
        nonlocal spent, saved
        trials.append(t)
        spent += t.fresh_agent_turns
        if t.parent is not None:
            saved += t.parent.agent_turns
        if on_trial is not None:
            on_trial(t)
        if t.result.termination_reason == TerminationReason.SETUP_ERROR:
            # no trial of this set-up can work (missing key, unknown model, ...): no failure to hunt
            first = (t.result.error or "").strip().splitlines()
            raise SetupError(f"trial {t.result.task_id}#{t.result.trial} ended setup_error: "
                             f"{first[0] if first else 'no detail'}", kind="trial")
        sig = signature(tasks[t.result.task_id], t.result, kinds)
        new = sig is not None and sig not in seen
        if sig is not None:
            seen.add(sig)
        curve.append((spent, len(seen)))
        return 1.0 if new else 0.25 if sig is not None and t.parent is not None else 0.0

    while spent < budget and arms:
        log_total = math.log(sum(a.pulls for a in arms) + 2)
        arm = max(arms, key=lambda a: (a.reward + prior) / (a.pulls + 1)
                  + explore * math.sqrt(log_total / (a.pulls + 1)))
        arm.pulls += 1
        arm.branches = [b for b in arm.branches if b[1]]
        if arm.branches and arm.forks_since_root < forks_per_root:
            # the least forked branch point; on ties a confirmation request first, then a tool error, a question,
            # a refusal; then the latest (its continuation is the cheapest)
            snap, todo, forks = min(arm.branches, key=lambda b: (b[2][0], _KIND_RANK.get(b[0].kind or "", 9),
                                                                 -b[0].turn))
            forks[0] += 1
            move = todo.pop()
            arm.forks_since_root += 1
            name, _, arg = move.partition("=")
            try:
                if name == "reseed":
                    child = harness.fork(snap, reseed=int(arg))
                else:
                    child = harness.fork(snap, user_move=move)
            except SnapshotError:
                todo.clear()
                continue
            arm.reward += record(child)
            continue
        if not arm.roots:
            arms.remove(arm)
            continue
        persona, index = arm.roots.pop(0)
        arm.forks_since_root = 0
        root = harness.play(arm.task, index, persona, capture=at_decisions)
        for snap in root.snapshots:
            order = [*moves, *(f"reseed={int(rng.integers(2**31))}" for _ in range(reseeds))]
            arm.branches.append((snap, [order[j] for j in rng.permutation(len(order))], [0]))
        arm.reward += record(root)
    clusters = cluster(trials, tasks, kinds)
    return HuntResult(clusters=clusters, trials=trials, agent_turns=spent, saved_turns=saved, signatures_at=curve)


# ---------------------------------------------------------------------------------------------------- prefixes
def _turn_start(messages: Sequence[Message], index: int) -> int | None:
    """The index of the user's text message that opened the agent turn holding message ``index``."""
    return next((j for j in range(index - 1, -1, -1) if messages[j].role == "user" and messages[j].content
                 and not messages[j].tool_calls and messages[j].requestor is None), None)


def first_error(task: Task, trajectory: Trajectory, toolbox: Toolbox, *,
                confirm_writes: bool = False) -> tuple[int, NextStep] | None:
    """Find the agent's first error in a trajectory and what its turn should not have done.

    The errors looked for, the earliest one taken (those of the same turn merged):

    - a successful write (or conversation-ending call) that departs from the gold writes (the first call
      :func:`signature`'s divergence names): the turn must not call that tool with the arguments that differ
      from gold's (all of them when gold has no such call next);
    - with ``confirm_writes``, a write without the user's explicit yes (:func:`unconfirmed_writes`): the turn
      must not call any write tool;
    - an agent message asking again what it already asked (``repeated_question``): the turn must not do so.

    Args:
        task: the task (its gold actions).
        trajectory: the failed trial's trajectory.
        toolbox: the domain's tools (their kinds).
        confirm_writes: the task's process rules ask for confirmation before writes.

    Returns:
        ``(index of the user message that opened the erring turn, expectations of that turn)``, or None when no
        such error is found (a failure of another kind: a missing write, a cap, the user giving up).
    """
    kinds = _kinds(toolbox)
    msgs = trajectory.messages
    where = {c.id: i for i, m in enumerate(msgs) for c in m.tool_calls}
    found: list[tuple[int, NextStep]] = []
    gold = [(a.name, a.arguments) for a in task.gold_actions
            if a.requestor == "assistant" and kinds.get(a.name) in ("write", "ending")]
    w = 0
    for c in trajectory.tool_calls:
        if c.requestor != "agent" or kinds.get(c.name) not in ("write", "ending") or c.status != "ok":
            continue
        if w < len(gold) and (c.name, c.arguments) == gold[w]:
            w += 1
            continue
        args = dict(c.arguments or {})
        if kinds.get(c.name) == "ending":
            key: dict[str, Any] = {}
        elif w < len(gold) and gold[w][0] == c.name:
            key = {k: v for k, v in args.items() if gold[w][1].get(k) != v} or args
        else:
            key = args
        found.append((where.get(c.call_id, len(msgs)), NextStep(must_not_call=[StepCall(name=c.name, arguments=key)])))
        break
    if confirm_writes:
        bad = unconfirmed_writes(trajectory, toolbox)
        if bad:
            found.append((where.get(bad[0][0].call_id, len(msgs)), NextStep(must_not_call=[StepCall(kind="write")])))
    closing = [i for i, m in enumerate(msgs) if m.role == "assistant" and m.content and not m.tool_calls]
    for k, p in enumerate(trajectory.progress):
        if "repeated_question" in p.get("signals", []) and k < len(closing):
            found.append((closing[k], NextStep(must_not_say=["repeated_question"])))
            break
    turns = [(u, e) for u, e in ((_turn_start(msgs, i), e) for i, e in found) if u is not None]
    if not turns:
        return None
    first = min(u for u, _ in turns)
    same = [e for u, e in turns if u == first]
    return first, NextStep(must_call=[p for e in same for p in e.must_call],
                           must_not_call=[p for e in same for p in e.must_not_call],
                           must_say=[p for e in same for p in e.must_say],
                           must_not_say=[p for e in same for p in e.must_not_say])


def prefix_at(runner: Runner, played: HuntTrial, index: int, next_step: NextStep) -> TrialPrefix:
    """The trajectory prefix of a played trial up to its user message ``index`` (included).

    Args:
        runner: the runner it was played with (its template's schema).
        played: the trial, played with a snapshot at every user turn (``capture=every_turn``).
        index: the index in its messages of a user text message (the last message of the prefix).
        next_step: what the agent's next turn must and must not do.

    Returns:
        The prefix: the messages, the agent's step points and the user's state of the last snapshot before the
        message, its database as rows written since the template (:func:`capture_state`) and events.

    Raises:
        SnapshotError: no snapshot before that message, or the user's reply called tools (its effect on the
            database is not in the snapshot).
    """
    msgs = played.result.trajectory.messages[:index + 1]
    snap = max((s for s in played.snapshots if len(s.conversation().trajectory.messages) <= index),
               key=lambda s: s.turn, default=None)
    if snap is None:
        raise SnapshotError(f"no snapshot before message {index} of task {played.result.task_id!r}")
    at = len(snap.conversation().trajectory.messages)
    if any(m.requestor is not None for m in msgs[at:]):
        raise SnapshotError("the user's last reply of the prefix called tools (its database effect is not captured)")
    raw = sqlite3.connect(":memory:")
    try:
        raw.deserialize(snap.database)
        rows, deleted, events = capture_state(raw, runner.template.metadata)
    finally:
        raw.close()
    return TrialPrefix(
        messages=list(msgs), agent_steps=[n for kind, n in snap.calls if kind == "a"], rows=rows, deleted=deleted,
        events=events, next_step=next_step,
        user=PrefixUser.model_validate({**snap.user_state, "turn": snap.turn, "moves": dict(snap.moves)}))


def prefix_case(runner: Runner, case: Task, member: HuntTrial) -> tuple[Task | None, str]:
    """Make the trajectory-prefix case of a failing trial: its state just before the agent's first error.

    The trial is played again from its start with its moves pinned, a snapshot at every user turn; the prefix is
    its conversation up to the user's message that opened the erring turn (:func:`first_error`), with the
    trial database as it was then (the snapshot's, as rows written since the template: :func:`capture_state`),
    the agent's step points, the user's state, and the erring turn's expectations.

    Args:
        runner: the hunt's runner (agent, user, template).
        case: the cluster's regression case (:func:`export_cases`): the prefix case is a copy of it, id
            ``CASE-prefix``, tagged ``hunt-prefix``.
        member: the failing trial (not reseeded).

    Returns:
        ``(prefix case, "")`` or ``(None, why not)``.
    """
    task = Harness(runner)._task(member.result.task_id)
    toolbox = runner.domain.toolbox()
    confirm = bool(runner.prepare([task.id])[task.id].rules.process.confirm_writes)
    err = first_error(task, member.result.trajectory, toolbox, confirm_writes=confirm)
    if err is None:
        return None, "no agent error to stop before (a missing write, a cap or the user giving up)"
    u, expect = err
    again = Harness(runner).play(task, member.result.trial, member.result.persona, moves=member.moves,
                                 capture=every_turn)
    msgs = member.result.trajectory.messages[:u + 1]
    if [m.model_dump() for m in again.result.trajectory.messages[:u + 1]] != [m.model_dump() for m in msgs]:
        return None, "the trial does not replay to its prefix from its seed and moves"
    try:
        prefix = prefix_at(runner, again, u, expect)
    except SnapshotError as e:
        return None, str(e)
    return case.model_copy(update={"id": f"{case.id}-prefix", "prefix": prefix,
                                   "tags": [*case.tags, "hunt-prefix"]}), ""


# ---------------------------------------------------------------------------------------------------- export
def _case(task: Task, c: Cluster, member: HuntTrial, moves: Mapping[int, str],
          personas: Mapping[str, Persona]) -> Task:
    named = {m.partition(":")[2] for m in moves.values() if m.startswith("switch_persona:")}
    return task.model_copy(update={
        "id": c.case_id, "seed": member.result.seed,
        "scenario": task.scenario.model_copy(update={
            "persona": personas.get(member.result.persona or ""), "moves": dict(sorted(moves.items())),
            "move_personas": [personas[n] for n in sorted(named)]}),
        "tags": [*task.tags, "hunt", f"hunt:{c.signature[0]}"],
    })


def export_cases(runner: Runner, result: HuntResult, *, clean: Runner | None = None, shrink_tries: int = 20,
                 domain: str | None = None, prefix: bool = False) -> tuple[dict[str, Any], list[str]]:
    """Write each cluster as a regression case (a task of the task format, version 2).

    A case is the cluster's task with the trial's seed (``seed``), persona (``scenario.persona``) and user moves
    (``scenario.moves``, shrunk: each dropped while the case still fails the same way) pinned, tagged ``hunt`` and
    ``hunt:LAYER``; its id is :attr:`Cluster.case_id`. ``tausim run --tasks FILE`` with the agent and the user of
    the hunt replays it. The cluster's shortest conversation is also shrunk as user turns (:func:`shrink`,
    ``Cluster.script``) for the report. A cluster is left out (with a note) when all its trials went through a
    reseeded fork (not replayable from a seed), when its case does not fail the same way, or, when ``clean`` is
    given, when the clean agent fails it too (a regression no agent can pass names no fault of the agent).

    With ``prefix``, each exported case is followed by its trajectory-prefix case (:func:`prefix_case`, id
    ``CASE-prefix``): the conversation and database state just before the agent's first error and what its next
    turn must not do; kept only when the agent fails that next turn and, when ``clean`` is given, the clean agent
    passes it (else a note says why it is missing).

    Args:
        runner: the hunt's runner.
        result: the hunt's result (clusters get their ``script`` set).
        clean: a runner with the clean agent (same tasks and user), or None.
        shrink_tries: most replays per cluster for each shrinking.
        domain: the domain name written in the file (default the runner's).
        prefix: also write trajectory-prefix cases.

    Returns:
        ``(task file document, notes)``: notes say which clusters (or prefix cases) were left out and why.
    """
    kinds = {name: ("ending" if spec.ends_conversation else spec.kind)
             for name, spec in runner.domain.toolbox().specs.items()}
    tasks = {t.id: t for t in runner.tasks}
    personas = dict(Harness(runner).personas)
    cases: list[dict[str, Any]] = []
    notes: list[str] = []
    for c in result.clusters:
        task = tasks[c.shortest.result.task_id]
        short = c.shortest
        c.script = shrink(runner, task, short.result.trial, short.user_turns(), c.signature, kinds, shrink_tries)
        members = sorted((t for t in c.trials if not t.reseeded), key=lambda t: len(t.user_turns()))
        if not members:
            notes.append(f"{c.case_id}: left out: found only by reseeded forks (not replayable from a seed)")
            continue
        member = members[0]
        want = core(c.signature)

        def fails(moves: Mapping[int, str], task: Task = task, c: Cluster = c, member: HuntTrial = member,
                  want: tuple[str, ...] = want) -> bool:
            s = signature(task, run_case(runner, _case(task, c, member, moves, personas)), kinds)
            return s is not None and core(s) == want

        moves = dict(member.moves)
        if not fails(moves):
            notes.append(f"{c.case_id}: left out: its pinned replay does not fail the same way")
            continue
        tries = 1
        for i in sorted(moves, reverse=True):
            if tries >= shrink_tries:
                break
            tries += 1
            fewer = {k: v for k, v in moves.items() if k != i}
            if fails(fewer):
                moves = fewer
        case = _case(task, c, member, moves, personas)
        if clean is not None:
            res = run_case(clean, case)
            if not res.passed:
                notes.append(f"{c.case_id}: left out: the clean agent fails it too ({res.termination_reason})")
                continue
        cases.append(case.model_dump(mode="json", exclude_defaults=True))
        if prefix:
            pcase, why = prefix_case(runner, case, member)
            if pcase is None:
                notes.append(f"{c.case_id}: no prefix case: {why}")
                continue
            res = run_case(runner, pcase)
            step = res.grade.next_step if res.grade is not None else None
            if step is None or step.passed:
                notes.append(f"{c.case_id}: no prefix case: the agent does not fail its next turn there "
                             f"({res.termination_reason})")
            elif clean is not None and not run_case(clean, pcase).passed:
                notes.append(f"{c.case_id}: no prefix case: the clean agent fails its next turn too")
            else:
                cases.append(pcase.model_dump(mode="json", exclude_defaults=True))
    doc = {"format": "tausim.tasks", "version": 2, "domain": domain or runner.config.domain, "tasks": cases}
    return doc, notes
