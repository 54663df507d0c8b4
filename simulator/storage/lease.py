"""Run leases: one process's exclusive claim on running a run's missing trials (table ``run_leases``).

:meth:`simulator.storage.store.ResultsStore.lease` hands them out; a run takes its lease before reading which trials
are missing and holds it until they are run, so that two processes resuming the same run never both run them.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Protocol

from sqlalchemy import Engine, delete, insert, select, update
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError

from simulator.errors import LeaseHeldError, StoreError
from simulator.storage.schema import as_aware, run_leases, utc_now

__all__ = ["DEFAULT_LEASE_TTL_S", "LeaseStore", "RunLease"]

DEFAULT_LEASE_TTL_S = 60.0
"""Seconds a run lease holds without a heartbeat (a process on another host that died blocks resume this long)."""


class LeaseStore(Protocol):
    """What a lease needs of the results store: its engine."""

    @property
    def engine(self) -> Engine:
        """The store's SQLAlchemy engine."""
        ...


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
        store: the results store (anything with its ``engine``).
        run_id: the run to claim.
        ttl_s: seconds the lease holds after each renewal.
        heartbeat_s: seconds between renewals; default ``ttl_s / 3``.

    Raises:
        ValueError: ``ttl_s`` or ``heartbeat_s`` not positive, or ``heartbeat_s >= ttl_s``.
    """

    def __init__(self, store: LeaseStore, run_id: str, *, ttl_s: float = DEFAULT_LEASE_TTL_S,
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
            now = utc_now()
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
            raise LeaseHeldError(self.run_id, row["owner"], as_aware(row["acquired_at"]), as_aware(row["expires_at"]))
        else:
            raise StoreError(f"lease of run {self.run_id!r}: changed hands five times while taking it; try again")
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, name=f"tausim-lease-{self.run_id}", daemon=True)
        self._thread.start()
        return self

    def _beat(self) -> None:
        """Renew the lease every ``heartbeat_s`` seconds until released or lost."""
        while not self._stop.wait(self.heartbeat_s):
            now = utc_now()
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
        try:
            with self.store.engine.begin() as conn:
                conn.execute(delete(run_leases).where(run_leases.c.run_id == self.run_id,
                                                      run_leases.c.owner == self.owner))
        except OperationalError:  # database unwritable (disk full): the row lapses after ttl_s, or is taken over
            return                # at once on this host since its process is gone (see acquire)

    def __enter__(self) -> RunLease:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
