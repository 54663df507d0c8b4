"""Results store: runs and their trials in a SQL database (SQLAlchemy; SQLite file by default).

The tables are in :mod:`simulator.storage.schema`, how records become rows and back in :mod:`simulator.storage.codec`,
run leases in :mod:`simulator.storage.lease`; this module is the store itself (:class:`ResultsStore`) and the content
hashes that decide whether a run may be resumed, and :func:`load_run_from_store` (a stored run as a checked run
document).

A trial and all its rows are written in one transaction when it finishes (:meth:`ResultsStore.record`); a
second record of the same ``(run_id, task_id, persona, trial)`` is refused by the unique constraint and ignored, so a
killed and resumed run never holds a trial twice. On SQLite the store turns on WAL and a busy timeout so that
a reader (a report, a progress poll) and the writing run do not block each other.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import BigInteger, Engine, Integer, create_engine, delete, event, func, insert, inspect, select, update
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, OperationalError, SQLAlchemyError

from simulator.errors import ConfigMismatchError, LeaseHeldError, RunDocumentError, StoreError, WriteError
from simulator.stats.estimators import reliability
from simulator.storage.codec import (
    RunInfo,
    decode_trials,
    encode_trial,
    grade_values,
    run_info_from_row,
    run_row,
    trial_key_values,
)
from simulator.storage.documents import check_run_document, run_summary_json
from simulator.storage.lease import DEFAULT_LEASE_TTL_S, RunLease
from simulator.storage.schema import StoredText, grades, messages, metadata, runs, tool_calls, trials, utc_now
from simulator.types.results import RunResult, TrialKey, TrialResult, trial_key
from simulator.types.spec import RESUME_EXEMPT, RunSpec, spec_differences
from simulator.types.tasks import Task

__all__ = [
    "DEFAULT_LEASE_TTL_S",
    "DEFAULT_STORE_URL",
    "RESUME_FIELDS",
    "ConfigMismatchError",
    "LeaseHeldError",
    "ResultsStore",
    "RunInfo",
    "RunLease",
    "StoreError",
    "data_hash",
    "load_run_from_store",
    "new_run_id",
    "tasks_hash",
]

DEFAULT_STORE_URL = "sqlite:///runs.db"
"""The store used when none is given: ``runs.db`` in the working directory."""

RESUME_FIELDS = tuple(name for name in RunSpec.model_fields if name not in RESUME_EXEMPT)
"""Spec fields that must be equal for a run to be resumed (besides the data and task-set hashes); see
:data:`simulator.types.spec.RESUME_EXEMPT` for the others."""

_SQLITE_BUSY_TIMEOUT_MS = 60_000


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


_CANNOT_WRITE = ("full", "no space", "readonly", "read-only", "i/o error", "unable to open", "quota")
"""Words of a database error that says the database cannot be written (SQLite's and PostgreSQL's messages)."""


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
                if self.engine.dialect.name == "postgresql":
                    self._widen_text_columns()
                return
            except DBAPIError:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))  # the other creator has committed by now: check again

    def _widen_text_columns(self) -> None:
        """Widen the columns of a PostgreSQL store made by an older tausim: text to ``TEXT``, counts to ``BIGINT``.

        Older stores declared ids (run, task, persona, call) as ``VARCHAR(255)`` or ``VARCHAR(64)``; a 300-character
        run id or a long task id then failed mid-run on PostgreSQL while SQLite (which ignores lengths) accepted
        them. ``VARCHAR(n)`` to ``TEXT`` is a catalogue change in PostgreSQL (no rewrite of the rows). Token and call
        counts were ``INTEGER`` (32 bits in PostgreSQL, 64 in SQLite): a trial's 2**31 tokens failed the recording
        on PostgreSQL only; ``INTEGER`` to ``BIGINT`` rewrites the table once.
        """
        found = inspect(self.engine)
        changes = []
        for table in metadata.sorted_tables:
            have = {c["name"]: c["type"] for c in found.get_columns(table.name)}
            for column in table.columns:
                kind = have.get(column.name)
                if isinstance(column.type, StoredText) and getattr(kind, "length", None) is not None:
                    changes.append(f'ALTER TABLE "{table.name}" ALTER COLUMN "{column.name}" TYPE TEXT')
                elif (isinstance(column.type, BigInteger) and isinstance(kind, Integer)
                      and not isinstance(kind, BigInteger)):
                    changes.append(f'ALTER TABLE "{table.name}" ALTER COLUMN "{column.name}" TYPE BIGINT')
        if changes:
            with self.engine.begin() as conn:
                for statement in changes:
                    conn.exec_driver_sql(statement)

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

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Within it, the database's "cannot write" errors (disk full, read-only, I/O error) raise :class:`WriteError`.

        ``with store.writing(): ...`` around writes of the store's own methods or of a lease; other database errors
        pass unchanged.
        """
        try:
            yield
        except OperationalError as e:
            cause = str(e.orig).strip().splitlines()[0] if e.orig is not None else str(e)
            if not any(word in cause.lower() for word in _CANNOT_WRITE):
                raise
            where = self.engine.url.database if self.engine.url.get_backend_name() == "sqlite" else self.url
            raise WriteError(str(where), cause) from e

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
        info = RunInfo(run_id=run_id or new_run_id(), created_at=utc_now(), config=config, task_ids=list(task_ids),
                       data_dir=data_dir, data_hash=data_hash, tasks_hash=tasks_hash, git_revision=git_revision,
                       packages=dict(packages or {}), extra=dict(extra or {}))
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(runs).values(**run_row(info)))
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
        return run_info_from_row(row)

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
        with self.writing(), self.engine.begin() as conn:
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
            WriteError: the database cannot be written (disk full, read-only); the transaction is rolled back
                and the trials recorded before are kept.
        """
        rows = encode_trial(run_id, result)
        try:
            with self.writing(), self.engine.begin() as conn:
                # the trial row first: a duplicate fails here, before anything else is written
                conn.execute(insert(trials).values(**rows.trial))
                if rows.messages:
                    conn.execute(insert(messages), rows.messages)
                if rows.tool_calls:
                    conn.execute(insert(tool_calls), rows.tool_calls)
                if rows.grade is not None:
                    conn.execute(insert(grades).values(**rows.grade))
        except IntegrityError as e:
            if trial_key(result) in self.recorded_keys(run_id):
                return False
            if self.get_run(run_id) is None:
                raise StoreError(f"no run {run_id!r} in {self.url}: create it before recording trials") from e
            raise
        return True

    def update_grade(self, run_id: str, result: TrialResult) -> None:
        """Replace a recorded trial's grade and outcome (``passed``, ``error``) in one transaction.

        Args:
            run_id: the run id.
            result: the trial with its new grade (``task_id`` and ``trial`` identify it).

        Raises:
            StoreError: the trial is not recorded.
        """
        key = trial_key_values(run_id, result)
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
                conn.execute(insert(grades).values(**key, **grade_values(result.grade)))

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
            message_rows = conn.execute(select(messages).where(messages.c.run_id == run_id)
                                        .order_by(messages.c.task_id, messages.c.persona, messages.c.trial,
                                                  messages.c.idx)).mappings().all()
            call_rows = conn.execute(select(tool_calls).where(tool_calls.c.run_id == run_id)
                                     .order_by(tool_calls.c.task_id, tool_calls.c.persona, tool_calls.c.trial,
                                               tool_calls.c.idx)).mappings().all()
            grade_rows = conn.execute(select(grades).where(grades.c.run_id == run_id)).mappings().all()
        out = decode_trials(trial_rows, message_rows, call_rows, grade_rows)
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
    """Load a run from the results store and check it (the run document of ``tausim report --store URL RUN``).

    Args:
        url: the store's SQLAlchemy URL, e.g. ``sqlite:///runs.db``.
        run_id: the run's id.

    Returns:
        The run document, as :func:`~simulator.storage.documents.load_run_document` returns it (with ``run_id`` set).

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
