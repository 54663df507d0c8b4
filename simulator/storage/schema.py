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

How records become rows and back: :mod:`simulator.storage.codec`; the store itself: :mod:`simulator.storage.store`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Double,
    ForeignKeyConstraint,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = ["TRIAL_KEY", "as_aware", "grades", "messages", "metadata", "run_leases", "runs", "tool_calls", "trials",
           "utc_now"]

metadata = MetaData()

runs = Table(
    "runs", metadata,
    Column("run_id", String(255), primary_key=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("domain", String(255), nullable=False),
    Column("agent", Text, nullable=False),
    Column("user", Text, nullable=False),
    Column("seed", String(40), nullable=False),
    Column("trials", Integer, nullable=False),
    Column("config", JSON, nullable=False),
    Column("task_ids", JSON, nullable=False),
    Column("data_dir", Text),
    Column("data_hash", String(64)),
    Column("tasks_hash", String(64)),
    Column("git_revision", String(64)),
    Column("packages", JSON, nullable=False),
    Column("wall_seconds", Double, nullable=False, default=0.0),
    Column("extra", JSON, nullable=False),
)

TRIAL_KEY = ("run_id", "task_id", "persona", "trial")
"""The columns naming a trial in every per-trial table (``persona`` is ``""`` in a run without personas)."""


def _trial_key_columns() -> list[Column[Any]]:
    """Fresh copies of the trial-key columns (a Column belongs to one table)."""
    return [Column("run_id", String(255), nullable=False), Column("task_id", String(255), nullable=False),
            Column("persona", String(64), nullable=False, default=""), Column("trial", Integer, nullable=False)]


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
    Column("error", Text),
    Column("duration_s", Double, nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    Column("turns", Integer, nullable=False),
    Column("steps", Integer, nullable=False),
    Column("agent_seconds", Double, nullable=False),
    Column("user_seconds", Double, nullable=False),
    Column("tool_seconds", Double, nullable=False),
    Column("trajectory_termination_reason", String(64)),
    Column("trajectory_error", Text),
    Column("agent_prompt_tokens", Integer, nullable=False),
    Column("agent_completion_tokens", Integer, nullable=False),
    Column("agent_cost_usd", Double),
    Column("agent_calls", Integer, nullable=False),
    Column("user_prompt_tokens", Integer, nullable=False),
    Column("user_completion_tokens", Integer, nullable=False),
    Column("user_cost_usd", Double),
    Column("user_calls", Integer, nullable=False),
    Column("cost_usd", Double),  # agent + user; NULL when either is unknown (never recorded as 0)
    Column("extra", JSON, nullable=False),  # fields without a column of their own (exact round trip)
    PrimaryKeyConstraint(*TRIAL_KEY, name="pk_trials"),
    UniqueConstraint(*TRIAL_KEY, name="uq_trials_run_task_persona_trial"),
    ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_trials_run"),
)

messages = Table(
    "messages", metadata,
    *_trial_key_columns(),
    Column("idx", Integer, nullable=False),
    Column("role", String(16), nullable=False),
    Column("content", Text),
    Column("tool_calls", JSON, nullable=False),
    Column("tool_call_id", String(255)),
    Column("name", String(255)),
    Column("extra", JSON, nullable=False),
    PrimaryKeyConstraint(*TRIAL_KEY, "idx", name="pk_messages"),
    _trial_ref("messages"),
)

tool_calls = Table(
    "tool_calls", metadata,
    *_trial_key_columns(),
    Column("idx", Integer, nullable=False),
    Column("step", Integer, nullable=False),
    Column("call_id", String(255), nullable=False),
    Column("name", String(255), nullable=False),
    Column("arguments", JSON),
    Column("raw_arguments", Text),
    Column("kind", String(16)),
    Column("status", String(32), nullable=False),
    Column("content", Text, nullable=False),
    Column("duration_s", Double, nullable=False),
    Column("bug", Text),
    Column("extra", JSON, nullable=False),
    PrimaryKeyConstraint(*TRIAL_KEY, "idx", name="pk_tool_calls"),
    _trial_ref("tool_calls"),
)

grades = Table(
    "grades", metadata,
    *_trial_key_columns(),
    Column("passed", Boolean, nullable=False),
    Column("failure", Text),
    Column("components", JSON, nullable=False),
    Column("graded_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint(*TRIAL_KEY, name="pk_grades"),
    _trial_ref("grades"),
)

run_leases = Table(
    "run_leases", metadata,
    Column("run_id", String(255), primary_key=True),
    Column("owner", String(255), nullable=False),  # host:pid:random, one per RunLease object
    Column("host", String(255), nullable=False),
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
