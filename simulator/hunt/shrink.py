"""Shrinking: the shortest conversation that still fails the same way.

A failing conversation's user turns are replayed by a scripted user (:func:`replay_script`), dropping and merging
them while the trial still fails the same way (the same :func:`~simulator.grading.signature.core` signature).
:func:`run_case` runs an exported regression case.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from simulator.execution.runner import Runner
from simulator.grading.signature import core, signature
from simulator.types.results import TrialResult
from simulator.types.tasks import Task
from simulator.users._scripted import STOP_TOKEN, ScriptedUser, scripted_user_factory

__all__ = ["replay_script", "run_case", "shrink"]


def _scripted(lines: Sequence[str]) -> Callable[[Any], ScriptedUser]:
    """A user factory: a scripted user saying ``lines`` (the task's user-side gold calls its tools)."""
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
