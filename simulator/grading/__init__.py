"""Grading: each component recorded separately; a trial passes when every component passes.

Components: ``state`` (final database vs goal state), ``outputs`` (required outputs stated by the agent),
``process`` (the task's rules on the trajectory, merged over the domain's defaults: forbidden/required tools,
no writes, expected termination, precedence, confirmation before writes), ``loops`` (the same tool call
repeated more than the task's threshold, retries after an error exempt only up to the task's allowance),
``budget`` (steps, tool calls, tokens, cost ceilings) and, for tasks with judge assertions, ``judge`` (an LLM
judge's yes/no verdicts; counted only when calibrated, see :mod:`simulator.grading.judge`).
Tasks with declarative assertions (task files version 2) also get ``assertions`` (see
:mod:`simulator.grading.assertions`), and a task's ``grade`` names which components decide pass (see
:meth:`simulator.types.tasks.Task.grade_basis`); the others are still computed and recorded.
Tasks imported from tau2-bench (:mod:`simulator.world.tau2_tasks`) also get ``actions`` and ``env_assertions`` (see
:mod:`simulator.grading.tau2`); their basis is tau2's ``reward_basis``, the product of which decides pass
(``judge`` in the basis decides whenever a judge graded it, calibrated or not; without a judge model it is
``not_graded`` and does not block), and their ``conduct`` names the only endings that are graded.
A trial that ended on an error reason (``tool_bug``, ``infra_error``, ...) or was cut off by a cap (``max_turns``,
``max_steps``, ``budget_exceeded``) fails whatever its components say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simulator.grading.assertions import check_assertions
from simulator.grading.budget import check_budget
from simulator.grading.judge import Judge, grade_judge
from simulator.grading.loops import DEFAULT_RETRIES, check_loops
from simulator.grading.outputs import check_outputs
from simulator.grading.process import check_process
from simulator.grading.safety import find_violations
from simulator.grading.state import grade_state
from simulator.grading.tau2 import check_actions, check_env_assertions, communicated_tau2
from simulator.stats.trajectory import call_keys, gold_keys, tool_call_accuracy, trial_trajectory_metrics
from simulator.types.grade import (
    ActionsResult,
    AssertionResult,
    AssertionsResult,
    BudgetResult,
    EnvAssertionsResult,
    Grade,
    JudgeResult,
    LoopsResult,
    OutputsResult,
    ProcessResult,
    StateResult,
    TaskRules,
    Violation,
)
from simulator.types.state import StateDiff
from simulator.types.tasks import Budget, Task
from simulator.types.trajectory import CAP_REASONS, ERROR_REASONS, Trajectory
from simulator.world.tools import Toolbox

if TYPE_CHECKING:
    from simulator.types.prepared import PreparedTask
    from simulator.world.domain import Domain

__all__ = ["GRADER_VERSION", "ActionsResult", "AssertionResult", "AssertionsResult", "BudgetResult",
    "EnvAssertionsResult", "GradingMemo", "Judge", "TaskKeys",
    "JudgeResult", "LoopsResult", "OutputsResult", "ProcessResult", "StateResult", "Violation", "check_actions",
    "check_assertions", "check_budget", "check_env_assertions", "check_loops", "check_outputs", "check_process",
    "effective_rules", "grade_state", "grade_trial"]

GRADER_VERSION = "1"
"""The grader's version, recorded in every run's comparability fingerprint (:mod:`simulator.storage.fingerprint`).
Raise it whenever a grading rule changes which trials pass: runs graded by different versions are not compared."""

DEFAULT_LOOP_THRESHOLD = 2
"""Identical repeats allowed when neither the task nor a domain says otherwise."""




@dataclass(frozen=True)
class TaskKeys:
    """What the call metrics of a task's trials compare with, made once per task (see :class:`GradingMemo`).

    Attributes:
        writes: the toolbox's write tool names.
        gold: the gold actions as ``{"name", "arguments"}``.
        gold_keys: :func:`simulator.stats.trajectory.gold_keys` of ``gold``.
        reference: the reference trajectory as ``{"name", "arguments"}`` (``task.reference``, else the gold
            actions), or None when the task has neither (no trajectory metrics).
        reference_keys: :func:`simulator.stats.trajectory.call_keys` of ``reference`` (empty when None).
    """

    writes: frozenset[str]
    gold: list[dict[str, Any]]
    gold_keys: list[tuple[str, Any]]
    reference: list[dict[str, Any]] | None
    reference_keys: list[tuple[str, Any]]

    @classmethod
    def of(cls, task: Task, toolbox: Toolbox) -> TaskKeys:
        """Make the keys of ``task`` graded with ``toolbox``."""
        writes = frozenset(name for name, spec in toolbox.specs.items() if spec.kind == "write")
        gold = [{"name": a.name, "arguments": a.arguments} for a in task.gold_actions]
        ref = task.reference if task.reference is not None else task.gold_actions
        reference = None if task.reference is None and not ref else [
            {"name": a.name, "arguments": a.arguments} for a in ref]
        return cls(writes, gold, gold_keys(gold), reference, call_keys(reference or []))


class GradingMemo:
    """A run's :class:`TaskKeys` per task, made on a task's first graded trial and shared by its later trials.

    Safe to share between the run's threads: two threads grading a task's first trials at once may both make its
    keys (the same), one of which is kept. A task or toolbox other than the remembered one (another version of the
    task, e.g. an alternative outcome's) gets keys of its own, not remembered.
    """

    def __init__(self) -> None:
        """Start empty; one instance per run."""
        self._by_id: dict[str, tuple[Task, Toolbox, TaskKeys]] = {}

    def keys(self, task: Task, toolbox: Toolbox) -> TaskKeys:
        """Return the :class:`TaskKeys` of ``task`` graded with ``toolbox``."""
        entry = self._by_id.get(task.id)
        if entry is not None and entry[0] is task and entry[1] is toolbox:
            return entry[2]
        keys = TaskKeys.of(task, toolbox)
        if entry is None:
            self._by_id[task.id] = (task, toolbox, keys)
        return keys


def _tool_accuracy(trajectory: Trajectory, keys: TaskKeys) -> dict[str, int]:
    calls = [{"name": c.name, "arguments": c.arguments} for c in trajectory.tool_calls]
    return tool_call_accuracy(calls, keys.gold, keys.writes, gold_keys=keys.gold_keys)


def effective_rules(task: Task, domain: Domain | None = None, budget: Budget | None = None) -> TaskRules:
    """Merge a task's rules with its domain's defaults and the run's budget (the one place this is done).

    Args:
        task: the task (process rules, loop threshold, budget).
        domain: the domain, for its default process rules, volatile arguments and loop threshold; None: no
            defaults (threshold :data:`DEFAULT_LOOP_THRESHOLD`).
        budget: the run's budget for this task (e.g. from ``--budgets``); applied with the task's own, the
            tighter ceiling winning.

    Returns:
        The :class:`TaskRules`.
    """
    rules = task.process if domain is None else task.process.merged_over(domain.default_process_rules())
    threshold = task.loop_threshold
    if threshold is None:
        threshold = domain.default_loop_threshold() if domain is not None else DEFAULT_LOOP_THRESHOLD
    volatile: Mapping[str, list[str]] = domain.volatile_arguments() if domain is not None else {}
    ceilings = task.budget.tightest(budget) if task.budget is not None else budget
    return TaskRules(process=rules, loop_threshold=threshold,
                     volatile_arguments={k: list(v) for k, v in volatile.items()}, budget=ceilings)


def _trajectory_metrics(trajectory: Trajectory, keys: TaskKeys) -> dict[str, Any] | None:
    if keys.reference is None:
        return None
    calls = [{"name": c.name, "arguments": c.arguments, "raw_arguments": c.raw_arguments, "status": c.status,
              "kind": c.kind} for c in trajectory.tool_calls]
    return trial_trajectory_metrics(calls, keys.reference, keys.writes, reference_keys=keys.reference_keys)


def grade_trial(task: Task, trajectory: Trajectory, diff: StateDiff, toolbox: Toolbox, *,
                domain: Domain | None = None, budget: Budget | None = None, judge: Judge | None = None,
                trial_seed: int | None = None, recorded_judge: JudgeResult | None = None,
                prepared: PreparedTask | None = None, assertions: AssertionsResult | None = None,
                owners: Mapping[str, str] | None = None, env_assertions: EnvAssertionsResult | None = None,
                communicate: str = "tausim", memo: GradingMemo | None = None) -> Grade:
    """Grade one trial.

    Args:
        task: the task (required outputs, process rules, loop threshold, budget).
        trajectory: the finished trajectory (agent messages, termination reason).
        diff: goal state versus the trial database's final state.
        toolbox: the domain's tools (kinds, for the process rules).
        domain: the domain, for its default process rules, volatile arguments and loop threshold; None: no
            defaults (threshold :data:`DEFAULT_LOOP_THRESHOLD`). Not read when ``prepared`` is given.
        budget: the run's budget for this task (e.g. from ``--budgets``); applied with the task's own, the
            tighter ceiling winning. Not read when ``prepared`` is given.
        judge: the run's LLM judge, for a task with ``judge`` assertions; None: such a task's judge component is
            recorded as ``not_graded`` (not counted).
        trial_seed: the trial seed (the judge's response-cache key).
        recorded_judge: a judge component recorded earlier (regrading, where no model is called): reused when
            ``judge`` is None and it graded the same assertions as the task has now.
        prepared: the task prepared for the run (:class:`~simulator.types.prepared.PreparedTask`): its rules, merged
            once when the run was prepared, are used as they are (``domain`` and ``budget`` are not read).
        assertions: the task's declarative assertions evaluated on the trial (see :func:`check_assertions`);
            None for a task without any.
        owners: call id -> the user owning the records the call acted on (see
            :func:`simulator.grading.safety.record_owners`), for the ``other_user_records`` violations; None: none.
        env_assertions: the task's environment assertions evaluated on the trial's final state (see
            :func:`check_env_assertions`); None for a task without any.
        communicate: the rule of the ``outputs`` component: ``tausim`` (whole tokens, numbers as numbers) or
            ``tau2`` (tau2-bench's substring rule, the ``communicate`` option); recorded in ``outputs.rule``.
        memo: the run's :class:`GradingMemo` (what the call metrics compare with, made once per task); None: made
            for this trial.

    Returns:
        The :class:`Grade`.
    """
    basis = task.grade_basis()
    keys = memo.keys(task, toolbox) if memo is not None else TaskKeys.of(task, toolbox)
    state = grade_state(diff)
    if communicate == "tau2":
        missing = communicated_tau2(task.required_outputs, trajectory.agent_texts())
        outputs = {"passed": not missing, "missing": missing, "rule": "tau2"}
    else:
        out = check_outputs(task.required_outputs, trajectory.agent_texts())
        outputs = {"passed": out.passed, "missing": list(out.missing)}
        if task.suite is not None or communicate != "tausim":
            outputs["rule"] = "tausim"
    failures = []
    reason = trajectory.termination_reason
    graded = task.conduct.graded_endings if task.conduct is not None else None
    if reason in ERROR_REASONS or reason in CAP_REASONS or (graded is not None and str(reason) not in graded):
        failures.append(str(reason))
    if not state.passed and "state" in basis:
        failures.append("state")
    if not outputs["passed"] and "outputs" in basis:
        failures.append("outputs")
    rules = prepared.rules if prepared is not None else effective_rules(task, domain, budget)
    process = check_process(rules.process, trajectory, toolbox)
    if not process.passed and "process" in basis:
        failures.append("process")
    violations = find_violations(rules.process, trajectory, toolbox, user_id=task.user_id, owners=owners)
    retries = DEFAULT_RETRIES if task.loop_retries is None else task.loop_retries
    loops = check_loops(trajectory, rules.loop_threshold, rules.volatile_arguments, retries)
    if not loops.passed and "loops" in basis:
        failures.append("loops")
    budget_result = check_budget(trajectory, rules.budget)
    if not budget_result.passed and "budget" in basis:
        failures.append("budget")
    if assertions is not None and not assertions.passed and "assertions" in basis:
        failures.append("assertions")
    if (judge is None and recorded_judge is not None and recorded_judge.status != "not_graded"
            and [a.assertion for a in recorded_judge.assertions] == [a.assertion for a in task.judge]):
        judge_result: JudgeResult | None = recorded_judge
    else:
        judge_result = grade_judge(task.judge, trajectory.messages, judge, trial_seed)
    if judge_result is not None and not judge_result.passed and (
            judge_result.gating or ("judge" in basis and judge_result.status != "not_graded")):
        failures.append("judge")
    actions = check_actions(task.gold_actions, trajectory) if task.suite is not None or "actions" in basis else None
    if actions is not None and not actions.passed and "actions" in basis:
        failures.append("actions")
    if env_assertions is not None and not env_assertions.passed and "env_assertions" in basis:
        failures.append("env_assertions")
    return Grade(
        passed=not failures, state=state, outputs=outputs,
        process=process, loops=loops, budget=budget_result, judge=judge_result, assertions=assertions,
        actions=actions, env_assertions=env_assertions,
        basis=list(basis) if task.grade is not None or task.assertions else None,
        tool_accuracy=_tool_accuracy(trajectory, keys), violations=violations,
        trajectory=_trajectory_metrics(trajectory, keys),
        failure=", ".join(failures) or None,
    )
