"""The hunt: search task x persona x seed x user move for failures within a budget of agent turns.

:func:`hunt` plays root trials, takes snapshots at decision points (after an agent question, a confirmation request,
a refusal, a tool error: :func:`~simulator.hunt.snapshot.decision_kind`) and spends the budget (agent turns) on forks
(:meth:`~simulator.hunt.snapshot.Harness.fork`) chosen by a UCB bandit over branch points, rewarded by new
signatures; the failures are clustered by signature (:mod:`simulator.hunt.clusters`). Deterministic for a seed.
:func:`simulator.hunt.cases.export_cases` writes each cluster as a regression case.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from simulator.errors import SetupError, SnapshotError
from simulator.execution.recording import sigint_deferred
from simulator.execution.runner import Runner
from simulator.grading.signature import signature
from simulator.hunt.clusters import Cluster, cluster, tool_kinds
from simulator.hunt.snapshot import Harness, HuntTrial, Snapshot, at_decisions
from simulator.types.persona import MOVES
from simulator.types.tasks import Task
from simulator.types.trajectory import TerminationReason

__all__ = ["HuntResult", "hunt"]

_KIND_RANK = {"confirmation": 0, "tool_error": 1, "question": 2, "refusal": 3}
"""Tie order of branch points forked equally often: a confirmation request first, then a tool error, ..."""


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
        interrupted: a Ctrl-C stopped the search: the trials are those played until then (``hunt``'s
            ``on_interrupt``).
    """

    clusters: list[Cluster]
    trials: list[HuntTrial]
    agent_turns: int
    saved_turns: int
    signatures_at: list[tuple[int, int]]
    interrupted: bool = False


def hunt(runner: Runner, budget: int, *, seed: int = 0, personas: Sequence[str | None] | None = None,
         explore: float = 0.5, prior: float = 0.5, reseeds: int = 6, forks_per_root: int = 12,
         on_trial: Callable[[HuntTrial], None] | None = None,
         on_interrupt: Callable[[HuntResult], None] | None = None) -> HuntResult:
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
        on_interrupt: on Ctrl-C (``KeyboardInterrupt`` during the search), called with the :class:`HuntResult` of
            the trials played until then (``interrupted`` set), a further Ctrl-C held off meanwhile
            (:func:`~simulator.execution.recording.sigint_deferred`); when it returns, the KeyboardInterrupt goes on.

    Returns:
        The :class:`HuntResult`.

    Raises:
        SetupError: a trial ended ``setup_error`` (a missing API key, an unknown model, ...): no trial of this
            set-up can work, so the hunt stops (``kind="trial"``, the trial's error in the message).
        KeyboardInterrupt: Ctrl-C (after ``on_interrupt``).
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    harness = Harness(runner)
    kinds = tool_kinds(runner.domain.toolbox())
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

    def found(interrupted: bool = False) -> HuntResult:
        return HuntResult(clusters=cluster(trials, tasks, kinds), trials=trials, agent_turns=spent, saved_turns=saved,
                          signatures_at=curve, interrupted=interrupted)

    with _kept_on_interrupt(on_interrupt, found):
        while spent < budget and arms:
            log_total = math.log(sum(a.pulls for a in arms) + 2)
            arm = max(arms, key=lambda a: (a.reward + prior) / (a.pulls + 1)
                      + explore * math.sqrt(log_total / (a.pulls + 1)))
            arm.pulls += 1
            arm.branches = [b for b in arm.branches if b[1]]
            if arm.branches and arm.forks_since_root < forks_per_root:
                # the least forked branch point; on ties a confirmation request first, then a tool error, a
                # question, a refusal; then the latest (its continuation is the cheapest)
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
    return found()


@contextmanager
def _kept_on_interrupt(on_interrupt: Callable[[HuntResult], None] | None,
                       found: Callable[[bool], HuntResult]) -> Iterator[None]:
    """On Ctrl-C in the body, call ``on_interrupt`` with ``found(True)`` (a second Ctrl-C held off), then raise on."""
    try:
        yield
    except KeyboardInterrupt:
        if on_interrupt is not None:
            with sigint_deferred():  # a second Ctrl-C must not lose what the first one keeps
                on_interrupt(found(True))
        raise
