"""The run lease: one process at a time runs a run's missing trials; a dead holder never blocks a resume.

Every test runs against SQLite and PostgreSQL (the ``store_url`` fixture, see ``tests/_support/store_urls.py``). The
``kill -9`` test with two ``tausim run`` processes is
``tests/storage/test_store.py::test_sigkill_mid_run_then_resume...``.
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert, select, update

from simulator.storage.schema import run_leases
from simulator.storage.store import LeaseHeldError, ResultsStore, StoreError

REPO = Path(__file__).resolve().parents[2]

HOLDER = """
import sys, time
from simulator.storage.store import ResultsStore
lease = ResultsStore(sys.argv[1]).lease(sys.argv[2], ttl_s=3600).acquire()
print(lease.owner, flush=True)
time.sleep(600)
"""


@pytest.fixture()
def store(store_url):
    s = ResultsStore(store_url)
    yield s
    s.close()


def lease_rows(store):
    with store.engine.connect() as conn:
        return [dict(r) for r in conn.execute(select(run_leases).order_by(run_leases.c.run_id)).mappings()]


def aware(value):
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def wait_for(condition, what, timeout_s=60.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_second_lease_is_refused_naming_the_run_the_holder_and_since(store):
    first = store.lease("R").acquire()
    try:
        assert first.held and first.owner.startswith(f"{socket.gethostname()}:{os.getpid()}:")
        [row] = lease_rows(store)
        assert (row["run_id"], row["owner"], row["pid"]) == ("R", first.owner, os.getpid())
        with pytest.raises(LeaseHeldError) as e:  # another holder in this very (live) process
            store.lease("R").acquire()
        since = aware(row["acquired_at"])
        assert (e.value.run_id, e.value.owner, e.value.since) == ("R", first.owner, since)
        assert f"run 'R' is being run by another process ({first.owner}) since " \
               f"{since:%Y-%m-%d %H:%M:%S} UTC" in str(e.value)
        assert isinstance(e.value, StoreError)
        with pytest.raises(StoreError, match="already acquired"):
            first.acquire()
        with store.lease("S") as other:  # another run is not affected
            assert other.held
        assert [r["run_id"] for r in lease_rows(store)] == ["R"]
    finally:
        first.release()
    assert not first.held and lease_rows(store) == []
    with store.lease("R") as again:
        assert again.held and [r["owner"] for r in lease_rows(store)] == [again.owner]
    assert lease_rows(store) == []


def test_bad_ttl_is_refused(store):
    with pytest.raises(ValueError, match="heartbeat_s"):
        store.lease("R", ttl_s=1.0, heartbeat_s=1.0)
    with pytest.raises(ValueError, match="ttl_s=0"):
        store.lease("R", ttl_s=0)


def test_lapsed_lease_is_taken_over_and_a_live_one_of_another_host_is_not(store):
    now = datetime.now(UTC).replace(microsecond=0)
    gone = {"run_id": "R", "owner": "elsewhere:1:abc", "host": "elsewhere", "pid": 1,
            "acquired_at": now - timedelta(hours=2), "heartbeat_at": now - timedelta(hours=1),
            "expires_at": now - timedelta(minutes=59)}
    live = {**gone, "run_id": "S", "owner": "elsewhere:2:def", "pid": 2, "expires_at": now + timedelta(hours=1)}
    with store.engine.begin() as conn:
        conn.execute(insert(run_leases), [gone, live])
    with store.lease("R") as taken:  # lapsed an hour ago: taken over
        assert [r["owner"] for r in lease_rows(store) if r["run_id"] == "R"] == [taken.owner]
    with pytest.raises(LeaseHeldError) as e:  # renewed by a host we cannot check: it holds until it lapses
        store.lease("S").acquire()
    assert (e.value.owner, e.value.since, e.value.expires_at) == ("elsewhere:2:def", now - timedelta(hours=2),
                                                                   now + timedelta(hours=1))
    assert "elsewhere:2:def" in str(e.value) and f"lapses at {now + timedelta(hours=1):%H:%M:%S} UTC" in str(e.value)
    assert [r["owner"] for r in lease_rows(store)] == ["elsewhere:2:def"]


def test_only_one_of_many_concurrent_takers_wins(store):
    for run_id in ("A", "B", "C"):
        leases = [store.lease(run_id) for _ in range(6)]
        barrier = threading.Barrier(len(leases))
        outcomes: list[str] = []

        def take(lease, barrier=barrier, outcomes=outcomes):
            barrier.wait()
            try:
                lease.acquire()
                outcomes.append("won")
            except LeaseHeldError:
                outcomes.append("refused")

        threads = [threading.Thread(target=take, args=(lease,)) for lease in leases]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["refused"] * 5 + ["won"], outcomes
        [winner] = [lease for lease in leases if lease.held]
        assert [r["owner"] for r in lease_rows(store) if r["run_id"] == run_id] == [winner.owner]
        winner.release()
    assert lease_rows(store) == []


def test_heartbeat_renews_the_lease_and_notices_a_takeover(store):
    lease = store.lease("R", ttl_s=30, heartbeat_s=0.05).acquire()
    try:
        [first] = lease_rows(store)
        wait_for(lambda: aware(lease_rows(store)[0]["expires_at"]) > aware(first["expires_at"]), "a renewal")
        assert lease.held and lease.lost is None
        with store.engine.begin() as conn:  # as if the lease had lapsed and another process had taken it
            conn.execute(update(run_leases).values(owner="thief:1:x"))
        wait_for(lambda: lease.lost is not None, "the takeover to be noticed")
        assert not lease.held and "run 'R' was taken over" in lease.lost
    finally:
        lease.release()
    assert [r["owner"] for r in lease_rows(store)] == ["thief:1:x"]  # release never drops another's lease


def test_store_without_the_lease_table_gets_it(store):
    run_leases.drop(store.engine)
    with store.lease("R") as lease:
        assert [r["owner"] for r in lease_rows(store)] == [lease.owner]


def test_lease_of_a_killed_process_on_this_host_is_taken_over_at_once(store, store_url):
    """A second OS process holds the lease (an hour's TTL); refused while it lives, taken over once killed."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, store_url, "R"], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        owner = holder.stdout.readline().strip()
        assert owner.startswith(f"{socket.gethostname()}:{holder.pid}:"), owner
        with pytest.raises(LeaseHeldError, match=f"run 'R' is being run by another process \\({owner}\\)"):
            store.lease("R").acquire()
        holder.send_signal(signal.SIGKILL)
        # not reaped yet: a zombie holds no lease either
        wait_for(lambda: Path(f"/proc/{holder.pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z",
                 "the holder to die")
        with store.lease("R") as taken:  # its lease would hold for another hour
            [row] = lease_rows(store)
            assert row["owner"] == taken.owner != owner
    finally:
        holder.kill()
        holder.wait(timeout=30)
        holder.stdout.close()
    assert holder.returncode == -signal.SIGKILL


def test_postgres_cases_skip_without_a_url_but_fail_in_ci(monkeypatch):
    from tests._support import store_urls

    monkeypatch.delenv("TAUSIM_TEST_STORE_URL", raising=False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="TAUSIM_TEST_STORE_URL is not set"):
        store_urls.postgres_base_url()
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception):
        store_urls.postgres_base_url()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set but TAUSIM_TEST_STORE_URL is not set"):
        store_urls.postgres_base_url()
    monkeypatch.setenv("TAUSIM_TEST_STORE_URL", "sqlite:///elsewhere.db")
    with pytest.raises(pytest.fail.Exception, match="expected a postgresql URL, got a sqlite one"):
        store_urls.postgres_base_url()
    monkeypatch.setenv("TAUSIM_TEST_STORE_URL", "postgresql+psycopg://u:secret@127.0.0.1:5999/db")
    assert store_urls.postgres_base_url() == "postgresql+psycopg://u:secret@127.0.0.1:5999/db"
    assert "secret" not in store_urls.report_header() and "127.0.0.1:5999/db" in store_urls.report_header()
