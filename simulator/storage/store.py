"""Results store: runs and their trials in a SQL database (SQLAlchemy; SQLite file by default).

Tables (own :class:`~sqlalchemy.MetaData`, separate from every domain schema):

- ``runs``: one row per run: its :class:`~simulator.types.spec.RunSpec` verbatim (JSON, column ``config``), the data
  set's and the task set's content hashes, the planned task ids, git revision and package versions.
- ``trials``: one row per finished trial, unique per ``(run_id, task_id, persona, trial)`` (``persona`` is
  ``""`` in a run without personas): seed, outcome, termination reason, error, timings, token usage and cost.
- ``messages``, ``tool_calls``: the trajectory, one row per message and per dispatched tool call.
- ``grades``: one row per graded trial, every grading component as JSON.
- ``run_leases``: at most one row per run being run now: which process runs its missing trials and until when
  its claim holds (see :class:`RunLease`). Added without a migration: an older store gets the table on open.

A trial and all its rows are written in one transaction when it finishes (:meth:`ResultsStore.record`); a
second record of the same ``(run_id, task_id, persona, trial)`` is refused by the unique constraint and ignored, so a
killed and resumed run never holds a trial twice. On SQLite the store turns on WAL and a busy timeout so that
a reader (a report, a progress poll) and the writing run do not block each other.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Double,
    Engine,
    ForeignKeyConstraint,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    delete,
    event,
    func,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, SQLAlchemyError

from simulator.errors import ConfigMismatchError, LeaseHeldError, RunDocumentError, StoreError
from simulator.stats.estimators import reliability
from simulator.storage.documents import check_run_document, run_summary_json
from simulator.types.grade import Grade
from simulator.types.messages import Message
from simulator.types.results import RunResult, TrialKey, TrialResult, trial_key
from simulator.types.spec import RESUME_EXEMPT, RunSpec, format_validation_error, spec_differences
from simulator.types.tasks import Task
from simulator.types.trajectory import ToolCallRecord, Trajectory

__all__ = ["ConfigMismatchError", "DEFAULT_LEASE_TTL_S", "DEFAULT_STORE_URL", "LeaseHeldError", "RESUME_FIELDS",
    "ResultsStore", "RunInfo", "RunLease", "StoreError", "data_hash", "load_run_from_store", "new_run_id",
    "tasks_hash"]

DEFAULT_STORE_URL = "sqlite:///runs.db"
"""The store used when none is given: ``runs.db`` in the working directory."""

RESUME_FIELDS = tuple(name for name in RunSpec.model_fields if name not in RESUME_EXEMPT)
"""Spec fields that must be equal for a run to be resumed (besides the data and task-set hashes); see
:data:`simulator.types.spec.RESUME_EXEMPT` for the others."""

_SQLITE_BUSY_TIMEOUT_MS = 60_000

DEFAULT_LEASE_TTL_S = 60.0
"""Seconds a run lease holds without a heartbeat (a process on another host that died blocks resume this long)."""

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

_TRIAL_KEY = ("run_id", "task_id", "persona", "trial")
"""The columns naming a trial in every per-trial table (``persona`` is ``""`` in a run without personas)."""


def _trial_key_columns() -> list[Column[Any]]:
    """Fresh copies of the trial-key columns (a Column belongs to one table)."""
    return [Column("run_id", String(255), nullable=False), Column("task_id", String(255), nullable=False),
            Column("persona", String(64), nullable=False, default=""), Column("trial", Integer, nullable=False)]


def _trial_ref(table: str) -> ForeignKeyConstraint:
    """The foreign key from a per-trial table's key columns to its trial (rows go with their trial)."""
    return ForeignKeyConstraint(list(_TRIAL_KEY), [f"trials.{c}" for c in _TRIAL_KEY], name=f"fk_{table}_trial",
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
    PrimaryKeyConstraint(*_TRIAL_KEY, name="pk_trials"),
    UniqueConstraint(*_TRIAL_KEY, name="uq_trials_run_task_persona_trial"),
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
    PrimaryKeyConstraint(*_TRIAL_KEY, "idx", name="pk_messages"),
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
    PrimaryKeyConstraint(*_TRIAL_KEY, "idx", name="pk_tool_calls"),
    _trial_ref("tool_calls"),
)

