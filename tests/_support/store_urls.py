"""Store URLs for tests: a fresh SQLite file, or a fresh PostgreSQL database, per test.

The PostgreSQL cases use the server named by ``TAUSIM_TEST_STORE_URL`` (e.g.
``postgresql+psycopg://tausim:PASSWORD@127.0.0.1:5432/tausim``, a role that may create databases; ``.ci/run``
starts one). Each test gets a database of its own, created from that URL and dropped afterwards, so tests are
independent, also when pytest-xdist runs them in parallel worker processes (the database's name carries the
worker's id, ``gw0``, ``gw1``, so that one left behind by a crash says whose it was). Without the variable the
PostgreSQL cases are skipped, except where ``CI`` is set: there they fail, so that CI never passes without having
run them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

ENV = "TAUSIM_TEST_STORE_URL"
BACKENDS = ("sqlite", "postgresql")
"""The databases every store test runs against (the ``store_url`` fixture's parameters)."""


def in_ci() -> bool:
    """Return whether the ``CI`` environment variable is set (to anything but empty, 0 or false)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def postgres_base_url() -> str:
    """Return ``TAUSIM_TEST_STORE_URL``; skip the calling test without it (fail it instead when CI is set)."""
    base = os.environ.get(ENV, "").strip()
    if not base:
        why = (f"{ENV} is not set: set it to a PostgreSQL server's URL (postgresql+psycopg://USER:PASSWORD@HOST:PORT"
               f"/DB, a role that may create databases) to run the store tests against PostgreSQL; .ci/run starts one")
        if in_ci():
            pytest.fail(f"CI is set but {why}", pytrace=False)
        pytest.skip(why)
    backend = make_url(base).get_backend_name()
    if backend != "postgresql":
        pytest.fail(f"{ENV}: expected a postgresql URL, got a {backend} one", pytrace=False)
    return base


@contextmanager
def fresh_store_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """Yield the URL of an empty database of ``backend`` (``sqlite`` or ``postgresql``), dropped afterwards."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'runs.db'}"
        return
    if backend != "postgresql":
        raise ValueError(f"backend {backend!r}: expected one of {BACKENDS}")
    base = make_url(postgres_base_url())
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")  # set by pytest-xdist in its workers: gw0, gw1, ...
    name = f"tausim_test_{worker}_{uuid.uuid4().hex[:20]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            yield base.set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as conn:  # FORCE: connections a test left open must not keep the database
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.dispose()


def report_header() -> str:
    """One line for pytest's header: which databases the store tests use."""
    base = os.environ.get(ENV, "").strip()
    if not base:
        return f"store tests: SQLite; PostgreSQL {'FAILS (CI is set)' if in_ci() else 'skipped'}: {ENV} not set"
    return f"store tests: SQLite and {make_url(base).render_as_string(hide_password=True)} (a database per test)"
