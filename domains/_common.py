"""Pieces shared by the built-in domains (retail, airline): storage, loading checks, dump helpers, common tools.

Both domains keep tau-bench style data sets (``{file: {key: record}}`` JSON files) in a relational schema and
dump it back unchanged, so they share the same means:

- storage: :class:`JsonNumber` columns keep each JSON number's own type (``56`` stays an int, ``100.0`` a
  float); :func:`json_column` stores free-form JSON; a ``layout`` column (:data:`Layout`) records a key order
  that differs from the canonical one;
- loading: :class:`RecordChecker` validates one record and names file, record key and field in every
  :class:`~simulator.world.domain.DomainError`; :func:`read_records` reads one data file;
- dumping: :func:`shape` re-applies a stored key order, :func:`group_rows` groups child rows by parent,
  :func:`select_rows` runs a dump query for all records or one;
- tools: :func:`calculate`, :func:`think` and :func:`transfer_to_human_agents`, which behave the same in every
  domain (tau-bench semantics), plus :class:`TableAccess` (reads by key and every write, through the DB-API connection),
  :func:`raw_connection` and :func:`with_new_keys` for tool modules;
- the domain class itself: :class:`JsonFolderDomain`, a :class:`~simulator.world.domain.Domain` whose native data is
  a folder of such JSON files, with a ``policy.md`` beside it.

This module is the one import point; each concern lives in its own module under :mod:`domains._kit`
(``storage``, ``loading``, ``dumping``, ``access``, ``shared_tools``, ``folder_domain``).
"""

from __future__ import annotations

from domains._kit.access import Row, TableAccess, raw_connection, with_new_keys
from domains._kit.dumping import Rows, dump_tables, gc_paused, group_rows, select_rows, shape
from domains._kit.folder_domain import JsonFolderDomain, deep_merge
from domains._kit.loading import (
    TAU2_DB_FILE,
    RecordChecker,
    insert_rows,
    is_tau2_data,
    key_layout,
    kind,
    read_records,
    read_tables,
    strip_user_id,
)
from domains._kit.shared_tools import calculate, think, transfer_to_human_agents
from domains._kit.storage import JsonNumber, Layout, json_column

__all__ = [
    "TAU2_DB_FILE",
    "JsonFolderDomain",
    "JsonNumber",
    "Layout",
    "RecordChecker",
    "Row",
    "Rows",
    "TableAccess",
    "calculate",
    "deep_merge",
    "dump_tables",
    "gc_paused",
    "group_rows",
    "insert_rows",
    "is_tau2_data",
    "json_column",
    "key_layout",
    "kind",
    "raw_connection",
    "read_records",
    "read_tables",
    "strip_user_id",
    "select_rows",
    "shape",
    "think",
    "transfer_to_human_agents",
    "with_new_keys",
]
