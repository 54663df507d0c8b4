"""The public kit for domain authors: everything a domain's schema, tools, data, sinks and tasks are built with.

A domain subclasses :class:`Domain`. It must write only what :class:`DomainEssentials` declares (``name``,
``state_spec``, ``populate``, ``dump``, ``toolbox``, ``policy``); the optional capabilities (:class:`SuiteOptions`,
:class:`SinksAndEvents`, :class:`DualControl`, :class:`EnvironmentFunctions`, :class:`ScenarioDerivation`,
:class:`GradingHints`, :class:`AuthoringHints`, :class:`ReferenceAgentProvider`) list the hooks it may override.

A domain (``domains/<name>/``) imports only from here, from :mod:`simulator.agents.kit` (for its reference agent)
and from the facade :mod:`simulator`; the import contract ``domains-use-kits`` in ``pyproject.toml`` checks it.
Guide: docs/guides/add-a-domain.md.
"""

from __future__ import annotations

from simulator.errors import DomainError, SetupActionError, TaskFileError, ToolError
from simulator.types.state import StateDiff
from simulator.types.tasks import Action, InitialState, Intent, Task, UserScenario, load_tasks, parse_tasks
from simulator.world.capabilities import (
    AuthoringHints,
    DomainEssentials,
    DualControl,
    EnvironmentFunctions,
    GradingHints,
    ReferenceAgentProvider,
    ScenarioDerivation,
    SinksAndEvents,
    SuiteOptions,
)
from simulator.world.database import StateSpec, TemplateDatabase, TrialDatabase, json_diff, snapshot
from simulator.world.domain import Domain, available_domains, get_domain
from simulator.world.dual import env_caller, syncer
from simulator.world.events import Event, read_events
from simulator.world.sinks import Clock, Ledger, Outbox, Sink
from simulator.world.tools import CallOutcome, Toolbox, ToolContext, ToolSpec, tool

__all__ = [
    "Action",
    "AuthoringHints",
    "CallOutcome",
    "Clock",
    "Domain",
    "DomainError",
    "DomainEssentials",
    "DualControl",
    "EnvironmentFunctions",
    "Event",
    "GradingHints",
    "InitialState",
    "Intent",
    "Ledger",
    "Outbox",
    "ReferenceAgentProvider",
    "ScenarioDerivation",
    "SetupActionError",
    "Sink",
    "SinksAndEvents",
    "StateDiff",
    "StateSpec",
    "SuiteOptions",
    "Task",
    "TaskFileError",
    "TemplateDatabase",
    "ToolContext",
    "ToolError",
    "ToolSpec",
    "Toolbox",
    "TrialDatabase",
    "UserScenario",
    "available_domains",
    "env_caller",
    "get_domain",
    "json_diff",
    "load_tasks",
    "parse_tasks",
    "read_events",
    "snapshot",
    "syncer",
    "tool",
]
