"""Executors on Dask (``--executor local:N`` / ``dask://HOST:PORT``): same trials as threads, dead workers, bad input.

Clusters bind to 127.0.0.1 only; one test runs a scheduler, a worker and ``tausim run --executor dask://`` inside
a loopback-only network namespace (``unshare -n``) where that is available.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.execution.build import build_runner
from simulator.execution.executors import ExecutorError, open_executor
from simulator.types.spec import RunSpec, parse_executor
from tests._support import crash_agents, slow_agents

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def outcomes(doc):
    """Per (task, persona, trial): passed, termination reason, seed and the trajectory's messages."""
    return {(t["task_id"], t["persona"], t["trial"]): (t["passed"], t["termination_reason"], t["seed"],
                                                      json.dumps(t["trajectory"]["messages"]))
            for t in doc["trials"]}


def test_local_dask_run_gives_the_same_trials_as_threads(tmp_path):
    """Must-show: built-in retail tasks, reference agent, rule user, every persona: local:2 == threads."""
    docs = {}
    for executor in ("threads", "local:2"):
        out = tmp_path / f"{executor.replace(':', '')}.json"
        log = tmp_path / f"{executor.replace(':', '')}.jsonl"
        res = invoke("run", "--agent", "reference", "--user", "rule", "--personas", "all", "--seed", 3,
                     "--concurrency", 2, "--executor", executor, "--out", out, "--log-file", log, "--no-progress",
                     "--store", f"sqlite:///{tmp_path / 'runs.db'}", "--run-id", executor)
        assert res.exit_code == 0, res.output
        docs[executor] = json.loads(out.read_text())  # from the store: every trial was recorded by the driver
        assert docs[executor]["run_id"] == executor and docs[executor]["complete"]
        events = [json.loads(line) for line in log.read_text().splitlines()]
        ends = [e for e in events if e["event"] == "trial_end"]
        assert len(ends) == len(docs[executor]["trials"])  # the driver wrote every worker trial's events
        assert {e["run_id"] for e in events} == {events[0]["run_id"]}
    threads, dask = docs["threads"], docs["local:2"]
    n_personas = len(threads["config"]["personas"])
    assert n_personas >= 2 and len(threads["trials"]) == threads["planned"] > n_personas
    assert outcomes(threads) == outcomes(dask)
    def metrics(doc):  # all but wall-clock latencies
        return {k: v for k, v in doc["metrics"].items() if k != "latency_s"}

    assert metrics(threads)["pass^1"] > 0 and metrics(threads) == metrics(dask)
    assert threads["by_persona"] == dask["by_persona"]
    assert dask["config"]["executor"] == "local:2"


def test_a_trial_that_kills_its_workers_is_infra_error_and_the_run_goes_on(tmp_path, monkeypatch):
    """Trial 0 kills every worker that runs it (infra_error after Dask's allowed failures); trial 1 kills one
    worker once: Dask replaces the worker and runs the trial again, which passes."""
    marker = tmp_path / "crashed-once"
    monkeypatch.setenv(crash_agents.MARKER_ENV, str(marker))  # before the workers are spawned: they inherit it
    spec = RunSpec.model_validate({"domain": "retail", "agent": "py:tests._support.crash_agents:crash_always_and_once",
                                   "task_ids": [crash_agents.CRASH_TASK, "exchange-two-items"], "trials": 2,
                                   "executor": "local:2", "concurrency": 2})
    runner = build_runner(spec)
    lines: list[str] = []
    # allowed_failures counts every worker death while a task was assigned to that worker: 2 (not 1) so that a
    # trial that merely shared a dying worker's queue is not declared a killer by chance; trial 0 dies 3 times
    with open_executor(spec, allowed_failures=2, log_sink=lines.extend, log_run_id="R") as ex:
        assert ex is not None
        result = runner.run(executor=ex)
    by_key = {(t.task_id, t.trial): t for t in result.trials}
    assert len(by_key) == 4
    crashed = by_key[(crash_agents.CRASH_TASK, 0)]
    assert crashed.termination_reason == "infra_error" and not crashed.passed
    assert "died" in (crashed.error or "")
    assert marker.read_text() == "crashed"  # trial 1 did kill a worker once, and then passed (below)
    others = [t for k, t in by_key.items() if k != (crash_agents.CRASH_TASK, 0)]
    assert all(t.passed and t.termination_reason != "infra_error" for t in others), [
        (t.task_id, t.trial, t.termination_reason, (t.error or "")[-300:]) for t in others]
    ends = [json.loads(line) for line in lines if '"trial_end"' in line]
    assert sorted((e["task_id"], e["trial"]) for e in ends) == sorted(
        (t.task_id, t.trial) for t in others)  # the crashed trial never ended on a worker


