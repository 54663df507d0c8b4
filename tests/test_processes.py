"""Process x thread execution (simulator/processes.py, ``tausim run --processes``)."""

import functools
import json

import pytest

from simulator.processes import ProcessExecutor, WorkerError, WorkerSpec, build_cli_runner, split_threads
from simulator.runner import RunConfig
from tests.crash_agents import CRASH_TASK, MARKER_ENV
from tests.slow_agents import interrupt_run
from tests.test_cli import invoke

TASK_IDS = ["cancel-no-longer-needed", "modify-order-address", "modify-payment-to-gift-card"]
TIMING = {"duration_s", "agent_seconds", "user_seconds", "tool_seconds", "latency_s", "wall_seconds"}


def spec(**kw):
    cfg = {"domain": "retail", "agent": "faulty:wrong_argument=0.5,skip_confirmation=0.3", "user": "confirming",
           "trials": 3, "concurrency": 4, "seed": 7, "task_ids": TASK_IDS, **kw}
    return WorkerSpec(config=RunConfig(**cfg))


def untimed(doc):
    """``doc`` (a model or JSON value) without its wall-clock fields, which differ from run to run."""
    if hasattr(doc, "model_dump"):
        doc = doc.model_dump(mode="json")
    if isinstance(doc, dict):
        return {k: untimed(v) for k, v in doc.items() if k not in TIMING}
    if isinstance(doc, list):
        return [untimed(v) for v in doc]
    return doc


def broken_build():
    raise RuntimeError("this run cannot be built")


def test_split_threads():
    assert split_threads(32, 4) == [8, 8, 8, 8]
    assert split_threads(8, 3) == [3, 3, 2]
    with pytest.raises(ValueError, match="must be >= --processes"):
        split_threads(2, 3)


@pytest.mark.parametrize("prefetch", [0, 1])
def test_processes_give_the_same_trials_and_metrics_as_threads(prefetch):
    """The faulty oracle draws its faults from each trial's generator: equal results mean equal seeds."""
    s = spec()
    runner = build_cli_runner(s)
    threads = runner.run()
    recorded = []
    with ProcessExecutor(functools.partial(build_cli_runner, s), processes=2, concurrency=4,
                         prefetch=prefetch) as ex:
        procs = runner.run(executor=ex, on_trial=recorded.append)
    assert len(recorded) == len(procs.trials) == len(threads.trials) == 9
    assert [untimed(t) for t in procs.trials] == [untimed(t) for t in threads.trials]
    assert untimed(procs.metrics) == untimed(threads.metrics)
    assert procs.termination_reasons == threads.termination_reasons
    assert {t.passed for t in threads.trials} == {True, False}  # the faults did fire (and not everywhere)


@pytest.mark.parametrize("prefetch", [0, 2])
def test_a_trial_that_always_kills_its_worker_is_recorded_as_infra_error_and_the_run_continues(prefetch):
    """Only the trial that kills its worker is blamed, not those running or queued beside it."""
    s = spec(agent="py:tests.crash_agents:crash_always", user="scripted", trials=2)
    runner = build_cli_runner(s)
    recorded = []
    with ProcessExecutor(functools.partial(build_cli_runner, s), processes=2, concurrency=4,
                         prefetch=prefetch) as ex:
        res = runner.run(executor=ex, on_trial=recorded.append)
    assert sorted(((t.task_id, t.persona, t.trial) for t in recorded), key=str) == sorted(runner.planned(), key=str)
    crashed = {(t.task_id, t.trial): t for t in res.trials if not t.passed}
    assert list(crashed) == [(CRASH_TASK, 0)]
    bad = crashed[(CRASH_TASK, 0)]
    assert bad.termination_reason == "infra_error" and "worker process died (exit code 3)" in bad.error
    assert bad.seed == next(t.seed for t in build_cli_runner(spec(user="scripted", trials=2)).run().trials
                            if (t.task_id, t.trial) == (CRASH_TASK, 0))
    assert res.metrics["pass^1"] == pytest.approx(5 / 6)  # metrics computed as usual, the crash a failure


def test_trials_of_a_crashed_worker_run_again(tmp_path, monkeypatch):
    monkeypatch.setenv(MARKER_ENV, str(tmp_path / "crashed"))
    s = spec(agent="py:tests.crash_agents:crash_once", user="scripted", trials=2)
    runner = build_cli_runner(s)
    with ProcessExecutor(functools.partial(build_cli_runner, s), processes=2, concurrency=4) as ex:
        res = runner.run(executor=ex)
    assert (tmp_path / "crashed").exists()
    assert len(res.trials) == 6 and all(t.passed for t in res.trials)


def test_a_worker_that_cannot_build_the_run_fails_it_clearly():
    runner = build_cli_runner(spec())
    with ProcessExecutor(broken_build, processes=1, concurrency=1) as ex:
        with pytest.raises(WorkerError, match="this run cannot be built"):
            runner.run(executor=ex)


def test_a_worker_that_rebuilds_a_different_run_is_refused():
    runner = build_cli_runner(spec())
    with ProcessExecutor(functools.partial(build_cli_runner, spec(trials=2)), processes=1, concurrency=2) as ex:
        with pytest.raises(WorkerError, match="different run"):
            runner.run(executor=ex)


def test_cli_processes_record_every_trial_in_the_store(tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ["run", "--agent", "faulty:wrong_argument=0.5", "--user", "confirming", "--task-ids", ",".join(TASK_IDS),
            "--trials", "2", "--concurrency", "3", "--seed", "3"]
    res = invoke(*args, "--processes", "2", "--store", url, "--run-id", "p", "--out", tmp_path / "p.json")
    assert res.exit_code == 0, res.output
    assert invoke(*args, "--out", tmp_path / "t.json").exit_code == 0
    procs, threads = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "pt")
    assert procs["recorded"] == procs["planned"] == 6 and procs["duplicates"] == 0
    assert untimed(procs["metrics"]) == untimed(threads["metrics"])
    assert untimed(procs["trials"]) == untimed(threads["trials"])
    assert invoke("run", "--processes", "3", "--concurrency", "2").exit_code == 2


def test_ctrl_c_with_processes_keeps_finished_trials(tmp_path):
    partial = tmp_path / "run.json.partial.jsonl"
    code, stderr, lines = interrupt_run(
        ["run", "--agent", "py:tests.slow_agents:stuck_after_first", "--task-ids", ",".join(TASK_IDS), "--trials", "2",
         "--concurrency", "4", "--processes", "2", "--out", str(tmp_path / "run.json")], partial, 3, 120)
    assert code == 130
    assert "interrupted" in stderr and str(partial) in stderr
    assert len(lines) == 3 and all(x["trial"] == 0 for x in lines)


def test_cli_processes_workers_write_their_trials_to_the_run_log(tmp_path):
    log = tmp_path / "run.jsonl"
    res = invoke("run", "--task-ids", ",".join(TASK_IDS), "--trials", "2", "--concurrency", "2", "--processes", "2",
                 "--log-file", log, "--run-id", "logged", "--store", f"sqlite:///{tmp_path / 'runs.db'}")
    assert res.exit_code == 0, res.output
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert {e["run_id"] for e in events} == {"logged"}
    ends = sorted((e["task_id"], e["trial"]) for e in events if e["event"] == "trial_end")
    assert ends == sorted((t, i) for t in TASK_IDS for i in range(2))
    assert [e["event"] for e in events if "task_id" not in e] == ["run_start", "run_end"]
