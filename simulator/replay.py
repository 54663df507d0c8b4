"""Replay gold actions on a fresh database: goal states and tau-bench-style diffs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from simulator.database import TemplateDatabase, TrialDatabase, json_diff
from simulator.domain import Domain
from simulator.errors import DomainError, GoldToolBug
from simulator.orchestrator import Trajectory
from simulator.outcomes import FixtureError, apply_initial_state
from simulator.tasks import Action, Task
from simulator.tools import CallOutcome, Toolbox, ToolContext

__all__ = ["GoldToolBug", "ReplayResult", "apply_actions", "goal_database", "gold_calls", "initial_database",
           "prepare_trial", "replay_tasks", "replay_trajectory", "tasks_not_replaying"]

_log = structlog.get_logger("tausim.replay")





def gold_calls(task: Task) -> list[Action]:
    """Return the gold actions replayed on the agent's side (user-side ones belong to dual-control domains)."""
    return [a for a in task.gold_actions if a.requestor == "assistant"]


def apply_actions(
    toolbox: Toolbox, trial: TrialDatabase, actions: Sequence[Action], *, raise_on_bug: bool = True,
    log_errors: bool = False,
) -> list[CallOutcome]:
    """Run actions in order on a trial database, stopping after one that ends the conversation.

    Args:
        toolbox: the domain's tools.
        trial: the database to change.
        actions: the calls to make.
        raise_on_bug: raise :class:`GoldToolBug` on a ``tool_bug`` outcome instead of returning it.
        log_errors: tau2's gold replay: a tool bug is only logged (a warning), never raised, and the
            replay goes on past a conversation-ending call.

    Returns:
        One :class:`CallOutcome` per action run.

    Raises:
        GoldToolBug: a tool raised an unexpected exception and ``raise_on_bug`` is set.
    """
    ctx = ToolContext(trial.session, trial.options)
    outcomes = []
    for action in actions:
        out = toolbox.dispatch(ctx, action.name, action.arguments)
        if out.status == "tool_bug" and log_errors:
            _log.warning("gold_action_bug", action=action.name, bug=(out.bug or "").splitlines()[-1:])
        elif out.status == "tool_bug" and raise_on_bug:
            raise GoldToolBug(f"gold action {action.name}({action.arguments}) raised:\n{out.bug}")
        outcomes.append(out)
        if out.ends_conversation and not log_errors:
            break
    return outcomes


def prepare_trial(domain: Domain, trial: TrialDatabase, task: Task) -> None:
    """Apply the task's ``initial_state`` (if any) to a fresh trial database, before anything else runs.

    Raises:
        GoldToolBug: the fixture could not be applied (the message names the task and the field).
    """
    if task.initial_state is None:
        return
    try:
        if task.initial_state.user_data:  # the extension point of dual-control domains
            raise DomainError(f"task {task.id!r}: initial_state.initialization_data.user_data: domain "
                              f"{domain.name!r} has no user side")
        if task.initial_state.data:
            domain.merge_data(trial, task.initial_state.data)
        apply_initial_state(domain.toolbox_for(trial.options), trial, task, domain.install_sinks().metadata)
    except (FixtureError, DomainError) as e:
        raise GoldToolBug(f"initial_state failed: {e}") from e


def goal_database(domain: Domain, template: TemplateDatabase, task: Task) -> bytes:
    """Return the goal state of a task: the template with its fixture applied and its gold actions replayed.

    Returns:
        ``sqlite3.Connection.serialize()`` bytes of the goal database (compare with
        :func:`simulator.database.diff_against`).

    Raises:
        GoldToolBug: a gold action hit a bug in a tool, or the fixture could not be applied.
    """
    with template.trial() as trial:
        prepare_trial(domain, trial, task)
        apply_actions(domain.toolbox_for(trial.options), trial, gold_calls(task), log_errors=task.suite == "tau2")
        return trial.raw.serialize()