def test_an_async_agent_raising_keyboard_interrupt_on_a_worker_is_its_trial_s_agent_error(tmp_path):
    """It stopped the run: the trial's KeyboardInterrupt came back to the driver as the user's Ctrl-C."""
    out = tmp_path / "run.json"
    res = invoke("run", "--agent", "py:tests._support.crash_agents:interrupting_async_once", "--user", "rule",
                 "--task-ids", f"{crash_agents.CRASH_TASK},exchange-two-items", "--trials", 2, "--executor",
                 "local:2", "--concurrency", 2, "--out", out, "--no-progress")
    assert res.exit_code == 0, res.output
    got = {(t["task_id"], t["trial"]): t for t in json.loads(out.read_text())["trials"]}
    assert len(got) == 4
    interrupted = got.pop((crash_agents.CRASH_TASK, 0))
    assert interrupted["termination_reason"] == "agent_error" and "KeyboardInterrupt: from the agent" in (
        interrupted["error"] or "")
    assert all(t["passed"] for t in got.values())


def test_executor_strings():
    assert parse_executor("threads") == ("threads", None)
    assert parse_executor("local:3") == ("local", 3)
    assert parse_executor("dask://10.1.2.3:8786") == ("dask", "tcp://10.1.2.3:8786")
    for bad in ("thread", "local:0", "local:x", "local:\u00b2", "dask://nohost", "ray://h:1", "dask://h:0",
                "dask://h:99999", "dask://h:\u00b2"):
        with pytest.raises(ValueError, match="--executor"):
            parse_executor(bad)
    with pytest.raises(ValueError, match="port 99999 is not a TCP port"):
        parse_executor("dask://h:99999")


def test_bad_executor_fails_before_any_trial(tmp_path):
    slow_agents.constructed.clear()
    res = invoke("run", "--agent", "py:tests._support.slow_agents:counting_oracle", "--executor", "ray://h:1",
                 "--no-progress")
    assert res.exit_code == 2 and "--executor 'ray://h:1': unknown executor" in res.output
    assert len(res.output.strip().splitlines()) == 1
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = invoke("run", "--agent", "py:tests._support.slow_agents:counting_oracle", "--executor", f"dask://127.0.0.1:{port}",
                 "--dask-timeout", 1, "--out", tmp_path / "r.json", "--no-progress")
    assert res.exit_code == 2, res.output
    assert f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}" in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert slow_agents.constructed == [] and not (tmp_path / "r.json").exists()
    with pytest.raises(ExecutorError, match="unknown executor"):
        with open_executor(RunSpec.model_construct(domain="retail", executor="nope")):
            pass


def test_local_with_more_workers_than_the_machine_can_take_is_refused_before_any_trial(tmp_path, monkeypatch):
    """``local:99999`` once tried to start 99999 worker processes and never got past starting the cluster."""
    from simulator.execution import executors

    monkeypatch.setattr(executors, "usable_cores", lambda: 1)
    assert executors.local_worker_limit() == executors.LOCAL_WORKERS_PER_CORE == 4
    res = invoke("run", "--agent", "oracle", "--executor", "local:5", "--out", tmp_path / "r.json", "--no-progress")
    assert res.exit_code == 2, res.output
    line = " ".join(res.output.split())
    assert "--executor local:5: 5 worker processes on 1 usable core; local:N takes at most 4" in line
    assert len(res.output.strip().splitlines()) <= 2 and "Traceback" not in res.output
    assert not (tmp_path / "r.json").exists()


