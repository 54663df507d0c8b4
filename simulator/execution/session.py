"""The run itself, as a library call: :func:`run` does what ``tausim run`` does, without the rendering.

::

    import simulator

    spec = simulator.RunSpec(domain="retail", agent="reference", user="rule", trials=4, seed=7)
    result = simulator.run(spec, store="sqlite:///runs.db", run_id="nightly", out="run.json")
    print(result.metrics["pass^1"], result.run_id)

One call owns the whole life of a run: it builds the run (:func:`~simulator.execution.build.build_runner`, the
gold-replay check of the data, the pre-flight), takes the run's lease in the results store, resumes a stored run
(only its unrecorded trials run, never one twice) or a partial file, records each finished trial as it ends (store
and ``FILE.partial.jsonl``), stops the run on too many errors (``RunSpec.max_error_rate``), starts and closes the
executor (threads, a Dask cluster), writes the run document with its provenance (falling back to another file
when ``out`` cannot be written) and releases everything, on Ctrl-C and exceptions too.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pydantic import Field

from simulator.dialogue.progress import RunProgress
from simulator.errors import InputError, OptionError, RunDocumentError, SpecError, WriteError
from simulator.execution.build import RunServices, build_runner, check_gold
from simulator.execution.executors import ExecutorChoice, choose_executor, open_executor
from simulator.execution.preflight import check_credentials, preflight
from simulator.execution.provenance import (
    git_revision,
    package_versions,
    python_version,
    run_fingerprint,
    run_provenance,
)
from simulator.execution.recording import (
    GuardedWriter,
    WriteOutcome,
    append_line,
    check_store_url,
    close_quietly,
    guard_appended,
    open_partial,
    open_results_store,
    output_problem,
    partial_lock,
    partial_path,
    sigint_deferred,
    write_document,
)
from simulator.execution.runner import ERROR_RATE_MIN_TRIALS, Runner, run_error_rate, settle_heap
from simulator.execution.tracing import file_tracing
from simulator.stats.summaries import complete_suite
from simulator.storage.documents import read_partial, run_summary_json
from simulator.storage.runlog import run_logger
from simulator.storage.store import DEFAULT_STORE_URL, ResultsStore, data_hash, tasks_hash
from simulator.types.results import RunResult, TrialKey, TrialResult, trial_key
from simulator.types.sanitize import excerpt, shown
from simulator.types.spec import RunSpec, recorded_config, resume_exempt, spec_differences
from simulator.types.tasks import Task
from simulator.world.database import TemplateDatabase
from simulator.world.domain import Domain, get_domain

__all__ = ["SETTLE_MIN_TRIALS", "Interruption", "RunOutcome", "RunStart", "TaskCheck", "run"]

TaskCheck = Callable[[Domain, TemplateDatabase, list[Task]], Any]
"""An extra check of the tasks a run is about to run: ``(domain, template, selected tasks) -> ignored``; it raises
to refuse the run (e.g. the command line's refusal of tasks with lint errors)."""


SETTLE_MIN_TRIALS = 32
"""Runs of at least this many trials settle the heap (:func:`~simulator.execution.runner.settle_heap`) before their
trials; a shorter one would spend more on the full collection than its trials lose to the GC."""


@dataclass(frozen=True)
class RunStart:
    """What a run is about to do, given to ``on_start`` once the run is built and its store run opened.

    Attributes:
        run_id: the run's id in the store, or None for a run without a store.
        store_url: the store's URL (password hidden), or None.
        created: the store run was created now (False: a stored run resumed; None: no store).
        planned: the run's planned trials (tasks x personas x trials), earlier sessions' included.
        recorded: planned trials already recorded (by earlier sessions: the store or ``resume``).
        to_run: the trials this call will run.
        resumed: the run resumes earlier trials (a stored run, or ``resume``).
        executor: where the trials run and why (``spec.executor``, ``auto`` resolved), see
            :func:`~simulator.execution.executors.choose_executor`.
    """

    run_id: str | None
    store_url: str | None
    created: bool | None
    planned: int
    recorded: int
    to_run: int
    resumed: bool
    executor: ExecutorChoice | None = None


@dataclass(frozen=True)
class Interruption:
    """Where a run interrupted by Ctrl-C left its results, given to ``on_interrupt``.

    Attributes:
        finished: the trials had all ended and the run document was being written (the write was finished first).
        partial: the partial file holding the finished trials (``out`` given, the document not written), or None.
        run_id: the run's id when it is recorded in a store (rerun with it to resume), or None.
        written: the run document file written (``finished`` only), or None.
        write_error: why ``out`` could not be written (``finished`` only; the document went to ``written``), or
            None.
        out: the run's ``out`` (the run document file it writes), or None.
    """

    finished: bool
    partial: Path | None = None
    run_id: str | None = None
    written: Path | None = None
    write_error: str | None = None
    out: Path | None = None


class RunOutcome(RunResult):
    """A finished run and where it went.

    A :class:`~simulator.types.results.RunResult` (the whole run, earlier sessions included); the fields below are
    not serialised (``model_dump`` gives the :class:`RunResult`).
    """

    run_id: str | None = Field(default=None, exclude=True)
    """The run's id in the store, or None without a store."""
    store_url: str | None = Field(default=None, exclude=True)
    """The store's URL (password hidden), or None."""
    document: dict[str, Any] = Field(default_factory=dict, exclude=True, repr=False)
    """The run document (what ``out`` holds; ``aborted``/``abort_kind`` set when the run stopped early)."""
    out: Path | None = Field(default=None, exclude=True)
    """The file the document was written to: ``out``, or a fallback file when ``out`` could not be written; None
    when no ``out`` was given or nothing could be written."""
    write_error: str | None = Field(default=None, exclude=True)
    """Why ``out`` could not be written (the OS's words), or None."""
    partial: Path | None = Field(default=None, exclude=True)
    """The partial file still holding the trials (``out`` given and not written), or None."""
    session_trials: int = Field(default=0, exclude=True)
    """Trials run by this call (a resumed run's earlier ones are not)."""
    log_error: str | None = Field(default=None, exclude=True)
    """Why ``log_file`` lost its last lines (``run_end``, or lines written after the last trial was recorded), or
    None. Every trial is recorded (a trial whose lines were lost stops the run with ``abort_kind`` ``write_error``
    instead); only the log is incomplete."""
    spans_error: str | None = Field(default=None, exclude=True)
    """Why ``otel``'s spans file lost its last spans (the run's own span, ended after the last trial), or None.
    Every trial is recorded (a loss before that stops the run with ``abort_kind`` ``write_error``)."""
    error_rate_excess: str | None = Field(default=None, exclude=True)
    """For a call that ran fewer than :data:`~simulator.execution.runner.ERROR_RATE_MIN_TRIALS` trials (never
    checked while they ran): how they exceed ``max_error_rate`` (:func:`~simulator.execution.runner.run_error_rate`),
    or None."""


def run(spec: RunSpec, *, store: str | ResultsStore | None = None, run_id: str | None = None,
        out: str | Path | None = None, resume: str | Path | Sequence[TrialResult] | None = None,
        on_start: Callable[[RunStart], Any] | None = None, on_trial: Callable[[TrialResult], Any] | None = None,
        on_interrupt: Callable[[Interruption], Any] | None = None, progress: bool = False,
        progress_every: float | None = 30.0,
        log_file: str | Path | None = None, otel: str | Path | None = None, dask_timeout: float = 10.0,
        task_check: TaskCheck | None = None) -> RunOutcome:
    """Run a spec as ``tausim run`` does: build, check, execute, record, write the run document.

    Args:
        spec: the run.
        store: the results store (a URL such as ``sqlite:///runs.db``, or an open store, left open) every finished
            trial is recorded in; with ``run_id`` and no store, :data:`~simulator.storage.store.DEFAULT_STORE_URL`.
            None (and no ``run_id``): no store.
        run_id: the run's id in the store: an existing run is resumed (only its unrecorded trials run; the
            settings must match, :class:`~simulator.errors.ConfigMismatchError`), a new one created under that id.
            None: a new id (with a store).
        out: the run document's JSON file; while the run goes on, finished trials are appended to
            ``FILE.partial.jsonl`` beside it (removed once the document is written). None: no file.
        resume: a run without a store to resume: its partial file (the run must be the file's, execution fields
            such as ``executor`` aside, see :func:`~simulator.types.spec.resume_exempt`; the policy is compared by
            the hash of its text, so a policy file edited since is refused) or its finished trials (not compared:
            give the file where there is one).
            Only the planned trials not among them run; the result and document hold both. Every trial given must
            be in the run's plan (none is dropped: the partial file is rewritten with them).
        on_start: called once with a :class:`RunStart` before the first trial is started.
        on_trial: called with each finished trial once it is recorded (from the thread collecting results).
        on_interrupt: called with an :class:`Interruption` on Ctrl-C, once the run's resources are released
            (the executor's workers are abandoned, not waited for); when it returns, the KeyboardInterrupt goes on.
        progress: show a live progress bar on stdout when it is a terminal; else a progress line (done/planned,
            pass rate, cost, ETA) every ``progress_every`` seconds.
        progress_every: seconds between progress lines when stdout is not a terminal (a CI log); None or 0: none.
        log_file: append the run's JSON-lines event log here (sets ``spec.log_file``).
        otel: append the run's OpenTelemetry spans (JSON lines) here (extra ``tausim[otel]``).
        dask_timeout: seconds to wait for a ``dask://`` scheduler.
        task_check: an extra check of the selected tasks, run after the gold-replay check while the run is built.

    Returns:
        The whole run (:class:`RunOutcome`, a :class:`~simulator.types.results.RunResult`: a stored run's earlier
        sessions included), its id, its document and where it was written. A run stopped early (a set-up error
        in a trial, ``max_error_rate`` exceeded) returns with ``aborted`` and ``abort_kind`` set.

    Raises:
        OptionError: an unusable ``store`` URL, an empty ``run_id``, ``out``/``log_file``/``otel`` that cannot be
            written; ``resume`` with a store, or holding trials outside the run's plan (fewer tasks or trials per
            task than the run that recorded them; nothing is run or written, the partial file is left as it was).
        SpecError: ``resume`` names a partial file of another run (another spec, or another policy text).
        SetupError: the pre-flight found the run cannot work (missing key, unknown model, unreachable server, a
            factory that raises).
        DomainError, TaskFileError, ValueError: bad domain, data, tasks or components; tasks written for other
            data (:func:`~simulator.execution.build.check_gold`).
        StoreError: the store refuses the run (``ConfigMismatchError``; ``LeaseHeldError``: another process is
            running it now).
        ExecutorError: the executor cannot be started.
        RunDocumentError: ``resume`` is not a readable partial file, or holds a line that is not a trial as tausim
            writes it (a field of the wrong type, e.g. ``"passed": "yes"``, an unknown field, a NaN; see
            :func:`~simulator.storage.documents.read_partial`), but for a last line cut short, or two different
            lines of one trial; or a resumed trial's seed is not the one the run's plan gives it.
        KeyboardInterrupt: Ctrl-C (after ``on_interrupt``).
    """
    out_path = _check_paths(out, store, run_id, resume)
    if log_file is not None:
        spec = spec.model_copy(update={"log_file": str(log_file)})
    session = _Session(spec, store=store, run_id=run_id, out=out_path, progress=progress, on_trial=on_trial,
                       on_interrupt=on_interrupt)
    session.progress_every = progress_every
    try:
        try:
            session.build(dask_timeout=dask_timeout, otel=otel, task_check=task_check, resume=resume,
                          on_start=on_start)
            result = session.execute()
        finally:
            session.close()
        return session.finish(result)
    except KeyboardInterrupt:
        if session.started and not session.told:  # after the trials (or a second Ctrl-C while they were left)
            session.interrupted_late()
        raise
    finally:
        session.close_store()


def _check_paths(out: str | Path | None, store: str | ResultsStore | None, run_id: str | None,
                 resume: object) -> Path | None:
    """Check the arguments that name places before anything is built; return ``out`` as a Path (or None)."""
    if isinstance(store, str):
        check_store_url(store)
    if run_id is not None and not run_id.strip():
        raise OptionError("run_id", None, "empty; give the id of the run to start or resume, or leave it out for a "
                                          "new one")
    if resume is not None and (store is not None or run_id is not None):
        raise OptionError("resume", None, "resumes a run without a store: give it without a store and run id")
    if out is None:
        return None
    path = Path(out)
    problem = output_problem(path)
    if problem is not None:
        raise OptionError("out", str(path), problem)
    return path


class _Session:
    """One call of :func:`run`: the resources it holds (on ``stack``) and the state it records into."""

    def __init__(self, spec: RunSpec, *, store: str | ResultsStore | None, run_id: str | None, out: Path | None,
                 progress: bool, on_trial: Callable[[TrialResult], Any] | None,
                 on_interrupt: Callable[[Interruption], Any] | None) -> None:
        self.spec = spec
        self.store_arg = store
        self.run_id = run_id
        self.out = out
        self.partial = partial_path(out) if out is not None else None
        self.show_progress = progress
        self.progress_every: float | None = None
        self.on_trial = on_trial
        self.on_interrupt = on_interrupt
        self.stack = ExitStack()  # run-owned services: cache file, store lease, executor, log file, progress bar
        self.store: ResultsStore | None = None
        self.owns_store = False
        self.previous: list[TrialResult] | None = None
        self.resume_source: Path | None = None  # the partial file resumed (None: trials given, or no resume)
        self.resume_lines: dict[TrialKey, int] = {}  # each resumed trial's line in resume_source
        self.only: set[TrialKey] | None = None
        self.log: Any = None
        self.log_run_id = run_id or ""
        self.log_handle: IO[str] | None = None
        self.log_guard: GuardedWriter | None = None
        self.partial_file: IO[str] | None = None
        self.executor: Any = None
        self.choice = ExecutorChoice(spec.executor, "")
        self.bar: RunProgress | None = None
        self.runner: Runner | None = None
        self.services: RunServices | None = None
        self.recorded: list[TrialResult] = []  # this call's trials, once recorded
        self.lock = threading.Lock()
        self.started = False  # the trials began: an interruption is ``on_interrupt``'s to tell from then on
        self.ran = False  # the trials ended (none is left running)
        self.told = False  # ``on_interrupt`` was called
        self.written: WriteOutcome | None = None  # the run document's write, once done

    # ---------------------------------------------------------------------------------------------- set up

    def build(self, *, dask_timeout: float, otel: str | Path | None, task_check: TaskCheck | None,
              resume: str | Path | Sequence[TrialResult] | None,
              on_start: Callable[[RunStart], Any] | None) -> None:
        """Build the run, open its store run, its log, tracing, executor, progress bar and partial file."""
        file_spec = self._read_resume(resume)
        runner = self._build_runner(task_check)
        if file_spec is not None:
            _same_run(file_spec, runner.config, str(resume))
        self.choice = choose_executor(self.spec)
        start = dataclasses.replace(self._plan(runner), executor=self.choice)
        self._open_log(runner)
        if otel is not None:  # OpenTelemetry spans (simulator.execution.tracing); trial ids go to out and log_file
            try:
                runner.tracing = self.stack.enter_context(file_tracing(otel))
            except (InputError, OSError) as e:
                raise OptionError("otel", str(otel), str(e)) from e
        self.executor = self.stack.enter_context(open_executor(
            self.spec.model_copy(update={"executor": self.choice.executor}),
            log_sink=self._log_sink if self.log_handle is not None else None,
            log_run_id=self.log_run_id, connect_timeout=dask_timeout, runner=runner))
        if on_start is not None:  # once the executor is up: a run whose executor cannot start says only why
            on_start(start)
        if self.log is not None:
            self.log.info("run_start", config=recorded_config(self.spec), executor=self.choice.executor,
                          executor_reason=self.choice.reason)
        planned = len(self.only) if self.only is not None else len(runner.planned())
        tty = sys.stdout.isatty()
        self.bar = self.stack.enter_context(RunProgress(
            planned, enabled=tty and self.show_progress,
            lines_every=self.progress_every if self.show_progress and not tty else None))
        if self.partial is not None:
            try:
                self.partial_file = open_partial(self.partial, self.spec, len(runner.planned()), self.previous or [],
                                                 [t.id for t in runner.tasks])
            except OSError as e:
                raise OptionError("out", str(self.out), f"cannot write next to it ({e.strerror})") from e

    def _read_resume(self, resume: str | Path | Sequence[TrialResult] | None) -> RunSpec | None:
        """Take the trials of ``resume``; return the spec of its partial file (None when given trials or nothing).

        The partial files read and written are locked first (:func:`partial_lock`): two processes never resume
        the same file at once.
        """
        source = Path(resume) if isinstance(resume, (str, Path)) else None
        same = source is not None and self.partial is not None and source.resolve() == self.partial.resolve()
        if self.partial is not None:
            self.stack.enter_context(partial_lock(self.partial, "resume_from" if same else "out"))
            if resume is None and self.store_arg is None and self.run_id is None:  # (with a store: _open_store_run)
                _refuse_unfinished(self.partial, self.out)  # a resumed run carries the earlier trials over
        if resume is None:
            return None
        if source is not None:
            self.resume_source = source
            if not same:
                self.stack.enter_context(partial_lock(source, "resume_from"))
            read = read_partial(source)
            self.previous, self.resume_lines = list(read.trials), read.lines
            return read.spec
        assert not isinstance(resume, (str, Path))
        self.previous = list(resume)
        return None

    def _build_runner(self, task_check: TaskCheck | None) -> Runner:
        """Build the runner (credentials first, then data, tasks, the checks and the pre-flight)."""
        spec = self.spec
        data = Path(spec.data_dir) if spec.data_dir else None
        dom = get_domain(spec.domain)  # record the effective domain options (the defaults for the data included)
        spec = spec.model_copy(update={"options": {**dom.default_options(data), **spec.options}})
        if spec.preflight:
            check_credentials(spec)  # a missing key is reported before the data and tasks are loaded
        services = self.services = self.stack.enter_context(RunServices.open(spec))

        def check(d: Domain, template: TemplateDatabase, tasks: list[Task], selected: list[Task]) -> Any:
            replays = check_gold(d, template, tasks, data, selected)
            if task_check is not None:
                task_check(d, template, selected)
            return replays

        runner = self.runner = build_runner(spec, services, check=check)
        self.spec = runner.config  # as built: with the hash of the policy the agent gets
        if self.spec.preflight:
            preflight(runner)
        return runner

    def _plan(self, runner: Runner) -> RunStart:
        """Decide the trials to run: all, those ``resume`` lacks, or those the store has not recorded."""
        plan = runner.planned()
        if self.previous is not None:
            keys = set(plan)
            outside = [t for t in self.previous if trial_key(t) not in keys]
            if outside:  # resuming would rewrite the partial file (and the document) without them
                raise _outside_plan(outside, len(self.previous), self.resume_source)
            _check_seeds(runner, self.previous, self.resume_source, self.resume_lines)
            self.only = keys - {trial_key(t) for t in self.previous}
            return RunStart(run_id=None, store_url=None, created=None, planned=len(keys),
                            recorded=len(self.previous), to_run=len(self.only), resumed=True)
        if self.store_arg is None and self.run_id is None:
            return RunStart(run_id=None, store_url=None, created=None, planned=len(plan), recorded=0,
                            to_run=len(plan), resumed=False)
        return self._open_store_run(runner)

    def _open_store_run(self, runner: Runner) -> RunStart:
        """Create the run in the store, or check that it can be resumed; take its lease; read what is missing.

        The lease is taken (held until the session closes) before the missing trials are read, so that two
        processes resuming the same run id never both run them.
        """
        if isinstance(self.store_arg, ResultsStore):
            store = self.store_arg
        else:
            store = open_results_store(self.store_arg or DEFAULT_STORE_URL)
            self.owns_store = True
        self.store = store
        folder = (Path(self.spec.data_dir) if self.spec.data_dir else runner.domain.default_data_dir()).resolve()
        if self.partial is not None and (self.run_id is None or store.get_run(self.run_id) is None):
            _refuse_unfinished(self.partial, self.out, store=True)  # resuming a stored run: its trials are in the store
        with store.writing():
            info, created = store.open_run(
                self.run_id, self.spec, [t.id for t in runner.tasks], data_dir=str(folder),
                data_hash=data_hash(folder), tasks_hash=tasks_hash(runner.tasks), git_revision=git_revision(),
                packages={**package_versions(), "python": python_version()})
            self.stack.enter_context(store.lease(info.run_id))
            if created:  # what a comparison must hold equal (simulator.storage.fingerprint)
                fingerprint = run_fingerprint(self.spec, runner.tasks, runner.user_factory)
                store.update_run(info.run_id, extra={"fingerprint": fingerprint})
        self.run_id = info.run_id
        done = store.recorded_keys(info.run_id)
        planned = set(info.planned_pairs())
        self.only = {p for p in info.planned_pairs() if p not in done}
        return RunStart(run_id=info.run_id, store_url=store.url, created=created, planned=info.planned,
                        recorded=len(done & planned), to_run=len(self.only), resumed=not created)

    def _open_log(self, runner: Runner) -> None:
        """Open ``spec.log_file`` (the run's JSON-lines event log) and give the runner its logger."""
        self.log_run_id = self.run_id or uuid.uuid4().hex[:12]
        if self.spec.log_file is None:
            return
        try:
            self.log_handle = open(self.spec.log_file, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
            self.stack.callback(close_quietly, self.log_handle)
        except OSError as e:
            raise OptionError("log_file", self.spec.log_file, f"cannot write ({e.strerror or e})") from e
        self.log_guard = guard_appended(self.log_handle, self.spec.log_file)  # a full disk stops the run: _record
        self.log = runner.log = run_logger(self.log_guard, self.log_run_id)

    def _log_sink(self, lines: list[str]) -> None:
        """Write trials' events from Dask workers to the log file (the driver alone writes it)."""
        if self.log_handle is None:
            return
        with self.lock:
            (self.log_guard or self.log_handle).write("".join(line + "\n" for line in lines))

    # ------------------------------------------------------------------------------------------------ run

    def _record(self, t: TrialResult) -> None:
        """Record a finished trial: store, partial file, progress bar, then ``on_trial``.

        Raises:
            WriteError: the store, the partial file or the cache cannot be written, or the log lost some of this
                trial's events, or the ``otel`` spans file some of its spans: the run stops (:meth:`execute`); the
                trial and those still running are not recorded (a trial whose events and spans were all written
                before the disk filled still is).
        """
        key = trial_key(t)
        if self.log_guard is not None and self.log_guard.error is not None and self.log_guard.lost(key):
            raise self.log_guard.error
        tracing = self.runner.tracing if self.runner is not None else None
        if tracing is not None and tracing.write_error is not None and tracing.lost(key):
            raise tracing.write_error
        cache = self.services.cache if self.services is not None else None
        if cache is not None and cache.write_error is not None:
            raise WriteError(str(cache.path), cache.write_error)
        if self.store is not None and self.run_id is not None:
            self.store.record(self.run_id, t)
        if self.partial_file is not None and self.partial is not None:
            append_line(self.partial_file, self.partial, t.model_dump_json())
        self.recorded.append(t)
        if self.bar is not None:
            self.bar.update(t)
        if self.on_trial is not None:
            self.on_trial(t)

    def _spans_error(self) -> WriteError | None:
        """Why the ``otel`` spans file lost spans (disk full), or None."""
        tracing = self.runner.tracing if self.runner is not None else None
        return None if tracing is None else tracing.write_error

    def execute(self) -> RunResult:
        """Run the planned trials; on Ctrl-C release everything, call ``on_interrupt`` and re-raise.

        When a trial cannot be recorded (:class:`~simulator.errors.WriteError`: disk full, read-only) the run stops
        with ``abort_kind`` ``write_error``; its result holds the trials recorded so far.
        """
        runner = self.runner
        assert runner is not None
        # The run's data stays alive to the end: keep it out of the cyclic GC, whose full passes over a large data
        # set stall every trial thread for ~0.3 s (measured with scripts/bench-concurrency); rarer young passes.
        # A short run is over before that matters: it skips the full collection settling costs (a one-task run).
        planned = len(self.only) if self.only is not None else len(runner.planned())
        if planned >= SETTLE_MIN_TRIALS:
            settle_heap()
        t0 = time.perf_counter()
        self.started = True
        try:
            result = runner.run(executor=self.executor, on_trial=self._record, only=self.only)
            self.ran = True
        except KeyboardInterrupt:
            self._interrupted()
            raise
        except WriteError as e:  # a trial could not be recorded (disk full): stop; what was recorded is the result
            order = {key: i for i, key in enumerate(runner.planned())}
            kept = sorted(self.recorded, key=lambda t: order[trial_key(t)])
            result = RunResult(config=self.spec, trials=kept, planned=len(order), aborted=str(e),
                               abort_kind="write_error", wall_seconds=time.perf_counter() - t0,
                               termination_reasons=dict(sorted(Counter(t.termination_reason for t in kept).items())))
        if self.log is not None:
            self.log.info("run_end", wall_seconds=round(result.wall_seconds, 6), trials=len(result.trials),
                          metrics=result.metrics, termination_reasons=result.termination_reasons,
                          **({"aborted": result.aborted} if result.aborted else {}))
        return result

    def _interrupted(self) -> None:
        """Ctrl-C during the trials: keep what finished and let ``on_interrupt`` say where it is.

        The worker processes of a ``local:N`` cluster are killed first (``DaskExecutor.abandon``): closing the
        cluster waited about 4 s for each busy worker. Trial threads are not joined (they may be inside a model call
        or a stuck agent).
        """
        if self.partial_file is not None:
            close_quietly(self.partial_file)
        abandon = getattr(self.executor, "abandon", None)
        if abandon is not None:
            abandon()
        self.close()
        self.close_store()
        self._tell(Interruption(finished=False, partial=self.partial,
                                run_id=self.run_id if self.store is not None else None, out=self.out))

    def interrupted_late(self) -> None:
        """Ctrl-C after the trials (closing, completing the document, writing it) or while they were left.

        What can be released is released (a further Ctrl-C skips the step it hits: none waits for a stuck trial),
        then ``on_interrupt`` is told (a further Ctrl-C held off) where the trials are: the run document when it
        was written, else the partial file or the store, which hold every finished trial.
        """
        abandon = getattr(self.executor, "abandon", None) if not self.ran else None  # busy workers: kill them
        handle = self.partial_file
        steps = [*([] if handle is None else [lambda: close_quietly(handle)]),
                 *([] if abandon is None else [abandon]), self.close, self.close_store]
        for step in steps:
            try:
                step()
            except KeyboardInterrupt:
                continue
        written = self.written
        with sigint_deferred():
            if written is not None and written.written is not None:
                self._tell(Interruption(finished=True, written=written.written, write_error=written.error,
                                        out=self.out))
            else:
                self._tell(Interruption(finished=False, partial=self.partial,
                                        run_id=self.run_id if self.store is not None else None, out=self.out))

    def _tell(self, stop: Interruption) -> None:
        """Call ``on_interrupt`` (once)."""
        self.told = True
        if self.on_interrupt is not None:
            self.on_interrupt(stop)

    def close(self) -> None:
        """Release the session's resources (partial file, lease, executor, log, progress bar, services)."""
        if self.partial_file is not None:
            close_quietly(self.partial_file)
        self.stack.close()

    def close_store(self) -> None:
        """Close the results store when this call opened it."""
        if self.store is not None and self.owns_store:
            self.store.close()

    # --------------------------------------------------------------------------------------------- finish

    def finish(self, result: RunResult) -> RunOutcome:
        """Complete the run's result and document, write ``out``, check a short session's error rate."""
        runner = self.runner
        assert runner is not None
        aborted, abort_kind = result.aborted, result.abort_kind
        session = list(result.trials)  # this session's trials (a resumed run's earlier ones are added below)
        if self.previous:
            order = {key: i for i, key in enumerate(runner.planned())}
            trials = sorted([*self.previous, *result.trials], key=lambda t: order[trial_key(t)])
            result = RunResult(config=self.spec, trials=trials, planned=len(order), wall_seconds=result.wall_seconds,
                               metrics=complete_suite(  # the whole run's (was left empty)
                                   [t.model_dump(include={"task_id", "persona", "trial", "passed"}) for t in trials],
                                   [t.id for t in runner.tasks], self.spec.trials, list(runner.personas)),
                               termination_reasons=dict(sorted(Counter(t.termination_reason for t in trials).items())))
        if self.store is not None and self.run_id is not None:  # the whole run, earlier sessions included
            try:
                self.store.add_wall_seconds(self.run_id, result.wall_seconds)
            except WriteError as e:  # the trials are recorded; only this session's wall time is not
                aborted, abort_kind = aborted or str(e), abort_kind or "write_error"
            result = self.store.load_run_result(self.run_id)
            doc = self.store.load_run_document(self.run_id)
        else:
            doc = run_summary_json(result, run_provenance(self.spec, runner.tasks, runner.user_factory))
        doc["executor"] = {"chosen": self.choice.executor, "reason": self.choice.reason}  # this session's
        if aborted:
            doc.update(aborted=aborted, abort_kind=abort_kind)
        log_error = self.log_guard.error if self.log_guard is not None and abort_kind != "write_error" else None
        spans_error = self._spans_error() if abort_kind != "write_error" else None  # the run's span, at its end
        outcome = RunOutcome(**{name: getattr(result, name) for name in RunResult.model_fields},
                             run_id=self.run_id if self.store is not None else None,
                             store_url=self.store.url if self.store is not None else None, document=doc,
                             session_trials=len(session), partial=self.partial,
                             log_error=None if log_error is None else str(log_error),
                             spans_error=None if spans_error is None else str(spans_error))
        if aborted:
            outcome.aborted, outcome.abort_kind = aborted, abort_kind
        elif len(session) < ERROR_RATE_MIN_TRIALS:  # too few (this session) to have been checked while it ran
            outcome.error_rate_excess = run_error_rate(session, self.spec.max_error_rate)
        if self.out is not None and abort_kind != "write_error":  # results first: a caller printing into a closed
            self._write(outcome)  # pipe must not lose them; after a write error the partial file keeps them
        return outcome

    def _write(self, outcome: RunOutcome) -> None:
        """Write the document to ``out`` (or a fallback file); remove the partial file once it is written."""
        assert self.out is not None
        written = write_document(self.out, outcome.document)
        self.written = written
        outcome.out, outcome.write_error = written.written, written.error
        if written.interrupted:
            self._tell(Interruption(finished=True, written=written.written, write_error=written.error, out=self.out))
            raise KeyboardInterrupt
        if written.written is not None and self.partial is not None:
            self.partial.unlink(missing_ok=True)
            outcome.partial = None


def _refuse_unfinished(partial: Path, out: Path | None, store: bool = False) -> None:
    """Refuse to start a run over the partial file of an earlier one that did not finish (its trials would be lost).

    A run resuming a stored run is not refused (its earlier trials are in the store, the partial file starts over).

    Args:
        partial: ``FILE.partial.jsonl`` of the run's ``--out``.
        out: the run's ``--out`` (named in the error).
        store: the run records in a results store (a new stored run): the message says how to resume either way.

    Raises:
        OptionError: (``out``) ``partial`` holds finished trials; the message says how to resume or start over.
    """
    try:
        with partial.open("rb") as handle:
            trials = sum(1 for line in handle if line.strip()) - 1  # the header, then one line a trial
    except FileNotFoundError:
        return
    except OSError as e:
        raise OptionError("out", str(out), f"cannot read {partial} ({e.strerror})") from e
    if trials > 0:
        raise OptionError("out", str(out), f"{partial} holds {trials} finished trial(s) of an earlier run that did "
                          f"not finish; resume it with --resume-from {partial}"
                          + (" (without --store and --run-id), or rerun with the earlier run's --run-id if it "
                             "recorded in this store," if store else ",")
                          + " or remove that file to start over")


OUTSIDE_SHOWN = 3
"""Trials outside a resumed run's plan that its refusal names (:func:`_outside_plan`); the rest are counted."""


def _outside_plan(outside: Sequence[TrialResult], recorded: int, source: Path | None) -> OptionError:
    """The refusal to resume trials of which some are not in the run's plan (they would be lost).

    Args:
        outside: the recorded trials outside the plan, in file order.
        recorded: how many trials were given to resume.
        source: the partial file they came from, or None (trials given).

    Returns:
        An :class:`OptionError` (``resume``) naming how many trials are outside the plan, the first
        :data:`OUTSIDE_SHOWN` (task id, persona, trial index), and what to do.
    """
    named = ", ".join(f"task {_name(t.task_id)}" + (f" persona {_name(t.persona)}" if t.persona is not None else "")
                      + f" trial {t.trial}" for t in outside[:OUTSIDE_SHOWN])
    more = f" and {len(outside) - OUTSIDE_SHOWN} more" if len(outside) > OUTSIDE_SHOWN else ""
    return OptionError("resume", None if source is None else str(source),
                       f"{len(outside)} of the {recorded} recorded trials are not in this run's plan ({named}{more}): "
                       "resuming would lose them, so nothing was run or written; resume with the same tasks and "
                       "trials per task (did the task file change?), or keep these trials where they are and start a "
                       "new run with another out file")


def _name(text: str) -> str:
    """A task id or persona name in a message: as it is, or quoted, escaped and cut when it cannot be shown so."""
    return text if len(text) <= 80 and shown(text, one_line=True) == text else excerpt(text)


def _check_seeds(runner: Runner, previous: Sequence[TrialResult], source: Path | None,
                 lines: dict[TrialKey, int]) -> None:
    """Refuse a resumed trial whose seed is not the one the run's plan gives it (:meth:`Runner.trial_seed`).

    Such a trial was run by another run (another seed, or a task whose pinned seed changed): the resumed document
    would mix two runs.

    Raises:
        RunDocumentError: ``FILE: line N: field seed: ... (value V, expected E)`` for the first such trial (the
            trial's key instead of the file and line when the trials were given, not read from a file).
    """
    tasks = {t.id: t for t in runner.tasks}
    for t in previous:
        expected = runner.trial_seed(tasks[t.task_id], t.trial)
        if t.seed != expected:
            key = trial_key(t)
            where = (f"{shown(str(source), one_line=True)}: line {lines[key]}" if source is not None and key in lines
                     else f"resumed trial {excerpt(t.task_id)} {t.trial}")
            raise RunDocumentError(f"{where}: field seed: not the seed this run's plan gives task "
                                   f"{_name(t.task_id)} trial {t.trial} (value {t.seed}, expected {expected}); the "
                                   "trial was run by another run (another seed, or the task's pinned seed changed), "
                                   "so nothing was run or written: resume with the run that recorded it")


def _same_run(file_spec: RunSpec, built: RunSpec, source: str) -> None:
    """Refuse to resume a partial file's run with another spec (execution fields aside, :func:`resume_exempt`).

    The policy is compared by the hash of its text (a policy file edited since, or another one, is refused; the same
    text under another path is not).

    A file's spec is taken with its domain's default options for options it does not name, as a run of it was
    built (a hand-written header may leave them out).

    Raises:
        SpecError: the first differing field, with both values (escaped and cut).
    """
    if file_spec.domain == built.domain:
        data = Path(file_spec.data_dir) if file_spec.data_dir else None
        defaults = get_domain(file_spec.domain).default_options(data)
        file_spec = file_spec.model_copy(update={"options": {**defaults, **file_spec.options}})
    diffs = spec_differences(file_spec, built, exempt=resume_exempt(file_spec, built))
    if diffs:
        field, stored, given = diffs[0]
        what = f"{field} (the hash of the policy text the agent gets)" if field == "policy_sha256" else field
        hint = ("; the policy's text changed since the run started (its file edited, or the domain's or suite's own "
                "policy updated): restore that text, or start a new run") if field == "policy_sha256" else ""
        if field == "personas" and isinstance(stored, list) and isinstance(given, list) \
                and sorted(map(str, stored)) == sorted(map(str, given)):
            hint = "; the same personas in another order: give them in the recorded order"
        raise SpecError(f"{shown(source, one_line=True)}: the run cannot be resumed with a different spec: {what}: "
                        f"stored {excerpt(stored)}, now {excerpt(given)}{hint}")
