"""Process x thread execution of a run's trials (``tausim run --processes P --concurrency C``).

Python threads share one interpreter lock, and litellm spends a few milliseconds of CPU per model call, so a
single process with many threads loses time to lock contention once dozens of model-bound trials run at once.
:class:`ProcessExecutor` spreads the ``C`` trials in flight over ``P`` worker processes of about ``C / P``
threads each. It is a :class:`concurrent.futures.Executor` for :meth:`simulator.runner.Runner.run`, so the
parent records and aggregates the trials exactly as with threads (``on_trial``, results store, progress bar)::

    with ProcessExecutor(functools.partial(build_cli_runner, spec), processes=4, concurrency=32) as ex:
        result = runner.run(executor=ex, on_trial=record)

Each worker rebuilds the same run from a picklable zero-argument ``build`` callable (for the CLI,
:func:`build_cli_runner` with a :class:`WorkerSpec`); workers run in the ``spawn`` start method, never share
memory with the parent, and check on start-up that they planned the very same run (configuration, tasks and
planned trials). The parent hands out (task, trial) jobs as the workers' threads free up; each
finished :class:`~simulator.runner.TrialResult` comes back as JSON. Trial seeds are derived from (run seed,
task, trial), so results do not depend on where a trial ran.

A worker that dies (killed, out of memory, a crash in native code) loses only its unfinished trials: they run
again on a replacement worker; a trial whose worker died ``retries + 1`` times is recorded as ``infra_error``
and the run continues. Workers ignore SIGINT (Ctrl-C reaches the parent, which stops them) and exit when the
parent goes away.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import inspect
import json
import multiprocessing
import os
import pickle
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from simulator.orchestrator import TerminationReason, Trajectory
from simulator.persona import Persona
from simulator.runner import RunConfig, Runner, TrialResult, derive_seed

__all__ = ["ProcessExecutor", "WorkerError", "WorkerSpec", "build_cli_runner", "process_executor", "run_fingerprint",
           "split_threads"]

POLL_S = 0.2
"""Seconds between the parent's checks for shutdown while no worker sends anything."""


class WorkerError(RuntimeError):
    """A worker process could not start, or rebuilt a run different from the parent's."""


def split_threads(concurrency: int, processes: int) -> list[int]:
    """Split ``concurrency`` threads over ``processes`` workers as evenly as possible.

    Args:
        concurrency: trials in flight in total (>= processes).
        processes: worker processes (>= 1).

    Returns:
        Threads per worker, e.g. ``[3, 3, 2]`` for 8 over 3; they sum to ``concurrency``.

    Raises:
        ValueError: ``processes`` < 1 or ``concurrency`` < ``processes``.
    """
    if processes < 1:
        raise ValueError(f"--processes must be >= 1, got {processes}")
    if concurrency < processes:
        raise ValueError(f"--concurrency ({concurrency}) must be >= --processes ({processes}): "
                         "each worker process runs at least one trial at a time")
    base, extra = divmod(concurrency, processes)
    return [base + (1 if k < extra else 0) for k in range(processes)]


def run_fingerprint(runner: Runner) -> str:
    """Return a digest of what a runner would run: configuration (but concurrency), tasks and planned trials.

    The parent compares it with each worker's, so a worker that rebuilt a different run is refused.
    """
    doc = {"config": runner.config.model_dump(mode="json", exclude={"concurrency"}),
           "tasks": [t.model_dump(mode="json") for t in runner.tasks],
           "planned": [list(p) for p in runner.planned()]}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


# --- the worker process ---------------------------------------------------------------------------------------


def _exception_blob(e: BaseException) -> bytes:
    """Pickle ``e`` for the parent; an unpicklable exception becomes a RuntimeError carrying its traceback."""
    text = "".join(traceback.format_exception(e))
    try:
        blob = pickle.dumps(e)
        pickle.loads(blob)
        return pickle.dumps((blob, text))
    except Exception:  # noqa: BLE001 - any pickling failure: fall back to the text
        return pickle.dumps((None, text))


