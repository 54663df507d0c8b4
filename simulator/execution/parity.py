"""The parity harness: replay every task's gold actions and report each action's outcome (``tausim replay``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from simulator.types.tasks import Task
from simulator.world.database import TemplateDatabase, json_diff
from simulator.world.domain import Domain
from simulator.world.dual import has_user_side, run_action, syncer
from simulator.world.replay import apply_actions, gold_calls, prepare_trial
from simulator.world.tools import ToolContext

_log = structlog.get_logger("tausim.replay")


@dataclass
class ReplayResult:
    """The outcome of replaying one task's gold actions.

    Attributes:
        task_index: the task's position in the replayed list.
        task_id: the task.
        responses: each replayed call's response text.
        statuses: each call's status (``ok``, ``tool_error``, ...; see :class:`~simulator.world.tools.CallOutcome`).
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
