"""``--otel FILE`` on a full disk: the run stops with one line naming the file, as for the log; no exporter noise.

The full disk is simulated by making the spans file raise ``ENOSPC`` (as ``tests/execution/test_write_errors.py``
does for the other outputs): once a write failed, its flush on close fails the same way, as a real file's does.
"""

from __future__ import annotations

import errno
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

import simulator  # noqa: E402
from simulator.execution import tracing as tracing_module  # noqa: E402
from simulator.storage.documents import load_partial  # noqa: E402
from simulator.types.spec import RunSpec  # noqa: E402

ENOSPC = "No space left on device"


def _spec(**kw: Any) -> RunSpec:
    from domains.retail import RetailDomain

    ids = [t.id for t in RetailDomain().load_tasks(None)][:3]
    return RunSpec(domain="retail", task_ids=ids, trials=2, preflight=False, **kw)


def _full_spans_file(full: Callable[[str, int], bool]) -> Callable[..., Any]:
    """An ``open`` for the spans file whose writes raise ENOSPC once ``full(text, spans written)`` says so."""

    class Handle:
        def __init__(self, inner: Any) -> None:
            self.inner, self.n, self.failed = inner, 0, False

        def write(self, text: str) -> int:
            if self.failed or full(text, self.n):
                self.failed = True
                raise OSError(errno.ENOSPC, ENOSPC)
            self.n += 1
            return self.inner.write(text)

        def flush(self) -> None:
            if self.failed:
                raise OSError(errno.ENOSPC, ENOSPC)
            self.inner.flush()

        def close(self) -> None:
            self.inner.close()
            if self.failed:  # what the buffer held cannot be flushed either
                raise OSError(errno.ENOSPC, ENOSPC)

    return lambda *a, **kw: Handle(open(*a, **kw))  # noqa: SIM115 - closed by file_tracing


def _no_exporter_noise(caplog: pytest.LogCaptureFixture) -> None:
    noisy = [r.getMessage() for r in caplog.records if r.name.startswith("opentelemetry")]
    assert noisy == []


def test_a_full_disk_at_the_spans_file_stops_the_run_and_keeps_the_recorded_trials(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(tracing_module, "open", _full_spans_file(lambda text, n: n >= 12), raising=False)
    spans, out = tmp_path / "spans.jsonl", tmp_path / "run.json"
    result = simulator.run(_spec(), otel=spans, out=out)  # no OSError from closing the file
    assert result.abort_kind == "write_error"
    assert result.aborted == f"cannot write {spans}: {ENOSPC}"
    # one trial at a time: the two trials whose spans (4 + the trial's own) were all written are recorded, however
    # late the session gets their results (the next trials may already have filled the disk)
    assert len(result.trials) == 2
    _, kept, planned = load_partial(f"{out}.partial.jsonl")  # the trials recorded are kept; resume from there
    by_key = {(t.task_id, t.trial): t.model_dump() for t in result.trials}
    assert planned == 6 and {(t.task_id, t.trial): t.model_dump() for t in kept} == by_key
    written = [json.loads(line) for line in spans.read_text().splitlines()]
    assert len(written) == 12  # what was written before the disk filled stays, whole lines
    assert {(t.task_id, t.trial) for t in result.trials} == _traced(spans)
    _no_exporter_noise(caplog)


def _traced(spans: Path) -> set[tuple[str, int]]:
    """The trials whose own span is in the file (it ends after its children, so all their spans are there)."""
    written = [json.loads(line) for line in spans.read_text().splitlines()]
    return {(s["attributes"]["tausim.task_id"], s["attributes"]["tausim.trial"]) for s in written
            if s["name"] == "tausim.trial"}


def test_concurrent_trials_whose_spans_were_all_written_are_recorded_and_no_other(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(tracing_module, "open", _full_spans_file(lambda text, n: n >= 12), raising=False)
    spans, out = tmp_path / "spans.jsonl", tmp_path / "run.json"
    result = simulator.run(_spec(concurrency=3), otel=spans, out=out)
    assert result.abort_kind == "write_error" and result.aborted == f"cannot write {spans}: {ENOSPC}"
    # which trials finished first is up to the threads; a recorded trial always has all its spans in the file
    assert {(t.task_id, t.trial) for t in result.trials} <= _traced(spans)
    assert len(result.trials) < 6
    _no_exporter_noise(caplog)


def test_a_spans_file_that_fills_on_the_run_s_own_span_is_reported_and_exits_1(tmp_path, monkeypatch, caplog):
    from typer.testing import CliRunner

    from simulator.cli import app

    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(tracing_module, "open", _full_spans_file(lambda text, n: '"tausim.run"' in text),
                        raising=False)
    spans, out = tmp_path / "spans.jsonl", tmp_path / "run.json"
    result = simulator.run(_spec(), otel=spans, out=out)
    assert result.aborted is None and len(result.trials) == 6  # every trial recorded, the document written
    assert result.spans_error == f"cannot write {spans}: {ENOSPC}"
    assert len(json.loads(out.read_text())["trials"]) == 6
    names = [json.loads(line)["name"] for line in spans.read_text().splitlines()]
    assert names.count("tausim.trial") == 6 and "tausim.run" not in names

    cli_spans = tmp_path / "cli.jsonl"
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--task-ids", "cancel-no-longer-needed",
                                   "--otel", str(cli_spans), "--no-progress", "--no-preflight"])
    assert res.exit_code == 1, res.output
    said = " ".join(res.output.split())
    assert (f"error: cannot write {cli_spans}: {ENOSPC}: the spans file's last spans are lost (every trial is "
            "recorded)") in said
    assert "pass^1" in said and "Traceback" not in said  # the summary is printed
    _no_exporter_noise(caplog)


def test_cli_run_stopped_by_a_full_spans_file_says_one_line_and_prints_the_summary(tmp_path, monkeypatch, caplog):
    from typer.testing import CliRunner

    from simulator.cli import app

    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(tracing_module, "open", _full_spans_file(lambda text, n: n >= 12), raising=False)
    spans, out = tmp_path / "spans.jsonl", tmp_path / "run.json"
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--task-ids", "cancel-no-longer-needed",
                                   "--trials", "4", "--otel", str(spans), "--out", str(out), "--no-progress",
                                   "--no-preflight"])
    assert res.exit_code == 1, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert errors == [f"error: cannot write {spans}: {ENOSPC}; run stopped; resume it with --resume-from "
                      f"{out}.partial.jsonl"]
    assert "Traceback" not in res.output and "pass^1" in res.output
    assert Path(f"{out}.partial.jsonl").exists() and not out.exists()
    _no_exporter_noise(caplog)


def test_spans_appended_after_a_line_cut_short_start_on_a_line_of_their_own(tmp_path):
    spans = tmp_path / "spans.jsonl"
    spans.write_text('{"name": "tausim.trial"}\n{"name": "tausim.tr')  # an earlier run stopped by a full disk
    with tracing_module.file_tracing(spans) as tracing, tracing.run(domain="retail"):
        pass
    lines = spans.read_text().splitlines()
    assert lines[:2] == ['{"name": "tausim.trial"}', '{"name": "tausim.tr']  # the cut line stays as it was
    assert [json.loads(line)["name"] for line in lines[2:]] == ["tausim.run"]
    with tracing_module.file_tracing(spans) as tracing, tracing.run(domain="retail"):
        pass  # a whole file gets no blank line
    assert [json.loads(line)["name"] for line in spans.read_text().splitlines()[2:]] == ["tausim.run", "tausim.run"]
