"""``--otel`` and ``tausim hunt`` on a real small full disk (a 700 KB tmpfs, as ``tests/cli/test_resources.py``).

Skipped with the reason where a tmpfs cannot be mounted. ``tests/execution/test_spans_write_errors.py`` and
``tests/cli/test_hunt_write_errors.py`` simulate the same with a writer that raises ENOSPC.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cli import test_resources

REPO = Path(__file__).resolve().parents[2]
invoke = test_resources.invoke
small_disk = test_resources.small_disk  # the fixture: a mounted 700 KB tmpfs, or the test skipped with the reason


def _fill(disk: Path, leave: int) -> None:
    """Fill ``disk`` but for about ``leave`` bytes."""
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    (disk / "ballast").write_bytes(b"\0" * (free - leave))


def test_a_spans_file_on_a_full_tmpfs_stops_the_run_with_one_line_and_no_exporter_noise(small_disk, tmp_path):
    from domains.retail import RetailDomain

    _fill(small_disk, 20_000)  # room for the spans of a few trials (about 6 KB each), not of all ten
    spans, out = small_disk / "spans.jsonl", tmp_path / "run.json"
    ids = ",".join(t.id for t in RetailDomain().load_tasks(None)[:5])
    args = ["run", "--task-ids", ids, "--trials", "2", "--no-preflight", "--no-progress", "--otel", str(spans),
            "--out", str(out), "--concurrency", "4"]
    done = subprocess.run([sys.executable, "-m", "simulator.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines() == [f"error: cannot write {spans}: No space left on device; run stopped; resume "
                                        f"it with --resume-from {out}.partial.jsonl"]
    assert "planned 10, recorded " in done.stdout  # the summary
    kept = [json.loads(line) for line in Path(f"{out}.partial.jsonl").read_text().splitlines()[1:]]
    assert 0 < len(kept) < 10


def test_a_hunt_on_a_full_tmpfs_writes_its_summary_to_a_fallback_file(small_disk, tmp_path, monkeypatch):
    _fill(small_disk, 4_000)
    monkeypatch.chdir(tmp_path)
    hunt = small_disk / "hunt.json"
    res = invoke("hunt", "--domain", "retail", "--agent", "reference:wrong_item=0.3,skip_confirmation=0.3",
                 "--user", "rule", "--budget", 80, "--seed", 7, "--out", hunt)
    assert res.exit_code == 1, res.output
    (fallback,) = tmp_path.glob("tausim-hunt-*.json")
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert errors == [f"error: --out {hunt}: cannot write (No space left on device); the hunt's summary went to "
                      f"{fallback} instead"]
    assert json.loads(fallback.read_text())["clusters"] and "hunt: " in res.output
    assert not hunt.exists()
