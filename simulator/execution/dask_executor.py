"""The Dask side of the executors (:mod:`simulator.execution.executors`): worker plugins and the executor."""

from __future__ import annotations

import hashlib
import inspect
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, InvalidStateError
from typing import Any

from distributed import WorkerPlugin, as_completed, get_worker

from simulator.errors import ExecutorError, WriteError
from simulator.execution.runner import Runner, infra_error_result, settle_heap
from simulator.types.results import TrialResult
from simulator.types.spec import RunSpec
from simulator.types.tasks import Task

__all__ = ["MAX_BATCH", "MODEL_FREE_BATCHES_PER_THREAD", "PUBLISH_INTERVAL_S", "TRIAL_SEPARATOR", "CorePinning",
           "DaskExecutor", "LocalWorkerSignals",
           "RunnerPlugin", "pinned_core", "register_worker_plugin"]

MAX_BATCH = 4
"""Most trials one Dask task runs in turn (:meth:`DaskExecutor.submit_trials`). Each Dask task costs several ms
of CPU in the driver, scheduler and worker; a batch pays it once. Its trials still reach the driver one by one as
they finish (:meth:`RunnerPlugin.run_many` publishes each)."""

MODEL_FREE_BATCHES_PER_THREAD = 8
"""A run whose trials call no model is cut into about this many batches per thread of the cluster (not batches of
:data:`MAX_BATCH`): its trials take milliseconds of CPU each, so a Dask task per four trials cost more than the trials
(920 oracle trials on ``local:2``: 230 tasks); eight per thread still even out threads that draw slower trials."""

PUBLISH_INTERVAL_S = 1.0
"""Seconds between a batch's publications of its finished trials (:meth:`RunnerPlugin.run_many`): a trial that
ran longer is published as soon as it ends; an interrupted run loses at most about this much finished work per
batch."""

TRIAL_SEPARATOR = "\x1e"
"""Separates the trials of a batch's result string (ASCII record separator; JSON text never holds it raw)."""


def _notify_if_cancelled(fut: Future[Any]) -> None:
    """Mark a trial future cancelled before it ran as notified, as an executor's worker would.

    ``concurrent.futures.as_completed`` (what :meth:`Runner.run` waits with) yields a cancelled future only once it
    is notified (``set_running_or_notify_cancel``); without this, a run stopped early (``--max-error-rate``, a
    budget) on a Dask executor waited for its cancelled trials forever.
    """
    if fut.cancelled():
        fut.set_running_or_notify_cancel()