def initial_database(domain: Domain, template: TemplateDatabase, task: Task) -> bytes:
    """Return the initial state of a task (the template with its fixture applied), serialized.

    Raises:
        GoldToolBug: the fixture could not be applied.
    """
    with template.trial() as trial:
        prepare_trial(domain, trial, task)
        return trial.raw.serialize()


def tasks_not_replaying(domain: Domain, template: TemplateDatabase, tasks: Sequence[Task]) -> dict[str, str]:
    """Return the tasks whose first gold action fails on the data, with that action's result.

    Such a task may have been written for other data (tau-bench's tasks against our built-in data: "no user
    matches"): its goal state lacks its changes, so a do-nothing agent would pass it. Some task sets have a few on
    purpose (tau-bench's gold keeps refused calls and unknown emails).

    Args:
        domain: the domain.
        template: the data.
        tasks: the tasks to check (one call each on a fresh copy of the data, well under a millisecond).

    Returns:
        Task id -> ``"NAME: RESULT"`` of its failing first gold action; tasks with a gold tool bug are left out
        (their trials record it).
    """
    out: dict[str, str] = {}
    toolbox = domain.toolbox_for(template.options)
    for task in tasks:
        if not gold_calls(task):
            continue
        first = gold_calls(task)[0]
        with template.trial() as trial:  # the first action alone: the rest does not decide
            try:
                prepare_trial(domain, trial, task)
            except GoldToolBug:
                continue  # its trials record it
            outcome = apply_actions(toolbox, trial, [first], raise_on_bug=False)[0]
        if outcome.status not in ("ok", "tool_bug"):
            out[task.id] = f"{first.name}: {outcome.content}"
    return out


@dataclass
class ReplayResult:
    """The outcome of replaying one task's gold actions."""

    task_index: int
    task_id: str
    responses: list[str]
    statuses: list[str]
    diff: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """Return ``{"task_index", "task_id", "responses", "statuses", "diff"}``."""
        return {"task_index": self.task_index, "task_id": self.task_id, "responses": self.responses,
                "statuses": self.statuses, "diff": self.diff}


def replay_tasks(domain: Domain, template: TemplateDatabase, tasks: Sequence[Task]) -> Iterator[ReplayResult]:
    """Replay each task's gold actions on a fresh copy of the template and diff the native JSON dumps.

    Args:
        domain: the domain.
        template: its template database (the initial state).
        tasks: tasks to replay.

    Yields:
        One :class:`ReplayResult` per task, in order.

    Raises:
        GoldToolBug: a gold action hit a bug in a tool.
    """
    toolbox = domain.toolbox_for(template.options)
    with template.trial() as trial:
        initial = domain.dump(trial)
    for i, task in enumerate(tasks):
        with template.trial() as trial:
            prepare_trial(domain, trial, task)
            outcomes = apply_actions(toolbox, trial, gold_calls(task), log_errors=task.suite == "tau2")
            final = domain.dump(trial)
        yield ReplayResult(i, task.id, [o.content for o in outcomes], [o.status for o in outcomes],
                           json_diff(initial, final))


def replay_trajectory(toolbox: Toolbox, trial: TrialDatabase, trajectory: Trajectory) -> list[tuple[int, CallOutcome]]:
    """Rebuild a trial's final state: run the trajectory's successful tool calls, in order, on a database.

    Calls that did not succeed in the trial (``tool_error``, ``invalid_arguments``, ``unknown_tool``,
    ``tool_bug``) left the database unchanged (each call runs in its own transaction), so they are skipped.
    No model is called.

    Args:
        toolbox: the domain's tools.
        trial: a fresh copy of the template the trial ran on (changed in place).
        trajectory: the recorded trajectory.

    Returns:
        ``(index in trajectory.tool_calls, outcome)`` for each call replayed; an outcome whose status or
        content differs from the recorded one means the tools changed since the trial ran.
    """
    ctx = ToolContext(trial.session, trial.options)
    out = []
    for i, call in enumerate(trajectory.tool_calls):
        if call.status != "ok":
            continue
        ctx.step = call.step
        out.append((i, toolbox.dispatch(ctx, call.name, call.arguments)))
    return out