def _worker_main(build: Callable[[], Runner], threads: int, conn: Connection) -> None:
    """Body of a worker process: build the run, then run the jobs the parent sends, ``threads`` at a time."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops the workers
    try:
        runner = build()
        fingerprint = run_fingerprint(runner)
    except BaseException:  # noqa: BLE001 - reported to the parent, which fails the run with it
        conn.send(("startup_error", traceback.format_exc()))
        return
    # The run's data (template, tasks, imported libraries) lives as long as the worker: keep it out of the
    # cyclic garbage collector, whose full passes over it would stall every trial of the worker.
    gc.collect()
    gc.freeze()
    try:
        conn.send(("ready", fingerprint))
    except OSError:
        return  # the parent is gone
    send_lock = threading.Lock()

    def send(msg: tuple[Any, ...]) -> None:
        with send_lock:
            try:
                conn.send(msg)
            except OSError:
                os._exit(0)  # the parent is gone

    def run(job_id: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        send(("start", job_id))
        return getattr(runner, method)(*args, **kwargs)

    def finished(job_id: int, fut: Future[Any]) -> None:
        try:
            msg: tuple[Any, ...] = ("done", job_id, fut.result().model_dump_json())
        except BaseException as e:  # noqa: BLE001 - raised by the trial: re-raised in the parent
            msg = ("error", job_id, _exception_blob(e))
        send(msg)

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="tausim-trial") as pool:
        while True:
            try:
                job = conn.recv()
            except (EOFError, OSError):
                os._exit(0)  # the parent is gone (killed): do not wait for trials nobody will record
            if job is None:
                break
            pool.submit(run, *job).add_done_callback(functools.partial(finished, job[0]))
    conn.close()


# --- the parent side ------------------------------------------------------------------------------------------


@dataclass
class _Job:
    id: int
    future: Future[Any]
    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    make_error: Callable[[str, float], TrialResult]
    crashes: int = 0
    sent_at: float = 0.0
    started: bool = False


@dataclass
class _Worker:
    process: Any
    conn: Connection
    threads: int
    ready: bool = False
    broken: bool = False
    reserved: bool = False
    fingerprint: str | None = None
    jobs: dict[int, _Job] = field(default_factory=dict)


class ProcessExecutor(Executor):
    """Runs :meth:`Runner.run_trial` calls in worker processes, ``concurrency`` trials at once in total.

    Only ``submit(runner.run_trial, ...)`` is supported (that is what :meth:`Runner.run` submits); the
    worker calls the same method of its own rebuilt runner with the same arguments.

    Args:
        build: a picklable callable without arguments that returns the run's :class:`Runner` in a worker
            process (e.g. ``functools.partial(build_cli_runner, spec)``, or a module-level function).
        processes: worker processes (>= 1).
        concurrency: trials in flight in total, split over the workers (see :func:`split_threads`).
        retries: times a trial is run again after its worker process died while running it; beyond that it
            is recorded as ``infra_error``.
        prefetch: jobs each worker holds beyond its threads, queued to start the moment a thread is free (no
            round trip to the parent between two trials; at most ``concurrency`` trials still run at once, and
            a worker that dies hands them back unrun). Default 0: a queued job would wait behind the worker's
            running trials even while other workers are idle (forever behind stuck ones), and the benchmark
            shows no gain from it (see scripts/bench_concurrency.py).
        start_method: multiprocessing start method (``spawn`` or ``forkserver``; ``fork`` is unsafe with
            threads).

    Raises:
        ValueError: ``processes`` < 1, ``concurrency`` < ``processes`` or ``prefetch`` < 0.
    """

    def __init__(self, build: Callable[[], Runner], processes: int, concurrency: int, *, retries: int = 1,
                 prefetch: int = 0, start_method: str = "spawn") -> None:
        self._threads = split_threads(concurrency, processes)
        self._build = build
        self._retries = retries
        self._prefetch = prefetch
        if prefetch < 0:
            raise ValueError(f"prefetch must be >= 0, got {prefetch}")
        self._ctx: Any = multiprocessing.get_context(start_method)
        self._lock = threading.RLock()  # futures' done-callbacks run under it and may submit again
        self._ready = threading.Condition(self._lock)
        self._pending: deque[_Job] = deque()
        """Jobs not sent yet, in submission order."""
        self._suspects: deque[_Job] = deque()
        """Jobs to run again because their worker died while running them (each runs alone in a worker)."""
        self._workers: list[_Worker] = []
        self._next_id = 0
        self._expected: str | None = None
        self._fatal: BaseException | None = None
        self._closed = False
        self._respawns_left = 2 * processes
        with self._lock:
            for threads in self._threads:
                self._spawn(threads)
        self._collector = threading.Thread(target=self._collect, name="tausim-collector", daemon=True)
        self._collector.start()

    # -- public API

    @property
    def threads(self) -> list[int]:
        """Threads of each worker process."""
        return list(self._threads)

    def pids(self) -> list[int]:
        """Process ids of the live worker processes."""
        with self._lock:
            return [w.process.pid for w in self._workers]

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until every worker process has built its runner (e.g. before timing a benchmark).

        Args:
            timeout: seconds to wait at most (None: no limit).

        Raises:
            WorkerError: a worker could not start.
            TimeoutError: the workers were not ready in time.
        """
        with self._ready:
            ok = self._ready.wait_for(lambda: self._fatal is not None or all(w.ready for w in self._workers),
                                      timeout)
            if self._fatal is not None:
                raise self._fatal
            if not ok:
                raise TimeoutError(f"worker processes not ready after {timeout} s")

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Schedule ``runner.run_trial(*args, **kwargs)`` on a worker process.

        Args:
            fn: a bound ``run_trial`` method of the parent's :class:`Runner` (the run the workers rebuild).
            *args: its positional arguments (picklable).
            **kwargs: its keyword arguments (picklable).

        Returns:
            A future of the :class:`TrialResult`.

        Raises:
            TypeError: ``fn`` is not a runner's ``run_trial``.
            RuntimeError: the executor is shut down.
            WorkerError: a worker could not start or rebuilt a different run.
        """
        runner = getattr(fn, "__self__", None)
        if not isinstance(runner, Runner) or getattr(fn, "__name__", "") != "run_trial":
            raise TypeError("ProcessExecutor runs Runner.run_trial only")
        make_error = _error_maker(fn, args, kwargs, runner.config)
        fut: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit after shutdown")
            if self._expected is None:
                self._expected = run_fingerprint(runner)
                for w in self._workers:
                    self._check_fingerprint_locked(w, w.fingerprint)
            if self._fatal is not None:
                raise self._fatal
            self._pending.append(_Job(self._next_id, fut, "run_trial", args, kwargs, make_error))
            self._next_id += 1
            self._dispatch_locked()
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop the workers.

        Args:
            wait: wait for the trials submitted (or, with ``cancel_futures``, running) to finish first; False
                stops the workers at once, abandoning the trials they are running (their futures are
                cancelled).
            cancel_futures: cancel the trials not started yet.
        """
        with self._lock:
            if cancel_futures or not wait:
                for queue in (self._pending, self._suspects):
                    while queue:
                        queue.popleft().future.cancel()
            futures = [j.future for j in (*self._pending, *self._suspects)]
            futures += [j.future for w in self._workers for j in w.jobs.values()]
        if wait:
            for f in futures:
                try:
                    f.exception()
                except BaseException:  # noqa: BLE001 - cancelled: nothing to wait for
                    pass
        with self._lock:
            self._closed = True
            workers = list(self._workers)
            for w in workers:
                for job in w.jobs.values():
                    job.future.cancel()
                w.jobs.clear()
        for w in workers:
            if wait:
                try:
                    w.conn.send(None)
                except OSError:
                    pass
            else:
                w.process.terminate()
        for w in workers:
            w.process.join(timeout=10 if wait else 2)
            if w.process.is_alive():
                w.process.kill()
                w.process.join(timeout=2)
            w.conn.close()
        self._collector.join(timeout=2 * POLL_S + 1)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Stop the workers; at once (abandoning running trials) when leaving on an exception or Ctrl-C."""
        with self._lock:
            unfinished = bool(self._pending or self._suspects) or any(w.jobs for w in self._workers)
        self.shutdown(wait=exc_type is None and not unfinished, cancel_futures=True)

    # -- internals (called with self._lock held where named *_locked)

    def _spawn(self, threads: int) -> None:
        parent_end, child_end = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(target=_worker_main, args=(self._build, threads, child_end), daemon=True,
                                 name="tausim-worker")
        proc.start()
        child_end.close()
        self._workers.append(_Worker(proc, parent_end, threads))

    def _check_fingerprint_locked(self, w: _Worker, fingerprint: str | None) -> None:
        if fingerprint is None or self._expected is None or fingerprint == self._expected:
            return
        self._fail_locked(WorkerError(
            "a worker process rebuilt a different run than the parent's (configuration, tasks or planned "
            "trials differ); the worker's build function must rebuild the same run"))

    def _fail_locked(self, error: BaseException) -> None:
        """Fail the run: every unfinished trial's future raises ``error``."""
        if self._fatal is None:
            self._fatal = error
        for w in self._workers:
            for job in w.jobs.values():
                if not job.future.done():
                    job.future.set_exception(error)
            w.jobs.clear()
        while self._pending or self._suspects:
            job = (self._suspects or self._pending).popleft()
            if not job.future.done():
                job.future.set_exception(error)
        self._ready.notify_all()

    def _dispatch_locked(self) -> None:
        """Send pending jobs to workers with free threads.

        A job whose worker died (a suspect) runs alone in a worker, so that if it dies again it alone is
        blamed: a worker is reserved for it and takes no new jobs until it is empty.
        """
        if self._fatal is not None or self._closed:
            return
        fresh, suspects = self._pending, self._suspects
        while suspects and suspects[0].future.cancelled():
            suspects.popleft()
        usable = [w for w in self._workers if w.ready and not w.broken]
        for w in usable:
            if any(j.crashes for j in w.jobs.values()):
                continue  # running a suspect alone
            if suspects and (w.reserved or not w.jobs):
                if not w.jobs:
                    w.reserved = False
                    self._send_locked(w, suspects.popleft(), fresh, suspects)
                continue  # reserved: let it empty
            capacity = w.threads + self._prefetch
            while fresh and len(w.jobs) < capacity and not w.broken:
                job = fresh.popleft()
                if not job.future.cancelled():
                    self._send_locked(w, job, fresh, suspects)
        need = len(suspects) - sum(1 for w in usable if w.reserved)
        for w in sorted((w for w in usable if not w.reserved and w.jobs
                         and not any(j.crashes for j in w.jobs.values())), key=lambda w: len(w.jobs))[:max(0, need)]:
            w.reserved = True

    def _send_locked(self, w: _Worker, job: _Job, fresh: deque[_Job], suspects: deque[_Job]) -> None:
        try:
            w.conn.send((job.id, job.method, job.args, job.kwargs))
        except OSError:  # the worker died: the collector will see its sentinel
            (suspects if job.crashes else fresh).appendleft(job)
            w.broken = True
            return
        job.sent_at = time.perf_counter()
        w.jobs[job.id] = job

    def _handle_message_locked(self, w: _Worker, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind == "ready":
            w.ready = True
            w.fingerprint = msg[1]
            self._check_fingerprint_locked(w, msg[1])
            self._ready.notify_all()
        elif kind == "startup_error":
            self._fail_locked(WorkerError(f"a worker process could not build the run:\n{msg[1]}"))
        elif kind == "start":
            job = w.jobs.get(msg[1])
            if job is not None:
                job.started = True
        elif kind in ("done", "error"):
            job = w.jobs.pop(msg[1], None)
            if job is None or job.future.done():
                return
            if kind == "done":
                job.future.set_result(TrialResult.model_validate_json(msg[2]))
            else:
                blob, text = pickle.loads(msg[2])
                try:
                    exc = pickle.loads(blob) if blob is not None else RuntimeError(text)
                except Exception:  # noqa: BLE001 - unpicklable here: keep the text
                    exc = RuntimeError(text)
                job.future.set_exception(exc)

    def _handle_death_locked(self, w: _Worker) -> None:
        self._workers.remove(w)
        if w.process.is_alive():  # its pipe broke but it lives on: it cannot be used any more
            w.process.kill()
            w.process.join(timeout=5)
        code = w.process.exitcode
        if self._closed:
            return
        if not w.ready:
            self._fail_locked(WorkerError(f"a worker process exited with code {code} before it was ready"))
            return
        for job in sorted(w.jobs.values(), key=lambda j: j.id, reverse=True):
            if not job.started:  # queued in the worker, never begun: not a suspect
                self._pending.appendleft(job)
                continue
            job.crashes += 1
            if job.crashes > self._retries:
                job.future.set_result(job.make_error(
                    f"worker process died (exit code {code}) while running this trial, {job.crashes} times",
                    time.perf_counter() - job.sent_at))
            else:
                self._suspects.appendleft(job)
        w.jobs.clear()
        if self._respawns_left > 0:
            self._respawns_left -= 1
            self._spawn(w.threads)
        elif not self._workers:
            self._fail_locked(WorkerError(f"worker processes keep dying (last exit code {code})"))

    def _collect(self) -> None:
        """Collector thread: receive results, notice dead workers, keep every worker busy."""
        while True:
            with self._lock:
                if self._closed or self._fatal is not None:
                    return
                workers = list(self._workers)
            if not workers:
                return
            by_object: dict[Any, _Worker] = {}
            for w in workers:
                by_object[w.conn] = w
                by_object[w.process.sentinel] = w
            try:
                ready = wait(list(by_object), timeout=POLL_S)
            except OSError:
                continue  # a connection was closed by shutdown
            dead: list[_Worker] = []
            for obj in ready:
                w = by_object[obj]
                gone = obj is not w.conn or self._drain(w)
                if gone and w not in dead:
                    dead.append(w)
            for w in dead:
                self._drain(w)  # results sent before it died are still in the pipe
                w.process.join(timeout=5)  # its pipe closed: it is exiting
                with self._lock:
                    if w in self._workers:
                        self._handle_death_locked(w)
                        self._dispatch_locked()

    def _drain(self, w: _Worker) -> bool:
        """Handle every message waiting from ``w``; return True when its pipe is closed (it exited)."""
        while True:
            try:
                if not w.conn.poll():
                    return False
                msg = w.conn.recv()
            except (EOFError, OSError):
                return True
            with self._lock:
                self._handle_message_locked(w, msg)
                self._dispatch_locked()


def _error_maker(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 config: RunConfig) -> Callable[[str, float], TrialResult]:
    """Return a function making the ``infra_error`` result of the trial ``fn(*args, **kwargs)`` would run."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    task, trial = bound.arguments["task"], bound.arguments["trial_index"]
    extra = {k: v for k, v in bound.arguments.items()
             if k not in ("task", "trial_index") and k in TrialResult.model_fields}  # e.g. persona

    def make(error: str, duration_s: float) -> TrialResult:
        reason = TerminationReason.INFRA_ERROR
        return TrialResult(task_id=task.id, trial=trial, seed=derive_seed(config.seed, task.id, trial),
                           passed=False, termination_reason=str(reason), grade=None,
                           trajectory=Trajectory(termination_reason=reason, error=error), duration_s=duration_s,
                           error=error, **extra)

    return make


# --- rebuilding a CLI run in a worker -------------------------------------------------------------------------


class WorkerSpec(BaseModel):
    """What a worker process needs besides the run's :class:`RunConfig` to rebuild a ``tausim run``."""

    config: RunConfig
    temperature: float | None = None
    api_base: str | None = None
    cache: str | None = None
    """``--cache`` file (SQLite; shared by the processes)."""
    rpm: int | None = None
    """Requests per minute per model for this worker (the run's ``--rpm`` divided among the workers)."""
    judge_api_base: str | None = None
    judge_calibration: str | None = None
    judge_min_kappa: float = 0.6
    log_file: str | None = None
    """The run's ``--log-file``; each worker appends its trials' events (one JSON object per line)."""
    log_run_id: str | None = None
    personas: list[Persona] | None = None
    """The personas of ``config.personas`` (their definitions: a persona may come from a file of the user's)."""


def build_cli_runner(spec: WorkerSpec) -> Runner:
    """Build the :class:`Runner` of a ``tausim run`` from its configuration (in a worker process).

    Args:
        spec: the run's configuration and model services.

    Returns:
        A runner of the same domain, data, options, tasks, agent, user, judge and budgets as the parent's.
    """
    from simulator.agents import agent_factory
    from simulator.cache import SQLiteCache
    from simulator.domain import get_domain
    from simulator.ratelimit import RateLimiterRegistry
    from simulator.runlog import run_logger
    from simulator.users import user_factory

    config = spec.config
    dom = get_domain(config.domain)
    template = dom.template(Path(config.data_dir) if config.data_dir else None, dict(config.options))
    tasks = dom.load_tasks(config.tasks, split=config.split)
    if config.task_ids is not None:
        wanted = {t.strip() for t in config.task_ids if t.strip()}
        tasks = [t for t in tasks if t.id in wanted]
    params: dict[str, Any] = {}
    if spec.temperature is not None:
        params["temperature"] = spec.temperature
    if spec.api_base is not None:
        params["api_base"] = spec.api_base
    if spec.rpm is not None:
        params["limiters"] = RateLimiterRegistry(spec.rpm)
    if spec.cache is not None:
        params["cache"] = SQLiteCache(spec.cache)
    judge = None
    if config.judge is not None:
        from simulator.grading.judge import build_judge

        judge = build_judge(config.judge, api_base=spec.judge_api_base,
                            calibration=Path(spec.judge_calibration) if spec.judge_calibration else None,
                            min_kappa=spec.judge_min_kappa,
                            **{k: v for k, v in params.items() if k in ("cache", "limiters")})
    log = None
    if spec.log_file is not None:
        log = run_logger(open(spec.log_file, "a", encoding="utf-8", buffering=1),  # noqa: SIM115 - process-long
                         spec.log_run_id or "")
    users = user_factory(config.user, **({"domain": dom, "template": template} if config.user == "rule" else params))
    return Runner(dom, template, tasks, agent_factory(config.agent, domain=dom, **params), users,
                  config, log=log, judge=judge, personas=spec.personas)


def process_executor(config: RunConfig, processes: int, *, temperature: float | None = None,
                     api_base: str | None = None, cache: Path | None = None, rpm: int | None = None,
                     judge_api_base: str | None = None, judge_calibration: Path | None = None,
                     judge_min_kappa: float = 0.6, log_file: Path | None = None,
                     log_run_id: str | None = None, personas: list[Persona] | None = None) -> ProcessExecutor:
    """Start the worker processes of a ``tausim run --processes P`` (its options, as given to the CLI).

    Each worker gets ``--rpm`` divided by the number of processes (at least 1 request per minute), so the run as
    a whole keeps the limit (except when ``rpm`` < ``processes``); the ``--cache`` file is shared.

    Args:
        config: the run's configuration (``config.concurrency`` trials in flight in total).
        processes: worker processes.
        temperature: ``--temperature``.
        api_base: ``--api-base``.
        cache: ``--cache`` file.
        rpm: ``--rpm`` (requests per minute per model, for the whole run).
        judge_api_base: ``--judge-api-base``.
        judge_calibration: ``--judge-calibration``.
        judge_min_kappa: ``--judge-min-kappa``.
        log_file: ``--log-file`` (workers append their trials' events).
        log_run_id: the run id carried by the log's events.
        personas: the run's personas (``--personas``), in ``config.personas`` order.

    Returns:
        The running executor (use it as a context manager).

    Raises:
        ValueError: ``processes`` exceeds ``config.concurrency``.
    """
    spec = WorkerSpec(config=config, temperature=temperature, api_base=api_base,
                      cache=str(cache) if cache is not None else None,
                      rpm=None if rpm is None else max(1, rpm // processes), judge_api_base=judge_api_base,
                      judge_calibration=str(judge_calibration) if judge_calibration is not None else None,
                      judge_min_kappa=judge_min_kappa, log_file=str(log_file) if log_file is not None else None,
                      log_run_id=log_run_id, personas=personas)
    return ProcessExecutor(functools.partial(build_cli_runner, spec), processes, config.concurrency)
