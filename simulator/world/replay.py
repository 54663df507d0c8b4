"""Replay gold actions on a fresh database: goal states and tau-bench-style diffs."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from simulator.errors import DomainError, GoldToolBug
from simulator.types.prepared import GoldReplay, GoldStatus
from simulator.types.state import StateDelta
from simulator.types.tasks import Action, Task
from simulator.types.trajectory import ToolCallRecord, Trajectory
from simulator.world.database import TemplateDatabase, TrialDatabase, capture_delta
from simulator.world.domain import Domain
from simulator.world.dual import SetupActionError, has_user_side, run_action, run_setup_actions, syncer
from simulator.world.fixtures import FixtureError, apply_initial_state, replay_history
from simulator.world.tools import CallOutcome, Toolbox, ToolContext

__all__ = ["GoldToolBug", "apply_actions", "diverging_calls", "goal_database", "gold_calls", "initial_database",
    "prepare_trial", "provision_trial", "replay_gold", "replay_trajectory", "same_observation", "tasks_not_replaying"]







def _log() -> Any:
    """The module's structlog logger (structlog imported on first use: it loads rich's tracebacks and pygments)."""
    import structlog

    return structlog.get_logger("tausim.replay")

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
            _log().warning("gold_action_bug", action=action.name, bug=(out.bug or "").splitlines()[-1:])
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
    fx = task.initial_state
    dual = has_user_side(domain)
    try:
        if fx.user_data and not has_user_side(domain):
            raise DomainError(f"task {task.id!r}: initial_state.initialization_data.user_data: domain "
                              f"{domain.name!r} has no user side")
        if fx.data:
            domain.merge_data(trial, fx.data)
        if fx.user_data:
            domain.merge_user_data(trial, fx.user_data)
        toolbox = domain.toolbox_for(trial.options)
        if dual:  # setup actions may call environment functions, on either side: run them here, with sync
            bare = task.model_copy(update={"initial_state": fx.model_copy(update={"setup": [], "history": []})})
            apply_initial_state(toolbox, trial, bare, domain.install_sinks().metadata)
            ctx = ToolContext(trial.session, trial.options, step=None, source="setup")
            run_setup_actions(domain, ctx, fx.setup, toolbox)
            replay_history(toolbox, ctx, fx.history, user_toolbox=domain.user_toolbox())
            if fx.data or fx.user_data or fx.history:  # as tau2 ends its set-up (setup actions synced already)
                domain.sync(ctx)
        else:
            apply_initial_state(toolbox, trial, task, domain.install_sinks().metadata)
    except (FixtureError, SetupActionError, DomainError) as e:
        raise GoldToolBug(f"initial_state failed: {e}") from e






def provision_trial(domain: Domain, template: TemplateDatabase, trial: TrialDatabase, task: Task,
                    gold: GoldReplay | None) -> None:
    """Give a trial's fresh copy of ``template`` the task's initial state, from its gold replay's captured set-up.

    The set-up its gold replay captured (:attr:`GoldReplay.setup`, when made on this template) is written; without
    one the set-up runs (:func:`prepare_trial`). The two give the same database (rows at the same rowids, event
    log, write log); the captured one costs a few statements instead of the set-up's merges, setup actions and
    syncs.

    Args:
        domain: the domain.
        template: the template ``trial`` is a fresh copy of.
        trial: the trial's database, nothing written yet.
        task: the task.
        gold: the task's gold replay (:func:`replay_gold`), or None.

    Raises:
        GoldToolBug: the set-up had to run and could not be applied (see :func:`prepare_trial`).
    """
    image = gold.setup if gold is not None and gold.task_id == task.id else None
    if image is not None and task.initial_state is not None and trial.origin == image.origin == template.origin:
        template.apply_setup(trial.raw, image)
        return
    prepare_trial(domain, trial, task)


def replay_gold(domain: Domain, template: TemplateDatabase, task: Task, toolbox: Toolbox | None = None) -> GoldReplay:
    """Replay a task's gold actions once on a fresh copy of the template; a tool bug is recorded, not raised.

    Args:
        domain: the domain.
        template: its template database (the initial state).
        task: the task.
        toolbox: the domain's tools if already built (default ``domain.toolbox_for(template.options)``).

    Returns:
        The :class:`GoldReplay`: goal state (None after a tool bug or a fixture that cannot be applied, whose
        message is in ``bug``), per-action statuses and, for a task with assertions, its initial state.
    """
    toolbox = toolbox if toolbox is not None else domain.toolbox_for(template.options)
    tau2 = task.suite == "tau2"  # tau2's gold replay: a tool bug is only logged, and no call ends the replay
    statuses: list[GoldStatus] = []
    bug: str | None = None
    initial: bytes | None = None
    with template.trial() as trial:
        try:
            prepare_trial(domain, trial, task)
        except GoldToolBug as e:
            return GoldReplay(task.id, tuple(task.gold_actions), (), None, str(e))
        if task.assertions:
            initial = trial.raw.serialize()
        setup = template.capture_setup(trial.raw) if task.initial_state is not None else None
        ctx = ToolContext(trial.session, trial.options)
        sides = (toolbox, domain.user_toolbox())
        sync = syncer(domain, ctx)
        for action in task.gold_actions:
            out = run_action(domain, ctx, action, sides, functions=False)
            sync()
            if out.status == "tool_bug" and tau2:
                _log().warning("gold_action_bug", action=action.name, bug=(out.bug or "").splitlines()[-1:])
            elif out.status == "tool_bug":
                statuses.append(GoldStatus(action.name, out.status, out.bug or out.content))
                bug = f"gold action {action.name}({action.arguments}) raised:\n{out.bug}"
                break
            statuses.append(GoldStatus(action.name, out.status, None if out.status == "ok" else out.content))
            if out.ends_conversation and not tau2:
                break
        goal = None if bug is not None else capture_delta(trial.raw, domain.state_spec())
    return GoldReplay(task.id, tuple(task.gold_actions), tuple(statuses), goal, bug, initial, setup)


def goal_database(domain: Domain, template: TemplateDatabase, task: Task) -> StateDelta | bytes:
    """Return the goal state of a task: the template with its fixture applied and its gold actions replayed.

    Returns:
        The rows that changed, a :class:`~simulator.types.state.StateDelta` (compare with
        :func:`simulator.world.database.diff_against`).

    Raises:
        GoldToolBug: a gold action hit a bug in a tool, or the fixture could not be applied.
    """
    return replay_gold(domain, template, task).goal_state()


def initial_database(domain: Domain, template: TemplateDatabase, task: Task) -> bytes:
    """Return the initial state of a task (the template with its fixture applied), serialized.

    Raises:
        GoldToolBug: the fixture could not be applied.
    """
    with template.trial() as trial:
        prepare_trial(domain, trial, task)
        return trial.raw.serialize()


def tasks_not_replaying(domain: Domain, template: TemplateDatabase, tasks: Sequence[Task],
                        replays: Mapping[str, GoldReplay] | None = None) -> dict[str, str]:
    """Return the tasks whose first gold action fails on the data, with that action's result.

    Such a task may have been written for other data (tau-bench's tasks against our built-in data: "no user
    matches"): its goal state lacks its changes, so a do-nothing agent would pass it. Some task sets have a few on
    purpose (tau-bench's gold keeps refused calls and unknown emails).

    Args:
        domain: the domain.
        template: the data.
        tasks: the tasks to check.
        replays: task id -> the task's gold replay already made (e.g. ``PreparedTask.gold`` of a prepared run):
            its recorded first status is read, nothing is replayed again. A task without one (or whose replay is
            of other gold actions) has its first gold action run alone on a fresh copy of the data (well under a
            millisecond).

    Returns:
        Task id -> ``"NAME: RESULT"`` of its failing first gold action; tasks with a gold tool bug are left out
        (their trials record it).
    """
    out: dict[str, str] = {}
    toolbox: Toolbox | None = None
    for task in tasks:
        if not gold_calls(task):
            continue
        first = task.gold_actions[0]
        replay = (replays or {}).get(task.id)
        if replay is not None and replay.belongs_to(task) and replay.statuses:
            status, result = replay.statuses[0].status, replay.statuses[0].error
        else:
            toolbox = toolbox if toolbox is not None else domain.toolbox_for(template.options)
            with template.trial() as trial:  # the first action alone: the rest does not decide
                try:
                    prepare_trial(domain, trial, task)
                except GoldToolBug:
                    continue  # its trials record it
                outcome = apply_actions(toolbox, trial, [first], raise_on_bug=False)[0]
            status, result = outcome.status, outcome.content
        if status not in ("ok", "tool_bug"):
            out[task.id] = f"{first.name}: {result}"
    return out






def replay_trajectory(toolbox: Toolbox, trial: TrialDatabase, trajectory: Trajectory, *,
                      user_toolbox: Toolbox | None = None,
                      sync: Callable[[ToolContext], None] | None = None) -> list[tuple[int, CallOutcome]]:
    """Rebuild a trial's final state: run the trajectory's successful tool calls, in order, on a database.

    Calls that did not succeed in the trial (``tool_error``, ``invalid_arguments``, ``unknown_tool``,
    ``tool_bug``) left the database unchanged (each call runs in its own transaction), so they are skipped.
    No model is called.

    Args:
        toolbox: the domain's tools.
        trial: a fresh copy of the template the trial ran on (changed in place).
        trajectory: the recorded trajectory.
        user_toolbox: the user's own tools (dual control): calls with requestor ``user`` run there.
        sync: the domain's sync hook (:meth:`simulator.world.domain.Domain.sync`), run after each replayed call.

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
        side = user_toolbox if call.requestor == "user" and user_toolbox is not None else toolbox
        ctx.source = "user" if call.requestor == "user" else "agent"
        out.append((i, side.dispatch(ctx, call.name, call.arguments)))
        if sync is not None:
            sync(ctx)
    return out


def _json_or_text(text: str) -> Any:
    try:
        return ("json", json.loads(text))
    except ValueError:
        return ("text", text.strip())


def same_observation(recorded_status: str, recorded: str, status: str, content: str) -> bool:
    """Whether a replayed tool call saw what was recorded, compared by meaning rather than by text.

    Two errors are the same observation whatever their wording (an error is an error: the state is unchanged
    either way); an error and a success differ; two successes are equal when their texts parse to equal JSON
    values (key order and spacing do not matter), else when their texts are equal after stripping whitespace.

    Args:
        recorded_status: the recorded call's status (``ok`` or an error status).
        recorded: the recorded observation text.
        status: the replayed call's status.
        content: the replayed observation text.

    Returns:
        True when the observations agree.
    """
    if (recorded_status == "ok") != (status == "ok"):
        return False
    if status != "ok":
        return True
    return bool(_json_or_text(recorded) == _json_or_text(content))


def diverging_calls(trajectory: Trajectory, outcomes: Sequence[tuple[int, CallOutcome]]) -> list[ToolCallRecord]:
    """The recorded calls whose replay (:func:`replay_trajectory`) saw another observation (:func:`same_observation`).

    Args:
        trajectory: the recorded trajectory.
        outcomes: ``(index in trajectory.tool_calls, outcome)`` as :func:`replay_trajectory` returns them.

    Returns:
        The diverging recorded calls, in order.
    """
    calls = trajectory.tool_calls
    return [calls[i] for i, o in outcomes
            if not same_observation(calls[i].status, calls[i].content, o.status, o.content)]

