"""What a run knows about each task before its trials (the prepared task and its gold replay), as records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from simulator.errors import DomainError, GoldToolBug
from simulator.types.grade import TaskRules
from simulator.types.state import SetupImage, StateDelta
from simulator.types.tasks import Action, Budget, Task, UserScenario


class SecretFinder(Protocol):
    """A task's compiled leak-guard secrets (what :class:`simulator.users._leak.SecretMatcher` offers)."""

    def find(self, text: str, heard: Iterable[str] = ()) -> list[Any]:
        """Return the secrets found in ``text`` that are not also found in ``heard``."""
        ...

    def redact(self, text: str, secrets: Iterable[Any] | None = None, placeholder: str = ...) -> str:
        """Return ``text`` with the given secrets (default: all) replaced by ``placeholder``."""
        ...


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
        gold: its gold actions replayed once (:class:`~simulator.types.prepared.GoldReplay`): goal state, or the
        recorded
            tool bug, and one status per action run.
        scenario: the domain's derived scenario (:meth:`~simulator.world.domain.Domain.derive_scenario`); None when the
            run's user did not need it or it cannot be derived (then ``scenario_error`` says why).
        scenario_error: why the scenario cannot be derived, or None.
        secrets: the leak guard's compiled secrets of the task (:func:`simulator.users._leak.task_secrets` with
            the domain's policy and tool schemas); None when the run's user did not need them.
        alternatives: outcome name -> the task as graded for that alternative outcome, prepared the same way.
    """

    task: Task
    rules: TaskRules
    gold: GoldReplay
    scenario: UserScenario | None = None
    scenario_error: str | None = None
    secrets: SecretFinder | None = None
    alternatives: Mapping[str, PreparedTask] = field(default_factory=dict)

    def outcome_of(self, user_metadata: Mapping[str, Any]) -> str | None:
        """Return the alternative outcome a trial's user ended up wanting, or None for the task's own goal.

        Args:
            user_metadata: the trial's user metadata; its ``outcome`` names the alternative (a value that is not
                the name of one of this task's alternatives counts as none: a user's metadata is data).
        """
        name = user_metadata.get("outcome")
        return name if isinstance(name, str) and name in self.alternatives else None

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




@dataclass(frozen=True)
class GoldStatus:
    """How one gold action went when the task's gold actions were replayed on a fresh copy of the data.

    Attributes:
        name: the tool called.
        status: the call's status: ``ok``, ``tool_error``, ``invalid_arguments``, ``unknown_tool`` or
            ``tool_bug`` (see :class:`~simulator.world.tools.CallOutcome`).
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
        goal: the goal state: the rows the gold replay wrote (:class:`~simulator.types.state.StateDelta`, memory
            following the changed rows; a serialized goal database, ``sqlite3.Connection.serialize()`` bytes, is
            accepted too), or None when a gold action hit a tool bug.
        bug: the :class:`GoldToolBug` message when a gold action hit a tool bug (or the task's fixture could not
            be applied), else None.
        initial: the task's initial state (the template with its ``initial_state`` fixture applied, serialized)
            when the task has declarative assertions (they compare final with initial), else None.
        setup: what applying the task's ``initial_state`` wrote on the copy the gold was replayed on
            (:class:`~simulator.types.state.SetupImage`), which a trial's copy gets written instead of running
            the set-up again; None when the task has no initial state or it could not be applied.
    """

    task_id: str
    actions: tuple[Action, ...]
    statuses: tuple[GoldStatus, ...]
    goal: StateDelta | bytes | None
    bug: str | None = None
    initial: bytes | None = None
    setup: SetupImage | None = None

    def goal_state(self) -> StateDelta | bytes:
        """Return the goal state (compare with :func:`simulator.world.database.diff_against`).

        Raises:
            GoldToolBug: a gold action hit a bug in a tool (the recorded error, raised anew).
        """
        if self.goal is None:
            raise GoldToolBug(self.bug or f"task {self.task_id!r}: no goal state")
        return self.goal

    def belongs_to(self, task: Task) -> bool:
        """Return whether this replay is of ``task`` as it is (same id and gold actions)."""
        return self.task_id == task.id and list(self.actions) == list(task.gold_actions)
