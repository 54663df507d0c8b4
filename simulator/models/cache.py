"""Persistent response cache: an SQLite file behind a thread-safe mutable mapping.

``tausim run --cache PATH`` opens one :class:`SQLiteCache` and hands it to every
:class:`~simulator.models.llm.LLMClient` of the run. Keys are the clients' cache keys (a digest of model, messages,
tools, parameters and trial seed); values are stored as JSON text. A rerun of a cached run replays every
model answer from the file, so it reproduces the run exactly without calling any model.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

from simulator.models.llm import LLMResult

__all__ = ["SQLiteCache"]


def _reopen(path: str, timeout: float) -> SQLiteCache:
    """Open the cache file again (unpickling)."""
    return SQLiteCache(path, timeout=timeout)


class SQLiteCache(MutableMapping[str, LLMResult]):
    """A mutable mapping ``key -> LLMResult`` stored in an SQLite file (JSON values).

    One connection guarded by a lock serves every thread; each write is committed at once (WAL journal),
    so results cached before a crash are kept. Several processes may share the file (SQLite file locking).
    A write the disk refuses (full, read-only) does not fail the model call: its reason is kept in
    ``write_error`` and later writes are dropped (a run then stops after the trial, saying so).

    Args:
        path: the SQLite file; created with its table when missing.
        timeout: seconds to wait for another process's lock.

    Raises:
        sqlite3.DatabaseError: the file exists but is not an SQLite database.
    """

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.write_error: str | None = None
        """Why a write failed (SQLite's words, e.g. ``database or disk is full``), or None."""
        self._timeout = timeout
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), timeout=timeout, check_same_thread=False,
                                     isolation_level=None)
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        except sqlite3.DatabaseError:
            self._conn.close()
            raise

    def __getitem__(self, key: str) -> LLMResult:
        with self._lock:
            row = self._conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise KeyError(key)
        return LLMResult.model_validate_json(row[0])

    def __setitem__(self, key: str, value: LLMResult) -> None:
        text = value.model_dump_json()
        with self._lock:
            if self.write_error is not None:
                return
            try:
                self._conn.execute("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", (key, text))
            except sqlite3.OperationalError as e:
                if not any(w in str(e).lower() for w in ("full", "readonly", "read-only", "i/o error")):
                    raise
                self.write_error = str(e)

    def __delitem__(self, key: str) -> None:
        with self._lock:
            cur = self._conn.execute("DELETE FROM responses WHERE key = ?", (key,))
        if cur.rowcount == 0:
            raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            keys = [r[0] for r in self._conn.execute("SELECT key FROM responses ORDER BY key")]
        return iter(keys)

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        with self._lock:
            return self._conn.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def close(self) -> None:
        """Close the file (further use raises ``sqlite3.ProgrammingError``)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SQLiteCache:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the file's path (e.g. for a Dask worker process): the copy opens its own connection."""
        return (_reopen, (str(self.path), self._timeout))

    def __repr__(self) -> str:
        return f"SQLiteCache({str(self.path)!r})"
