"""The public kit for domain authors: everything a domain's schema, tools, data, sinks and tasks are built with.

A domain subclasses :class:`Domain`. It must write only what :class:`DomainEssentials` declares (``name``,
``state_spec``, ``populate``, ``dump``, ``toolbox``, ``policy``); the optional capabilities (:class:`SuiteOptions`,
:class:`SinksAndEvents`, :class:`DualControl`, :class:`EnvironmentFunctions`, :class:`ScenarioDerivation`,
:class:`GradingHints`, :class:`AuthoringHints`, :class:`ReferenceAgentProvider`) list the hooks it may override.

Besides the base, the kit offers ready helpers for tau-bench style data sets (``{key: record}`` JSON files kept
in relational tables and dumped back unchanged):

- storage and loading (:mod:`simulator.world.data`): :class:`JsonNumber`, :func:`json_column`, :data:`Layout`,
  :func:`one_of` (the values a column may hold, checked by ``tausim domain check``; :func:`allowed_values` reads them);
  :func:`read_tables`, :func:`read_records`, :class:`RecordChecker`, :func:`key_layout`, :func:`insert_rows`,
  :func:`is_tau2_data`; dumping with :func:`shape`, :func:`select_rows`, :func:`group_rows`, :func:`dump_tables`;
  tools' table access with :class:`TableAccess`, :func:`raw_connection`, :func:`with_new_keys`, and :class:`Reads`
  (``ctx.reads``: read statements remembered while the trial copy is unchanged); :func:`json_text` (``json.dumps``'
  text from an encoder built once, for tools' answers);
- document tables (one JSON document per row, tau2-style worlds): :class:`Docs`, :func:`doc_table`,
  :func:`insert_docs`, :func:`merge_docs`, :class:`DocShape`; :func:`deep_merge` (tau2's merge of JSON values);
- :class:`JsonFolderDomain`, the base of a domain whose data is a folder of such files, with a ``policy.md``;
- the tools every tau-bench domain shares: :func:`calculate`, :func:`think`, :func:`transfer_to_human_agents`;
- seeded data generators (:mod:`simulator.world.generate`): :func:`new_rng`, :class:`IdPool`, :func:`pick`,
  :func:`money`, :func:`write_data_set`, :func:`cli_parser`.

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
from simulator.world.data.access import Row, TableAccess, raw_connection, with_new_keys
from simulator.world.data.documents import SINGLE, Docs, DocShape, doc_table, dumps, insert_docs, merge_docs
from simulator.world.data.dumping import Rows, dump_tables, gc_paused, group_rows, select_rows, shape
from simulator.world.data.loading import (
    TAU2_DB_FILE,
    RecordChecker,
    decode_data_file,
    insert_rows,
    is_tau2_data,
    key_layout,
    kind,
    read_records,
    read_tables,
)
from simulator.world.data.merge import deep_merge
from simulator.world.data.storage import JsonNumber, Layout, allowed_values, json_column, one_of
from simulator.world.database import StateSpec, TemplateDatabase, TrialDatabase, json_diff, snapshot
from simulator.world.domain import Domain, available_domains, get_domain
from simulator.world.dual import env_caller, syncer
from simulator.world.events import Event, read_events
from simulator.world.folder_domain import JsonFolderDomain
from simulator.world.generate import (
    UPPER_DIGITS,
    IdPool,
    cli_parser,
    money,
    new_rng,
    pick,
    write_data_set,
    write_json_files,
)
from simulator.world.instructions import derive_instruction_scenario, identity_facts, instruction_sections
from simulator.world.jsontext import json_text
from simulator.world.memo import Reads
from simulator.world.shared_tools import calculate, think, transfer_to_human_agents
from simulator.world.sinks import Clock, Ledger, Outbox, Sink
from simulator.world.tau2_tasks import parse_tau2_tasks
from simulator.world.tools import CallOutcome, Toolbox, ToolContext, ToolSpec, tool

__all__ = [
    "Action",
    "AuthoringHints",
    "CallOutcome",
    "Clock",
    "DocShape",
    "Docs",
    "Domain",
    "DomainError",
    "DomainEssentials",
    "DualControl",
    "EnvironmentFunctions",
    "Event",
    "GradingHints",
    "IdPool",
    "InitialState",
    "Intent",
    "JsonFolderDomain",
    "JsonNumber",
    "Layout",
    "Ledger",
    "Outbox",
    "Reads",
    "RecordChecker",
    "ReferenceAgentProvider",
    "Row",
    "Rows",
    "SINGLE",
    "ScenarioDerivation",
    "SetupActionError",
    "Sink",
    "SinksAndEvents",
    "StateDiff",
    "StateSpec",
    "SuiteOptions",
    "TAU2_DB_FILE",
    "TableAccess",
    "Task",
    "TaskFileError",
    "TemplateDatabase",
    "ToolContext",
    "ToolError",
    "ToolSpec",
    "Toolbox",
    "TrialDatabase",
    "UPPER_DIGITS",
    "UserScenario",
    "allowed_values",
    "available_domains",
    "calculate",
    "cli_parser",
    "decode_data_file",
    "deep_merge",
    "derive_instruction_scenario",
    "doc_table",
    "dump_tables",
    "dumps",
    "env_caller",
    "gc_paused",
    "get_domain",
    "group_rows",
    "identity_facts",
    "insert_docs",
    "insert_rows",
    "instruction_sections",
    "is_tau2_data",
    "json_column",
    "json_diff",
    "json_text",
    "key_layout",
    "kind",
    "load_tasks",
    "merge_docs",
    "money",
    "new_rng",
    "one_of",
    "parse_tasks",
    "parse_tau2_tasks",
    "pick",
    "raw_connection",
    "read_events",
    "read_records",
    "read_tables",
    "select_rows",
    "shape",
    "snapshot",
    "syncer",
    "think",
    "tool",
    "transfer_to_human_agents",
    "with_new_keys",
    "write_data_set",
    "write_json_files",
]
