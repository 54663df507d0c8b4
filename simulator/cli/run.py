"""The ``tausim run`` command: run trials of tasks with an agent and a simulated user.

The command turns its options into a :class:`~simulator.types.spec.RunSpec` (:mod:`simulator.cli._run_options`) and
renders the run; the run itself (store lease, resume, partial file, provenance, final write, error-rate stop, the
executor's life) is the library's :func:`simulator.execution.session.run`.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from simulator.cli._common import console, err, fail, option_message
from simulator.cli._run_options import check_run_paths, refuse_ignored_options, run_spec
from simulator.cli.tasks import refuse_lint_errors
from simulator.errors import OptionError, SetupError, StoreError, WriteError
from simulator.execution.recording import PARTIAL_SUFFIX, Interrupts, document_path, output_problem
from simulator.execution.session import Interruption, RunOutcome, RunStart, run
from simulator.report import analyze_run, print_summary
from simulator.storage.store import DEFAULT_STORE_URL
from simulator.types.spec import EXECUTOR_HELP, RunSpec
from simulator.types.tasks import TaskFileError
from simulator.world.domain import DomainError


def run_command(
    ctx: typer.Context,
    domain: Annotated[str, typer.Option(help="Domain name.")] = "retail",
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the built-in data set).")] = None,
    tasks: Annotated[str | None, typer.Option(help="Task file or split name (default: built-in tasks).")] = None,
    split: Annotated[str | None, typer.Option(
        help="Split of a tau2-bench task file (split_tasks.json beside it; default: its 'base').")] = None,
    task_ids: Annotated[str | None, typer.Option(help="Comma-separated task ids to run.")] = None,
    tags: Annotated[str | None, typer.Option(help="Run the tasks carrying any of these tags (e.g. smoke).")] = None,
    exclude_tags: Annotated[str | None, typer.Option(help="Leave out the tasks carrying any of these tags.")] = None,
    agent: Annotated[str, typer.Option(
        help="oracle | null | reference[:KNOB=RATE,...] | litellm:MODEL | faulty:KIND=RATE | py:MODULE:FACTORY | "
             "http:URL | openai-agents:MODULE:FACTORY | langgraph:MODULE:FACTORY | any scheme `tausim agents` lists"
    )] = "oracle",
    user: Annotated[str, typer.Option(
        help="scripted | confirming | rule | llm:MODEL | replay:RUN[:TASK/TRIAL] | py:MODULE:FACTORY | any scheme "
             "`tausim users` lists")] = "scripted",
    fallback_user: Annotated[str | None, typer.Option(
        help="With --user replay:...: who continues after the conversation diverges (rule | llm:MODEL).")] = None,
    personas: Annotated[str | None, typer.Option(
        help="Personas the simulated user plays: NAME[,NAME...] (shipped names or .json files) or all; the run "
             "is then task x persona x trial and pass^k is reported per persona. Needs --user rule or llm:MODEL."
    )] = None,
    trials: Annotated[int, typer.Option(min=1, help="Trials per task.")] = 1,
    concurrency: Annotated[int | None, typer.Option(
        min=1, help="Trials run at once (raise it for model-bound agents); default 1.")] = None,
    executor: Annotated[str | None, typer.Option(
        help=f"Where trials run: {EXECUTOR_HELP}; default auto (the run header says which and why).")] = None,
    dask_timeout: Annotated[float, typer.Option(
        min=0.1, help="Seconds to wait for a dask:// scheduler.")] = 10.0,
    spec_file: Annotated[Path | None, typer.Option(
        "--spec", help="Run spec file (JSON, see simulator.types.spec.RunSpec): the run is the file's; only --out, "
                       "--store, --run-id, --no-progress and, when given, --executor, --concurrency, --cache, "
                       "--rpm and --log-file apply besides.")] = None,
    seed: Annotated[int, typer.Option(help="Run seed.")] = 0,
    vary: Annotated[str, typer.Option(
        help="Which side varies from trial to trial: both (default), user or agent. With user, the agent's seed "
             "is held per task and a cached model agent replays its answers. With agent, the user's seed is held. "
             "Trials of a task are then correlated; see `tausim variance`.")
                    ] = "both",
    max_turns: Annotated[int, typer.Option(min=1, help="Messages of user and agent per trial.")] = 30,
    max_steps: Annotated[int, typer.Option(min=1, help="Agent actions per trial.")] = 60,
    temperature: Annotated[float | None, typer.Option(help="Model temperature (LLM agent/user).")] = None,
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL for local models.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write every trial and the metrics to this JSON file.")] = None,
    option: Annotated[list[str] | None, typer.Option(help="Domain option KEY=VALUE, e.g. mode=tau-bench.")] = None,
    policy: Annotated[Path | None, typer.Option(
        help="Policy file the agent gets (default: the suite's own next to --data, e.g. tau-bench's wiki.md or "
             "tau2's policy.md, else the domain's).")] = None,
    store: Annotated[str | None, typer.Option(
        help=f"Results store URL, e.g. {DEFAULT_STORE_URL} (each trial is recorded as it finishes).")] = None,
    run_id: Annotated[str | None, typer.Option(
        help=f"Run id in the store (default store {DEFAULT_STORE_URL}); an existing run is resumed: only its "
             "unrecorded trials run. Default: a new id.")] = None,
    cache: Annotated[Path | None, typer.Option(help="Model response cache (SQLite file); reruns replay it.")] = None,
    rpm: Annotated[int | None, typer.Option(min=1, help="Requests per minute allowed per model.")] = None,
    log_file: Annotated[Path | None, typer.Option(help="Append the run's JSON-lines event log here.")] = None,
    allow_lint_errors: Annotated[bool, typer.Option("--allow-lint-errors", help="Run even when `tausim tasks lint` "
                                                    "finds errors in the selected tasks.")] = False,
    otel: Annotated[Path | None, typer.Option(
        help="Append OpenTelemetry spans (run, trial, turn, tool, model; JSON lines) here (extra: tausim[otel]).")
                    ] = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No live progress bar.")] = False,
    progress_every: Annotated[float, typer.Option(
        min=0, envvar="TAUSIM_PROGRESS_EVERY",
        help="When stdout is not a terminal (CI): seconds between progress lines (done/total, pass rate, cost, "
             "ETA); 0: none.")] = 30.0,
    budgets: Annotated[Path | None, typer.Option(
        help="Per-task budgets file (from `tausim baseline`); a trial over a ceiling fails.")] = None,
    judge: Annotated[str | None, typer.Option(
        help="LLM judge model for tasks with judge assertions (litellm model string).")] = None,
    judge_api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL of the judge.")] = None,
    judge_calibration: Annotated[Path | None, typer.Option(
        help="Calibration file (`tausim judge calibrate --out`); without one of the same model reaching "
             "--judge-min-kappa the judge is recorded but does not gate.")] = None,
    judge_min_kappa: Annotated[float, typer.Option(help="Minimum calibration kappa for the judge to gate.")] = 0.6,
    judge_anchors: Annotated[Path | None, typer.Option(
        help="Labels file (the `tausim judge calibrate` format): human-graded examples shown to the judge before "
             "every assertion, fixed points against scale drift.")] = None,
    strict_judge: Annotated[bool, typer.Option(
        "--strict-judge", help="Refuse a gating judge of the agent's model family (default: warn).")] = False,
    trial_timeout: Annotated[float | None, typer.Option(
        min=0.001, help="Seconds a trial may run; past it the trial is recorded `timeout` (its thread is "
                        "abandoned). Default: no limit.")] = None,
    request_timeout: Annotated[float | None, typer.Option(
        min=0.001, help="Seconds one model request may take (a timed-out call is tried twice at most); "
                        "default 60.")] = None,
    max_error_rate: Annotated[float | None, typer.Option(
        min=0.0, max=1.0, help="Stop the run (exit 1) once more than this share of finished trials ended on an "
                               "error, checked from the 10th trial on (a shorter run: when it ends); default 0.5; "
                               "1 never stops.")] = None,
    no_preflight: Annotated[bool, typer.Option(
        "--no-preflight", help="Skip the pre-flight (one agent and user built, one cheap call per model).")] = False,
    faults: Annotated[str | None, typer.Option(
        help="Environment faults in the agent's tool calls at seeded rates: KIND=RATE,... with KIND transient, "
             "timeout, slow, partial_write, lost_ack (e.g. transient=0.05,timeout=0.02); the summary reports the "
             "recovery rate.")] = None,
    resume_from: Annotated[Path | None, typer.Option(
        help="Resume a run without a store from its FILE.partial.jsonl (written next to --out): the run is the "
             "file's (run options given must be what it recorded, --policy by its text; execution options apply); "
             "only the trials it lacks run; the run document goes to FILE unless --out names another.")
    ] = None,
) -> None:
    """Run trials of tasks with an agent and a simulated user; print pass^k and failures.

    With --store (or --run-id) every finished trial is recorded in the results store; rerunning with the same
    --run-id resumes the run: only the trials not recorded yet are run, and the summary covers the whole run.
    With --out, finished trials are also appended to FILE.partial.jsonl as they finish; --resume-from that file
    resumes the run without a store.

    Exit codes: 0 when the run completed; 2 on bad input or a set-up error (the pre-flight's: missing API key,
    unknown model, unreachable server, a factory that raises; or a trial's: the first three); 1 when the run was
    stopped by --max-error-rate (a session of fewer than 10 trials: when more than that share of them ended on an
    error), the run document could not be written to --out (it is then written elsewhere, named) or a disk filled
    up (the run stops; what was recorded is kept, rerun to resume); 130 on Ctrl-C, 143 on SIGTERM (a CI job
    cancelled), both saying where the finished trials are and how to resume.
    """
    refuse_ignored_options(locals(), _DEFAULTS)
    out_name = None  # how messages name the run document's file: --out FILE, unless it was not given
    if resume_from is not None and out is None and resume_from.is_file():  # the document goes where the stopped
        # run's would have gone (a missing file is reported as such when it is read)
        out = document_path(resume_from)
        if out is None:
            raise fail(f"--resume-from {resume_from}: not a FILE{PARTIAL_SUFFIX} name: give --out FILE for the "
                       "run document (without it the resumed trials would be recorded nowhere)")
        out_name = resume_document_name(resume_from, out)
        problem = output_problem(out)
        if problem is not None:
            raise fail(f"{out_name}: {problem.split(';')[0]}; give --out FILE to write it elsewhere")
    check_run_paths(locals(), out_flag=None if out_name is None else f"--resume-from {resume_from}: its run document")
    options = locals()
    interrupts = Interrupts()
    with interrupts.handled():  # to the end of the command
        with interrupted_before_trials(interrupts):  # loading the tasks can take a while
            spec = run_spec(options, _DEFAULTS)
        execute(spec, out=out, store=store, run_id=run_id, no_progress=no_progress, dask_timeout=dask_timeout,
                otel=otel, allow_lint_errors=allow_lint_errors, progress_every=progress_every,
                resume_from=resume_from, out_name=out_name, interrupts=interrupts)


def resume_document_name(resume_from: Path, document: Path) -> str:
    """How messages name the run document ``--resume-from`` writes when ``--out`` is not given.

    Returns:
        ``--resume-from FILE.partial.jsonl: its run document FILE``: the user gave no ``--out``, so no message says
        ``--out FILE`` as if they had.
    """
    return f"--resume-from {resume_from}: its run document {document}"


_DEFAULTS = {name: p.default for name, p in inspect.signature(run_command).parameters.items()}


def execute(spec: RunSpec, *, out: Path | None = None, store: str | None = None, run_id: str | None = None,
            no_progress: bool = False, dask_timeout: float = 10.0, otel: Path | None = None,
            allow_lint_errors: bool = False, progress_every: float = 30.0, resume_from: Path | None = None,
            out_name: str | None = None, interrupts: Interrupts | None = None) -> None:
    """Run a spec as ``tausim run`` does (:func:`simulator.execution.session.run`) and print its summary.

    Args:
        spec: the run.
        out: ``--out`` file, or None.
        store: ``--store`` URL, or None.
        run_id: ``--run-id``, or None.
        no_progress: no progress bar.
        dask_timeout: seconds to wait for a ``dask://`` scheduler.
        otel: file the run's OpenTelemetry spans are appended to (``--otel``), or None.
        allow_lint_errors: run even when the task lint finds errors (``--allow-lint-errors``).
        progress_every: seconds between progress lines when stdout is not a terminal (0: none).
        resume_from: the ``--resume-from`` partial file, or None: only the planned trials it lacks run, and the run
            document holds both; ``spec`` must be the file's (the session compares them, the policy by its text).
        out_name: how messages name ``out`` when ``--out`` was not given (:func:`resume_document_name`); None:
            ``--out FILE``.
        interrupts: the command's Ctrl-C and SIGTERM (:class:`~simulator.execution.recording.Interrupts`); None: its
            own, handled from here to the end.

    Raises:
        typer.Exit: code 2 on bad input or a set-up error (before any trial runs, or when a trial meets one),
            1 when the run was stopped by ``max_error_rate`` or ``--out`` could not be written (the document is
            then written to a fallback file, named), 130 on Ctrl-C, 143 on SIGTERM.
    """
    interrupts = interrupts or Interrupts()
    with interrupts.handled():  # to the end: a Ctrl-C after the run returned is told too
        outcome = _execute(spec, interrupts, out=out, store=store, run_id=run_id, no_progress=no_progress,
                           dask_timeout=dask_timeout, otel=otel, allow_lint_errors=allow_lint_errors,
                           progress_every=progress_every, resume_from=resume_from, out_name=out_name)
        code = _render_interruptible(outcome, out, out_name, interrupts)
    if code:
        raise typer.Exit(code)


def _execute(spec: RunSpec, interrupts: Interrupts, *, out: Path | None, store: str | None, run_id: str | None,
             no_progress: bool, dask_timeout: float, otel: Path | None, allow_lint_errors: bool,
             progress_every: float, resume_from: Path | None, out_name: str | None) -> RunOutcome:
    """:func:`execute`'s run, its errors and interruptions said as :func:`execute` documents."""
    try:
        with interrupted_before_trials(interrupts):
            outcome = run(spec, store=store, run_id=run_id, out=out, resume=resume_from, progress=not no_progress,
                          progress_every=progress_every or None,
                          on_start=_print_start, on_trial=lambda _: interrupts.check(),  # a Ctrl-C a callback dropped
                          on_interrupt=lambda stop: interrupted(stop, out, interrupts, out_name=out_name),
                          otel=otel, dask_timeout=dask_timeout,
                          task_check=lambda d, t, selected: refuse_lint_errors(d, t, selected, allow_lint_errors))
    except SetupError as e:
        raise fail(f"set-up error ({e.kind}): {e}") from e
    except WriteError as e:  # before any trial ran (the store could not open the run): nothing recorded is lost
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        raise typer.Exit(1) from e
    except OptionError as e:
        raise fail(_run_option_message(e, resume_from, out_name)) from e
    except (DomainError, TaskFileError, StoreError, ValueError) as e:
        raise fail(str(e)) from e
    return outcome


def _render_interruptible(outcome: RunOutcome, out: Path | None, out_name: str | None, interrupts: Interrupts) -> int:
    """:func:`_render` the finished run; Ctrl-C (SIGTERM) meanwhile, or one a callback dropped, is told as such.

    Returns:
        :func:`_render`'s exit code.

    Raises:
        typer.Exit: 130 (143) when interrupted after the run ended: the line says where the run was written.
    """
    stop = Interruption(finished=True, written=outcome.out, write_error=outcome.write_error, out=out,
                        run_id=outcome.run_id)
    with interrupts.handled():
        try:
            interrupts.check()  # dropped while the run was completed and written
            stop = Interruption(finished=True, written=outcome.out, out=out, run_id=outcome.run_id)  # _render tells
            # why --out could not be written
            code = _render(outcome, out, out_name)
            interrupts.check()
        except KeyboardInterrupt:
            interrupted(stop, out, interrupts, out_name=out_name)
    return code


def _run_option_message(error: OptionError, resume_from: Path | None, out_name: str | None) -> str:
    """An :class:`OptionError` of :func:`simulator.execution.session.run` as the options the user gave name it.

    ``resume`` (the trials given) is ``--resume-from FILE``; ``out`` is ``out_name`` when ``--out`` was not given.
    """
    if error.option == "resume" and resume_from is not None:
        return f"--resume-from {resume_from}: {error.reason}"
    if error.option == "out" and out_name is not None:
        return f"{out_name}: {error.reason}"
    return option_message(error)


def _print_start(start: RunStart) -> None:
    """Say which run starts and where its trials run.

    The run: its store run id (new or resumed), or the trials ``--resume-from`` holds; then the executor and why.
    """
    if start.run_id is not None and start.created:
        console.print(f"run id: {start.run_id} (new; {start.planned} trials planned; store {start.store_url})",
                      highlight=False, markup=False)
    elif start.run_id is not None:
        console.print(f"run id: {start.run_id} (resuming: {start.recorded} of {start.planned} trials recorded, "
                      f"running {start.to_run})", highlight=False, markup=False)
    elif start.resumed:
        console.print(f"resuming: {start.recorded} of {start.planned} trials recorded, running {start.to_run}",
                      highlight=False)
    if start.executor is not None:
        console.print(f"executor: {escape(start.executor.reason)}", highlight=False)


def _print_write_error(out: Path | None, error: str | None, written: Path | None, out_name: str | None = None
                       ) -> None:
    """Say that ``--out`` (named ``out_name`` when given) could not be written, and where the run went instead."""
    if error is None:
        return
    where = (f"the run was written to {written} instead" if written is not None else
             "no fallback file could be written either (finished trials stay in the partial file or store)")
    name = out_name if out_name is not None else f"--out {out}"
    err.print(f"[bold red]error:[/] {escape(name)}: cannot write ({escape(error)}); {escape(where)}",
              highlight=False)


def _print_first_traceback(document: Mapping[str, Any], max_lines: int = 40) -> None:
    """Without --out and a store nothing keeps the trials: show the first error's traceback (its last lines)."""
    for trial in document.get("trials") or []:
        error = str(trial.get("error") or "")
        if "Traceback (most recent call last)" not in error:
            continue
        lines = error.rstrip().splitlines()
        cut = len(lines) - max_lines
        head = (f"traceback of task {trial.get('task_id')} trial {trial.get('trial')} (the first trial that raised; "
                "with --out or --store every trial keeps its own)")
        err.print(head + (f", its last {max_lines} of {len(lines)} lines" if cut > 0 else "") + ":",
                  highlight=False, markup=False)
        err.print("\n".join(lines[max(cut, 0):]), highlight=False, markup=False)
        return


def _render(outcome: RunOutcome, out: Path | None, out_name: str | None = None) -> int:
    """Print the run's summary and what went wrong; return the exit code (0, 1 or 2).

    ``out_name`` names ``out`` when ``--out`` was not given (:func:`resume_document_name`).
    """
    written = outcome.out
    _print_write_error(out, outcome.write_error, written, out_name)
    see = None if written is None else "--out" if out_name is None and written == out else str(written)
    print_summary(analyze_run(outcome.document), console, max_failures=20, command="run",
                  see=see if see is not None else ("the store" if outcome.run_id is not None else None))
    if written is not None:
        console.print(f"wrote {written}", highlight=False)
    elif outcome.run_id is None:
        _print_first_traceback(outcome.document)
    code = 0
    if outcome.aborted:
        code = 2 if outcome.abort_kind == "setup_error" else 1
        resume = (f"; resume it with --run-id {outcome.run_id}" if outcome.run_id is not None else
                  f"; resume it with --resume-from {outcome.partial}" if outcome.partial is not None else "")
        said = f"{outcome.aborted}; run stopped" if outcome.abort_kind == "write_error" else \
            f"run stopped: {outcome.aborted}"
        err.print(f"[bold red]error:[/] {escape(said + resume)}", highlight=False)
    elif outcome.error_rate_excess is not None:
        code = 1
        whose = "the run's" if outcome.session_trials == len(outcome.trials) else "this session's"  # resumed
        err.print(f"[bold red]error:[/] {whose} {escape(outcome.error_rate_excess)}", highlight=False)
    if outcome.log_error is not None:
        code = code or 1
        err.print(f"[bold red]error:[/] {escape(outcome.log_error)}: the log's last lines are lost (every trial is "
                  "recorded)", highlight=False)
    if outcome.spans_error is not None:
        code = code or 1
        err.print(f"[bold red]error:[/] {escape(outcome.spans_error)}: the spans file's last spans are lost (every "
                  "trial is recorded)", highlight=False)
    if out is not None and written != out:
        code = code or 1
    return code


@contextmanager
def interrupted_before_trials(interrupts: Interrupts) -> Iterator[None]:
    """Ctrl-C or SIGTERM while a run starts (options, tasks, pre-flight): exit 130 (143 on SIGTERM), saying so.

    Once the trials begin, the run's own interruption handler (:func:`interrupted`, called by the session until the
    run returns) takes over and this sees nothing: no trial thread is left running when this exits.

    Raises:
        typer.Exit: 130 on Ctrl-C, 143 on SIGTERM, as a shell reports 128 + the signal.
    """
    try:
        yield
    except KeyboardInterrupt as e:
        err.print(f"{interrupts.said} while the run was starting: no trial was run", highlight=False)
        raise typer.Exit(interrupts.code) from e


def interrupted(stop: Interruption, out: Path | None, interrupts: Interrupts | None = None,
                resume_hint: str | None = None, out_name: str | None = None) -> Any:
    """Ctrl-C or SIGTERM: say where the finished trials are; exit 130 (143 on SIGTERM) without waiting for stuck trials.

    ``resume_hint`` replaces the ``--resume-from`` advice (``tausim variance``: rerun with ``--resume``);
    ``out_name`` names ``out`` when ``--out`` was not given (:func:`resume_document_name`).
    During the trials the process ends at once (``os._exit``): worker threads may be inside a model call or a stuck
    agent. During the final write (finished first) the command exits 130 (143) as usual.
    """
    code = interrupts.code if interrupts is not None else 130  # 128 + the signal's number, as a shell reports
    said = interrupts.said if interrupts is not None else "interrupted"
    if stop.finished:
        _print_write_error(out, stop.write_error, stop.written, out_name)
        place = (f"the run was written to {stop.written}" if stop.written else
                 f"its trials are recorded in the store (run id {stop.run_id})" if stop.run_id else
                 "nothing was written")
        err.print(f"{said}: {place}", highlight=False)
        sys.stdout.flush()
        raise typer.Exit(code)
    where = []
    if stop.partial is not None:
        where.append(f"finished trials are in {stop.partial}")
    if stop.run_id is not None:
        where.append(f"rerun the same command with --run-id {stop.run_id} to resume")
    elif resume_hint is not None:
        where.append(resume_hint)
    elif stop.partial is not None:
        where.append(f"resume with --resume-from {stop.partial}")
    err.print(said + (": " + "; ".join(where) if where else ""), highlight=False)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # worker threads may be inside a model call or a stuck agent: do not join them
