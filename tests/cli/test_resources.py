"""Resources: a run on a small full disk stops with one line, prints its summary, exits 1 and resumes.

The disk is a real 700 KB tmpfs, mounted by the test when it runs as root and ``mount -t tmpfs`` works (CI runs as
root); elsewhere the test is skipped with the reason. ``tests/execution/test_write_errors.py`` simulates the same
with a writer that raises ENOSPC.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.storage.store import ResultsStore


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def small_disk(tmp_path):
    """A mounted 700 KB tmpfs (unmounted afterwards)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a 700 KB tmpfs needs root (CI runs as root)")
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=700k", "tmpfs", str(disk)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"mount -t tmpfs failed here: {done.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def _starts(log: Path) -> Counter[tuple[str, int]]:
    """How many times each (task, trial) was started, from the run's event log."""
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return Counter((e["task_id"], e["trial"]) for e in events if e["event"] == "trial_start")


def test_a_run_on_a_full_tmpfs_stops_with_one_line_and_resumes_without_running_a_trial_twice(small_disk, tmp_path):
    from domains.retail import RetailDomain

    ids = ",".join(t.id for t in RetailDomain().load_tasks(None)[:5])
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    ballast = small_disk / "ballast"
    ballast.write_bytes(b"\0" * (free - 250_000))  # room for a few trials, not for all ten
    db = small_disk / "runs.db"
    log = tmp_path / "log.jsonl"  # on the big disk: it counts the trials each session starts
    args = ["run", "--task-ids", ids, "--trials", 2, "--store", f"sqlite:///{db}", "--run-id", "r1",
            "--no-preflight", "--log-file", log]
    first = invoke(*args)
    assert first.exit_code == 1, first.output
    errors = [line for line in first.output.splitlines() if line.startswith("error:")]
    assert errors == [f"error: cannot write {db}: database or disk is full; run stopped; resume it with "
                      "--run-id r1"], first.output
    assert "Traceback" not in first.output
    with ResultsStore(f"sqlite:///{db}") as st:
        recorded = st.recorded_keys("r1")
    assert 0 < len(recorded) < 10
    assert f"planned 10, recorded {len(recorded)}, duplicates 0" in first.output  # the summary is printed
    assert "pass^k" in first.output
    started_first = _starts(log)

    ballast.unlink()  # space freed: the same command resumes
    second = invoke(*args)
    assert second.exit_code == 0, second.output
    assert f"resuming: {len(recorded)} of 10 trials recorded, running {10 - len(recorded)}" in second.output
    with ResultsStore(f"sqlite:///{db}") as st:
        assert len(st.recorded_keys("r1")) == 10
        assert st.count_duplicates("r1") == 0
    started_second = _starts(log) - started_first
    recorded_pairs = {(t, i) for t, _, i in recorded}
    assert not recorded_pairs & set(started_second)  # no recorded trial ran again
    assert set(started_second) == {(t, i) for t in ids.split(",") for i in range(2)} - recorded_pairs
    assert max(started_second.values()) == 1
