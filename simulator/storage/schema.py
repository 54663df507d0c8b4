"""The results store's tables (own :class:`~sqlalchemy.MetaData`, separate from every domain schema).

- ``runs``: one row per run: its :class:`~simulator.types.spec.RunSpec` verbatim (JSON, column ``config``), the data
  set's and the task set's content hashes, the planned task ids, git revision and package versions.
- ``trials``: one row per finished trial, unique per ``(run_id, task_id, persona, trial)`` (``persona`` is
  ``""`` in a run without personas): seed, outcome, termination reason, error, timings, token usage and cost.
- ``messages``, ``tool_calls``: the trajectory, one row per message and per dispatched tool call.
- ``grades``: one row per graded trial, every grading component as JSON.
- ``run_leases``: at most one row per run being run now: which process runs its missing trials and until when
  its claim holds (see :class:`~simulator.storage.lease.RunLease`). Added without a migration: an older store gets
  the table on open.

Ids and texts are unbounded (:class:`StoredText`, :class:`StoredJSON`): what SQLite stores, PostgreSQL stores, NUL
included (escaped there, :func:`escape_nul`). How records become rows and back: :mod:`simulator.storage.codec`; the
store itself: :mod:`simulator.storage.store`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    Double,
    ForeignKeyConstraint,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)

__all__ = ["TRIAL_KEY", "StoredJSON", "StoredText", "as_aware", "escape_nul", "grades", "messages", "metadata",
           "run_leases", "runs", "tool_calls", "trials", "unescape_nul", "utc_now"]

metadata = MetaData()

_NUL = "\x00"
_MARK = "\ue000"
"""U+E000 (private use) introduces an escape in text stored on PostgreSQL: ``MARK 0`` is NUL, ``MARK MARK`` is MARK."""
_ESCAPED = re.compile("\ue000([\ue0000])")


def escape_nul(text: str) -> str:
    """Return text PostgreSQL can store (its text and JSON types refuse NUL), reversibly.

    NUL becomes U+E000 followed by ``0`` and U+E000 itself is doubled; text without either is returned as it is.
    :func:`unescape_nul` gives back the text exactly. SQLite stores NUL as it is and needs no escape.

    Args:
        text: any text.

    Returns:
        The escaped text.
    """
    if _NUL not in text and _MARK not in text:
        return text
    return text.replace(_MARK, _MARK + _MARK).replace(_NUL, _MARK + "0")


def unescape_nul(text: str) -> str:
    """Return the text :func:`escape_nul` was given (the inverse; text without U+E000 is returned as it is)."""
    if _MARK not in text:
        return text
    return _ESCAPED.sub(lambda m: _NUL if m.group(1) == "0" else _MARK, text)


def _map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """``value`` (JSON: dicts, lists, strings...) with ``fn`` applied to every string, keys included."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {fn(k) if isinstance(k, str) else k: _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_map_strings(v, fn) for v in value]
    return value


class StoredText(TypeDecorator[str]):
    """Unbounded text; NUL escaped on PostgreSQL (:func:`escape_nul`), so what SQLite accepts PostgreSQL accepts."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        """Escape NUL on PostgreSQL."""
        return escape_nul(value) if value is not None and dialect.name == "postgresql" else value

    def process_result_value(self, value: str | None, dialect: Dialect) -> str | None:
        """Undo :meth:`process_bind_param`."""
        return unescape_nul(value) if value is not None and dialect.name == "postgresql" else value


class StoredJSON(TypeDecorator[Any]):
    """JSON whose strings (keys too) have NUL escaped on PostgreSQL, like :class:`StoredText`."""

    impl = JSON
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        """Escape NUL in every string on PostgreSQL."""
        return _map_strings(value, escape_nul) if value is not None and dialect.name == "postgresql" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        """Undo :meth:`process_bind_param`."""
        return _map_strings(value, unescape_nul) if value is not None and dialect.name == "postgresql" else value

runs = Table(
    "runs", metadata,
    Column("run_id", StoredText, primary_key=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("domain", StoredText, nullable=False),
    Column("agent", StoredText, nullable=False),
    Column("user", StoredText, nullable=False),
    Column("seed", String(40), nullable=False),
    Column("trials", Integer, nullable=False),
    Column("config", StoredJSON, nullable=False),
    Column("task_ids", StoredJSON, nullable=False),
    Column("data_dir", StoredText),
    Column("data_hash", String(64)),
    Column("tasks_hash", String(64)),
    Column("git_revision", String(64)),
    Column("packages", StoredJSON, nullable=False),
    Column("wall_seconds", Double, nullable=False, default=0.0),
    Column("extra", StoredJSON, nullable=False),
)

TRIAL_KEY = ("run_id", "task_id", "persona", "trial")
"""The columns naming a trial in every per-trial table (``persona`` is ``""`` in a run without personas)."""


def _trial_key_columns() -> list[Column[Any]]:
    """Fresh copies of the trial-key columns (a Column belongs to one table)."""
    return [Column("run_id", StoredText, nullable=False), Column("task_id", StoredText, nullable=False),
            Column("persona", StoredText, nullable=False, default=""), Column("trial", Integer, nullable=False)]


def _trial_ref(table: str) -> ForeignKeyConstraint:
    """The foreign key from a per-trial table's key columns to its trial (rows go with their trial)."""
    return ForeignKeyConstraint(list(TRIAL_KEY), [f"trials.{c}" for c in TRIAL_KEY], name=f"fk_{table}_trial",
                                ondelete="CASCADE")


