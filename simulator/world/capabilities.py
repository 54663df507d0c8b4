"""What a domain is made of: the few things every domain writes, and the optional capabilities it may add.

:class:`DomainEssentials` is what a domain author must write: a name, the schema and how to load and dump the data,
the tools and the policy (tasks and data are found next to the domain's package by default). Everything else is an
optional capability with a default that does nothing special; a domain overrides only what it uses:

- :class:`SuiteOptions`: domain options and tool modes, tau2-bench task files, a policy per data set;
- :class:`SinksAndEvents`: sinks (outbox, ledger, clock) and named domain events, the domain's "now";
- :class:`DualControl`: the simulated user's own tools and tables, and the sync hook between the two sides;
- :class:`EnvironmentFunctions`: non-tool functions for task setup and ``env`` assertions, merging native data;
- :class:`ScenarioDerivation`: a rule-based user's agenda derived from a task that has only an instruction;
- :class:`GradingHints`: default process rules, volatile arguments, record ownership, the loop threshold;
- :class:`AuthoringHints`: entity ids, free-text arguments and the domain's own write rules for the task lint;
- :class:`ReferenceAgentProvider`: the domain's rule-based reference agent.

:class:`simulator.world.domain.Domain` combines them all (and builds templates, loads and checks tasks); domains
subclass it.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from simulator.errors import DomainError
from simulator.types.protocols import Agent, TrialContext
from simulator.types.tasks import Action, ProcessRules, Task, UserScenario
from simulator.world.database import StateSpec, TemplateDatabase, TrialDatabase
from simulator.world.instructions import derive_instruction_scenario
from simulator.world.sinks import Clock, Sink
from simulator.world.tools import Toolbox, ToolContext

__all__ = ["AuthoringHints", "DomainEssentials", "DualControl", "EnvironmentFunctions", "GradingHints",
           "ReferenceAgentProvider", "ScenarioDerivation", "SinksAndEvents", "SuiteOptions"]


class DomainEssentials(abc.ABC):
    """What every domain writes: its name, state (schema, data loading, native dump), tools and policy.

    The built-in data set is ``data/`` and the built-in task files ``tasks/*.json`` next to the domain's module.
    """

    name: str = ""
    """Registry name (``retail``)."""

    @abc.abstractmethod
    def state_spec(self) -> StateSpec:
        """Return the schema and comparison rules of the domain's state."""

    @abc.abstractmethod
    def toolbox(self) -> Toolbox:
        """Return the domain's tools."""

    @abc.abstractmethod
    def policy(self) -> str:
        """Return the policy document (markdown) given to the agent."""

    @abc.abstractmethod
    def populate(self, session: Session, data_dir: Path, options: Mapping[str, Any]) -> None:
        """Insert the data set found in ``data_dir`` into an empty database.

        Raises:
            DomainError: a file is missing or malformed (the message names file, record and field).
        """

    @abc.abstractmethod
    def dump(self, trial: TrialDatabase) -> dict[str, dict[str, Any]]:
        """Return the database as the domain's native nested JSON (``{table: {key: record}}``)."""

    def package_dir(self) -> Path:
        """Return the domain package's directory (holds data/, tasks/, policy.md)."""
        import sys

        module = sys.modules[type(self).__module__]
        assert module.__file__ is not None
        return Path(module.__file__).parent

    def default_data_dir(self) -> Path:
        """Return the built-in data set's directory."""
        return self.package_dir() / "data"

    def task_splits(self) -> dict[str, Path]:
        """Return the built-in task files by split name (``{"train": path}``); default: tasks/*.json."""
        folder = self.package_dir() / "tasks"
        return {p.stem: p for p in sorted(folder.glob("*.json"))}


class SuiteOptions(DomainEssentials):
    """Optional: domain options (tool modes), tau2-bench task files, a policy and tools per data set and options."""

    option_values: dict[str, tuple[str, ...]] = {}  # noqa: RUF012 - read-only class-level declaration
    """Allowed values of each domain option, e.g. ``{"mode": ("tau-bench", "tausim")}``."""
    tau2_options: dict[str, Any] | None = None
    """The options under which the domain runs tau2-bench task files (e.g. ``{"mode": "tau2"}``: their gold
    actions are checked against that toolbox); None: the domain cannot load tau2 tasks."""

    def default_options(self, data_dir: Path | None) -> dict[str, Any]:
        """Return tool options for a data set (e.g. compatibility mode for peer data)."""
        return {}

    def toolbox_for(self, options: Mapping[str, Any]) -> Toolbox:
        """Return the tools offered under some options (a tool mode may add or hide tools); default: :meth:`toolbox`.

        Args:
            options: the template's options (``{"mode": "tau2"}``).
        """
        return self.toolbox()

    def policy_for(self, data_dir: Path | None, options: Mapping[str, Any]) -> str:
        """Return the policy the agent gets with a data set; default: :meth:`policy`.

        A domain running an imported suite gives that suite's own policy (e.g. the ``policy.md`` next to a
        tau2 ``db.json``).

        Args:
            data_dir: the ``--data`` path (None: the built-in data set).
            options: the template's options.
        """
        return self.policy()

    def task_policy(self, policy: str, task: Task, options: Mapping[str, Any]) -> str:
        """Return the policy one task's agent gets; default: ``policy`` unchanged.

        A suite whose prompt holds per-task material (τ³ banking_knowledge's required documents) fills it in here.

        Args:
            policy: the run's policy (:meth:`policy_for`, or ``--policy``).
            task: the trial's task.
            options: the template's options.
        """
        return policy


class SinksAndEvents(DomainEssentials):
    """Optional: sinks (outbox, ledger, clock) kept in the trial database, named domain events, the domain's "now"."""

    sinks: tuple[Sink, ...] = ()
    """Sinks the domain includes (see :mod:`simulator.world.sinks`), e.g. ``(Outbox(), Ledger(), Clock("2024-06-01"))``:
    their tables are added to the domain's schema and initialized in every template."""
    events: tuple[str, ...] = ()
    """Names of the domain events its tools emit (``ctx.emit``); task assertions may name these, the sinks'
    events and the write tools."""

    def install_sinks(self) -> StateSpec:
        """Add the declared sinks' tables to the domain's schema (idempotent) and return the state spec."""
        spec = self.state_spec()
        for sink in self.sinks:
            sink.define(spec.metadata)
        return spec

    def event_names(self) -> set[str]:
        """Return every event name a trial can record: declared domain events, sinks' events, write tools."""
        names = set(self.events)
        for sink in self.sinks:
            names.update(sink.event_names)
        names.update(n for n, spec in self.toolbox().specs.items() if spec.kind == "write")
        return names

    def has_clock(self) -> bool:
        """Return whether the domain declares a :class:`~simulator.world.sinks.Clock`."""
        return any(isinstance(s, Clock) for s in self.sinks)

    def current_time(self, trial: TrialDatabase) -> datetime | None:
        """Return the domain's "now" in a trial database (what its rules compare dates with); None: no notion.

        The default reads the :class:`~simulator.world.sinks.Clock` sink when the domain declares one (a task's
        ``initial_state.now`` included); a domain whose "now" is a constant of its policy returns that.

        Args:
            trial: a trial database (the task's fixture applied).
        """
        if not self.has_clock():
            return None
        row = trial.raw.execute("SELECT now FROM clock WHERE id = 1").fetchone()
        return datetime.fromisoformat(row[0]) if row else None


class DualControl(DomainEssentials):
    """Optional: a user who acts on its own side of the database (tau2 telecom's phone; :mod:`simulator.world.dual`)."""

    def user_toolbox(self) -> Toolbox | None:
        """Return the simulated user's own tools (dual control), or None (the default: the user only talks).

        They run on the same trial database as the agent's tools, on the tables of :meth:`user_tables`.
        """
        return None

    def user_tables(self) -> frozenset[str]:
        """Return the tables of the user's side of the database (telecom: ``device``, ``surroundings``).

        Default none. The schema holds them with the agent's tables; state diffs and assertions cover both.
        """
        return frozenset()

    def user_records(self, trial: TrialDatabase, dump: Mapping[str, Any]) -> dict[str, Any]:
        """Return the records the user's tools act on, from a dump of the trial (:meth:`dump`).

        Default: the user's tables (:meth:`user_tables`). A domain whose user side can come to act on the agent's
        records (τ³'s mock after a task's ``agent_data``) returns those instead.

        Args:
            trial: the trial's database (for what the domain recorded at setup).
            dump: its :meth:`dump`.
        """
        tables = self.user_tables()
        return {t: v for t, v in dump.items() if t in tables}

    def sync(self, ctx: ToolContext) -> None:
        """Bring the two sides of a trial's database in line after a step (agent or user); default: nothing.

        Called after every tool call and every message of agent or user, and after each setup action, only when
        the database changed since the last sync. Writes through ``ctx.conn``.

        Args:
            ctx: a tool context on the trial's database.
        """
        return None  # noqa: PLR1711 - an optional hook: no sync by default

    def sync_ignores(self) -> frozenset[str]:
        """Return the tables whose writes never change what :meth:`sync` does (telecom: the phone's ``device``).

        After a step that wrote only these tables the sync is skipped. Default none: any write syncs.
        """
        return frozenset()

    def merge_user_data(self, trial: TrialDatabase, data: Mapping[str, Any]) -> None:
        """Merge native user-side data into a trial database (tau2 ``initialization_data.user_data``).

        Dual-control domains only (see :mod:`simulator.world.dual`): ``data`` is ``{user table: value}`` as the user
        side's database holds it (e.g. telecom's ``{"device": {"airplane_mode": true}}``), merged as tau2 does.

        Raises:
            DomainError: the domain has no user-side data, or the data is malformed (names the field).
        """
        raise DomainError(f"domain {self.name!r} cannot merge user data into its database")


class EnvironmentFunctions(DomainEssentials):
    """Optional: functions task setup actions and ``env`` assertions may call; native data merged into a trial."""

    def environment_functions(self, side: str) -> Mapping[str, Callable[..., Any]]:
        """Return the non-tool functions a task's setup actions may call on a side; default none.

        tau2's ``initialization_actions``, e.g. telecom's ``break_apn_settings``.

        Args:
            side: ``"agent"`` or ``"user"``.

        Returns:
            Name -> ``fn(ctx: ToolContext, **arguments) -> Any`` (writes through ``ctx.conn``; raises
            :class:`~simulator.world.tools.ToolError` on bad arguments). Tools of that side need not be listed.
        """
        return {}

    def assertion_functions(self, side: str) -> Mapping[str, Callable[..., Any]]:
        """Return the functions ``env`` assertions may call on a side (tau2's ``env_assertions``); default none.

        Args:
            side: ``"agent"`` or ``"user"``.

        Returns:
            Name -> ``fn(ctx: ToolContext, **arguments) -> value`` (read only).
        """
        return {}

    def merge_data(self, trial: TrialDatabase, data: Mapping[str, Any]) -> None:
        """Deep-merge native data (``{table: {key: record}}``) into a trial database (tau2 ``agent_data``).

        Raises:
            DomainError: the domain cannot merge data, or the merged data is malformed.
        """
        raise DomainError(f"domain {self.name!r} cannot merge initialization data into its database")


class ScenarioDerivation(DomainEssentials):
    """Optional: the rule-based user's agenda derived from a task that carries only an instruction."""

    def derive_scenario(self, task: Task, template: TemplateDatabase) -> UserScenario:
        """Return the task's scenario with a rule-based user's ``identity`` and ``agenda`` filled in.

        Tasks written for the rule-based user carry their agenda; tasks from elsewhere (tau-bench's lists, tau2's
        files) carry only an instruction, and a domain may derive the agenda from the instruction, the gold actions
        and the user's record in ``template``. The derived scenario must give the user only values its instruction
        gives (or plain descriptions of them), never ids it was not told. The default reads the instruction alone
        with general rules (:func:`simulator.world.instructions.derive_instruction_scenario`).

        Args:
            task: the task.
            template: the run's template database (read-only use; unused by the default).

        Returns:
            The scenario; ``task.scenario`` unchanged when it has an agenda.

        Raises:
            DomainError: the task has no agenda and the domain cannot derive one.
        """
        del template
        return derive_instruction_scenario(task)


class GradingHints(DomainEssentials):
    """Optional: what grading needs to know beyond the task: process rules, volatile arguments, record owners, loops."""

    def default_process_rules(self) -> ProcessRules:
        """Return the process rules every task of the domain inherits; default: none.

        A task's own rules are merged over them (see :meth:`simulator.types.tasks.ProcessRules.merged_over`).
        """
        return ProcessRules()

    def volatile_arguments(self) -> dict[str, list[str]]:
        """Return, per tool name, the argument fields that loop detection ignores; default: none.

        E.g. ``{"search_flights": ["request_id"]}`` for timestamps or request ids. A plain name is ignored at any
        depth (nested objects, objects in lists); a dotted path (``"meta.trace_id"``) names one nested field.
        """
        return {}

    def record_owner(self, tool: str, arguments: Mapping[str, Any], db: TrialDatabase) -> str | None:
        """Return the user who owns the records a successful write call acted on; default: unknown (None).

        The ownership hook of safety grading (:mod:`simulator.grading.safety`): a write on records owned by
        another user than the task's ``user_id`` is an ``other_user_records`` violation. Called after the trial,
        on its final database, for each successful write call.

        Args:
            tool: the tool name.
            arguments: the call's arguments.
            db: the trial's database (read it, e.g. ``db.session``; never write).

        Returns:
            The owning user's id, or None when the domain does not know (no violation is then reported).
        """
        return None

    def default_loop_threshold(self) -> int:
        """Return the identical repeats of a tool call allowed before it is a loop; default 2.

        Used for tasks that do not set ``loop_threshold``: with 2, a call made three times is fine, a fourth
        time is a loop.
        """
        return 2


class AuthoringHints(DomainEssentials):
    """Optional: what the authoring checks (``tausim tasks lint``, ``check_domain``) need to know about the domain."""

    entities: Mapping[str, tuple[str, str]] = {}  # noqa: RUF012 - read-only class-level declaration
    """What the authoring checks (:mod:`simulator.authoring`) need to know about ids: tool argument name ->
    ``(table, key column)`` of the entity such an argument names, at any depth of the arguments (e.g.
    ``{"order_id": ("orders", "id"), "payment_id": ("payment_methods", "id")}``). ``tausim tasks lint`` reports
    gold arguments naming no such row; ``check_domain`` samples read tools' arguments from these tables."""
    user_entity: tuple[str, str] | None = None
    """``(table, key column)`` of the entity a task's ``user_id`` names (e.g. ``("users", "id")``); None: not
    checked."""
    prose_arguments: frozenset[str] = frozenset({"summary", "reason", "thought", "expression", "body"})
    """Argument names whose values are free text, never expected verbatim in the scenario or tool results."""

    def forbidden_write(self, ctx: ToolContext, action: Action, now: datetime | None) -> str | None:
        """Return why the domain's own rules forbid a write at time ``now``, or None when they allow it.

        Used by ``tausim tasks lint`` on every gold write, on the state just before the action, to find gold
        actions the policy forbids although the tool accepts them (e.g. cancelling a reservation with a segment
        that has already flown). The default allows everything.

        Args:
            ctx: a tool context on the trial database, state as before the action (read it, never write).
            action: the gold write action.
            now: :meth:`current_time` of the task.

        Returns:
            A one-line reason naming the entity, or None.
        """
        return None


class ReferenceAgentProvider(DomainEssentials):
    """Optional: the domain's rule-based reference agent (``--agent reference``)."""

    def reference_agent(self, ctx: TrialContext, faults: Mapping[str, float]) -> Agent:
        """Return the domain's rule-based reference agent for one trial (``--agent reference``).

        Args:
            ctx: the trial context (the agent must not read the task's gold actions or outputs).
            faults: fault knob name -> rate in [0, 1], drawn by the trial seed (e.g. ``{"skip_confirmation":
                0.1}``); see the domain's agent for the knobs it knows.

        Returns:
            An :class:`~simulator.types.protocols.Agent`.

        Raises:
            DomainError: the domain has no reference agent, or a knob is unknown.
        """
        raise DomainError(f"domain {self.name!r} has no reference agent")