class _TrialLogBuffer:
    """A text file for structlog's ``WriteLogger`` that keeps each thread's lines apart (one trial per thread)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def write(self, text: str) -> int:
        parts: list[str] | None = getattr(self._local, "parts", None)
        if parts is not None:
            parts.append(text)
        return len(text)

    def flush(self) -> None:
        """Nothing to flush: lines are taken with :meth:`take`."""

    def start(self) -> None:
        self._local.parts = []

    def take(self) -> list[str]:
        parts: list[str] = getattr(self._local, "parts", None) or []
        self._local.parts = None
        return [line for line in "".join(parts).splitlines() if line]


def register_worker_plugin(client: Any, plugin: WorkerPlugin, name: str) -> Any:
    """Register ``plugin`` on every worker of ``client``'s cluster (and on workers that join later).

    Uses ``Client.register_plugin`` (Dask >= 2023.9), else the older ``register_worker_plugin``.

    Returns:
        Dask's responses per worker.

    Raises:
        Exception: what the plugin's ``setup`` raised on a worker (Dask raises it again here).
    """
    register = getattr(client, "register_plugin", None) or client.register_worker_plugin
    return register(plugin, name=name)


def pinned_core(worker_name: Any, cores: Sequence[int]) -> int | None:
    """Return the core a local cluster's worker is pinned to: ``cores[name % len(cores)]``, or None.

    Args:
        worker_name: the worker's name (a ``LocalCluster`` names its workers 0, 1, ...).
        cores: the cores the cluster may use, in order.

    Returns:
        The core, or None when the name is not a worker number or there are no cores.
    """
    try:
        index = int(worker_name)
    except (TypeError, ValueError):
        return None
    return cores[index % len(cores)] if cores else None


class CorePinning(WorkerPlugin):
    """Dask worker plugin of the ``local:N`` clusters tausim starts: pins each worker process to one core.

    Worker ``i`` runs on ``cores[i % len(cores)]`` (Linux CPU affinity of every thread of the process; threads
    started later inherit it); a worker the nanny restarts is pinned again. Each worker then keeps its core's caches
    and the others' processes off it: with 2 workers on 2 cores, concurrency 128 x 200 ms went from 0.80-0.84 to
    0.86-0.88 of ideal (scripts/bench-concurrency, 2-core machine), the run's CPU per model call 2.5 -> 2.3 ms.
    :func:`simulator.execution.executors.open_executor` registers it only when there are no more workers than cores.

    Args:
        cores: the cores the cluster may use (the driver's ``os.sched_getaffinity(0)``, sorted).
    """

    name = "tausim-core-pinning"

    def __init__(self, cores: Sequence[int]):
        self.cores = list(cores)

    def setup(self, worker: Any = None) -> None:
        """Pin this worker process's threads to its core (nothing when the worker has no number).

        Raises:
            OSError: the operating system refused the affinity (reported to the driver by Dask).
        """
        import os

        core = pinned_core(getattr(worker, "name", None), self.cores)
        if core is None:
            return
        for tid in os.listdir("/proc/self/task"):
            try:
                os.sched_setaffinity(int(tid), {core})
            except ProcessLookupError:  # a thread that ended meanwhile
                continue


class LocalWorkerSignals(WorkerPlugin):
    """Dask worker plugin of the ``local:N`` clusters tausim starts: Ctrl-C is the driver's alone.

    A terminal's Ctrl-C (or ``timeout -s INT``) reaches every process of the foreground process group, the
    cluster's worker processes too: each printed a ``KeyboardInterrupt`` traceback while ``tausim run`` was
    stopping them anyway. Each worker process ignores SIGINT (the driver closes the cluster), and once it is
    closing it logs only critical errors (with many workers on few cores a heartbeat in flight when the cluster
    closes logged "Failed to communicate with scheduler" with a traceback). A worker the nanny restarts gets the
    plugin again.
    """

    name = "tausim-local-worker-signals"

    def setup(self, worker: Any = None) -> None:
        """Ignore SIGINT in this worker process (the plugin runs on the worker's event loop, the main thread)."""
        import signal

        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    def teardown(self, worker: Any = None) -> None:
        """Keep the worker's shutdown quiet: Dask's loggers in this process report critical errors only."""
        import logging

        logging.getLogger("distributed").setLevel(logging.CRITICAL)


class RunnerPlugin(WorkerPlugin):
    """Dask worker plugin: builds the run's :class:`Runner` once per worker and runs trials on it.

    Args:
        spec_json: the run spec as JSON.
        log_run_id: run id for the trials' log events (None: no log lines are captured).
        rpm_share: how many workers share ``spec.rpm`` (each limits itself to its share).
        inherited: the driver's runner of this spec, built and prepared, for workers *forked* from the driver
            with the plugin in hand (a ``local:N`` cluster of a model-free run, see
            :func:`simulator.execution.executors.open_executor`): each such worker runs trials on its own copy of
            it (the fork's copy-on-write memory) instead of building and preparing the run again. The plugin sent
            to a worker any other way (pickled: spawned workers, ``register_plugin``, ``dask://``) drops it and
            builds the run from ``spec_json``.
    """

    def __init__(self, spec_json: str, log_run_id: str | None = None, rpm_share: int = 1,
                 inherited: Runner | None = None):
        self.spec_json = spec_json
        self.log_run_id = log_run_id
        self.rpm_share = rpm_share
        self.name = "tausim-run-" + hashlib.sha256(
            f"{spec_json}/{log_run_id}".encode()).hexdigest()[:16]
        self.inherited = inherited
        self._runner: Runner | None = None
        self._services: Any = None
        self._buffer: _TrialLogBuffer | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"spec_json": self.spec_json, "log_run_id": self.log_run_id, "rpm_share": self.rpm_share,
                "name": self.name, "inherited": None, "_runner": None, "_services": None, "_buffer": None}

    def setup(self, worker: Any = None) -> None:
        """Make this worker's runner (once): the inherited one (a forked worker), else built from the spec.

        Raises:
            Exception: whatever :func:`simulator.execution.build.build_runner` raises (reported to the driver).
        """
        from simulator.storage.runlog import run_logger

        log = None
        if self.log_run_id is not None:
            self._buffer = _TrialLogBuffer()
            log = run_logger(self._buffer, self.log_run_id)
        if self.inherited is not None:
            # this process's copy of the driver's runner: its trials log to this worker's buffer and are not
            # traced (the driver's tracing file is the driver's), as a runner built here; its services stay the
            # driver's (a model-free run calls no model; they are closed by the driver, not here)
            self._runner = self.inherited
            self._runner.log, self._runner.tracing = log, None
            # the trial copies pooled by the driver are its sqlite connections: never used in a forked child
            # (SQLite's "how to corrupt" page; SQLAlchemy's pattern for os.fork: a new pool, the inherited
            # connections left unclosed); this worker's copies are made anew from the template's bytes
            self._runner.template.engine.dispose(close=False)
            settle_heap(collect=False)  # a full pass here would copy every page of the driver's heap it touches
            return
        from simulator.execution.build import RunServices, build_runner

        spec = RunSpec.model_validate_json(self.spec_json)
        self._services = RunServices.open(spec, rpm_share=self.rpm_share)
        self._runner = build_runner(spec, self._services, log=log)
        self._runner.prepare()  # each task prepared once per worker, before its threads run trials
        # the run's data lives as long as the worker: keep it out of the cyclic GC's full passes
        settle_heap()

    def teardown(self, worker: Any = None) -> None:
        """Close the run's model services."""
        if self._services is not None:
            self._services.close()

    def run(self, task_id: str, trial: int, persona: str | None) -> str:
        """Run one trial; return its :class:`TrialResult` JSON, then its log lines, one per line.

        One string is the cheapest result for Dask to send back (a nested dict would be serialized item by item).

        Raises:
            WriteError: this worker's response cache (``--cache``) could not be written (a full disk): the trial is
                not recorded and the driver stops the run, as it does when its own cache fails.
        """
        if self._runner is None:
            raise RuntimeError("the tausim worker plugin was not set up")
        task = next(t for t in self._runner.tasks if t.id == task_id)
        if self._buffer is not None:
            self._buffer.start()
        try:
            result = self._runner.run_trial(task, trial, persona)
        finally:
            lines = self._buffer.take() if self._buffer is not None else []
        cache = self._services.cache if self._services is not None else None
        if cache is not None and cache.write_error is not None:  # the driver stops the run, as for its own cache
            raise WriteError(str(cache.path), cache.write_error)
        return "\n".join([result.model_dump_json(), *lines])

    @property
    def topic(self) -> str:
        """The Dask event topic a batch's finished trials are published on (see :meth:`run_many`)."""
        return self.name + "-trials"

    def run_many(self, keys: list[tuple[str, int, str | None]]) -> str:
        """Run trials one after the other; return their :meth:`run` strings joined by :data:`TRIAL_SEPARATOR`.

        The finished trials but the last are also published (a Dask event on :attr:`topic`, through the scheduler
        to the driver) once :data:`PUBLISH_INTERVAL_S` passed since the batch started or since the last event, so
        that the driver records them before the batch ends: slow trials (model calls) one by one as they finish,
        fast ones a few at a time (an event per trial cost the 128-trial benchmark ~0.15 s of driver CPU). The
        returned string still holds every trial, for a driver that missed an event.
        """
        texts: list[str] = []
        unsent: list[str] = []
        last = time.monotonic()
        for i, (task_id, trial, persona) in enumerate(keys):
            texts.append(self.run(task_id, trial, persona))
            if i == len(keys) - 1:
                break
            unsent.append(texts[-1])
            if time.monotonic() - last >= PUBLISH_INTERVAL_S:
                get_worker().log_event(self.topic, TRIAL_SEPARATOR.join(unsent))
                unsent, last = [], time.monotonic()
        return TRIAL_SEPARATOR.join(texts)


def _run_chunk_on_worker(plugin_name: str, keys: list[tuple[str, int, str | None]]) -> str:
    """The Dask task of a batch of trials: run them in turn on the worker's runner."""
    plugin: RunnerPlugin = get_worker().plugins[plugin_name]  # type: ignore[assignment]
    return plugin.run_many(keys)


def _run_on_worker(plugin_name: str, task_id: str, trial: int, persona: str | None) -> str:
    """The Dask task of one trial: run it on the worker's runner (built by :class:`RunnerPlugin`)."""
    plugin: RunnerPlugin = get_worker().plugins[plugin_name]  # type: ignore[assignment]
    return plugin.run(task_id, trial, persona)


class DaskExecutor(Executor):
    """A :class:`concurrent.futures.Executor` for :meth:`Runner.run` that runs trials on Dask workers.

    Only ``submit(runner.run_trial, task, trial_index, persona)`` is supported (what :meth:`Runner.run`
    submits); the worker runs the same trial on its own runner, built from the spec.

    Args:
        client: a connected ``distributed.Client``.
        spec: the run spec (the workers build the run from it).
        log_sink: called in the driver with each finished trial's log lines (JSON strings; one call per trial,
            before the trial's future completes), or None.
        log_run_id: run id carried by the workers' log events (needed with ``log_sink``).
        rpm_share: how many workers share ``spec.rpm``.
        model_free: the run calls no model (its trials are batched coarsely, see :meth:`batch_size`).
        plugin: the run's :class:`RunnerPlugin`, already on every worker (given to the workers when they started:
            a forked ``local:N`` cluster); None: made here from ``spec`` and registered on the workers.

    Raises:
        ExecutorError: a worker could not build the run.
    """

    prepares_in_workers = True
    """Each worker's runner prepares the tasks itself (see :meth:`simulator.execution.runner.Runner.run`)."""

    def __init__(self, client: Any, spec: RunSpec, *, log_sink: Callable[[list[str]], None] | None = None,
                 log_run_id: str | None = None, rpm_share: int = 1, model_free: bool = False,
                 plugin: RunnerPlugin | None = None):
        self.client = client
        self.spec = spec
        self.model_free = model_free
        self._log_sink = log_sink
        self._lock = threading.Lock()
        self._pending: dict[Any, Future[TrialResult]] = {}
        self._batches: dict[Any, tuple[list[tuple[str, int, str | None]], list[Future[TrialResult]], float]] = {}
        self._plugin = plugin if plugin is not None else RunnerPlugin(
            spec.model_dump_json(), log_run_id if log_sink is not None else None, rpm_share)
        responses = None
        try:
            if plugin is None:
                responses = register_worker_plugin(client, self._plugin, self._plugin.name)
        except Exception as e:  # noqa: BLE001 - any failure of a worker's build is reported as one error
            raise ExecutorError(f"Dask workers could not build the run: {type(e).__name__}: {e}") from e
        for worker, resp in (responses or {}).items():
            if isinstance(resp, dict) and resp.get("status") == "error":
                raise ExecutorError(f"Dask worker {worker} could not build the run: {resp.get('exception')}")
        self._outs: dict[tuple[str, int, str | None], Future[TrialResult]] = {}
        self._claimed: set[Future[TrialResult]] = set()  # completed by a _record call now writing their log lines
        client.subscribe_topic(self._plugin.topic, self._on_trial_event)

    def _on_trial_event(self, event: Any) -> None:
        """Record a trial a worker published before its batch ended (``(time, result string)``, Dask's event)."""
        text = event[1] if isinstance(event, list | tuple) and len(event) == 2 else event
        self._record(str(text).split(TRIAL_SEPARATOR))

    def _record(self, parts: Sequence[str], outs: Sequence[Future[TrialResult]] | None = None) -> None:
        """Complete trial futures from result strings (:meth:`RunnerPlugin.run`); hand their log lines to the sink.

        Args:
            parts: one result string per trial (its ``TrialResult`` JSON, then its log lines).
            outs: the futures of ``parts``, same order; None: found by each trial's key. A future already done
                (published earlier, or cancelled) is left as it is and its string not even parsed.

        Raises:
            ValueError: ``outs`` and ``parts`` differ in length.
            pydantic.ValidationError: a string that is not a trial result (a bug).
        """
        if outs is not None and len(outs) != len(parts):
            raise ValueError(f"{len(parts)} trial results for {len(outs)} trials")
        claimed: list[tuple[Future[TrialResult], TrialResult, list[str]]] = []
        for i, part in enumerate(parts):
            known = outs[i] if outs is not None else None
            if known is not None and known.done():
                continue
            trial_json, *trial_lines = part.split("\n")
            result = TrialResult.model_validate_json(trial_json)
            with self._lock:
                found = self._outs.pop((result.task_id, result.trial, result.persona), None)
                out = known if known is not None else found
                if out is None or out.done() or out in self._claimed:
                    continue
                self._claimed.add(out)
            claimed.append((out, result, trial_lines))
        try:
            for _, _, trial_lines in claimed:
                if self._log_sink is not None and trial_lines:
                    # before the trials complete, a trial at a time: the session records a trial only once its
                    # lines were written, or knows they were lost (simulator.execution.recording.GuardedWriter.lost)
                    self._log_sink(trial_lines)
        finally:
            for out, result, _ in claimed:
                try:
                    out.set_result(result)
                except InvalidStateError:  # cancelled meanwhile: the run was stopped, nothing waits for it
                    continue
            with self._lock:
                self._claimed.difference_update(out for out, _, _ in claimed)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Schedule ``runner.run_trial(task, trial_index, persona)`` on a Dask worker.

        Returns:
            A future of the :class:`TrialResult`.

        Raises:
            TypeError: ``fn`` is not a runner's ``run_trial``.
        """
        runner = getattr(fn, "__self__", None)
        if not isinstance(runner, Runner) or getattr(fn, "__name__", "") != "run_trial":
            raise TypeError("DaskExecutor runs Runner.run_trial only")
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        task, trial, persona = bound.arguments["task"], bound.arguments["trial_index"], bound.arguments["persona"]
        out: Future[TrialResult] = Future()
        out.add_done_callback(_notify_if_cancelled)
        t0 = time.perf_counter()
        dask_future = self.client.submit(_run_on_worker, self._plugin.name, task.id, trial, persona, pure=False)
        with self._lock:
            self._pending[dask_future] = out  # a released Dask future would cancel its task: keep it

        def done(f: Any) -> None:
            with self._lock:
                self._pending.pop(f, None)
            if out.done():
                return
            if f.status == "finished":
                self._record([f.result()], [out])
            elif f.status == "cancelled":
                out.cancel()
            else:
                exc = f.exception()
                if type(exc).__name__ == "KilledWorker":
                    out.set_result(infra_error_result(self.spec, task.id, trial, persona,
                                                f"Dask workers died while running this trial: {exc}",
                                                time.perf_counter() - t0))
                else:
                    out.set_exception(exc)

        dask_future.add_done_callback(done)
        return out

    def batch_size(self, n_trials: int) -> int:
        """Return how many trials one Dask task runs for a run of ``n_trials`` trials.

        Trials are batched only in runs of at least :data:`MAX_BATCH` trials per thread of the cluster, and then
        :data:`MAX_BATCH` per task, so batching never leaves a thread idle while another holds queued trials. Small
        runs keep one trial per task: a batch whose worker dies is run again whole before it is split, so each
        worker death also counts against the batch's other trials (Dask's allowed failures), which with few
        threads can end a trial ``infra_error`` that only shared a worker with a crashing one. A model-free run
        (``model_free``) is cut into :data:`MODEL_FREE_BATCHES_PER_THREAD` batches per thread instead.
        """
        workers = self.client.scheduler_info().get("workers", {}).values()
        threads = sum(int(w.get("nthreads", 1)) for w in workers) or 1
        per_thread = -(-n_trials // threads)
        if self.model_free:  # at least 1: a run with nothing left to do (all recorded) has n_trials 0
            return max(1, -(-per_thread // MODEL_FREE_BATCHES_PER_THREAD))
        if per_thread < MAX_BATCH:
            return 1
        rounds = -(-per_thread // MAX_BATCH)
        return -(-per_thread // rounds)

    def submit_trials(self, fn: Callable[..., Any],
                      calls: Sequence[tuple[Task, int, str | None]]) -> list[Future[TrialResult]]:
        """Schedule every trial of a run, in batches of :meth:`batch_size` trials per Dask task.

        All batches go to the scheduler in one graph update (``Client.map``): submitted one by one, the last of
        128 batches started about 0.3 s after the first (scripts/bench-concurrency). Finished batches are
        collected by one thread (:meth:`_collect`) that fetches the results of the batches finished together in
        one request per worker; a done-callback per batch fetched them one round trip after another, and the
        last results of a run reached the driver up to 0.2 s after their worker had finished them.

        Args:
            fn: the runner's ``run_trial`` (the workers run the same trials on their own runners).
            calls: ``(task, trial_index, persona)`` of each trial.

        Returns:
            One future per call, in order, each completed when its trial finishes (published by the worker; the
            batch's last when the batch ends, whose result also completes any trial whose event was missed). A batch
            whose workers died (Dask's ``KilledWorker``) is submitted again trial by trial, so that only the
            trial that kills workers ends ``infra_error``.

        Raises:
            TypeError: ``fn`` is not a runner's ``run_trial``.
        """
        runner = getattr(fn, "__self__", None)
        if not isinstance(runner, Runner) or getattr(fn, "__name__", "") != "run_trial":
            raise TypeError("DaskExecutor runs Runner.run_trial only")
        outs: list[Future[TrialResult]] = [Future() for _ in calls]
        for out in outs:
            out.add_done_callback(_notify_if_cancelled)
        keys = [(task.id, trial, persona) for task, trial, persona in calls]
        with self._lock:
            self._outs.update(zip(keys, outs, strict=True))
        size = self.batch_size(len(calls))
        starts = range(0, len(calls), size)
        batches = [keys[start:start + size] for start in starts]
        futures = self.client.map(_run_chunk_on_worker, [self._plugin.name] * len(batches), batches, pure=False)
        with self._lock:
            for start, batch, dask_future in zip(starts, batches, futures, strict=True):
                self._batches[dask_future] = (batch, outs[start:start + size], time.perf_counter())
                self._pending[dask_future] = outs[start]  # a released Dask future would cancel its task: keep it
        if futures:
            collector = as_completed(futures)
            threading.Thread(target=self._collect, args=(collector,), name="tausim-dask-results",
                             daemon=True).start()
        return outs

    def _collect(self, collector: Any) -> None:
        """Complete the trial futures of the batches ``collector`` (a ``distributed.as_completed``) yields.

        Runs in its own thread until every batch, and every batch submitted again by it, has ended. An error
        while reading a batch's results (a bug) is set on its trials' futures, so the run raises it instead of
        waiting for them.
        """
        for done in collector.batches():
            finished = [f for f in done if f.status == "finished"]
            results: dict[Any, str] = {}
            if finished:
                try:
                    results = dict(zip(finished, self.client.gather(finished), strict=True))  # 1 request/worker
                except Exception:  # noqa: BLE001 - e.g. a result lost with its worker: fetched one by one below
                    results = {}
            for f in done:
                with self._lock:
                    self._pending.pop(f, None)
                    keys, outs, t0 = self._batches.pop(f)
                try:
                    if f.status != "finished":
                        for again in self._failed(f, keys, outs, t0):
                            collector.add(again)
                        continue
                    self._record((results[f] if f in results else f.result()).split(TRIAL_SEPARATOR), outs)
                except Exception as e:  # noqa: BLE001 - handed to the trials' futures: the run raises it
                    for out in outs:
                        if not out.done():
                            out.set_exception(e)

    def _failed(self, f: Any, keys: list[tuple[str, int, str | None]], outs: list[Future[TrialResult]],
                t0: float) -> list[Any]:
        """Settle ``outs`` of a batch that did not finish; return the Dask futures of its trials submitted again.

        A cancelled batch cancels its trials; a batch whose workers died (``KilledWorker``) is submitted again
        trial by trial (to find the trial that kills workers), a single trial is recorded ``infra_error``; any
        other error is set on each trial's future.
        """
        if f.status == "cancelled":
            for out in outs:
                out.cancel()
            return []
        exc = f.exception()
        killed = type(exc).__name__ == "KilledWorker"
        if killed and len(keys) > 1:
            again = []
            for key, out in zip(keys, outs, strict=True):
                if not out.done():
                    single = self.client.submit(_run_chunk_on_worker, self._plugin.name, [key], pure=False)
                    with self._lock:
                        self._batches[single] = ([key], [out], time.perf_counter())
                        self._pending[single] = out
                    again.append(single)
            return again
        for (task_id, trial, persona), out in zip(keys, outs, strict=True):
            if out.done():
                continue
            if killed:
                out.set_result(infra_error_result(self.spec, task_id, trial, persona,
                                                  f"Dask workers died while running this trial: {exc}",
                                                  time.perf_counter() - t0))
            else:
                out.set_exception(exc)
        return []

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Cancel the trials not finished when ``cancel_futures`` (the client is closed by :func:`open_executor`)."""
        if self.client.status == "running":
            self.client.unsubscribe_topic(self._plugin.topic)
        if cancel_futures or not wait:
            with self._lock:
                pending = list(self._pending)
            if pending:
                self.client.cancel(pending)

    def abandon(self) -> list[int]:
        """Kill the worker processes of a local cluster (``local:N``) at once; their running trials are dropped.

        For a run interrupted with Ctrl-C: closing the cluster otherwise waits about 4 s for each busy worker
        (Dask's nanny gives a worker ``0.8 x 5`` s to stop before it kills it), and a trial thread cannot be stopped.
        Workers of an existing cluster (``dask://``) are left alone: their trials are cancelled by
        :meth:`shutdown`.

        Returns:
            The process ids killed (empty for a ``dask://`` cluster).
        """
        import os
        import signal

        cluster = getattr(self.client, "cluster", None)
        killed = []
        for nanny in list(getattr(cluster, "workers", {}).values()) if cluster is not None else []:
            pid = getattr(getattr(nanny, "process", None), "pid", None)
            if not isinstance(pid, int):
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # already gone
                continue
            killed.append(pid)
        return killed


