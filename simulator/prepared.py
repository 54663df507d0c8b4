"""What a run knows about each task before its trials: :class:`PreparedTask`, built once per task.

A run is prepared once, single-threaded, before its trials (:meth:`simulator.runner.Runner.prepare`): for each
task the gold actions are replayed once (goal state and per-action statuses; a gold tool bug is recorded, not
raised), its process rules, loop threshold and budget are merged with the domain's defaults and the run's
``--budgets`` entry (:func:`simulator.grading.effective_rules`), and what the run's simulated user needs is
computed. Trials only read it (``TrialContext.prepared``): graders, users and the "written for other data" check
neither merge, replay nor cache anything, so no lock is needed.

What a user needs is declared by its factory in an optional ``needs`` attribute, a collection of
:data:`USER_NEEDS` names: ``"scenario"`` (the domain's derived scenario,
:meth:`simulator.domain.Domain.derive_scenario`, for the rule-based user) and ``"secrets"`` (the leak guard's
compiled secrets, for the LLM user). Those are expensive, so they are computed only for a user that declares
them. A factory that does not declare them (e.g. a wrapper around one that does) still works: the user computes
them itself for its trial.
"""

from __future__ import annotations

import traceback
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simulator.domain import Domain, DomainError
from simulator.grading import TaskRules, effective_rules
from simulator.replay import GoldReplay, GoldStatus, replay_gold
from simulator.tasks import Budget, Task, UserScenario

if TYPE_CHECKING:
    from simulator._protocols import TrialContext
    from simulator.database import StateDelta, TemplateDatabase
    from simulator.tools import Toolbox
    from simulator.users._leak import SecretMatcher

__all__ = ["SCENARIO", "SECRETS", "USER_NEEDS", "PreparedTask", "prepare_task", "prepare_tasks", "prepared_for",
           "user_needs"]

SCENARIO = "scenario"
"""A user need: the domain's derived scenario of the task (the rule-based user plays it)."""
SECRETS = "secrets"
"""A user need: the task's leak-guard secrets, compiled (the LLM user must not say them)."""
USER_NEEDS = frozenset({SCENARIO, SECRETS})
"""Every name a user factory may list in its ``needs`` attribute."""


@dataclass(frozen=True)
class PreparedTask:
    """One task of a run with everything derived from it, computed once when the run is prepared.

    Attributes:
        task: the task.
        rules: its effective grading rules: process rules merged over the domain's defaults, loop threshold,
            volatile arguments and budget (the task's own with the run's ``--budgets`` entry, the tighter ceiling
            winning).
        gold: its gold actions replayed once (:class:`~simulator.replay.GoldReplay`): goal state, or the recorded
            tool bug, and one status per action run.
        scenario: the domain's derived scenario (:meth:`~simulator.domain.Domain.derive_scenario`); None when the
            run's user did not need it or it cannot be derived (then ``scenario_error`` says why).
        scenario_error: why the scenario cannot be derived, or None.
        secrets: the leak guard's compiled secrets of the task (:func:`simulator.users._leak.task_secrets` with
            the domain's policy and tool schemas); None when the run's user did not need them.
    """

    task: Task
    rules: TaskRules
    gold: GoldReplay
    scenario: UserScenario | None = None
    scenario_error: str | None = None
    secrets: SecretMatcher | None = None

    @property
    def goal(self) -> StateDelta | bytes | None:
        """The goal state (the rows the gold replay changed), or None when a gold action hit a tool bug."""
        return self.gold.goal

    @property
    def gold_statuses(self) -> tuple[GoldStatus, ...]:
        """One status per gold action run (``ok``, or the status and its error text)."""
        return self.gold.statuses

    @property
    def budget(self) -> Budget | None:
        """The effective budget (the task's own and the run's, the tighter ceiling winning), or None."""
        return self.rules.budget

    def derived_scenario(self) -> UserScenario | None:
        """Return the derived scenario, or None when it was not prepared (the run's user did not need it).

        Raises:
            DomainError: the scenario cannot be derived (the recorded reason).
        """
        if self.scenario_error is not None:
            raise DomainError(self.scenario_error)
        return self.scenario


def user_needs(factory: object) -> frozenset[str]:
    """Return what a user factory declares it needs prepared (its optional ``needs`` attribute).

    Args:
        factory: a user factory; ``needs``, if present, is a collection of :data:`USER_NEEDS` names.

    Returns:
        The names (empty when the factory declares nothing).

    Raises:
        ValueError: ``needs`` is a string or names something unknown (the message names it).
    """
    needs = getattr(factory, "needs", None)
    if needs is None:
        return frozenset()
    if isinstance(needs, str) or not isinstance(needs, Iterable):
        raise ValueError(f"user factory {factory!r}: needs must be a collection of {sorted(USER_NEEDS)}, "
                         f"got {needs!r}")
    out = frozenset(needs)
    unknown = sorted(str(n) for n in out - USER_NEEDS)
    if unknown:
        raise ValueError(f"user factory {factory!r}: unknown need(s) {unknown}; known: {sorted(USER_NEEDS)}")
    return out


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
    return PreparedTask(task=task, rules=effective_rules(task, domain, budget), gold=gold, scenario=scenario,
                        scenario_error=error, secrets=secrets)


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


def prepared_for(ctx: TrialContext) -> PreparedTask | None:
    """Return the trial's prepared task (``ctx.prepared``) when it is of the trial's task, else None.

    Args:
        ctx: the trial context.

    Returns:
        ``ctx.prepared``, or None when there is none or it was prepared for another task (e.g. a wrapper
        replaced ``ctx.task``).
    """
    p = ctx.prepared
    if p is None or not (p.task is ctx.task or p.task == ctx.task):
        return None
    return p
