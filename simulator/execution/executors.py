"""Where a run's trials execute: threads in this process, or Dask distributed workers.

``spec.executor`` (``tausim run --executor``) selects it:

- ``auto`` (default): threads or ``local:N``, chosen when the run starts by :func:`choose_executor`, which also
  says why (the run header, the run document's ``executor`` field and the log's ``run_start`` event carry it):
  threads for a run that calls no model, for fewer than :data:`AUTO_PROCESSES_MIN_CONCURRENCY` trials at once, on
  one core or without Dask; else ``local:N`` with one worker process per usable core.
- ``threads``: a thread pool of ``spec.concurrency`` threads in this process
  (:meth:`simulator.execution.runner.Runner.run` makes it).
- ``local:N``: a Dask distributed ``LocalCluster`` on 127.0.0.1 with N worker processes (no dashboard), each of
  ``ceil(concurrency / N)`` threads, so about ``concurrency`` trials are in flight in total. Processes spread
  litellm's per-call CPU work over the cores that one interpreter lock would serialize. On Linux, with no more
  workers than cores, each worker process is pinned to its own core (set ``TAUSIM_PIN_WORKERS=0`` to leave them
  to the OS scheduler).
- ``dask://HOST:PORT``: an existing Dask cluster (``dask scheduler`` / ``dask worker``, on other machines);
  each worker runs as many trials at once as it has threads (``dask worker --nthreads``). Workers need tausim
  installed and the run's data directory, task file and cache file at the same paths.

Either Dask executor (:mod:`simulator.execution.dask_executor`) registers a worker plugin that builds the run once per
worker
from the spec (:func:`simulator.execution.build.build_runner`, the same path as the CLI's), except the forked workers
of a model-free ``local:N`` run, which take the driver's built and prepared runner with them (:func:`open_executor`'s
``runner``); a Dask task
(``pure=False``) runs
a batch of up to :data:`simulator.execution.dask_executor.MAX_BATCH` trials in turn on the worker's runner (each Dask
task
costs milliseconds of CPU in the driver, scheduler and worker; a batch pays it once; every thread of the cluster
still gets work), and the batch's finished :class:`~simulator.types.results.TrialResult` objects come back as one JSON
string with the trials' log lines; a batch's finished trials are also published while it runs (a Dask event, at
most every :data:`simulator.execution.dask_executor.PUBLISH_INTERVAL_S`), so the driver records slow trials as they
finish,
not when their batch ends. The driver alone writes the store,
``--out``, the progress bar and the log. A worker that dies is replaced and its tasks rescheduled by
Dask; a batch whose workers died more than ``distributed.scheduler.allowed-failures`` times (Dask's
``KilledWorker``) is submitted again trial by trial, and the trial that still kills its workers is recorded
``infra_error``; the run goes on. Trial seeds depend only on (run seed, task, trial index), so results are the
same as with threads.

Dask (``distributed``) is an optional dependency (``pip install 'tausim[dask]'``), imported only when a Dask
executor is used.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from simulator.errors import ExecutorError
from simulator.execution.runner import Runner, infra_error_result
from simulator.types.secrets import redact_url
from simulator.types.spec import RunSpec, parse_executor

__all__ = ["AUTO_PROCESSES_MIN_CONCURRENCY", "IDLE_SETTINGS", "LOCAL_WORKERS_PER_CORE", "MODEL_FREE_SCHEMES",
           "MODEL_SCHEMES", "ExecutorChoice", "ExecutorError", "calls_models", "choose_executor", "infra_error_result",
           "known_model_free",
           "local_worker_limit", "open_executor", "usable_cores"]

LOCAL_WORKERS_PER_CORE = 4
"""``local:N`` takes at most this many worker processes per usable core: beyond that the processes only compete for
the cores (more trials at once come from ``--concurrency``, the threads of each worker), and a mistyped N (``local:
99999``) would try to start that many Python processes and never finish starting the cluster."""

IDLE_SETTINGS: dict[str, Any] = {
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "500ms",
}
"""Dask settings that quiet a cluster's periodic work, for the clusters tausim starts (``local:N``): Dask's defaults
(an event-loop tick every 20 ms, a system monitor every 500 ms) cost each worker a few percent of a core even while
its trials wait for their models, CPU the trials need on a small machine (measured with scripts/bench-concurrency).
Work stealing stays on: with it off, tests/execution/test_executors.py's killed-worker test failed (a second trial ended
``infra_error``). The memory monitors (each nanny's, in the driver process, and each worker's) read their worker's
memory every 500 ms, not 100 ms: idle, a ``local:2`` cluster's three processes used 30-35 ms of CPU per second at
100 ms, 20-23 at 500 ms (/proc CPU times, 10 s idle after a run); a worker past its memory limit is still stopped
within half a second."""


AUTO_PROCESSES_MIN_CONCURRENCY = 64
"""``auto`` runs model-calling trials in worker processes from this many trials at once. Measured with
scripts/bench-concurrency (200 ms per model call, 2 cores, docs/benchmarks.md): at 32 in flight threads reach 0.92
efficiency and ``local:2`` 0.95 (not worth a cluster's start-up of 1-3 s); at 128 threads 0.55, ``local:2`` 0.87 (one
interpreter lock cannot carry litellm's CPU per call for that many trials)."""

MODEL_SCHEMES = ("litellm:", "llm:", "openai-agents:", "langgraph:")
"""Agent and user schemes that call a model from this process (their trials spend CPU in litellm or a framework per
call). ``http:`` agents and ``py:`` factories are not counted: what they do is not known here."""


MODEL_FREE_SCHEMES = frozenset({"oracle", "null", "reference", "faulty", "scripted", "confirming", "rule", "replay"})
"""tausim's own agent and user schemes that never call a model (``replay:`` only without a model fallback user)."""


@dataclass(frozen=True)
class ExecutorChoice:
    """The executor a run uses and why (what ``auto`` resolved to, or the executor asked for)."""

    executor: str
    """``threads``, ``local:N`` or ``dask://HOST:PORT``."""
    reason: str
    """One line, e.g. ``"auto: no model is called (agent oracle, user scripted): threads"``."""


def calls_models(spec: RunSpec) -> bool:
    """True when the run's agent, user (or fallback user) or judge calls a model (:data:`MODEL_SCHEMES`)."""
    fallback = spec.user.args.get("fallback")
    names = [spec.agent.name, spec.user.name, *([fallback] if isinstance(fallback, str) else [])]
    return spec.judge is not None or any(name.startswith(MODEL_SCHEMES) for name in names)


def known_model_free(spec: RunSpec) -> bool:
    """True when the run's agent and user are tausim's own model-free schemes and there is no judge.

    Such trials take milliseconds of CPU each: a Dask executor batches them coarsely. Schemes:
    :data:`MODEL_FREE_SCHEMES`; ``py:`` and plug-in schemes are not known to be model-free.
    """
    fallback = spec.user.args.get("fallback")
    names = [spec.agent.name, spec.user.name, *([fallback] if isinstance(fallback, str) else [])]
    return spec.judge is None and all(name.partition(":")[0] in MODEL_FREE_SCHEMES for name in names)


def choose_executor(spec: RunSpec, cores: int | None = None, dask_installed: bool | None = None) -> ExecutorChoice:
    """Resolve ``spec.executor``: ``auto`` becomes threads or ``local:N``; any other executor is kept.

    ``auto`` takes threads for a run that calls no model (its trials are CPU work a cluster would only add round
    trips to), for fewer than :data:`AUTO_PROCESSES_MIN_CONCURRENCY` trials at once, on one usable core, or when
    Dask is not installed; otherwise ``local:N`` with N the usable cores (at most :func:`local_worker_limit`).

    Args:
        spec: the run spec (``executor``, ``concurrency``, agent, user, judge).
        cores: usable cores (None: :func:`usable_cores`).
        dask_installed: whether ``distributed`` can be imported (None: look it up, nothing imported).

    Returns:
        The executor and a one-line reason.
    """
    if spec.executor != "auto":
        return ExecutorChoice(spec.executor, f"{spec.executor} (asked for)")
    cores = usable_cores() if cores is None else cores
    who = redact_url(f"agent {spec.agent.name}, user {spec.user.name}"
                     + (f", judge {spec.judge.name}" if spec.judge else ""))
    if not calls_models(spec):
        return ExecutorChoice("threads", f"auto: threads (no model is called: {who})")
    if spec.concurrency < AUTO_PROCESSES_MIN_CONCURRENCY:
        return ExecutorChoice("threads", f"auto: threads (concurrency {spec.concurrency} < "
                                         f"{AUTO_PROCESSES_MIN_CONCURRENCY}: one process keeps up with the model "
                                         "calls)")
    if cores < 2:
        return ExecutorChoice("threads", f"auto: threads (models called at concurrency {spec.concurrency}, but "
                                         "1 usable core)")
    if dask_installed is None:
        dask_installed = importlib.util.find_spec("distributed") is not None
    if not dask_installed:
        return ExecutorChoice("threads", f"auto: threads (models called at concurrency {spec.concurrency} on "
                                         f"{cores} cores, but Dask is not installed: pip install 'tausim[dask]')")
    workers = min(cores, local_worker_limit())
    return ExecutorChoice(f"local:{workers}", f"auto: local:{workers} (models called at concurrency "
                                              f"{spec.concurrency} on {cores} cores: worker processes spread the "
                                              "per-call CPU over the cores)")


def usable_cores() -> int:
    """Return the number of cores this process may run on (its CPU affinity on Linux, else ``os.cpu_count()``)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def local_worker_limit() -> int:
    """Return the most worker processes ``local:N`` may start here: :data:`LOCAL_WORKERS_PER_CORE` per usable core."""
    return LOCAL_WORKERS_PER_CORE * usable_cores()


def _quiet_workers(client: Any) -> None:
    """Leave Ctrl-C to the driver in a ``local:N`` cluster (``dask_executor.LocalWorkerSignals``)."""
    from simulator.execution.dask_executor import LocalWorkerSignals, register_worker_plugin

    register_worker_plugin(client, LocalWorkerSignals(), LocalWorkerSignals.name)


def _pin_workers(client: Any, workers: int) -> None:
    """Pin a ``local:N`` cluster's worker processes to distinct cores (``dask_executor.CorePinning``).

    Only on Linux (CPU affinity), when N is at most the number of cores this process may use, and unless the
    environment variable ``TAUSIM_PIN_WORKERS`` is ``0`` (or ``false``, ``no``, ``off``); otherwise the workers float
    as the OS schedules them.

    Raises:
        ExecutorError: a worker could not be pinned.
    """
    from simulator.execution.dask_executor import CorePinning, register_worker_plugin

    if os.environ.get("TAUSIM_PIN_WORKERS", "1").strip().lower() in ("0", "false", "no", "off") \
            or not hasattr(os, "sched_getaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    if workers > len(cores):
        return
    try:
        register_worker_plugin(client, CorePinning(cores), CorePinning.name)
    except OSError as e:  # Dask raises the plugin's error again in the driver
        raise ExecutorError(f"cannot pin the local Dask workers to cores: {e}") from e


@contextmanager
def open_executor(spec: RunSpec, *, log_sink: Callable[[list[str]], None] | None = None,
                  log_run_id: str | None = None, connect_timeout: float = 10.0,
                  allowed_failures: int | None = None, runner: Runner | None = None) -> Iterator[Executor | None]:
    """Start (or connect to) the executor ``spec.executor`` names; yield None for ``threads``.

    Args:
        spec: the run spec (``executor``, ``concurrency``); ``auto`` is resolved by :func:`choose_executor`.
        log_sink: receives each finished trial's log lines in the driver (Dask executors).
        log_run_id: the run id of those log lines.
        connect_timeout: seconds to wait for a ``dask://`` scheduler.
        allowed_failures: worker deaths a trial may cause before it is recorded ``infra_error`` (a
            ``local:N`` cluster's scheduler setting); None: Dask's configured value (default 3).
        runner: the driver's runner of ``spec`` (built, e.g. by :func:`simulator.execution.build.build_runner`).
            When the workers are forked (``local:N``, a model-free run on Linux, no response cache), it is
            prepared here and the workers run trials on their copies of it instead of building and preparing the
            run again (:class:`~simulator.execution.dask_executor.RunnerPlugin`); a worker the nanny restarts
            is forked again with it. None: each worker builds the run from ``spec``.

    Yields:
        The executor for :meth:`Runner.run`, or None (threads: the runner makes its own pool).

    Raises:
        ExecutorError: unknown scheme, ``local:N`` with N above :func:`local_worker_limit`, ``distributed`` not
            installed, unreachable scheduler, no workers, or workers that cannot build the run.
    """
    try:
        kind, arg = parse_executor(spec.executor)
    except ValueError as e:
        raise ExecutorError(str(e)) from e
    if kind == "auto":
        spec = spec.model_copy(update={"executor": choose_executor(spec).executor})
        kind, arg = parse_executor(spec.executor)
    if kind == "local" and isinstance(arg, int) and arg > local_worker_limit():
        cores = usable_cores()
        raise ExecutorError(f"--executor {spec.executor}: {arg} worker processes on {cores} usable core"
                            f"{'s' if cores != 1 else ''}; local:N takes at most {local_worker_limit()} "
                            f"({LOCAL_WORKERS_PER_CORE} per core): more processes only compete for the cores "
                            "(raise --concurrency for more trials at once)")
    if kind == "threads":
        yield None
        return
    try:
        import dask
        from distributed import Client, LocalCluster

        from simulator.execution.dask_executor import DaskExecutor, RunnerPlugin
    except ModuleNotFoundError as e:
        raise ExecutorError(f"--executor {spec.executor}: Dask is not installed ({e.name}); install the extra: "
                            "pip install 'tausim[dask]'") from e
    # worker-saturation 1.0: a worker holds no more trials than threads (a queued trial would wait behind slow ones
    # while another worker idles); no statistical profiler: it samples every thread's stack every 10 ms, holding
    # the interpreter lock the trials' threads need (measured with scripts/bench-concurrency)
    settings: dict[str, Any] = {"distributed.scheduler.worker-saturation": 1.0,
                                "distributed.worker.profile.enabled": False,
                                **IDLE_SETTINGS}
    if allowed_failures is not None:
        settings["distributed.scheduler.allowed-failures"] = allowed_failures
    forked = kind == "local" and known_model_free(spec) and sys.platform == "linux"
    if forked:
        # a model-free run's worker processes are forked, not spawned: they start with the driver's modules loaded
        # instead of importing tausim, SQLAlchemy and Dask again (230 oracle trials on local:2: 8.6 -> 5.1 s of
        # CPU in all processes, measured with /usr/bin/time); a model run keeps spawn (its driver holds model
        # clients' sockets and threads after the pre-flight, which a fork would copy)
        settings["distributed.worker.multiprocessing-method"] = "fork"
    # forked workers take the driver's runner with them, prepared: no worker builds the run (template, tasks, gold
    # replays) again after the driver did (920 oracle trials on local:2: the runner plugin's registration, each
    # worker's build, was ~0.8 s of the run's wall after the driver's own build). Not with a response cache: a
    # forked SQLite connection must not be used, nor closed, by the child (SQLite's "how to corrupt" page)
    plugin = None
    if forked and runner is not None and spec.cache is None:
        runner.prepare()
        plugin = RunnerPlugin(spec.model_dump_json(), log_run_id if log_sink is not None else None,
                              rpm_share=int(arg or 1), inherited=runner)
    cluster = None
    client = None
    try:
        with dask.config.set(settings):
            if kind == "local":
                assert isinstance(arg, int)
                try:
                    # no dashboard; the scheduler's HTTP server (health routes) on a free port of 127.0.0.1, not
                    # Dask's default 8787, which a second cluster found taken ("Port 8787 is already in use")
                    # a plugin given to the workers' constructor reaches them unpickled through the fork
                    cluster = LocalCluster(n_workers=arg, threads_per_worker=math.ceil(spec.concurrency / arg),
                                           processes=True, host="127.0.0.1", dashboard_address=None,
                                           scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, silence_logs=40,
                                           **({"plugins": (plugin,)} if plugin is not None else {}))
                    client = Client(cluster)
                except (OSError, RuntimeError, TimeoutError) as e:
                    raise ExecutorError(f"--executor {spec.executor}: cannot start a local Dask cluster: "
                                        f"{type(e).__name__}: {e}") from e
                workers = arg
                _quiet_workers(client)
                _pin_workers(client, arg)
            else:
                try:
                    client = Client(str(arg), timeout=connect_timeout)
                except (OSError, TimeoutError) as e:
                    raise ExecutorError(f"--executor {spec.executor}: cannot reach the Dask scheduler at {arg} "
                                        f"within {connect_timeout:g} s ({type(e).__name__})") from e
                workers = len(client.scheduler_info().get("workers", {}))
                if workers == 0:
                    raise ExecutorError(f"--executor {spec.executor}: the Dask scheduler at {arg} has no workers; "
                                        f"start some with `dask worker {arg}`")
        executor = DaskExecutor(client, spec, log_sink=log_sink, log_run_id=log_run_id, rpm_share=workers,
                                model_free=known_model_free(spec), plugin=plugin)
        try:
            yield executor
        finally:
            executor.shutdown(wait=False, cancel_futures=True)
    finally:
        if client is not None:
            client.close(timeout=10)
        if cluster is not None:
            cluster.close(timeout=10)