trials = Table(
    "trials", metadata,
    *_trial_key_columns(),
    Column("seed", String(40), nullable=False),  # decimal text: seeds reach 2**64, beyond BIGINT
    Column("passed", Boolean, nullable=False),
    Column("termination_reason", String(64), nullable=False),
    Column("error", StoredText),
    Column("duration_s", Double, nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    Column("turns", Integer, nullable=False),
    Column("steps", Integer, nullable=False),
    Column("agent_seconds", Double, nullable=False),
    Column("user_seconds", Double, nullable=False),
    Column("tool_seconds", Double, nullable=False),
    Column("trajectory_termination_reason", String(64)),
    Column("trajectory_error", StoredText),
    Column("agent_prompt_tokens", BigInteger, nullable=False),
    Column("agent_completion_tokens", BigInteger, nullable=False),
    Column("agent_cost_usd", Double),
    Column("agent_calls", BigInteger, nullable=False),
    Column("user_prompt_tokens", BigInteger, nullable=False),
    Column("user_completion_tokens", BigInteger, nullable=False),
    Column("user_cost_usd", Double),
    Column("user_calls", BigInteger, nullable=False),
    Column("cost_usd", Double),  # agent + user; NULL when either is unknown (never recorded as 0)
    Column("extra", StoredJSON, nullable=False),  # fields without a column of their own (exact round trip)
    PrimaryKeyConstraint(*TRIAL_KEY, name="pk_trials"),
    UniqueConstraint(*TRIAL_KEY, name="uq_trials_run_task_persona_trial"),
    ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_trials_run"),
)

messages = Table(
    "messages", metadata,
    *_trial_key_columns(),
    Column("idx", Integer, nullable=False),
    Column("role", String(16), nullable=False),
    Column("content", StoredText),
    Column("tool_calls", StoredJSON, nullable=False),
    Column("tool_call_id", StoredText),
    Column("name", StoredText),
    Column("extra", StoredJSON, nullable=False),
    PrimaryKeyConstraint(*TRIAL_KEY, "idx", name="pk_messages"),
    _trial_ref("messages"),
)

tool_calls = Table(
    "tool_calls", metadata,
    *_trial_key_columns(),
    Column("idx", Integer, nullable=False),
    Column("step", Integer, nullable=False),
    Column("call_id", StoredText, nullable=False),
    Column("name", StoredText, nullable=False),
    Column("arguments", StoredJSON),
    Column("raw_arguments", StoredText),
    Column("kind", String(16)),
    Column("status", String(32), nullable=False),
    Column("content", StoredText, nullable=False),
    Column("duration_s", Double, nullable=False),
    Column("bug", StoredText),
    Column("extra", StoredJSON, nullable=False),
    PrimaryKeyConstraint(*TRIAL_KEY, "idx", name="pk_tool_calls"),
    _trial_ref("tool_calls"),
)

grades = Table(
    "grades", metadata,
    *_trial_key_columns(),
    Column("passed", Boolean, nullable=False),
    Column("failure", StoredText),
    Column("components", StoredJSON, nullable=False),
    Column("graded_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint(*TRIAL_KEY, name="pk_grades"),
    _trial_ref("grades"),
)

run_leases = Table(
    "run_leases", metadata,
    Column("run_id", StoredText, primary_key=True),
    Column("owner", StoredText, nullable=False),  # host:pid:random, one per RunLease object
    Column("host", StoredText, nullable=False),
    Column("pid", Integer, nullable=False),
    Column("acquired_at", DateTime(timezone=True), nullable=False),
    Column("heartbeat_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
)


def utc_now() -> datetime:
    """Return the current time, timezone-aware UTC (every timestamp column holds one)."""
    return datetime.now(UTC)


def as_aware(value: datetime) -> datetime:
    """Return a timestamp read back from the database as timezone-aware (SQLite drops the zone: it was UTC).

    Args:
        value: the stored timestamp.

    Returns:
        ``value`` itself when it has a zone, else ``value`` in UTC.
    """
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