grades = Table(
    "grades", metadata,
    *_trial_key_columns(),
    Column("passed", Boolean, nullable=False),
    Column("failure", Text),
    Column("components", JSON, nullable=False),
    Column("graded_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint(*_TRIAL_KEY, name="pk_grades"),
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

_TRIAL_KEYS = ("task_id", "persona", "trial", "seed", "passed", "termination_reason", "grade", "trajectory",
               "duration_s", "error")
_TRAJ_KEYS = ("messages", "tool_calls", "agent_usage", "user_usage", "turns", "steps", "agent_seconds",
              "user_seconds", "tool_seconds", "termination_reason", "error")
_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")
_CALL_KEYS = ("step", "call_id", "name", "arguments", "raw_arguments", "kind", "status", "content", "duration_s",
              "bug")
_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "cost_usd", "calls")


class RunInfo(BaseModel):
    """A stored run's header: what was planned and with what."""

    run_id: str
    created_at: datetime
    config: RunSpec
    """The run's spec, as stored."""
    task_ids: list[str]
    """Planned task ids, in run order."""
    data_dir: str | None = None
    """The data directory actually used (resolved)."""
    data_hash: str | None = None
    tasks_hash: str | None = None
    git_revision: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    wall_seconds: float = 0.0
    """Wall time of every session of the run together."""
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def planned(self) -> int:
        """Planned trials: tasks x personas x trials per task."""
        return len(self.planned_pairs())

    def planned_pairs(self) -> list[TrialKey]:
        """Return every planned (task id, persona or None, trial index) key in run order."""
        personas: list[str | None] = list(self.config.personas or []) or [None]
        return [(t, p, i) for t in self.task_ids for p in personas for i in range(self.config.trials)]


def new_run_id() -> str:
    """Return a fresh run id (a uuid4 in hex)."""
    return uuid.uuid4().hex


def data_hash(data_dir: str | Path) -> str:
    """Return a content hash of a data directory: sha256 over every file's relative path and bytes.

    Args:
        data_dir: the directory (read recursively; hidden files and ``__pycache__`` skipped).

    Returns:
        The hex digest; equal for equal contents wherever the directory lives.

    Raises:
        FileNotFoundError: ``data_dir`` is not a directory.
    """
    root = Path(data_dir)
    h = hashlib.sha256()
    if root.is_file():  # a data file (a tau2 db.json given as --data)
        h.update(root.name.encode() + b"\0")
        h.update(hashlib.sha256(root.read_bytes()).digest())
        return h.hexdigest()
    if not root.is_dir():
        raise FileNotFoundError(f"data directory {root} not found")
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        h.update(rel.as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def tasks_hash(tasks: Sequence[Task]) -> str:
    """Return a content hash of a task set (ids, scenarios, gold actions, outputs, rules), order included.

    Args:
        tasks: the planned tasks, in run order.

    Returns:
        The hex sha256 of the tasks' canonical JSON.
    """
    doc = [t.model_dump(mode="json") for t in tasks]
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def _split(doc: Mapping[str, Any], keys: Iterable[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a dumped model into the fields that have columns and the rest (kept as JSON)."""
    known = set(keys)
    return ({k: doc.get(k) for k in known}, {k: v for k, v in doc.items() if k not in known})


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _pid_gone(pid: int) -> bool:
    """Return whether no live process of this host has ``pid`` (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by another user
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (not Linux) or the process just ended: trust the signal check
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


class RunLease:
    """One process's exclusive claim on running a run's missing trials, held in the ``run_leases`` table.

    :meth:`acquire` takes the lease atomically (a conditional UPDATE, else an INSERT that the primary key lets
    only one process win; both databases lock the row or the table for the statement), then a daemon thread
    renews it every ``heartbeat_s`` seconds; :meth:`release` stops the thread and deletes the row. A lease
    whose holder stopped renewing it (``expires_at`` passed), or whose holder was a process of this host that
    no longer exists (killed with ``kill -9``), is taken over, so a killed run can always be resumed: at once on
    the same host, after at most ``ttl_s`` seconds from another host. Expiry compares the hosts' clocks (UTC);
    keep them within a fraction of ``ttl_s``. Use it as a context manager.

    Args:
        store: the results store.
        run_id: the run to claim.
        ttl_s: seconds the lease holds after each renewal.
        heartbeat_s: seconds between renewals; default ``ttl_s / 3``.

    Raises:
        ValueError: ``ttl_s`` or ``heartbeat_s`` not positive, or ``heartbeat_s >= ttl_s``.
    """

    def __init__(self, store: ResultsStore, run_id: str, *, ttl_s: float = DEFAULT_LEASE_TTL_S,
                 heartbeat_s: float | None = None):
        beat = ttl_s / 3 if heartbeat_s is None else heartbeat_s
        if not (ttl_s > 0 and 0 < beat < ttl_s):
            raise ValueError(f"lease ttl_s={ttl_s!r}, heartbeat_s={heartbeat_s!r}: need 0 < heartbeat_s < ttl_s")
        self.store, self.run_id, self.ttl_s, self.heartbeat_s = store, run_id, ttl_s, beat
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.owner = f"{self.host}:{self.pid}:{uuid.uuid4().hex[:12]}"
        """This lease's holder id: ``host:pid:random``."""
        self.lost: str | None = None
        """Why the lease was lost while held (another process took it over after it lapsed), or None."""
        self.renew_error: str | None = None
        """The last failed renewal's error (the database was unreachable; the next beat tries again), or None."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lease now (acquired, not released, not lost)."""
        return self._thread is not None and self.lost is None

    def acquire(self) -> RunLease:
        """Take the lease and start renewing it.

        Returns:
            This lease.

        Raises:
            LeaseHeldError: another live process holds it (the message names the run, the holder and since when).
            StoreError: this object already holds it.
        """
        if self._thread is not None:
            raise StoreError(f"lease of run {self.run_id!r} already acquired by {self.owner}")
        run_leases.create(self.store.engine, checkfirst=True)  # a store created before leases existed
        for _ in range(5):  # each round ends in a win, a refusal, or a lost race that the next round reads again
            now = _now()
            values = {"owner": self.owner, "host": self.host, "pid": self.pid, "acquired_at": now,
                      "heartbeat_at": now, "expires_at": now + timedelta(seconds=self.ttl_s)}
            with self.store.engine.begin() as conn:  # ours already, or lapsed: take it over
                taken = conn.execute(update(run_leases).where(
                    run_leases.c.run_id == self.run_id,
                    (run_leases.c.owner == self.owner) | (run_leases.c.expires_at < now)).values(**values)).rowcount
            if taken == 1:
                break
            with self.store.engine.connect() as conn:
                row = conn.execute(select(run_leases).where(run_leases.c.run_id == self.run_id)).mappings().first()
            if row is None:
                try:
                    with self.store.engine.begin() as conn:
                        conn.execute(insert(run_leases).values(run_id=self.run_id, **values))
                    break
                except IntegrityError:
                    continue  # another process inserted first: read its row
            if row["host"] == self.host and row["pid"] != self.pid and _pid_gone(int(row["pid"])):
                with self.store.engine.begin() as conn:  # its holder on this host is gone: take it over
                    taken = conn.execute(update(run_leases).values(**values).where(
                        run_leases.c.run_id == self.run_id, run_leases.c.owner == row["owner"])).rowcount
                if taken == 1:
                    break
                continue
            raise LeaseHeldError(self.run_id, row["owner"], _aware(row["acquired_at"]), _aware(row["expires_at"]))
        else:
            raise StoreError(f"lease of run {self.run_id!r}: changed hands five times while taking it; try again")
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, name=f"tausim-lease-{self.run_id}", daemon=True)
        self._thread.start()
        return self

    def _beat(self) -> None:
        """Renew the lease every ``heartbeat_s`` seconds until released or lost."""
        while not self._stop.wait(self.heartbeat_s):
            now = _now()
            try:
                with self.store.engine.begin() as conn:
                    n = conn.execute(update(run_leases).where(
                        run_leases.c.run_id == self.run_id, run_leases.c.owner == self.owner).values(
                        heartbeat_at=now, expires_at=now + timedelta(seconds=self.ttl_s))).rowcount
            except SQLAlchemyError as e:
                self.renew_error = f"{type(e).__name__}: {e}"
                continue
            self.renew_error = None
            if n != 1:
                self.lost = f"lease of run {self.run_id!r} was taken over by another process after it lapsed"
                return

    def release(self) -> None:
        """Stop renewing and give the lease up (deletes the row only while this object holds it)."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        with self.store.engine.begin() as conn:
            conn.execute(delete(run_leases).where(run_leases.c.run_id == self.run_id,
                                                  run_leases.c.owner == self.owner))

    def __enter__(self) -> RunLease:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class ResultsStore:
    """Runs and trials in a SQL database; any SQLAlchemy URL (``sqlite:///runs.db`` by default).

    Args:
        url: SQLAlchemy database URL, e.g. ``sqlite:///runs.db`` or ``postgresql+psycopg://u@host/db``.
        create: create missing tables.

    Raises:
        sqlalchemy.exc.ArgumentError: the URL is malformed.
    """

    def __init__(self, url: str = DEFAULT_STORE_URL, create: bool = True):
        self.engine: Engine = create_engine(url)
        self.url = self.engine.url.render_as_string(hide_password=True)
        """The URL with any password masked (safe to print)."""
        if self.engine.dialect.name == "sqlite":
            self._setup_sqlite(self.engine)
        if create:
            self._create_tables()

    def _create_tables(self, attempts: int = 5) -> None:
        """Create missing tables; another process creating them at the same moment is tolerated.

        Raises:
            StoreError: the database holds a ``trials`` table of an older layout (no ``persona`` column).
        """
        for attempt in range(attempts):
            try:
                metadata.create_all(self.engine)
                columns = {c["name"] for c in inspect(self.engine).get_columns("trials")}
                if "persona" not in columns:
                    raise StoreError(f"{self.url}: results store of an older tausim (its trials table has no "
                                     "persona column); use a new store file or database")
                return
            except DBAPIError:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))  # the other creator has committed by now: check again

    @staticmethod
    def _setup_sqlite(engine: Engine) -> None:
        """WAL, busy timeout, foreign keys; SQLAlchemy's recipe for real transactions with pysqlite."""

        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout = {_SQLITE_BUSY_TIMEOUT_MS}")
            if engine.url.database not in (None, "", ":memory:"):
                cur.execute("PRAGMA journal_mode = WAL")
                cur.execute("PRAGMA synchronous = NORMAL")
            cur.execute("PRAGMA foreign_keys = ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN")

    def close(self) -> None:
        """Release the database connections."""
        self.engine.dispose()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- runs ----------------------------------------------------------------------------------------------
    def lease(self, run_id: str, *, ttl_s: float = DEFAULT_LEASE_TTL_S, heartbeat_s: float | None = None) -> RunLease:
        """Return a (not yet acquired) lease on running ``run_id``; ``with store.lease(run_id): ...`` holds it.

        Take it before reading which trials are missing (:meth:`recorded_keys`) and hold it until they are run,
        so that two processes resuming the same run never both run them.

        Args:
            run_id: the run (it need not exist yet).
            ttl_s: seconds the lease holds after each renewal (see :class:`RunLease`).
            heartbeat_s: seconds between renewals; default ``ttl_s / 3``.

        Returns:
            The :class:`RunLease`; entering it raises :class:`LeaseHeldError` when another live process holds it.

        Raises:
            ValueError: bad ``ttl_s`` / ``heartbeat_s``.
        """
        return RunLease(self, run_id, ttl_s=ttl_s, heartbeat_s=heartbeat_s)

    def create_run(
        self,
        config: RunSpec,
        task_ids: Sequence[str],
        *,
        run_id: str | None = None,
        data_dir: str | None = None,
        data_hash: str | None = None,
        tasks_hash: str | None = None,
        git_revision: str | None = None,
        packages: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> RunInfo:
        """Record a new run.

        Args:
            config: the run configuration.
            task_ids: the planned task ids, in run order (unique).
            run_id: the id; default a new uuid4 hex.
            data_dir: the data directory used.
            data_hash: content hash of the data set (see :func:`data_hash`).
            tasks_hash: content hash of the task set (see :func:`tasks_hash`).
            git_revision: the code's git revision.
            packages: package versions.
            extra: anything else worth keeping with the run.

        Returns:
            The stored :class:`RunInfo`.

        Raises:
            StoreError: the run id is already taken, or the task ids repeat.
        """
        if len(set(task_ids)) != len(task_ids):
            raise StoreError("duplicate task ids in the planned task set")
        info = RunInfo(run_id=run_id or new_run_id(), created_at=_now(), config=config, task_ids=list(task_ids),
                       data_dir=data_dir, data_hash=data_hash, tasks_hash=tasks_hash, git_revision=git_revision,
                       packages=dict(packages or {}), extra=dict(extra or {}))
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(runs).values(
                    run_id=info.run_id, created_at=info.created_at, domain=config.domain, agent=config.agent.name,
                    user=config.user.name, seed=str(config.seed), trials=config.trials,
                    config=config.model_dump(mode="json"), task_ids=info.task_ids, data_dir=data_dir,
                    data_hash=data_hash, tasks_hash=tasks_hash, git_revision=git_revision, packages=info.packages,
                    wall_seconds=0.0, extra=info.extra,
                ))
        except IntegrityError as e:
            raise StoreError(f"run id {info.run_id!r} already exists in {self.url}") from e
        return info

    def get_run(self, run_id: str) -> RunInfo | None:
        """Return a stored run's header, or None when there is no such run.

        Args:
            run_id: the run id.

        Returns:
            The :class:`RunInfo` or None.
        """
        with self.engine.connect() as conn:
            row = conn.execute(select(runs).where(runs.c.run_id == run_id)).mappings().first()
        if row is None:
            return None
        try:
            spec = RunSpec.model_validate(row["config"])
        except ValidationError as e:
            raise StoreError(format_validation_error(f"stored spec of run {run_id!r}", e)
                             + " (runs recorded by an older tausim cannot be resumed; start a new run)") from e
        return RunInfo(run_id=row["run_id"], created_at=_aware(row["created_at"]),
                       config=spec, task_ids=list(row["task_ids"]),
                       data_dir=row["data_dir"], data_hash=row["data_hash"], tasks_hash=row["tasks_hash"],
                       git_revision=row["git_revision"], packages=dict(row["packages"] or {}),
                       wall_seconds=row["wall_seconds"] or 0.0, extra=dict(row["extra"] or {}))

    def require_run(self, run_id: str) -> RunInfo:
        """Return a stored run's header.

        Args:
            run_id: the run id.

        Returns:
            The :class:`RunInfo`.

        Raises:
            StoreError: no such run (the message lists a few known run ids).
        """
        info = self.get_run(run_id)
        if info is None:
            known = self.run_ids()
            hint = f"; runs in the store: {', '.join(known[-5:])}" if known else "; the store holds no run"
            raise StoreError(f"no run {run_id!r} in {self.url}{hint}")
        return info

    def run_ids(self) -> list[str]:
        """Return every stored run id, oldest first."""
        with self.engine.connect() as conn:
            return list(conn.execute(select(runs.c.run_id).order_by(runs.c.created_at, runs.c.run_id)).scalars())

    def open_run(
        self,
        run_id: str | None,
        config: RunSpec,
        task_ids: Sequence[str],
        *,
        data_dir: str | None = None,
        data_hash: str | None = None,
        tasks_hash: str | None = None,
        git_revision: str | None = None,
        packages: Mapping[str, str] | None = None,
    ) -> tuple[RunInfo, bool]:
        """Create a run, or check that an existing one can be resumed with this configuration.

        Args:
            run_id: the run id; None for a new run with a fresh id.
            config: the configuration given now.
            task_ids: the planned task ids, in run order.
            data_dir: the data directory used.
            data_hash: content hash of the data set.
            tasks_hash: content hash of the task set.
            git_revision: the code's git revision (recorded for a new run).
            packages: package versions (recorded for a new run).

        Returns:
            ``(run, created)``: the stored run and whether it was created now.

        Raises:
            ConfigMismatchError: the run exists with a different configuration (the message names the field).
            StoreError: duplicate task ids.
        """
        if run_id is not None:
            stored = self.get_run(run_id)
            if stored is not None:
                self.check_resumable(stored, config, data_hash=data_hash, tasks_hash=tasks_hash)
                return stored, False
        info = self.create_run(config, task_ids, run_id=run_id, data_dir=data_dir, data_hash=data_hash,
                               tasks_hash=tasks_hash, git_revision=git_revision, packages=packages)
        return info, True

    @staticmethod
    def check_resumable(stored: RunInfo, config: RunSpec, *, data_hash: str | None,
                        tasks_hash: str | None) -> None:
        """Refuse to resume a run with settings that would make its trials incomparable.

        Args:
            stored: the stored run.
            config: the configuration given now.
            data_hash: the data set's hash now.
            tasks_hash: the task set's hash now.

        Raises:
            ConfigMismatchError: naming the first differing field and both values (every spec field but
                :data:`simulator.types.spec.RESUME_EXEMPT`, then ``data_hash`` and ``tasks_hash``).
        """
        diffs = spec_differences(stored.config, config)
        if diffs:
            field, old, new = diffs[0]
            raise ConfigMismatchError(stored.run_id, field, old, new)
        if stored.data_hash != data_hash:
            raise ConfigMismatchError(stored.run_id, "data_hash (contents of the data directory)",
                                      stored.data_hash, data_hash)
        if stored.tasks_hash != tasks_hash:
            raise ConfigMismatchError(stored.run_id, "tasks_hash (contents of the task set)",
                                      stored.tasks_hash, tasks_hash)

    def add_wall_seconds(self, run_id: str, seconds: float) -> None:
        """Add one session's wall time to the run's total.

        Args:
            run_id: the run id.
            seconds: wall time of the session.
        """
        with self.engine.begin() as conn:
            conn.execute(update(runs).where(runs.c.run_id == run_id)
                         .values(wall_seconds=runs.c.wall_seconds + seconds))

    def update_run(self, run_id: str, *, tasks_hash: str | None = None,
                   extra: Mapping[str, Any] | None = None) -> None:
        """Update a run's task-set hash and/or merge fields into its ``extra`` (e.g. after a regrade).

        Args:
            run_id: the run id.
            tasks_hash: the new task-set hash, if it changed.
            extra: fields merged into the run's extra document.

        Raises:
            StoreError: no such run.
        """
        info = self.require_run(run_id)
        values: dict[str, Any] = {}
        if tasks_hash is not None:
            values["tasks_hash"] = tasks_hash
        if extra:
            values["extra"] = {**info.extra, **extra}
        if values:
            with self.engine.begin() as conn:
                conn.execute(update(runs).where(runs.c.run_id == run_id).values(**values))

    # --- trials --------------------------------------------------------------------------------------------
    def record(self, run_id: str, result: TrialResult) -> bool:
        """Write one finished trial and all its rows in one transaction.

        Args:
            run_id: the run the trial belongs to (must exist).
            result: the trial.

        Returns:
            True when written; False when this (run, task, trial) is already recorded (nothing is written).

        Raises:
            StoreError: the run does not exist.
        """
        doc = result.model_dump(mode="json")
        top, top_extra = _split(doc, _TRIAL_KEYS)
        traj, traj_extra = _split(top["trajectory"], _TRAJ_KEYS)
        au, au_extra = _split(traj["agent_usage"], _USAGE_KEYS)
        uu, uu_extra = _split(traj["user_usage"], _USAGE_KEYS)
        extra = {"trial": top_extra, "trajectory": traj_extra, "agent_usage": au_extra, "user_usage": uu_extra}
        cost = None if au["cost_usd"] is None or uu["cost_usd"] is None else au["cost_usd"] + uu["cost_usd"]
        key = {"run_id": run_id, "task_id": result.task_id, "persona": result.persona or "", "trial": result.trial}
        trial_row = {
            **key, "seed": str(result.seed), "passed": result.passed,
            "termination_reason": result.termination_reason, "error": result.error,
            "duration_s": result.duration_s, "recorded_at": _now(), "turns": traj["turns"], "steps": traj["steps"],
            "agent_seconds": traj["agent_seconds"], "user_seconds": traj["user_seconds"],
            "tool_seconds": traj["tool_seconds"], "trajectory_termination_reason": traj["termination_reason"],
            "trajectory_error": traj["error"],
            "agent_prompt_tokens": au["prompt_tokens"], "agent_completion_tokens": au["completion_tokens"],
            "agent_cost_usd": au["cost_usd"], "agent_calls": au["calls"],
            "user_prompt_tokens": uu["prompt_tokens"], "user_completion_tokens": uu["completion_tokens"],
            "user_cost_usd": uu["cost_usd"], "user_calls": uu["calls"], "cost_usd": cost,
            "extra": {k: v for k, v in extra.items() if v},
        }
        msg_rows = []
        for i, m in enumerate(traj["messages"]):
            cols, rest = _split(m, _MESSAGE_KEYS)
            msg_rows.append({**key, "idx": i, **cols, "tool_calls": cols["tool_calls"] or [], "extra": rest})
        call_rows = []
        for i, c in enumerate(traj["tool_calls"]):
            cols, rest = _split(c, _CALL_KEYS)
            call_rows.append({**key, "idx": i, **cols, "extra": rest})
        try:
            with self.engine.begin() as conn:
                # the trial row first: a duplicate fails here, before anything else is written
                conn.execute(insert(trials).values(**trial_row))
                if msg_rows:
                    conn.execute(insert(messages), msg_rows)
                if call_rows:
                    conn.execute(insert(tool_calls), call_rows)
                if result.grade is not None:
                    conn.execute(insert(grades).values(**key, **self._grade_values(result.grade)))
        except IntegrityError as e:
            if trial_key(result) in self.recorded_keys(run_id):
                return False
            if self.get_run(run_id) is None:
                raise StoreError(f"no run {run_id!r} in {self.url}: create it before recording trials") from e
            raise
        return True

    @staticmethod
    def _grade_values(grade: Grade) -> dict[str, Any]:
        g = grade.model_dump(mode="json")
        passed, failure = g.pop("passed"), g.pop("failure", None)
        return {"passed": passed, "failure": failure, "components": g, "graded_at": _now()}

    def update_grade(self, run_id: str, result: TrialResult) -> None:
        """Replace a recorded trial's grade and outcome (``passed``, ``error``) in one transaction.

        Args:
            run_id: the run id.
            result: the trial with its new grade (``task_id`` and ``trial`` identify it).

        Raises:
            StoreError: the trial is not recorded.
        """
        key = {"run_id": run_id, "task_id": result.task_id, "persona": result.persona or "", "trial": result.trial}
        where = [trials.c.run_id == run_id, trials.c.task_id == result.task_id,
                 trials.c.persona == (result.persona or ""), trials.c.trial == result.trial]
        with self.engine.begin() as conn:
            n = conn.execute(update(trials).where(*where).values(passed=result.passed, error=result.error)).rowcount
            if n != 1:
                raise StoreError(f"trial {trial_key(result)} of run {run_id!r} is not recorded")
            conn.execute(delete(grades).where(grades.c.run_id == run_id, grades.c.task_id == result.task_id,
                                              grades.c.persona == (result.persona or ""),
                                              grades.c.trial == result.trial))
            if result.grade is not None:
                conn.execute(insert(grades).values(**key, **self._grade_values(result.grade)))

    def recorded_keys(self, run_id: str) -> set[TrialKey]:
        """Return the (task id, persona or None, trial index) keys recorded for a run.

        Args:
            run_id: the run id.

        Returns:
            The set of recorded pairs (empty for an unknown run).
        """
        with self.engine.connect() as conn:
            rows = conn.execute(select(trials.c.task_id, trials.c.persona, trials.c.trial)
                                .where(trials.c.run_id == run_id))
            return {(r[0], r[1] or None, int(r[2])) for r in rows}

    def count_duplicates(self, run_id: str) -> int:
        """Return how many trial rows repeat a (task id, trial) pair of the run (0 unless the schema was altered).

        Args:
            run_id: the run id.

        Returns:
            Rows beyond the first of each pair.
        """
        with self.engine.connect() as conn:
            n = func.count()
            q = (select(trials.c.task_id, trials.c.persona, trials.c.trial, n.label("n"))
                 .where(trials.c.run_id == run_id)
                 .group_by(trials.c.task_id, trials.c.persona, trials.c.trial).having(n > 1))
            return sum(int(r.n) - 1 for r in conn.execute(q))

    def load_trials(self, run_id: str) -> list[TrialResult]:
        """Return a run's recorded trials, in planned task order then trial index.

        Args:
            run_id: the run id.

        Returns:
            One :class:`TrialResult` per recorded trial, equal to the one recorded.

        Raises:
            StoreError: no such run.
        """
        info = self.require_run(run_id)
        with self.engine.connect() as conn:
            trial_rows = conn.execute(select(trials).where(trials.c.run_id == run_id)).mappings().all()
            msgs: dict[tuple[str, str, int], list[Message]] = {}
            for r in conn.execute(select(messages).where(messages.c.run_id == run_id)
                                  .order_by(messages.c.task_id, messages.c.persona, messages.c.trial,
                                            messages.c.idx)).mappings():
                msgs.setdefault((r["task_id"], r["persona"], r["trial"]), []).append(Message.model_validate({
                    **(r["extra"] or {}), "role": r["role"], "content": r["content"],
                    "tool_calls": r["tool_calls"] or [], "tool_call_id": r["tool_call_id"], "name": r["name"]}))
            calls: dict[tuple[str, str, int], list[ToolCallRecord]] = {}
            for r in conn.execute(select(tool_calls).where(tool_calls.c.run_id == run_id)
                                  .order_by(tool_calls.c.task_id, tool_calls.c.persona, tool_calls.c.trial,
                                            tool_calls.c.idx)).mappings():
                calls.setdefault((r["task_id"], r["persona"], r["trial"]), []).append(ToolCallRecord.model_validate({
                    **(r["extra"] or {}), **{k: r[k] for k in _CALL_KEYS}}))
            grade_rows = {(r["task_id"], r["persona"], r["trial"]): r for r in
                          conn.execute(select(grades).where(grades.c.run_id == run_id)).mappings()}
        out = []
        for r in trial_rows:
            key = (r["task_id"], r["persona"], int(r["trial"]))
            extra = r["extra"] or {}
            g = grade_rows.get(key)
            grade = None if g is None else Grade.model_validate(
                {**(g["components"] or {}), "passed": g["passed"], "failure": g["failure"]})
            traj = Trajectory.model_validate({
                **extra.get("trajectory", {}),
                "messages": msgs.get(key, []), "tool_calls": calls.get(key, []),
                "agent_usage": {**extra.get("agent_usage", {}), "prompt_tokens": r["agent_prompt_tokens"],
                                "completion_tokens": r["agent_completion_tokens"], "cost_usd": r["agent_cost_usd"],
                                "calls": r["agent_calls"]},
                "user_usage": {**extra.get("user_usage", {}), "prompt_tokens": r["user_prompt_tokens"],
                               "completion_tokens": r["user_completion_tokens"], "cost_usd": r["user_cost_usd"],
                               "calls": r["user_calls"]},
                "turns": r["turns"], "steps": r["steps"], "agent_seconds": r["agent_seconds"],
                "user_seconds": r["user_seconds"], "tool_seconds": r["tool_seconds"],
                "termination_reason": r["trajectory_termination_reason"], "error": r["trajectory_error"],
            })
            out.append(TrialResult.model_validate({
                **extra.get("trial", {}),
                "task_id": key[0], "persona": key[1] or None, "trial": key[2], "seed": int(r["seed"]),
                "passed": r["passed"],
                "termination_reason": r["termination_reason"], "grade": grade, "trajectory": traj,
                "duration_s": r["duration_s"], "error": r["error"],
            }))
        tasks = {t: i for i, t in enumerate(info.task_ids)}
        personas = {p: i for i, p in enumerate(info.config.personas or [])}
        out.sort(key=lambda t: (tasks.get(t.task_id, len(tasks)), t.task_id,
                                personas.get(t.persona or "", len(personas)), t.persona or "", t.trial))
        return out

    # --- whole runs ----------------------------------------------------------------------------------------
    def load_run_result(self, run_id: str) -> RunResult:
        """Return a run as a :class:`RunResult` built from every recorded trial.

        Metrics are computed over the planned trials; a planned trial not recorded yet counts as failed
        (see :meth:`load_run_document` for the ``complete`` flag).

        Args:
            run_id: the run id.

        Returns:
            The :class:`RunResult` (``wall_seconds``: every session of the run together).

        Raises:
            StoreError: no such run.
        """
        info = self.require_run(run_id)
        results = self.load_trials(run_id)
        return RunResult(config=info.config, trials=results, metrics=_metrics(info, results),
                         termination_reasons=dict(sorted(Counter(r.termination_reason for r in results).items())),
                         wall_seconds=info.wall_seconds, planned=info.planned)

    def load_run_document(self, run_id: str) -> dict[str, Any]:
        """Return a run in the shape of :func:`simulator.execution.runner.run_summary_json` (the ``--out`` file).

        Args:
            run_id: the run id.

        Returns:
            ``{"format": "tausim.run", "version": 1, "run_id", "created_at", "git_revision", "packages",
            "data_hash", "tasks_hash", "task_ids", "config", "trials", "metrics", "termination_reasons",
            "wall_seconds", "planned", "recorded", "duplicates", "complete"}``. While ``complete`` is false
            (trials still missing) the metrics count the missing trials as failed.

        Raises:
            StoreError: no such run.
        """
        info = self.require_run(run_id)
        result = self.load_run_result(run_id)
        doc = run_summary_json(result, {
            "run_id": info.run_id, "created_at": info.created_at.isoformat(), "git_revision": info.git_revision,
            "packages": info.packages, "data_dir": info.data_dir, "data_hash": info.data_hash,
            "tasks_hash": info.tasks_hash, "task_ids": info.task_ids, **info.extra,
        })
        doc["duplicates"] = self.count_duplicates(run_id)
        doc["complete"] = doc["recorded"] == info.planned
        return doc


def _metrics(info: RunInfo, results: Sequence[TrialResult]) -> dict[str, float]:
    """Suite metrics over the planned trials; planned trials not recorded count as failed."""
    if not info.task_ids:
        return {}
    records = [r.model_dump(include={"task_id", "persona", "trial", "passed"}) for r in results]
    return reliability(records, info.task_ids, info.config.trials, personas=info.config.personas,
                       incomplete="count").suite


def load_run_from_store(url: str, run_id: str) -> dict[str, Any]:
    """Load a run from the results store and check it as a run document.

    Args:
        url: the store's SQLAlchemy URL, e.g. ``sqlite:///runs.db``.
        run_id: the run's id.

    Returns:
        The run document, as :func:`load_run_document` returns it (with ``run_id`` set).

    Raises:
        RunDocumentError: the URL is malformed, the SQLite file does not exist, the store cannot be opened, or it
            has no such run.
    """
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as e:
        raise RunDocumentError(f"--store {url!r}: not a database URL ({e}); e.g. sqlite:///runs.db") from None
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        if not Path(parsed.database).is_file():
            raise RunDocumentError(f"--store {url}: no such database file {parsed.database}")
    try:
        store = ResultsStore(url, create=False)
        try:
            doc = store.load_run_document(run_id)
        finally:
            store.close()
    except StoreError as e:
        raise RunDocumentError(f"--store {url}: {e}") from None
    except SQLAlchemyError as e:
        raise RunDocumentError(f"--store {url}: cannot read the results store: {type(e).__name__}: {e}") from None
    checked = check_run_document(doc, f"{url} run {run_id}")
    checked.setdefault("run_id", run_id)
    return checked
