"""Replay gold actions on a fresh database: goal states and tau-bench-style diffs."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from simulator.database import StateDelta, TemplateDatabase, TrialDatabase, capture_delta, json_diff
from simulator.domain import Domain
from simulator.dual import SetupActionError, has_user_side, run_action, run_setup_actions, syncer
from simulator.errors import DomainError, GoldToolBug
from simulator.orchestrator import ToolCallRecord, Trajectory
from simulator.outcomes import FixtureError, apply_initial_state, replay_history
from simulator.tasks import Action, Task
from simulator.tools import CallOutcome, Toolbox, ToolContext

__all__ = ["GoldReplay", "GoldStatus", "GoldToolBug", "ReplayResult", "apply_actions", "diverging_calls",
           "goal_database", "gold_calls", "initial_database", "prepare_trial", "replay_gold", "replay_tasks",
           "replay_trajectory", "same_observation", "tasks_not_replaying"]

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


@dataclass(frozen=True)
class GoldStatus:
    """How one gold action went when the task's gold actions were replayed on a fresh copy of the data.

    Attributes:
        name: the tool called.
        status: the call's status: ``ok``, ``tool_error``, ``invalid_arguments``, ``unknown_tool`` or
            ``tool_bug`` (see :class:`~simulator.tools.CallOutcome`).
        error: None when ``ok``; else the error text the tool returned (for ``tool_bug``: the traceback).
    """

    name: str
    status: str
    error: str | None = None


@dataclass(frozen=True)
class GoldReplay:
    """A task's gold actions replayed once on a fresh copy of the data: its goal state and each action's status.

    Attributes:
        task_id: the task.
        actions: the gold actions replayed (a replay belongs to a task only while its gold actions are these).
        statuses: one :class:`GoldStatus` per action run, in order; the replay stops after an action that ends the
            conversation or hits a tool bug, so there may be fewer statuses than actions.
        goal: the goal state: the rows the gold replay wrote (:class:`~simulator.database.StateDelta`, memory
            following the changed rows; a serialized goal database, ``sqlite3.Connection.serialize()`` bytes, is
            accepted too), or None when a gold action hit a tool bug.
        bug: the :class:`GoldToolBug` message when a gold action hit a tool bug (or the task's fixture could not
            be applied), else None.
        initial: the task's initial state (the template with its ``initial_state`` fixture applied, serialized)
            when the task has declarative assertions (they compare final with initial), else None.
    """

    task_id: str
    actions: tuple[Action, ...]
    statuses: tuple[GoldStatus, ...]
    goal: StateDelta | bytes | None
    bug: str | None = None
    initial: bytes | None = None

    def goal_state(self) -> StateDelta | bytes:
        """Return the goal state (compare with :func:`simulator.database.diff_against`).

        Raises:
            GoldToolBug: a gold action hit a bug in a tool (the recorded error, raised anew).
        """
        if self.goal is None:
            raise GoldToolBug(self.bug or f"task {self.task_id!r}: no goal state")
        return self.goal

    def belongs_to(self, task: Task) -> bool:
        """Return whether this replay is of ``task`` as it is (same id and gold actions)."""
        return self.task_id == task.id and list(self.actions) == list(task.gold_actions)


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
        ctx = ToolContext(trial.session, trial.options)
        sides = (toolbox, domain.user_toolbox())
        sync = syncer(domain, ctx)
        for action in task.gold_actions:
            out = run_action(domain, ctx, action, sides, functions=False)
            sync()
            if out.status == "tool_bug" and tau2:
                _log.warning("gold_action_bug", action=action.name, bug=(out.bug or "").splitlines()[-1:])
            elif out.status == "tool_bug":
                statuses.append(GoldStatus(action.name, out.status, out.bug or out.content))
                bug = f"gold action {action.name}({action.arguments}) raised:\n{out.bug}"
                break
            statuses.append(GoldStatus(action.name, out.status, None if out.status == "ok" else out.content))
            if out.ends_conversation and not tau2:
                break
        goal = None if bug is not None else capture_delta(trial.raw, domain.state_spec())
    return GoldReplay(task.id, tuple(task.gold_actions), tuple(statuses), goal, bug, initial)


def goal_database(domain: Domain, template: TemplateDatabase, task: Task) -> StateDelta | bytes:
    """Return the goal state of a task: the template with its fixture applied and its gold actions replayed.

    Returns:
        The rows that changed, a :class:`~simulator.database.StateDelta` (compare with
        :func:`simulator.database.diff_against`).

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


