"""Snapshot and fork: play a trial with snapshots at its user turns; resume a snapshot with another user move.

:class:`Harness` plays trials of a :class:`~simulator.execution.runner.Runner`'s tasks with a :class:`Snapshots`
observer on the conversation loop (:class:`~simulator.dialogue.conversation.Conversation`); at the start of any user
turn its ``capture`` predicate allows (:func:`every_turn`, :func:`at_decisions`) it takes a :class:`Snapshot`: the
conversation state (messages, trajectory, progress judge), the trial database (``sqlite3.Connection.serialize()``,
the event log included: it lives in the database), the user's state (agenda position, patience used, persona), the
generators' states (``bit_generator.state``) and the agent's and user's state. The actors' state is a pickle of both
when they can be pickled; the rule agents are generator-based dialogues, which cannot be, so the snapshot keeps the
log of calls made to them instead and :meth:`Harness.fork` rebuilds them from the trial seed and replays those calls
(checking that the replay says what the original said; an LLM agent is resumed the same way, the response cache
making the replayed prefix free). ``fork(snapshot, user_move=..., persona=...)`` continues the trial from there,
optionally with the next user turn replaced by a *user move* (:data:`MOVES`) or the persona switched. Forking an
unchanged snapshot reproduces the original continuation exactly.
"""

from __future__ import annotations

import dataclasses
import pickle
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.dialogue.actors import call_actor
from simulator.dialogue.caps import TimeLimit
from simulator.dialogue.conversation import Conversation
from simulator.dialogue.cues import asks_confirmation
from simulator.dialogue.observers import DualControlSync, Observer
from simulator.dialogue.state import ConversationState
from simulator.errors import SnapshotError
from simulator.execution.runner import Runner
from simulator.grading import check_assertions, grade_trial
from simulator.grading.safety import record_owners
from simulator.types.messages import Message
from simulator.types.persona import MOVES, Persona
from simulator.types.results import TrialResult
from simulator.types.sanitize import admit_agent_turn
from simulator.types.tasks import Task
from simulator.types.trajectory import Limits, TerminationReason, Trajectory
from simulator.users._moves import MovedUser
from simulator.world.database import diff_against
from simulator.world.dual import env_caller, syncer
from simulator.world.events import read_events
from simulator.world.replay import prepare_trial
from simulator.world.tools import ToolContext

__all__ = ["MOVES", "Harness", "HuntTrial", "Snapshot", "Snapshots", "at_decisions", "check_vary", "decision_kind",
           "every_turn"]

_REFUSAL_RE = re.compile(r"\b(?:can't|cannot|can not|unable to|not able to|not allowed|not possible|"
                         r"not eligible|against (?:our|the) policy|I'm sorry, but)\b", re.IGNORECASE)


