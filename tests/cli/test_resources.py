"""Resources: a run on a small full disk stops with one line, prints its summary, exits 1 and resumes.

The disk is a real 700 KB tmpfs, mounted by the test when it runs as root and ``mount -t tmpfs`` works (CI runs as
root); elsewhere the test is skipped with the reason. ``tests/execution/test_write_errors.py`` simulates the same
with a writer that raises ENOSPC.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
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
    # a process of its own, as a real run: on a full disk its lease row cannot be deleted, and the resume takes
    # it over because its holder is gone (in-process, the holder's pid would still be alive)
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "simulator.cli", *map(str, args)], cwd=repo, capture_output=True,
                          text=True, timeout=300, check=False, env={**os.environ, "PYTHONPATH": str(repo)})
    first = SimpleNamespace(exit_code=done.returncode, output=done.stdout + done.stderr)
    assert first.exit_code == 1, first.output
    errors = [line for line in done.stderr.splitlines() if line.strip()]
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


@pytest.fixture
def readonly_dir(tmp_path):
    """A directory nobody can create files in: a read-only tmpfs as root, else a folder without write permission."""
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() == 0:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(ro)], capture_output=True,
                              text=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"root cannot be kept from writing without a read-only mount: {done.stderr.strip()}")
        try:
            yield ro
        finally:
            subprocess.run(["umount", str(ro)], check=False)
        return
    ro.chmod(0o500)
    try:
        yield ro
    finally:
        ro.chmod(0o700)


@pytest.fixture
def run_file(tmp_path):
    """A small run document (one oracle trial)."""
    from domains.retail import RetailDomain

    out = tmp_path / "run.json"
    res = invoke("run", "--task-ids", RetailDomain().load_tasks(None)[0].id, "--out", out, "--no-preflight")
    assert res.exit_code == 0, res.output
    return out


def _one_error(res: Any) -> str:
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert "Traceback" not in res.output
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, res.output
    return errors[0]


@pytest.mark.parametrize("command", [["report", "{run}", "--html", "{ro}/r.html"],
                                     ["export", "{run}", "--out", "{ro}/r.json"],
                                     ["baseline", "{run}", "--out", "{ro}/b.json"],
                                     ["run", "--out", "{ro}/run.json"],
                                     ["run", "--log-file", "{ro}/log.jsonl"],
                                     ["run", "--cache", "{ro}/cache.db"]])
def test_an_unwritable_output_is_refused_before_any_work(command, readonly_dir, run_file):
    args = [a.format(run=run_file, ro=readonly_dir) for a in command]
    res = invoke(*args)
    assert res.exit_code == 2, res.output
    assert _one_error(res).startswith(f"error: {args[-2]} {args[-1]}: directory {readonly_dir} is not writable (")
    assert "planned" not in res.output  # nothing ran


def test_hunt_refuses_an_unwritable_out_before_hunting(readonly_dir, monkeypatch):
    from simulator.cli import hunt as hunt_cli

    def no_hunt(*a: Any, **kw: Any) -> Any:
        raise AssertionError("the hunt ran before --out was checked")

    monkeypatch.setattr(hunt_cli, "run_hunt", no_hunt)
    res = invoke("hunt", "--budget", 5, "--out", readonly_dir / "h.json")
    assert res.exit_code == 2, res.output
    assert _one_error(res).startswith(f"error: --out {readonly_dir / 'h.json'}: directory {readonly_dir} is not "
                                      "writable (")


@pytest.mark.parametrize("command", [["report", "{run}", "--html", "{dir}/r.html"],
                                     ["export", "{run}", "--out", "{dir}/r.json"],
                                     ["baseline", "{run}", "--out", "{dir}/b.json"]])
def test_a_disk_full_at_a_secondary_output_is_one_line_and_exit_1(command, run_file, tmp_path, monkeypatch):
    import errno

    real = Path.write_text

    def full(self: Path, *a: Any, **kw: Any) -> int:
        if self.parent == tmp_path / "d":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *a, **kw)

    (tmp_path / "d").mkdir()
    monkeypatch.setattr(Path, "write_text", full)
    args = [a.format(run=run_file, dir=tmp_path / "d") for a in command]
    res = invoke(*args)
    assert res.exit_code == 1, res.output
    assert _one_error(res) == f"error: cannot write {args[-1]}: No space left on device"
    assert list((tmp_path / "d").iterdir()) == []  # no temporary file left


def test_out_naming_an_input_is_refused_and_the_input_untouched(tmp_path, run_file):
    from domains.retail import RetailDomain

    tasks = tmp_path / "tasks.json"
    tasks.write_text((RetailDomain().default_data_dir().parent / "tasks" / "builtin.json").read_text())
    before = tasks.read_bytes()
    res = invoke("run", "--tasks", tasks, "--out", tasks)
    assert res.exit_code == 2
    assert _one_error(res) == (f"error: --out {tasks}: is the --tasks file; writing it would overwrite that input; "
                               "give another file name")
    assert tasks.read_bytes() == before

    db = tmp_path / "runs.db"  # not there yet: the run would create it, then overwrite it with the document
    res = invoke("run", "--store", f"sqlite:///{db}", "--out", db)
    assert res.exit_code == 2 and "is the --store file" in _one_error(res)
    assert not db.exists()

    cache = tmp_path / "cache.db"
    cache.write_bytes(b"x")
    res = invoke("run", "--cache", cache, "--out", cache)
    assert res.exit_code == 2 and "is the --cache file" in _one_error(res)
    assert cache.read_bytes() == b"x"

    before = run_file.read_bytes()
    res = invoke("export", run_file, "--out", run_file)
    assert res.exit_code == 2 and "is the RUN file" in _one_error(res)
    assert run_file.read_bytes() == before