@dataclass
class ReplayResult:
    """The outcome of replaying one task's gold actions.

    Attributes:
        task_index: the task's position in the replayed list.
        task_id: the task.
        responses: each replayed call's response text.
        statuses: each call's status (``ok``, ``tool_error``, ...; see :class:`~simulator.tools.CallOutcome`).
        diff: the change of the domain's JSON dump (per table: added, removed, changed); in a dual-control
            domain, of the agent's tables only.
        requestors: each call's side (``assistant`` or ``user``).
        user_diff: the change of the user's tables (dual-control domains), else None.
        env_assertions: the task's environment assertions evaluated on the replayed (synced) state, each
            ``{"func_name", "env_type", "expected", "actual", "passed", "error"}``; None for a task without any.
    """

    task_index: int
    task_id: str
    responses: list[str]
    statuses: list[str]
    diff: dict[str, Any]
    requestors: list[str] = field(default_factory=list)
    user_diff: dict[str, Any] | None = None
    env_assertions: list[dict[str, Any]] | None = None

    @property
    def errors(self) -> list[bool]:
        """Return each call's error flag (tau2's ``ToolMessage.error``: the call did not succeed)."""
        return [s != "ok" for s in self.statuses]

    def to_json(self) -> dict[str, Any]:
        """Return ``{"task_index", "task_id", "responses", "statuses", "errors", "requestors", "diff"}``.

        With ``"user_diff"`` in a dual-control domain and ``"env_assertions"`` for a task that has some.
        """
        doc: dict[str, Any] = {"task_index": self.task_index, "task_id": self.task_id, "responses": self.responses,
                               "statuses": self.statuses, "errors": self.errors, "requestors": self.requestors,
                               "diff": self.diff}
        if self.user_diff is not None:
            doc["user_diff"] = self.user_diff
        if self.env_assertions is not None:
            doc["env_assertions"] = self.env_assertions
        return doc


def replay_tasks(domain: Domain, template: TemplateDatabase, tasks: Sequence[Task]) -> Iterator[ReplayResult]:
    """Replay each task's gold actions on a fresh copy of the template and diff the native JSON dumps.

    A tau-bench task: the agent's gold actions, stopping after a conversation-ending call; a gold tool bug is
    raised. A tau2 task (and any task of a dual-control domain), as tau2's evaluator replays gold: every gold
    action on its requestor's side (the user's own tools for ``requestor: user``), the domain's sync after each,
    past a conversation-ending call, a tool bug only logged (its status is ``tool_bug``); then the task's
    environment assertions are evaluated on the replayed, synced state.

    Args:
        domain: the domain.
        template: its template database (the initial state).
        tasks: tasks to replay.

    Yields:
        One :class:`ReplayResult` per task, in order.

    Raises:
        GoldToolBug: a gold action of a tau-bench task hit a bug in a tool, or a task's initial state could not
            be applied.
    """
    from simulator.grading.tau2 import check_env_assertions

    toolbox = domain.toolbox_for(template.options)
    sides = (toolbox, domain.user_toolbox())
    user_tables = domain.user_tables()
    dual = has_user_side(domain)
    with template.trial() as trial:
        initial = domain.dump(trial)
    for i, task in enumerate(tasks):
        tau2 = task.suite == "tau2" or dual
        with template.trial() as trial:
            prepare_trial(domain, trial, task)
            start = domain.dump(trial) if task.initial_state is not None else initial
            written = trial.raw.total_changes
            if tau2:
                ctx = ToolContext(trial.session, trial.options)
                sync = syncer(domain, ctx)
                actions = list(task.gold_actions)
                outcomes = []
                for action in actions:
                    out = run_action(domain, ctx, action, sides, functions=False)
                    if out.status == "tool_bug":
                        _log.warning("gold_action_bug", action=action.name, bug=(out.bug or "").splitlines()[-1:])
                    outcomes.append(out)
                    sync()
                checks = (check_env_assertions(domain, trial, task.env_assertions).results
                          if task.env_assertions else None)
            else:
                actions = gold_calls(task)
                outcomes = apply_actions(toolbox, trial, actions)
                checks = None
            final = domain.dump(trial) if trial.raw.total_changes != written else start  # no row written
        agent = {t: v for t, v in final.items() if t not in user_tables}
        before = {t: v for t, v in start.items() if t not in user_tables}
        user_diff = None
        if user_tables:
            user_diff = json_diff({t: v for t, v in start.items() if t in user_tables},
                                  {t: v for t, v in final.items() if t in user_tables})
        yield ReplayResult(
            i, task.id, [o.content for o in outcomes], [o.status for o in outcomes], json_diff(before, agent),
            requestors=[a.requestor for a in actions[: len(outcomes)]], user_diff=user_diff,
            env_assertions=None if checks is None else [
                {"func_name": c.func_name, "env_type": c.env_type, "expected": c.expected, "actual": c.actual,
                 "passed": c.passed, "error": c.error} for c in checks],
        )


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
        sync: the domain's sync hook (:meth:`simulator.domain.Domain.sync`), run after each replayed call.

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

