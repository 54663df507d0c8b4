"""The public kit for domain authors: everything a domain's schema, tools, data, sinks and tasks are built with.

A domain (``domains/<name>/``) imports only from here, from :mod:`simulator.agents.kit` (for its reference agent)
and from the facade :mod:`simulator`; the import contract ``domains-use-kits`` in ``pyproject.toml`` checks it.
Guide: docs/guides/add-a-domain.md.
"""

from __future__ import annotations

from simulator.errors import DomainError, SetupActionError, TaskFileError, ToolError
from simulator.types.state import StateDiff
from simulator.types.tasks import Action, InitialState, Intent, Task, UserScenario, load_tasks, parse_tasks
from simulator.world.database import StateSpec, TemplateDatabase, TrialDatabase, json_diff, snapshot
from simulator.world.domain import Domain, available_domains, get_domain
from simulator.world.dual import env_caller, syncer
from simulator.world.events import Event, read_events
from simulator.world.sinks import Clock, Ledger, Outbox, Sink
from simulator.world.tools import CallOutcome, Toolbox, ToolContext, ToolSpec, tool

__all__ = [
    "Action",
    "CallOutcome",
    "Clock",
    "Domain",
    "DomainError",
    "Event",
    "InitialState",
    "Intent",
    "Ledger",
    "Outbox",
    "SetupActionError",
    "Sink",
    "StateDiff",
    "StateSpec",
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