_NETNS_SCRIPT = textwrap.dedent("""
    import sys
    from distributed import LocalCluster
    from simulator.cli import app

    if __name__ == "__main__":  # worker processes are spawned: they import this file again
        with LocalCluster(n_workers=1, threads_per_worker=2, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster:
            address = cluster.scheduler_address.removeprefix("tcp://")
            try:
                app(["run", "--agent", "reference", "--user", "rule", "--personas", "terse,impatient",
                     "--task-ids", "cancel-no-longer-needed,exchange-two-items", "--trials", "2",
                     "--executor", f"dask://{address}", "--out", sys.argv[1], "--no-progress"])
            except SystemExit as e:
                sys.exit(e.code)
""")


def _netns_available() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False).returncode == 0


@pytest.mark.skipif(not _netns_available(), reason="needs `unshare -n` (root or user namespaces) and `ip`")
def test_existing_dask_cluster_in_a_loopback_only_network_namespace(tmp_path):
    out = tmp_path / "dask.json"
    script = tmp_path / "run_in_netns.py"
    script.write_text(_NETNS_SCRIPT)
    cmd = f"ip link set lo up && exec {sys.executable} {script} {out}"
    proc = subprocess.run(["unshare", "-n", "sh", "-c", cmd], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    dask = json.loads(out.read_text())
    ref = tmp_path / "threads.json"
    res = invoke("run", "--agent", "reference", "--user", "rule", "--personas", "terse,impatient",
                 "--task-ids", "cancel-no-longer-needed,exchange-two-items", "--trials", 2, "--out", ref,
                 "--no-progress")
    assert res.exit_code == 0, res.output
    threads = json.loads(ref.read_text())
    assert len(dask["trials"]) == 2 * 2 * 2
    assert outcomes(dask) == outcomes(threads)


def test_dask_batches_give_every_thread_of_the_cluster_work():
    pytest.importorskip("distributed")
    from simulator.execution.dask_executor import MAX_BATCH, DaskExecutor

    class FakeClient:
        def scheduler_info(self):
            return {"workers": {"a": {"nthreads": 16}, "b": {"nthreads": 16}}}

    ex = DaskExecutor.__new__(DaskExecutor)  # no cluster: only the batch arithmetic is under test
    ex.client, ex.model_free = FakeClient(), False
    assert MAX_BATCH == 4
    assert ex.batch_size(128) == 4  # 32 threads, 4 trials each
    assert ex.batch_size(127) == 4  # 32 batches (the last of 3): still one round of batches per thread
    assert ex.batch_size(192) == 3  # 6 trials per thread: two rounds of 3 (batches of 4: 16 threads would run 8)
    assert ex.batch_size(96) == 1  # fewer than 4 trials per thread: one trial per Dask task
    assert ex.batch_size(64) == 1
    assert ex.batch_size(10) == 1
    assert ex.batch_size(10_000) == MAX_BATCH
    assert ex.batch_size(0) == 1


def test_local_workers_are_pinned_only_when_each_can_have_its_own_core(monkeypatch):
    pytest.importorskip("distributed")
    from simulator.execution import executors
    from simulator.execution.dask_executor import CorePinning, pinned_core

    assert [pinned_core(i, [2, 5]) for i in range(4)] == [2, 5, 2, 5]
    assert pinned_core("tcp://127.0.0.1:4000", [0, 1]) is None and pinned_core(0, []) is None

    class FakeClient:
        def __init__(self):
            self.plugins = []

        def register_plugin(self, plugin, name):
            self.plugins.append((plugin, name))

    monkeypatch.setattr(executors.os, "sched_getaffinity", lambda pid: {3, 1}, raising=False)
    client = FakeClient()
    executors._pin_workers(client, 2)
    assert [(type(p), p.cores, n) for p, n in client.plugins] == [(CorePinning, [1, 3], CorePinning.name)]
    client = FakeClient()
    executors._pin_workers(client, 3)  # more workers than cores: left to the OS scheduler
    assert client.plugins == []
    for off in ("0", "false", "No", " off "):
        monkeypatch.setenv("TAUSIM_PIN_WORKERS", off)
        executors._pin_workers(client, 2)
        assert client.plugins == [], off


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux CPU affinity and at least 2 usable cores")
def test_local_cluster_workers_run_on_distinct_cores():
    spec = RunSpec.model_validate({"domain": "retail", "executor": "local:2", "concurrency": 4})
    with open_executor(spec) as ex:
        assert ex is not None
        loops = ex.client.run(lambda: sorted(os.sched_getaffinity(0)))  # each worker's event-loop thread
        tasks = ex.client.gather([ex.client.submit(lambda w: sorted(os.sched_getaffinity(0)), w, workers=[w],
                                                   pure=False) for w in loops])  # a task thread started later
    assert all(len(cores) == 1 for cores in loops.values()), loops
    assert len({cores[0] for cores in loops.values()}) == 2, loops
    assert tasks == list(loops.values())


def test_local_cluster_memory_monitors_poll_every_half_second_not_every_100_ms():
    # Dask's default (100 ms) polls each worker's memory ten times a second from the nanny (in the driver process)
    # and from the worker itself, CPU the trials need on a small machine (executors.IDLE_SETTINGS)
    import dask

    assert dask.config.get("distributed.worker.memory.monitor-interval") == "100ms"  # the default this test changes
    spec = RunSpec.model_validate({"domain": "retail", "executor": "local:1", "concurrency": 1})
    with open_executor(spec) as ex:
        assert ex is not None
        in_workers = ex.client.run(lambda dask_worker: dask_worker.memory_manager.memory_monitor_interval)
        nannies = [n.memory_manager.memory_monitor_interval for n in ex.client.cluster.workers.values()]
        callbacks = ex.client.run(lambda dask_worker: dask_worker.periodic_callbacks["memory_monitor"].callback_time)
    assert list(in_workers.values()) == [0.5] and nannies == [0.5]
    assert list(callbacks.values()) == [500.0]  # the worker's periodic callback (ms) runs at that interval


def test_a_run_stopped_early_on_a_dask_executor_ends(tmp_path):
    """Every trial ends setup_error (no API key, no preflight): the run stops at the first and the command exits;
    the trials still queued were cancelled, which once left the driver waiting for them forever."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, "-m", "simulator.cli", "run", "--agent", "litellm:openai/gpt-4o-mini",
                           "--no-preflight", "--executor", "local:2", "--concurrency", "4", "--trials", "4",
                           "--no-progress", "--out", str(out)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "run stopped" in proc.stderr + proc.stdout
    doc = json.loads(out.read_text())
    assert 0 < len(doc["trials"]) < doc["planned"]
    assert all(t["termination_reason"] == "setup_error" for t in doc["trials"])


def test_two_local_clusters_at_once_take_free_ports_on_loopback():
    import subprocess as sp
    import warnings

    spec = RunSpec.model_validate({"domain": "retail", "executor": "local:1", "concurrency": 1})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with open_executor(spec) as first, open_executor(spec) as second:
            assert first is not None and second is not None
            pids = {os.getpid(), *first.client.run(os.getpid).values(), *second.client.run(os.getpid).values()}
            listening = sp.run(["ss", "-ltnpH"], capture_output=True, text=True, check=False).stdout \
                if shutil.which("ss") else ""
    assert not [str(w.message) for w in caught if "already in use" in str(w.message)]
    ours = [line for line in listening.splitlines() if any(f"pid={p}," in line for p in pids)]
    assert all(line.split()[3].startswith("127.0.0.1:") for line in ours), ours
    assert not any(line.split()[3].endswith(":8787") for line in ours), ours


def test_ctrl_c_reaches_only_the_driver_of_a_local_cluster():
    """Ctrl-C goes to the whole foreground process group: a local worker process that got it printed a
    KeyboardInterrupt traceback and died (the nanny then started another); now it ignores it and lives on."""
    import signal
    import time

    spec = RunSpec.model_validate({"domain": "retail", "executor": "local:1", "concurrency": 1})
    with open_executor(spec) as ex:
        assert ex is not None
        before = ex.client.run(os.getpid)
        for pid in before.values():
            os.kill(pid, signal.SIGINT)
        time.sleep(1.0)  # a worker that took it is gone by now (not a timing assertion: it only lets it die)
        after = ex.client.run(os.getpid, wait=True)
        handlers = ex.client.run(lambda: signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
    assert after == before
    assert list(handlers.values()) == [True]


def test_abandoning_a_local_cluster_kills_its_busy_workers_and_it_still_closes():
    """Ctrl-C of a local:N run: closing the cluster waited ~4 s per busy worker (a trial thread cannot be stopped);
    the CLI now kills the worker processes first (``DaskExecutor.abandon``)."""
    import time

    spec = RunSpec.model_validate({"domain": "retail", "executor": "local:2", "concurrency": 2})
    with open_executor(spec) as ex:
        assert ex is not None
        busy = [ex.client.submit(time.sleep, 60, pure=False) for _ in range(2)]
        ex.client.wait_for_workers(2)
        pids = set(ex.client.run(os.getpid).values())
        killed = ex.abandon()
        ex.client.cancel(busy)
    assert set(killed) == pids and len(pids) == 2
    for pid in pids:  # gone (reaped by the nanny) or at most a zombie
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        assert state == "Z", (pid, state)


def test_a_batch_sends_each_trial_to_the_driver_as_it_finishes(tmp_path, monkeypatch):
    """One worker thread: the 4 trials of the task run as one batch. Trial 3's agent waits for trial 0's result to
    have reached the driver (the driver writes a marker when it records trial 0): before, a batch's results came
    back only when the whole batch ended, so trial 3 waited in vain and failed."""
    from tests._support import slow_agents

    marker = tmp_path / "trial0-recorded"
    monkeypatch.setenv(slow_agents.MARKER_ENV, str(marker))  # before the workers are spawned: they inherit it
    agent = "py:tests._support.slow_agents:last_of_batch_waits_for_the_first"
    spec = RunSpec.model_validate({"domain": "retail", "agent": agent,
                                   "task_ids": ["cancel-no-longer-needed"], "trials": 4, "executor": "local:1",
                                   "concurrency": 1})
    runner = build_runner(spec)
    order = []

    def on_trial(res):
        order.append(res.trial)
        if res.trial == 0:
            marker.write_text("recorded")

    with open_executor(spec) as ex:
        assert ex is not None and ex.batch_size(4) == 4
        result = runner.run(executor=ex, on_trial=on_trial)
    assert [(t.trial, t.termination_reason, t.passed) for t in result.trials] == [
        (i, "user_stop", True) for i in range(4)], [t.error for t in result.trials]
    assert order == [0, 1, 2, 3]


def test_a_single_trial_submitted_to_dask_equals_the_same_trial_in_this_process():
    spec = RunSpec.model_validate({"domain": "retail", "executor": "local:1", "concurrency": 1,
                                   "task_ids": ["cancel-no-longer-needed"], "seed": 5})
    runner = build_runner(spec)
    here = runner.run_trial(runner.tasks[0], 1)
    with open_executor(spec) as ex:
        assert ex is not None
        there = ex.submit(runner.run_trial, runner.tasks[0], 1).result(timeout=120)
    assert (there.task_id, there.trial, there.seed, there.passed, there.termination_reason) == (
        here.task_id, here.trial, here.seed, here.passed, here.termination_reason)
    assert here.passed and there.trajectory.messages == here.trajectory.messages
