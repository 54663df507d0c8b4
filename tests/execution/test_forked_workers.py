"""``local:N`` on a model-free run: the worker processes are forked from the driver and take its runner with them.

The driver builds the run (template, tasks, gold replays) and prepares its tasks once; the workers used to build and
prepare the same run again each, after the driver had (about 0.8 s of a 920-trial retail run's wall, longer on a
loaded machine). Each forked worker now runs its trials on its copy of the driver's runner.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import sys
import time
from contextlib import contextmanager

import pytest

import simulator
from simulator.execution import build, session
from simulator.execution.build import build_runner
from simulator.execution.executors import ExecutorError, open_executor
from simulator.execution.runner import Runner
from simulator.types.spec import RunSpec

pytest.importorskip("distributed")
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="local:N forks its workers on Linux only")

TASKS = ["cancel-no-longer-needed", "exchange-two-items"]


def _spec(**extra):
    """A model-free run (reference agent, rule user) of two built-in retail tasks, two trials each, on local:2."""
    return RunSpec.model_validate({"domain": "retail", "agent": "reference", "user": "rule", "task_ids": TASKS,
                                   "trials": 2, "seed": 4, "executor": "local:2", "concurrency": 2, **extra})


def _refuse(*args, **kwargs):
    raise AssertionError("a forked worker built the run again")


def _view(result):
    """Each trial's outcome, seed and messages (what a run records, its timings aside)."""
    return sorted((t.task_id, t.trial, t.passed, t.termination_reason, t.seed,
                   json.dumps([m.model_dump(mode="json") for m in t.trajectory.messages])) for t in result.trials)


def _worker_prepared(ex):
    """Task ids each worker's runner holds prepared (by worker), read on the workers."""
    name = ex._plugin.name
    return ex.client.run(lambda dask_worker: sorted(dask_worker.plugins[name]._runner.prepared))


def test_forked_workers_run_the_drivers_prepared_runner_and_never_build_the_run(monkeypatch):
    spec = _spec()
    expected = build_runner(spec.model_copy(update={"executor": "threads"})).run()  # a build of its own, threads
    runner = build_runner(spec)
    monkeypatch.setattr(build, "build_runner", _refuse)  # a worker forked from now on has it too
    lines: list[str] = []
    with open_executor(spec, runner=runner, log_sink=lines.extend, log_run_id="R") as ex:
        assert ex is not None
        assert sorted(runner.prepared) == sorted(TASKS)  # the driver prepared the tasks before forking the workers
        before = _worker_prepared(ex)  # no trial has run yet: the workers' runners came prepared
        result = runner.run(executor=ex)
    assert len(before) == 2 and all(ids == sorted(TASKS) for ids in before.values()), before
    assert len(result.trials) == 4 and all(t.termination_reason != "infra_error" for t in result.trials)
    assert _view(result) == _view(expected)
    ends = [json.loads(line) for line in lines if '"trial_end"' in line]  # each worker's copy logs to its buffer
    assert sorted((e["task_id"], e["trial"]) for e in ends) == sorted((t, i) for t in TASKS for i in range(2))
    assert {e["run_id"] for e in ends} == {"R"}


def test_a_worker_the_nanny_restarts_is_forked_again_with_the_runner(monkeypatch):
    spec = _spec()
    runner = build_runner(spec)
    monkeypatch.setattr(build, "build_runner", _refuse)
    with open_executor(spec, runner=runner) as ex:
        assert ex is not None
        first = ex.client.run(os.getpid)
        os.kill(next(iter(first.values())), signal.SIGKILL)
        deadline = time.monotonic() + 60
        pids = first
        while time.monotonic() < deadline:  # until the dead worker has left and its replacement joined
            ex.client.wait_for_workers(2, timeout=60)
            pids = {w: pid for w, pid in ex.client.run(os.getpid, on_error="return").items()
                    if isinstance(pid, int)}  # a worker dead but not removed yet answers with an error
            if len(pids) == 2 and set(pids.values()) != set(first.values()):
                break
            time.sleep(0.1)
        assert len(pids) == 2 and len(set(pids.values()) - set(first.values())) == 1, (first, pids)
        assert all(ids == sorted(TASKS) for ids in _worker_prepared(ex).values())
        result = runner.run(executor=ex)
    assert len(result.trials) == 4 and all(t.termination_reason != "infra_error" for t in result.trials)


def test_with_a_response_cache_each_worker_builds_the_run(monkeypatch, tmp_path):
    """A forked SQLite connection must not be used or closed by the child: such runs keep the workers' own build."""
    spec = _spec(cache=str(tmp_path / "cache.sqlite"))
    runner = build_runner(spec)
    monkeypatch.setattr(build, "build_runner", _refuse)
    with pytest.raises(ExecutorError, match="could not build the run.*built the run again"):
        with open_executor(spec, runner=runner):
            pass
    runner.services.close()


def test_a_runner_plugin_sent_any_other_way_leaves_the_runner_behind():
    from simulator.execution.dask_executor import RunnerPlugin

    runner = build_runner(_spec())
    plugin = RunnerPlugin(_spec().model_dump_json(), "R", inherited=runner)
    copy = pickle.loads(pickle.dumps(plugin))  # spawned workers, register_plugin, dask://: the spec only
    assert copy.inherited is None and copy._runner is None
    assert (copy.name, copy.spec_json, copy.log_run_id) == (plugin.name, plugin.spec_json, plugin.log_run_id)


def test_a_run_hands_the_executor_its_runner_and_a_log_sink_only_with_a_log_file(monkeypatch, tmp_path):
    """Without a log file the workers' trial log lines went nowhere: they were rendered and sent for nothing."""
    seen = []

    @contextmanager
    def executor(spec, **kwargs):
        seen.append(kwargs)
        yield None  # the trials run in threads: only what the session hands over is under test

    monkeypatch.setattr(session, "open_executor", executor)
    spec = RunSpec.model_validate({"domain": "retail", "agent": "oracle", "task_ids": TASKS[:1],
                                   "executor": "local:2"})
    simulator.run(spec)
    simulator.run(spec, log_file=tmp_path / "run.jsonl")
    assert [kw["log_sink"] is None for kw in seen] == [True, False]
    assert all(isinstance(kw["runner"], Runner) and [t.id for t in kw["runner"].tasks] == TASKS[:1]
               for kw in seen)


def test_forked_workers_never_use_the_drivers_sqlite_connections():
    spec = _spec()
    runner = build_runner(spec)
    with open_executor(spec, runner=runner) as ex:
        assert ex is not None
        driver_pool = runner.template.engine.pool
        assert driver_pool.checkedin() > 0  # the driver's prepare left trial copies in its pool, which a fork copies
        name = ex._plugin.name
        seen = ex.client.run(lambda dask_worker: (id(dask_worker.plugins[name]._runner.template.engine.pool),
                                                  dask_worker.plugins[name]._runner.template.engine.pool.checkedin()))
        result = runner.run(executor=ex)
    # each worker has a pool of its own, empty when it started: its copies are made from the template's bytes
    assert len(seen) == 2 and all(pool != id(driver_pool) and n == 0 for pool, n in seen.values()), seen
    assert len(result.trials) == 4 and all(t.termination_reason != "infra_error" for t in result.trials)
