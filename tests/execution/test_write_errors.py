"""A place the run records into cannot be written (disk full, read-only): the run stops, nothing recorded is lost.

The full disk is simulated by making the writer raise ``ENOSPC`` (or SQLite's "database or disk is full") after a
few trials; ``tests/cli/test_resources.py`` runs the same on a real 700 KB tmpfs.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

import simulator
from simulator.errors import WriteError
from simulator.execution import recording as recording_module
from simulator.execution import session as session_module
from simulator.storage.documents import load_partial
from simulator.storage.store import ResultsStore
from simulator.types.spec import RunSpec


def _spec(**kw: Any) -> RunSpec:
    from domains.retail import RetailDomain

    ids = [t.id for t in RetailDomain().load_tasks(None)][:3]
    return RunSpec(domain="retail", task_ids=ids, trials=2, preflight=False, **kw)



def _full_after(lines: int, real_open: Any) -> Any:
    """An ``open_partial`` whose file refuses writes (ENOSPC) once ``lines`` trial lines are written."""

    class Handle:
        def __init__(self, inner: Any) -> None:
            self.inner, self.n = inner, 0

        def write(self, text: str) -> int:
            if self.n >= lines:
                raise OSError(errno.ENOSPC, "No space left on device")
            self.n += 1
            return self.inner.write(text)

        def flush(self) -> None:
            self.inner.flush()

        def close(self) -> None:
            self.inner.close()

    return lambda *a, **kw: Handle(real_open(*a, **kw))


def test_a_full_disk_at_the_partial_file_stops_the_run_and_keeps_the_written_trials(tmp_path, monkeypatch):
    real = session_module.open_partial
    monkeypatch.setattr(session_module, "open_partial", _full_after(2, real))
    out = tmp_path / "run.json"
    result = simulator.run(_spec(), out=out)
    assert result.abort_kind == "write_error"
    assert result.aborted == f"cannot write {out}.partial.jsonl: No space left on device"
    assert not out.exists()  # the document of a stopped run is not written: the partial file is the run so far
    _, kept, planned = load_partial(f"{out}.partial.jsonl")
    assert len(kept) == 2 and planned == 6
    assert len(result.trials) == 2  # the trial that could not be written is not counted as recorded

    # disk freed: resuming runs exactly the four missing trials
    monkeypatch.setattr(session_module, "open_partial", real)
    seen: list[Any] = []
    again = simulator.run(_spec(), out=out, resume=f"{out}.partial.jsonl", on_trial=seen.append)
    assert again.aborted is None and len(again.trials) == 6 and len(seen) == 4
    assert not {(t.task_id, t.trial) for t in seen} & {(t.task_id, t.trial) for t in kept}
    assert json.loads(out.read_text())["metrics"]


def test_a_full_sqlite_store_keeps_the_trials_recorded_before(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    real = ResultsStore.record
    calls = {"n": 0}

    def record(self: ResultsStore, run_id: str, result: Any) -> bool:
        calls["n"] += 1
        if calls["n"] > 3:
            with self.writing():  # what SQLite raises at the commit of a full disk
                raise OperationalError("COMMIT", {}, Exception("database or disk is full"))
        return real(self, run_id, result)

    monkeypatch.setattr(ResultsStore, "record", record)
    result = simulator.run(_spec(), store=url, run_id="r")
    assert result.abort_kind == "write_error"
    assert result.aborted == f"cannot write {tmp_path / 'runs.db'}: database or disk is full"
    with ResultsStore(url) as st:
        first = st.recorded_keys("r")
    assert len(first) == 3

    monkeypatch.setattr(ResultsStore, "record", real)
    seen: list[Any] = []
    again = simulator.run(_spec(), store=url, run_id="r", on_trial=seen.append)
    assert again.aborted is None and len(again.trials) == 6
    assert len(seen) == 3 and not {(t.task_id, None, t.trial) for t in seen} & first


def test_other_database_errors_are_not_write_errors(tmp_path):
    with ResultsStore(f"sqlite:///{tmp_path / 'r.db'}") as st, pytest.raises(OperationalError):
        with st.writing():
            raise OperationalError("SELECT", {}, Exception("no such column: x"))


def _failing_at_third_trial_end() -> Any:
    from simulator.execution import recording

    class Failing(recording.GuardedWriter):
        def __init__(self, handle: Any, path: str) -> None:
            super().__init__(handle, path)
            self.n = 0

        def write(self, text: str) -> int:
            self.n += text.count('"trial_end"')  # a Dask run's driver writes a batch's lines at once
            if self.n > 2 and self.error is None:  # the disk fills while the third trial ends
                self.error = WriteError(self.path, "No space left on device")
            return super().write(text)

    return Failing


def _ended_in_log(log: Path) -> set[tuple[str, int]]:
    events = [json.loads(line) for line in log.read_text().splitlines()]
    return {(e["task_id"], e["trial"]) for e in events if e["event"] == "trial_end"}


def test_a_full_disk_at_the_log_file_stops_the_run(tmp_path, monkeypatch):
    monkeypatch.setattr(recording_module, "GuardedWriter", _failing_at_third_trial_end())
    log = tmp_path / "log.jsonl"
    result = simulator.run(_spec(), log_file=log)
    assert result.abort_kind == "write_error"
    assert result.aborted == f"cannot write {log}: No space left on device"
    # one trial at a time: the two trials whose events were all written are recorded, however late the session
    # got their results (it once dropped them when the third had ended before it looked: a loaded machine)
    recorded = {(t.task_id, t.trial) for t in result.trials}
    assert len(recorded) == 2 and recorded == _ended_in_log(log)


def test_trials_logged_before_the_disk_filled_are_kept_with_concurrent_trials(tmp_path, monkeypatch):
    monkeypatch.setattr(recording_module, "GuardedWriter", _failing_at_third_trial_end())
    log = tmp_path / "log.jsonl"
    result = simulator.run(_spec(concurrency=3), log_file=log)
    assert result.abort_kind == "write_error"
    assert len(_ended_in_log(log)) == 2
    # which finished first is up to the threads; a recorded trial always has its events in the log
    assert {(t.task_id, t.trial) for t in result.trials} <= _ended_in_log(log)
    assert len(result.trials) < 6


def test_trials_logged_before_the_disk_filled_are_kept_on_dask_workers(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(recording_module, "GuardedWriter", _failing_at_third_trial_end())
    log = tmp_path / "log.jsonl"
    result = simulator.run(_spec(executor="local:2", concurrency=2), log_file=log)
    assert result.abort_kind == "write_error"
    # the driver writes a trial's lines before it completes the trial: a recorded trial has its lines in the log
    assert {(t.task_id, t.trial) for t in result.trials} <= _ended_in_log(log)
    assert len(result.trials) < 6


def test_the_guarded_writer_names_the_trials_whose_lines_it_lost(tmp_path):
    from simulator.execution.recording import GuardedWriter

    class FullAfterOne:
        def __init__(self) -> None:
            self.lines: list[str] = []

        def write(self, text: str) -> int:
            if self.lines:
                raise OSError(errno.ENOSPC, "No space left on device")
            self.lines.append(text)
            return len(text)

    w = GuardedWriter(FullAfterOne(), "x.jsonl")  # type: ignore[arg-type]
    w.write('{"task_id": "a", "trial": 0, "event": "trial_end"}\n')
    assert not w.lost(("a", None, 0)) and w.error is None
    w.write('{"task_id": "b", "trial": 1, "persona": "rushed", "event": "trial_start"}\n')
    w.write('{"task_id": "c", "trial": 2, "event": "tool_call"}\n')
    assert str(w.error) == "cannot write x.jsonl: No space left on device"
    assert (w.lost(("a", None, 0)), w.lost(("b", "rushed", 1)), w.lost(("c", None, 2))) == (False, True, True)
    assert not w.lost(("b", None, 1))  # another persona's trial
    w.write('{"event": "run_end"}\n')  # a lost line that names no trial: every trial may have lost events
    assert w.lost(("a", None, 0))


def test_write_error_names_path_and_cause():
    e = WriteError("/x/run.jsonl", "No space left on device")
    assert str(e) == "cannot write /x/run.jsonl: No space left on device"
    assert (e.path, e.cause) == ("/x/run.jsonl", "No space left on device")


def test_the_guarded_writer_keeps_the_first_error_and_drops_later_writes(tmp_path):
    from simulator.execution.recording import GuardedWriter

    class Full:
        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

    g = GuardedWriter(Full(), str(Path("/x/log")))  # type: ignore[arg-type]
    assert g.write("a") == 1 and g.write("b") == 1
    g.flush()
    assert str(g.error) == "cannot write /x/log: No space left on device"


def test_a_full_disk_at_the_response_cache_stops_the_run(tmp_path, monkeypatch):
    import sqlite3

    from simulator.models.cache import SQLiteCache
    from simulator.models.llm import LLMResult

    cache = SQLiteCache(tmp_path / "c.db")

    class Full:
        def execute(self, *a: Any) -> Any:
            raise sqlite3.OperationalError("database or disk is full")

        def close(self) -> None:
            pass

    real = cache._conn
    cache._conn = Full()  # type: ignore[assignment]
    result = LLMResult.model_validate({"message": {"role": "assistant", "content": "hi"}, "usage": {},
                                       "latency_s": 0.1, "model": "m"})
    cache["k"] = result  # the model call goes on
    assert cache.write_error == "database or disk is full"
    cache._conn = real
    cache["k2"] = result  # dropped from now on
    assert "k2" not in cache
    cache.close()

    from simulator.execution.build import RunServices

    real_open = RunServices.open

    def open_full(spec: Any, **kw: Any) -> Any:
        services = real_open(spec, **kw)
        if services.cache is not None:
            services.cache.write_error = "database or disk is full"
        return services

    monkeypatch.setattr(RunServices, "open", classmethod(lambda cls, spec, **kw: open_full(spec, **kw)))
    run = simulator.run(_spec(cache=str(tmp_path / "cache.db")))
    assert run.abort_kind == "write_error"
    assert run.aborted == f"cannot write {tmp_path / 'cache.db'}: database or disk is full"


def test_a_log_that_fills_at_the_run_s_end_is_reported_and_exits_1(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from simulator.cli import app
    from simulator.execution import recording

    class FullAtRunEnd(recording.GuardedWriter):
        def write(self, text: str) -> int:
            if '"run_end"' in text and self.error is None:
                self.error = WriteError(self.path, "No space left on device")
            return super().write(text)

    monkeypatch.setattr(recording_module, "GuardedWriter", FullAtRunEnd)
    log, out = tmp_path / "log.jsonl", tmp_path / "run.json"
    result = simulator.run(_spec(), log_file=log, out=out)
    assert result.aborted is None and len(result.trials) == 6  # every trial recorded, the document written
    assert result.log_error == f"cannot write {log}: No space left on device"
    assert len(json.loads(out.read_text())["trials"]) == 6 and '"run_end"' not in log.read_text()

    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--task-ids", "cancel-no-longer-needed",
                                   "--log-file", str(tmp_path / "cli.jsonl"), "--no-progress", "--no-preflight"])
    assert res.exit_code == 1, res.output
    assert (f"error: cannot write {tmp_path / 'cli.jsonl'}: No space left on device: the log's last lines are lost "
            "(every trial is recorded)") in " ".join(res.output.split())


def test_a_partial_file_that_cannot_be_started_leaves_no_temporary_file(tmp_path, monkeypatch):
    from simulator.execution.recording import open_partial

    real_open = Path.open

    class Full:  # the header goes to the buffer; the flush and the flush on close hit the full disk
        def __init__(self, path: Path) -> None:
            self.inner = real_open(path, "w", encoding="utf-8")

        def write(self, text: str) -> int:
            return len(text)

        def flush(self) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self) -> None:
            self.inner.close()
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "open", lambda self, *a, **kw: Full(self) if self.name.endswith(".tmp")
                        else real_open(self, *a, **kw))
    path = tmp_path / "run.json.partial.jsonl"
    with pytest.raises(OSError, match="No space left"):
        open_partial(path, RunSpec(domain="retail"), 1, [], ["a"])
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # neither the file nor its .tmp


def test_a_store_that_cannot_be_opened_is_one_line(tmp_path):
    from typer.testing import CliRunner

    from simulator.cli import app

    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--task-ids", "cancel-no-longer-needed",
                                   "--store", "sqlite:////dev/full", "--no-progress", "--no-preflight"])
    assert res.exit_code == 2, res.output
    assert " ".join(res.output.split()) == ("error: --store sqlite:////dev/full: cannot open the results store: "
                                            "OperationalError: database or disk is full")  # not SQLAlchemy's 2nd line


def test_a_log_whose_last_line_was_cut_gets_the_next_run_s_lines_on_lines_of_their_own(tmp_path):
    from simulator.execution.recording import ends_mid_line

    log = tmp_path / "log.jsonl"
    log.write_text('{"run_id": "a", "event": "run_start"}\n{"run_id": "a", "event": "tri')  # the disk filled here
    assert ends_mid_line(log) and not ends_mid_line(tmp_path / "missing.jsonl")
    simulator.run(RunSpec(domain="retail", task_ids=["cancel-no-longer-needed"], preflight=False), log_file=log)
    lines = log.read_text().splitlines()
    assert lines[1] == '{"run_id": "a", "event": "tri'  # the cut line stays as it was, alone
    events = [json.loads(line)["event"] for line in lines[2:]]  # every line of this run is whole JSON
    assert events[0] == "run_start" and events[-1] == "run_end" and not ends_mid_line(log)


def test_a_dask_worker_whose_cache_filled_up_stops_the_run_in_the_driver():
    """A worker's own response cache (a model run on ``local:N``) failing must reach the driver: it ended silently."""
    import pickle
    from types import SimpleNamespace

    pytest.importorskip("distributed")
    from simulator.execution.dask_executor import RunnerPlugin
    from simulator.types.results import TrialResult
    from simulator.types.trajectory import Trajectory

    e = pickle.loads(pickle.dumps(WriteError("/c.db", "database or disk is full")))  # as Dask sends it back
    assert (type(e), e.path, e.cause, str(e)) == (WriteError, "/c.db", "database or disk is full",
                                                  "cannot write /c.db: database or disk is full")

    trial = TrialResult(task_id="t", trial=0, seed=1, passed=True, termination_reason="user_stop", grade=None,
                        trajectory=Trajectory(), duration_s=0.0)
    plugin = RunnerPlugin(RunSpec(domain="retail").model_dump_json())
    plugin._runner = SimpleNamespace(tasks=[SimpleNamespace(id="t")], run_trial=lambda task, i, p: trial)  # type: ignore[assignment]
    plugin._services = SimpleNamespace(cache=SimpleNamespace(path="/c.db", write_error=None))
    assert plugin.run("t", 0, None).startswith('{"task_id":"t"')
    plugin._services.cache.write_error = "database or disk is full"
    with pytest.raises(WriteError, match="cannot write /c.db: database or disk is full"):
        plugin.run("t", 0, None)