def check_vary(vary: str) -> None:
    """Refuse a run that holds one side's seed (``RunSpec.vary`` ``user`` or ``agent``): a hunt varies both.

    A hunt plays each trial with both sides on the trial seed (:meth:`Harness.play`) because what it finds must
    replay: a regression case pins that one seed (``seed``), and a trial whose agent or user had a held seed
    (:func:`simulator.execution.seeds.side_seed`) would not replay from it. Holding a side also measures nothing
    here: the hunt already varies each side on its own (user moves and personas; reseeded agent generators), and
    the correlation a held side brings matters only to reliability figures, which a hunt does not report
    (``tausim variance`` splits the spread between the sides).

    Args:
        vary: the run's ``vary``.

    Raises:
        ValueError: ``vary`` is not ``both``.
    """
    if vary != "both":
        raise ValueError(f"--vary {vary}: tausim hunt varies both sides of every trial (its regression cases pin one "
                         "seed, from which a held side does not replay; user moves, personas and agent reseeds "
                         "already vary each side on its own); drop --vary, or measure the sides' shares of the "
                         "spread with tausim variance")


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

    Raises:
        ValueError: the runner holds one side's seed (``config.vary`` not ``both``, see :func:`check_vary`).
    """

    def __init__(self, runner: Runner, personas: Mapping[str, Persona] | None = None):
        check_vary(runner.config.vary)
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
                ) -> tuple[_AgentProxy, MovedUser, Any] | tuple[TerminationReason, str]:
        """The trial's agent, user and context; or, when a factory failed, the trial's end and the traceback.

        A factory's failure (anything it raises but the user's Ctrl-C: :func:`~simulator.dialogue.actors.call_actor`)
        is the trial's ``agent_error`` / ``user_error``, as in a run; it never stops the hunt.
        """
        r = self.runner
        start = persona if persona is None or persona in r.personas else None
        ctx = r.trial_context(task, trial_index, start)
        if persona is not None and start is None:
            ctx.persona = self.personas[persona]
        log: list[tuple[str, Any]] = []
        built, failed = call_actor(r.agent_factory, ctx)
        if failed is not None:
            return TerminationReason.AGENT_ERROR, "agent factory failed:\n" + failed
        simulated, failed = call_actor(r.user_factory, ctx)
        if failed is not None:
            return TerminationReason.USER_ERROR, "user factory failed:\n" + failed
        return _AgentProxy(built, log), MovedUser(simulated, log, moves, self.personas), ctx

    def _not_played(self, task: Task, trial_index: int, persona: str | None, moves: Mapping[int, str],
                    snapshot: Snapshot | None, reason: TerminationReason, error: str, duration_s: float,
                    charged: int) -> HuntTrial:
        """A trial that ended before it was played (a time limit, a failed factory): failed, ungraded.

        Args:
            task: the task.
            trial_index: the trial's index.
            persona: the persona played, or None.
            moves: the user moves it was given.
            snapshot: the snapshot it was forked from, or None for a root.
            reason: its termination reason.
            error: why (recorded as the trial's and the trajectory's error).
            duration_s: seconds it took.
            charged: agent turns it costs the hunt's budget (at least 1, so that a hunt whose trials all end so still
                spends its budget and ends).
        """
        res = TrialResult(task_id=task.id, trial=trial_index, seed=self.runner.trial_seed(task, trial_index),
                          persona=persona, passed=False, termination_reason=str(reason), grade=None,
                          trajectory=Trajectory(termination_reason=reason, error=error), duration_s=duration_s,
                          error=error)
        return HuntTrial(result=res, snapshots=[], moves=dict(moves), fresh_agent_turns=max(1, charged),
                         parent=snapshot, reseeded=snapshot is not None and snapshot.reseeded)

    def _run(self, task: Task, trial_index: int, persona: str | None, moves: dict[int, str],
             snapshot: Snapshot | None, capture: Callable[[ConversationState], bool] | None,
             reseed: int | None = None) -> HuntTrial:
        """Play a trial within the run's ``trial_timeout`` (as :class:`~simulator.execution.runner.Runner` does).

        Past it the trial's thread is abandoned (told to stop at its next checkpoint) and the trial is a failed,
        ungraded ``timeout`` without snapshots; it is charged the run's ``max_steps`` agent turns, so that a hung
        agent spends the hunt's budget instead of keeping the hunt going forever.
        """
        timeout = self.runner.config.trial_timeout
        if timeout is None:
            return self._play(task, trial_index, persona, moves, snapshot, capture, reseed)
        t0 = time.perf_counter()
        stop = threading.Event()
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["trial"] = self._play(task, trial_index, persona, moves, snapshot, capture, reseed, stop)
            except BaseException as e:  # noqa: BLE001 - handed to the waiting thread, which raises it
                box["error"] = e

        thread = threading.Thread(target=target, name=f"tausim-hunt-{task.id}-{trial_index}", daemon=True)
        thread.start()
        thread.join(timeout)
        if thread.is_alive():
            stop.set()
            error = (f"the trial ran past the trial timeout of {timeout:g} s (an agent, user or tool that did not "
                     "return); its thread was abandoned")
            return self._not_played(task, trial_index, persona, moves, snapshot, TerminationReason.TIMEOUT, error,
                                    time.perf_counter() - t0, self.runner.config.max_steps)
        if "error" in box:
            raise box["error"]
        trial: HuntTrial = box["trial"]
        return trial

    def _play(self, task: Task, trial_index: int, persona: str | None, moves: dict[int, str],
              snapshot: Snapshot | None, capture: Callable[[ConversationState], bool] | None,
              reseed: int | None = None, stop: threading.Event | None = None) -> HuntTrial:
        r = self.runner
        prepared = r.prepare([task.id])[task.id]
        goal = prepared.gold.goal_state()
        initial = prepared.gold.initial
        seed = r.trial_seed(task, trial_index)
        actors = self._actors(task, trial_index, persona, moves)
        if len(actors) == 2:
            reason, error = actors
            return self._not_played(task, trial_index, persona, moves, snapshot, reason, error, 0.0, 1)
        agent, user, ctx = actors
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

            def take(state: ConversationState) -> None:
                snaps.append(self._snapshot(task, trial_index, persona, seed, state, agent, user, ctx,
                                            db.raw.serialize(), moves))

            observers: list[Observer] = [Snapshots(capture, take)] if capture is not None else []
            user_toolbox = r.domain.user_toolbox()
            toolbox = r.agent_toolbox(task, trial_index, r.domain.toolbox())  # the run's environment faults
            user_ctx = None
            if user_toolbox is not None:
                user_ctx = ToolContext(db.session, db.options)
                user_ctx.source = "user"
                observers.append(DualControlSync(syncer(r.domain, tool_ctx)))
            traj = Conversation(agent, user, toolbox, tool_ctx, limits, observers=observers,
                                caps=[TimeLimit(stop=stop)] if stop is not None else [],
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
            said.append(admit_agent_turn(agent.step(state.seen[:arg]))[0].message)  # as the trial recorded it
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
