"""What a run knows about each task before its trials: :class:`PreparedTask`, built once per task.

A run is prepared once, single-threaded, before its trials (:meth:`simulator.execution.runner.Runner.prepare`): for each
task the gold actions are replayed once (goal state and per-action statuses; a gold tool bug is recorded, not
raised), its process rules, loop threshold and budget are merged with the domain's defaults and the run's
``--budgets`` entry (:func:`simulator.grading.effective_rules`), and what the run's simulated user needs is
computed. Trials only read it (``TrialContext.prepared``): graders, users and the "written for other data" check
neither merge, replay nor cache anything, so no lock is needed.

What a user needs is declared by its factory in an optional ``needs`` attribute, a collection of
:data:`USER_NEEDS` names: ``"scenario"`` (the domain's derived scenario,
:meth:`simulator.world.domain.Domain.derive_scenario`, for the rule-based user) and ``"secrets"`` (the leak guard's
compiled secrets, for the LLM user). Those are expensive, so they are computed only for a user that declares
them. A factory that does not declare them (e.g. a wrapper around one that does) still works: the user computes
them itself for its trial.
"""

from __future__ import annotations

import traceback
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from simulator.grading import effective_rules
from simulator.types.prepared import (
    SCENARIO,
    SECRETS,
    USER_NEEDS,
    GoldReplay,
    PreparedTask,
)
from simulator.types.tasks import Budget, Task, UserScenario
from simulator.world.domain import Domain, DomainError
from simulator.world.replay import GoldToolBug, replay_gold

if TYPE_CHECKING:
    from simulator.types.state import StateDelta
    from simulator.world.database import TemplateDatabase
    from simulator.world.tools import Toolbox

__all__ = ["graded_outcome", "prepare_task", "prepare_tasks"]







def _scenario(domain: Domain, template: TemplateDatabase, task: Task) -> tuple[UserScenario | None, str | None]:
    try:
        return domain.derive_scenario(task, template), None
    except DomainError as e:
        return None, str(e)
    except Exception:  # noqa: BLE001 - a domain bug: recorded, each trial of a user needing it fails with it
        return None, f"task {task.id!r}: deriving the scenario failed:\n{traceback.format_exc()}"


def prepare_task(
    domain: Domain, template: TemplateDatabase, task: Task, *, budget: Budget | None = None,
    needs: Collection[str] = (), toolbox: Toolbox | None = None, policy: str | None = None,
    gold: GoldReplay | None = None,
) -> PreparedTask:
    """Prepare one task (see :func:`prepare_tasks`, which shares the toolbox and policy among many).

    Args:
        domain: the run's domain.
        template: the run's template database.
        task: the task.
        budget: the run's budget for the task (its ``--budgets`` entry), if any.
        needs: what the run's user needs (:data:`USER_NEEDS` names).
        toolbox: the domain's tools if already built.
        policy: the domain's policy text if already read.
        gold: the task's gold replay if already made (used when it is of this task's gold actions).

    Returns:
        The :class:`PreparedTask`.

    Raises:
        ValueError: ``needs`` names something unknown.
    """
    unknown = sorted(set(needs) - USER_NEEDS)
    if unknown:
        raise ValueError(f"unknown need(s) {unknown}; known: {sorted(USER_NEEDS)}")
    toolbox = toolbox if toolbox is not None else domain.toolbox()
    if gold is None or not gold.belongs_to(task):
        gold = replay_gold(domain, template, task, toolbox)
    scenario = error = secrets = None
    if SCENARIO in needs:
        scenario, error = _scenario(domain, template, task)
    if SECRETS in needs:
        from simulator.users._leak import SecretMatcher, task_secrets

        secrets = SecretMatcher(task_secrets(task, policy if policy is not None else domain.policy(),
                                             tools=toolbox.schemas()))
    alternatives = {alt.name: prepare_task(domain, template, task.for_outcome(alt.name), budget=budget,
                                           toolbox=toolbox, policy=policy) for alt in task.alternatives}
    return PreparedTask(task=task, rules=effective_rules(task, domain, budget), gold=gold, scenario=scenario,
                        scenario_error=error, secrets=secrets, alternatives=alternatives)


def prepare_tasks(
    domain: Domain, template: TemplateDatabase, tasks: Iterable[Task], *,
    budgets: Mapping[str, Budget] | None = None, needs: Collection[str] = (), toolbox: Toolbox | None = None,
    gold: Mapping[str, GoldReplay] | None = None,
) -> dict[str, PreparedTask]:
    """Prepare the tasks of a run: each task's gold actions replayed once, its rules merged once.

    Call it once, single-threaded, before the trials; trials read the result.

    Args:
        domain: the run's domain.
        template: the run's template database.
        tasks: the tasks (ids unique).
        budgets: the run's budgets (``--budgets``), task id -> budget.
        needs: what the run's user needs (:data:`USER_NEEDS` names; see :func:`user_needs`).
        toolbox: the domain's tools if already built.
        gold: task id -> gold replay already made (e.g. by the "written for other data" check); a task without
            one (or whose replay is of other gold actions) is replayed here.

    Returns:
        Task id -> :class:`PreparedTask`, in task order.

    Raises:
        ValueError: ``needs`` names something unknown.
    """
    toolbox = toolbox if toolbox is not None else domain.toolbox()
    policy = domain.policy() if SECRETS in needs else None
    return {t.id: prepare_task(domain, template, t, budget=(budgets or {}).get(t.id), needs=needs, toolbox=toolbox,
                               policy=policy, gold=(gold or {}).get(t.id))
            for t in tasks}


def graded_outcome(prepared: PreparedTask, user_metadata: Mapping[str, Any], goal: StateDelta | bytes,
                   initial: bytes | None) -> tuple[str | None, PreparedTask, StateDelta | bytes, bytes | None]:
    """Return what a finished trial is graded against: the task's own goal, or the alternative its user chose.

    Args:
        prepared: the trial's prepared task.
        user_metadata: the trial's user metadata (its ``outcome``, when it names one of the task's alternatives,
            says the user changed its mind to that outcome; see :meth:`PreparedTask.outcome_of`).
        goal: the task's own goal state.
        initial: the task's own initial state (for assertions), or None.

    Returns:
        ``(outcome, prepared, goal, initial)``: outcome None and the arguments as given, or the alternative's name,
        its prepared task, goal state and initial state.

    Raises:
        GoldToolBug: the alternative's gold actions hit a tool bug (the message names the outcome).
    """
    outcome = prepared.outcome_of(user_metadata)
    if outcome is None:
        return None, prepared, goal, initial
    alt = prepared.alternatives[outcome]
    try:
        return outcome, alt, alt.gold.goal_state(), alt.gold.initial
    except GoldToolBug as e:
        raise GoldToolBug(f"goal replay of outcome {outcome!r} failed: {e}") from e
